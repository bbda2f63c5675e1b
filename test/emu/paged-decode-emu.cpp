// paged-decode-emu.cpp: runs paged-decode.hip (paged_dec: flash.hip's decode kernel with its
// lengths from meta and its key and value tiles loaded through the block table) and
// attention.hip's attn_merge as written, through their HIP path, on the host emulator
// (hip-host/hip/hip_runtime.h: a block's threads as fibers), once per AMD code path (-D__gfx942__ /
// __gfx90a__: MFMA, wave64; __gfx1100__: WMMA RDNA3, wave32; __gfx1200__: WMMA RDNA4, wave32;
// __gfx1030__: FMA, wave32), with the matrix instructions in the layouts of AMD's calculator
// (hip-host/amdgcn-mma.h), against the double-precision reference of paged attention in attn-emu.h
// (query i of a sequence with qlen queries and ctx cached tokens sits at ctx - qlen + i and sees
// the keys up to it, with a window only those past it - window; keys and values read from the
// pools through the sequence's row of the block table). Launch as gpu/attention-paged.ts makes it
// on ROCm: 64 threads a split (flash_dec's), grid (entries * hkv, splits), the entries' (sequence,
// first row) list in meta after the lengths and a gap, attn_merge after it with several splits.
// Cases: mixed context lengths (1, below a key block, not a multiple of the block size, several
// key blocks), shuffled tables (u32 and i64, padded rows), block sizes 16, 5 and 1, decodes and
// chunks of up to 16 queries (two row tiles where the group times the queries passes 16),
// grouped heads 1, 4 and 8, windows, head dims in and between the buckets (the scalar copy path
// for a dim off 8), padded pool strides, splits 1 to more than a sequence's key blocks, a long
// chunk the launch leaves alone (its rows untouched), a bad block id (recorded, its rows NaN).
// Outputs start poisoned (NaN). Prints `ok <what>` per dtype; exits 1 on a mismatch.
//   clang++ -std=c++20 -O1 -mavx -D__HIP__ -D__gfx942__ -Itest/emu/hip-host test/emu/paged-decode-emu.cpp && ./a.out
#include "hip-host/amdgcn-mma.h"
#include "../../hip-src/paged-decode.hip"
// attention.hip writes `__shared__ alignas(16)`, which reads `static alignas(16)` here: the GNU
// spelling takes that place
#define alignas(n) __attribute__((aligned(n)))
#include "../../hip-src/attention.hip"
#undef alignas
#include "attn-emu.h"

// paged_dec's entry points of a dtype by head-dim bucket, and attn_merge's
template <class T> struct Kern;
#define EMU_KERN(DT, T)                                                                                  \
  template <> struct Kern<T> {                                                                          \
    static auto dec(unsigned hd) {                                                                      \
      switch (hd) {                                                                                     \
        case 64: return &paged_dec_##DT##_64;                                                           \
        default: return &paged_dec_##DT##_128;                                                          \
      }                                                                                                 \
    }                                                                                                   \
    static constexpr auto merge = &attn_merge_##DT;                                                     \
  };
EMU_KERN(f16, f16)
EMU_KERN(bf16, bf16)

struct Case : PagedCase {
  unsigned splits;
  bool badId;  // a bad block id in the last sequence (a decode token's, no window)
};

// queries a sequence may have to be taken by the launch (gpu/attention.ts ATTN_MAX_TQ)
static constexpr unsigned MAX_Q = 16;

