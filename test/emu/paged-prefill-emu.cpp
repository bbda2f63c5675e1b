// paged-prefill-emu.cpp: runs paged-prefill.hip (paged_fwd: flash.hip's forward kernel with its
// key and value tiles loaded through the block table) as written, through its HIP path, on the
// host emulator (hip-host/hip/hip_runtime.h: a block's threads as fibers), once per AMD code path
// (-D__gfx942__ / __gfx90a__: MFMA, wave64; __gfx1100__: WMMA RDNA3, wave32; __gfx1200__: WMMA
// RDNA4, wave32; __gfx1030__: FMA, wave32), with the matrix instructions in the layouts of AMD's
// calculator (hip-host/amdgcn-mma.h), against the double-precision reference of paged attention
// in attn-emu.h (query i of a sequence with qlen queries and ctx cached tokens sits at
// ctx - qlen + i and sees the keys up to it, with a window only those past it - window; keys and
// values read from the pools through the sequence's row of the block table). Launch as
// gpu/attention-paged.ts makes it on ROCm: 256 threads over 64 query rows of one sequence and
// head, a tile list after the lengths in meta. Cases: shuffled tables (u32 and i64, padded rows),
// block sizes 16, 1 and 5 (a key tile across blocks, part of a block), chunks after a cached
// prefix and whole prompts, several tiles a sequence, windows, grouped heads, head dims in and
// between the buckets (the scalar copy path for a dim off 8), padded pool strides, a bad block id
// (recorded, its rows NaN) and a NaN key. Outputs start poisoned (NaN).
// Prints `ok <what>` per dtype; exits 1 on a mismatch.
//   clang++ -std=c++20 -O1 -mavx -D__HIP__ -D__gfx942__ -Itest/emu/hip-host test/emu/paged-prefill-emu.cpp && ./a.out
#include "hip-host/amdgcn-mma.h"
#include "../../hip-src/paged-prefill.hip"
#include "attn-emu.h"

// paged_fwd's entry points of a dtype by head-dim bucket
template <class T> struct Kern;
#define EMU_KERN(DT, T)                                                                                  \
  template <> struct Kern<T> {                                                                          \
    static auto fwd(unsigned hd) {                                                                      \
      switch (hd) {                                                                                     \
        case 64: return &paged_fwd_##DT##_64;                                                           \
        default: return &paged_fwd_##DT##_128;                                                          \
      }                                                                                                 \
    }                                                                                                   \
  };
EMU_KERN(f16, f16)
EMU_KERN(bf16, bf16)

struct Case : PagedCase {
  int fault;  // 0 none, 1 a bad block id, 2 a NaN key
};

template <class T> static void run(const Case& c, uint64_t seed) {
  PagedInputs<T> in(c, seed, c.fault == 1);
  const unsigned seqs = in.seqs;
  if (c.fault == 2) {
    const unsigned j = c.ctxs[0] / 3;
    const long long nanBlock = in.ids[j / c.bs];
    in.kp[nanBlock * in.kbk + (j % c.bs) * in.kss + 0 * in.ksh + 2] = Io<T>::put(NAN);
  }
  // meta: first rows, contexts, then the tiles of 64 rows
  std::vector<unsigned>& meta = in.meta;
  unsigned tiles = 0;
  for (unsigned s = 0; s < seqs; s++)
    for (unsigned m0 = 0; m0 < c.qlens[s]; m0 += 64, tiles++) { meta.push_back(s); meta.push_back(m0); }
  std::vector<T> o((size_t)in.tokens * c.hq * c.d, Io<T>::put(NAN));
  const auto fn = Kern<T>::fwd(pagedBucket(c.d));
  emu::launch(emu::Dim3{ tiles, c.hq, 1 }, 256, L::WAVE, [&] {
    fn(o.data(), in.q.data(), in.kp.data(), in.vp.data(), in.table(), meta.data(), in.err, 0, 0, 0, 0, 0, 0, seqs, c.hq, c.hkv, c.d, c.bs,
        in.nblocks, in.maxBlocks, c.i64Table ? 1u : 0u, in.tag, (long long)c.hq * c.d, c.d, in.kss, in.ksh, in.kss, in.ksh, in.tsr, 1, c.window,
        (float)in.scale);
  });

  bool ok = true;
  unsigned t = 0;
  for (unsigned s = 0; s < seqs; s++)
    for (unsigned i = 0; i < c.qlens[s]; i++, t++)
      for (unsigned h = 0; h < c.hq; h++) in.check(o, s, i, t, h, "paged_fwd", ok);
  in.checkErr("paged_fwd", ok);
  if (!ok) failures++;
}

template <class T> static void all() {
  const std::vector<Case> cs = {
    { { "gqa4 d64 bs16 chunk+prompt", 8, 2, 64, 16, { 70, 1, 20 }, { 200, 9, 20 }, 0, false, 0 }, 0 },
    { { "mha d128 bs1 window i64", 2, 2, 128, 1, { 40, 3 }, { 100, 3 }, 30, true, 0 }, 0 },
    { { "g3 d80 bs5 pad", 6, 2, 80, 5, { 130 }, { 150 }, 0, false, 8 }, 0 },
    { { "g2 d36 bs16 window (scalar copies)", 4, 2, 36, 16, { 33, 17 }, { 33, 80 }, 12, false, 0 }, 0 },
    { { "d100 bs16 (bucket 128)", 2, 1, 100, 16, { 20 }, { 60 }, 0, true, 0 }, 0 },
    { { "d96 bad block id", 2, 1, 96, 16, { 5, 30 }, { 9, 64 }, 0, false, 0 }, 1 },
    { { "d64 nan key", 4, 1, 64, 16, { 40 }, { 90 }, 0, false, 0 }, 2 },
  };
  const int before = failures;
  uint64_t seed = 0x243f6a8885a308d3ull;
  for (const Case& c : cs) run<T>(c, seed++);
  if (failures == before) std::printf("ok %s paged_fwd %s wave%d (%zu cases)\n", ARCH, Io<T>::name, L::WAVE, cs.size());
}

int main() {
  all<f16>();
  all<bf16>();
  if (failures) {
    std::printf("%d failing cases\n", failures);
    return 1;
  }
  return 0;
}