template <class T> static void run(const Case& c, uint64_t seed) {
  PagedInputs<T> in(c, seed, c.badId);
  const unsigned seqs = in.seqs, g = c.hq / c.hkv;
  // meta: first rows, contexts, a gap (listAt is where the list starts, not fixed), then the
  // (sequence, first row) entries of the short sequences
  std::vector<unsigned>& meta = in.meta;
  meta.push_back(0xfeedu);
  const unsigned listAt = (unsigned)meta.size();
  unsigned entries = 0;
  for (unsigned s = 0; s < seqs; s++)
    if (c.qlens[s] >= 1 && c.qlens[s] <= MAX_Q)
      for (unsigned r0 = 0; r0 < g * c.qlens[s]; r0 += 16, entries++) { meta.push_back(s); meta.push_back(r0); }
  const size_t rows = (size_t)in.tokens * c.hq;
  std::vector<T> o(rows * c.d, Io<T>::put(NAN));
  std::vector<float> wso(rows * c.splits * c.d, NAN), wsml(rows * c.splits * 2, NAN);
  const auto fn = Kern<T>::dec(pagedBucket(c.d));
  emu::launch(emu::Dim3{ entries * c.hkv, c.splits, 1 }, 64, L::WAVE, [&] {
    fn(o.data(), wso.data(), wsml.data(), in.q.data(), in.kp.data(), in.vp.data(), in.table(), meta.data(), in.err, 0, 0, 0, 0, 0, 0, seqs,
        c.hq, c.hkv, c.d, c.bs, in.nblocks, in.maxBlocks, c.i64Table ? 1u : 0u, in.tag, c.splits, listAt, (long long)c.hq * c.d, c.d, in.kss,
        in.ksh, in.kss, in.ksh, in.tsr, 1, c.window, (float)in.scale);
  });
  if (c.splits > 1) {
    // over every row, as gpu/attention.ts's mergeSplits: the rows of the long chunks read
    // partial sums no kernel wrote (the prefill kernel writes them afterwards)
    unsigned threads = (unsigned)L::WAVE;
    while (threads < 256 && threads / 32 * 8 < c.splits) threads *= 2;
    emu::launch(emu::Dim3{ (unsigned)rows, (c.d + 31) / 32, 1 }, threads, L::WAVE, [&] {
      Kern<T>::merge(o.data(), wso.data(), wsml.data(), 0, c.splits, c.d);
    });
  }

  bool ok = true;
  unsigned t = 0;
  for (unsigned s = 0; s < seqs; s++) {
    const bool taken = c.qlens[s] <= MAX_Q;
    for (unsigned i = 0; i < c.qlens[s]; i++, t++) {
      for (unsigned h = 0; h < c.hq; h++) {
        if (taken) {
          in.check(o, s, i, t, h, "paged_dec", ok);
          continue;
        }
        // a long chunk's rows: left to the prefill kernel (written by the merge only)
        if (c.splits == 1)
          for (unsigned e = 0; e < c.d; e++)
            if (!std::isnan(Io<T>::get(o[((size_t)t * c.hq + h) * c.d + e]))) {
              if (ok) std::printf("FAIL %s paged_dec %s %s: token %u head %u of a long chunk written\n", ARCH, Io<T>::name, c.name, t, h);
              ok = false;
            }
      }
    }
  }
  in.checkErr("paged_dec", ok);
  if (!ok) failures++;
}

template <class T> static void all() {
  const std::vector<Case> cs = {
    // { name, hq, hkv, d, bs, qlens, ctxs, window, i64 table, head pad }, splits, bad id
    { { "gqa4 d128 bs16 decodes 1 split", 32, 8, 128, 16, { 1, 1, 1, 1 }, { 1, 17, 200, 64 }, 0, false, 0 }, 1, false },
    { { "gqa4 d128 bs16 decodes 4 splits", 32, 8, 128, 16, { 1, 1, 1, 1, 1 }, { 1, 15, 300, 64, 129 }, 0, false, 0 }, 4, false },
    { { "gqa8 d64 bs16 chunks (two row tiles) + a long chunk, 3 splits", 16, 2, 64, 16, { 3, 1, 20, 2 }, { 40, 90, 60, 2 }, 0, false, 0 }, 3, false },
    { { "gqa8 d64 long chunk untouched, 1 split", 8, 1, 64, 16, { 1, 20, 16 }, { 33, 50, 16 }, 0, true, 0 }, 1, false },
    { { "mha d128 bs1 window i64 7 splits", 2, 2, 128, 1, { 1, 4, 1 }, { 100, 70, 5 }, 30, true, 0 }, 7, false },
    { { "mha qlen16 d64 bs5 window, 2 splits", 3, 3, 64, 5, { 16, 1 }, { 40, 23 }, 9, false, 0 }, 2, false },
    // a key block wholly below the diagonal that only the chunk's first queries' windows cut
    { { "gqa4 qlen4 d64 bs16 window past a key block, 2 splits", 8, 2, 64, 16, { 4, 16 }, { 300, 300 }, 100, false, 0 }, 2, false },
    { { "g3 d80 bs5 pad 5 splits", 6, 2, 80, 5, { 1, 5 }, { 150, 77 }, 0, false, 8 }, 5, false },
    { { "g2 d36 bs16 window (scalar copies)", 4, 2, 36, 16, { 1, 2 }, { 33, 80 }, 12, false, 0 }, 2, false },
    { { "gqa4 d100 bs16 (bucket 128) more splits than key blocks", 8, 2, 100, 16, { 1, 1 }, { 20, 3 }, 0, true, 0 }, 9, false },
    { { "gqa4 d128 bad block id, 3 splits", 8, 2, 128, 16, { 2, 1 }, { 9, 90 }, 0, false, 0 }, 3, true },
    { { "mha d64 bad block id, 1 split", 2, 2, 64, 16, { 1 }, { 70 }, 0, false, 0 }, 1, true },
  };
  const int before = failures;
  uint64_t seed = 0x243f6a8885a308d3ull;
  for (const Case& c : cs) run<T>(c, seed++);
  if (failures == before) std::printf("ok %s paged_dec %s wave%d (%zu cases)\n", ARCH, Io<T>::name, L::WAVE, cs.size());
}

int main() {
  all<f16>();
  all<bf16>();
  return failures ? 1 : 0;
}
