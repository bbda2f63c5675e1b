// paged-decode-emu.cpp: runs paged-decode.hip (paged_dec: flash.hip's decode kernel with its
// lengths from meta and its key and value tiles loaded through the block table) and
// attention.hip's attn_merge as written, through their HIP path, on the host emulator
// (hip-host/hip/hip_runtime.h: a block's threads as fibers), once per AMD code path (-D__gfx942__ /
// __gfx90a__: MFMA, wave64; __gfx1100__: WMMA RDNA3, wave32; __gfx1200__: WMMA RDNA4, wave32;
// __gfx1030__: FMA, wave32), with the matrix instructions in the layouts of AMD's calculator
// (hip-host/amdgcn-mma.h), against a double-precision reference of paged attention written here
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
#include <cmath>
#include <cstdio>
#include <vector>

#include "emu-rng.h"

#if defined(__gfx90a__)
static const char* ARCH = "gfx90a";
#elif defined(__gfx942__)
static const char* ARCH = "gfx942";
#elif defined(__gfx1100__)
static const char* ARCH = "gfx1100";
#elif defined(__gfx1200__)
static const char* ARCH = "gfx1200";
#else
static const char* ARCH = "gfx1030";
#endif

static int failures = 0;

template <class T> struct Io;
#define EMU_IO(DT, T, EPS, PUT)                                                                          \
  template <> struct Io<T> {                                                                            \
    static constexpr const char* name = #DT;                                                            \
    static T put(double v) { return PUT(v); }                                                           \
    static double get(T v) { return DT##_to_f32(v); }                                                   \
    static constexpr double eps = EPS;                                                                  \
    static auto dec(unsigned hd) {                                                                      \
      switch (hd) {                                                                                     \
        case 64: return &paged_dec_##DT##_64;                                                           \
        default: return &paged_dec_##DT##_128;                                                          \
      }                                                                                                 \
    }                                                                                                   \
    static constexpr auto merge = &attn_merge_##DT;                                                     \
  };
EMU_IO(f16, f16, 1.0 / 1024, f64_to_f16)
EMU_IO(bf16, bf16, 1.0 / 128, f64_to_bf16)

static unsigned bucket(unsigned d) { return d <= 64 ? 64 : 128; }

struct Case {
  const char* name;
  unsigned hq, hkv, d, bs;
  std::vector<unsigned> qlens, ctxs;
  long long window;  // 0: none
  bool i64Table;
  unsigned headPad;  // extra elements between kv heads in the pools (padded strides)
  unsigned splits;
  bool badId;        // a bad block id in the last sequence (a decode token's, no window)
};

// queries a sequence may have to be taken by the launch (gpu/attention.ts ATTN_MAX_TQ)
static constexpr unsigned MAX_Q = 16;

template <class T> static void run(const Case& c, uint64_t seed) {
  Rng rng{ seed };
  const unsigned seqs = (unsigned)c.qlens.size(), g = c.hq / c.hkv;
  unsigned tokens = 0, maxBlocks = 1, need = 0;
  for (unsigned s = 0; s < seqs; s++) {
    tokens += c.qlens[s];
    maxBlocks = std::max(maxBlocks, (c.ctxs[s] + c.bs - 1) / c.bs);
    need += (c.ctxs[s] + c.bs - 1) / c.bs;
  }
  const unsigned nblocks = need + 2;
  std::vector<unsigned> perm(nblocks);
  for (unsigned i = 0; i < nblocks; i++) perm[i] = i;
  for (unsigned i = nblocks - 1; i > 0; i--) std::swap(perm[i], perm[rng.next() % (i + 1)]);
  const long long tsr = maxBlocks + 2;
  std::vector<long long> ids((size_t)seqs * maxBlocks);
  unsigned at = 0;
  for (unsigned s = 0; s < seqs; s++)
    for (unsigned b = 0; b < maxBlocks; b++) ids[(size_t)s * maxBlocks + b] = b < (c.ctxs[s] + c.bs - 1) / c.bs ? perm[at++] : 900000 + b;
  long long badSeq = -1, badCol = -1, badId = nblocks + 3;
  if (c.badId) {
    badSeq = seqs - 1;
    badCol = (c.ctxs[badSeq] - 1) / c.bs / 2;
    ids[(size_t)badSeq * maxBlocks + badCol] = badId;
  }
  std::vector<unsigned> t32((size_t)seqs * tsr, 0xdeadbeefu);
  std::vector<long long> t64((size_t)seqs * tsr, -77);
  for (unsigned s = 0; s < seqs; s++)
    for (unsigned b = 0; b < maxBlocks; b++) {
      t32[(size_t)s * tsr + b] = (unsigned)ids[(size_t)s * maxBlocks + b];
      t64[(size_t)s * tsr + b] = ids[(size_t)s * maxBlocks + b];
    }
  const long long ksh = c.d + c.headPad, kss = ksh * c.hkv, kbk = kss * c.bs;
  std::vector<T> q((size_t)tokens * c.hq * c.d), kp((size_t)nblocks * kbk), vp((size_t)nblocks * kbk);
  for (auto& x : q) x = Io<T>::put(rng.uni(-2, 2));
  for (auto& x : kp) x = Io<T>::put(rng.uni(-2, 2));
  for (auto& x : vp) x = Io<T>::put(rng.uni(-1, 1));
  // meta: first rows, contexts, a gap (listAt is where the list starts, not fixed), then the
  // (sequence, first row) entries of the short sequences
  std::vector<unsigned> meta(2 * seqs + 1, 0);
  for (unsigned s = 0; s < seqs; s++) meta[s + 1] = meta[s] + c.qlens[s];
  for (unsigned s = 0; s < seqs; s++) meta[seqs + 1 + s] = c.ctxs[s];
  meta.push_back(0xfeedu);
  const unsigned listAt = (unsigned)meta.size();
  unsigned entries = 0;
  for (unsigned s = 0; s < seqs; s++)
    if (c.qlens[s] >= 1 && c.qlens[s] <= MAX_Q)
      for (unsigned r0 = 0; r0 < g * c.qlens[s]; r0 += 16, entries++) { meta.push_back(s); meta.push_back(r0); }
  const double scale = 1.0 / std::sqrt((double)c.d);
  const size_t rows = (size_t)tokens * c.hq;
  std::vector<T> o(rows * c.d, Io<T>::put(NAN));
  std::vector<float> wso(rows * c.splits * c.d, NAN), wsml(rows * c.splits * 2, NAN);
  unsigned long long err[4] = { 0, 0, 0, 0 };
  const unsigned tag = 0x5a5a3;
  const void* table = c.i64Table ? (const void*)t64.data() : (const void*)t32.data();
  const auto fn = Io<T>::dec(bucket(c.d));
  emu::launch(emu::Dim3{ entries * c.hkv, c.splits, 1 }, 64, L::WAVE, [&] {
    fn(o.data(), wso.data(), wsml.data(), q.data(), kp.data(), vp.data(), table, meta.data(), err, 0, 0, 0, 0, 0, 0, seqs, c.hq, c.hkv, c.d,
        c.bs, nblocks, maxBlocks, c.i64Table ? 1u : 0u, tag, c.splits, listAt, (long long)c.hq * c.d, c.d, kss, ksh, kss, ksh, tsr, 1,
        c.window, (float)scale);
  });
  if (c.splits > 1) {
    // over every row, as gpu/attention.ts's mergeSplits: the rows of the long chunks read
    // partial sums no kernel wrote (the prefill kernel writes them afterwards)
    unsigned threads = (unsigned)L::WAVE;
    while (threads < 256 && threads / 32 * 8 < c.splits) threads *= 2;
    emu::launch(emu::Dim3{ (unsigned)rows, (c.d + 31) / 32, 1 }, threads, L::WAVE, [&] {
      Io<T>::merge(o.data(), wso.data(), wsml.data(), 0, c.splits, c.d);
    });
  }

  bool ok = true;
  unsigned t = 0;
  std::vector<double> w, out(c.d);
  for (unsigned s = 0; s < seqs; s++) {
    const bool taken = c.qlens[s] <= MAX_Q;
    for (unsigned i = 0; i < c.qlens[s]; i++, t++) {
      for (unsigned h = 0; h < c.hq; h++) {
        if (!taken) {
          // a long chunk's rows: left to the prefill kernel (written by the merge only)
          if (c.splits == 1)
            for (unsigned e = 0; e < c.d; e++)
              if (!std::isnan(Io<T>::get(o[((size_t)t * c.hq + h) * c.d + e]))) {
                if (ok) std::printf("FAIL %s paged_dec %s %s: token %u head %u of a long chunk written\n", ARCH, Io<T>::name, c.name, t, h);
                ok = false;
              }
          continue;
        }
        const unsigned kh = h / g;
        const long long pos = (long long)c.ctxs[s] - c.qlens[s] + i;
        bool nan = false;
        w.clear();
        std::vector<long long> krows;
        double m = -INFINITY;
        for (long long j = 0; j <= pos && !nan; j++) {
          if (c.window > 0 && j <= pos - c.window) continue;
          const long long id = ids[(size_t)s * maxBlocks + j / c.bs];
          if (id < 0 || id >= (long long)nblocks) { nan = true; break; }
          const long long row = id * kbk + (j % c.bs) * kss + kh * ksh;
          double sc = 0;
          for (unsigned e = 0; e < c.d; e++) sc += Io<T>::get(q[((size_t)t * c.hq + h) * c.d + e]) * Io<T>::get(kp[row + e]);
          sc *= scale;
          w.push_back(sc);
          krows.push_back(row);
          m = std::max(m, sc);
        }
        double sum = 0;
        for (auto& x : w) sum += (x = std::exp(x - m));
        std::fill(out.begin(), out.end(), 0.0);
        for (size_t n = 0; n < w.size(); n++)
          for (unsigned e = 0; e < c.d; e++) out[e] += w[n] / sum * Io<T>::get(vp[krows[n] + e]);
        for (unsigned e = 0; e < c.d; e++) {
          const double got = Io<T>::get(o[((size_t)t * c.hq + h) * c.d + e]);
          const bool good = nan ? std::isnan(got) : (got == got && std::fabs(got - out[e]) <= Io<T>::eps * (1 + std::fabs(out[e])));
          if (!good) {
            if (ok) std::printf("FAIL %s paged_dec %s %s: token %u head %u col %u: %.6g, want %s%.6g\n", ARCH, Io<T>::name, c.name, t, h, e, got, nan ? "NaN, not " : "", out[e]);
            ok = false;
          }
        }
      }
    }
  }
  const unsigned* head = (const unsigned*)err;
  if (c.badId) {
    const unsigned long long pos = (unsigned long long)badSeq * maxBlocks + badCol;
    if (head[0] != tag || head[1] != 1 || err[1] != (unsigned long long)badId || err[2] != pos || err[3] != nblocks) {
      std::printf("FAIL %s paged_dec %s %s: error record %x %u %llu %llu %llu\n", ARCH, Io<T>::name, c.name, head[0], head[1], err[1], err[2], err[3]);
      ok = false;
    }
  } else if (head[0] != 0) {
    std::printf("FAIL %s paged_dec %s %s: an error was recorded with good ids\n", ARCH, Io<T>::name, c.name);
    ok = false;
  }
  if (!ok) failures++;
}

template <class T> static void all() {
  const std::vector<Case> cs = {
    // name, hq, hkv, d, bs, qlens, ctxs, window, i64 table, head pad, splits, bad id
    { "gqa4 d128 bs16 decodes 1 split", 32, 8, 128, 16, { 1, 1, 1, 1 }, { 1, 17, 200, 64 }, 0, false, 0, 1, false },
    { "gqa4 d128 bs16 decodes 4 splits", 32, 8, 128, 16, { 1, 1, 1, 1, 1 }, { 1, 15, 300, 64, 129 }, 0, false, 0, 4, false },
    { "gqa8 d64 bs16 chunks (two row tiles) + a long chunk, 3 splits", 16, 2, 64, 16, { 3, 1, 20, 2 }, { 40, 90, 60, 2 }, 0, false, 0, 3, false },
    { "gqa8 d64 long chunk untouched, 1 split", 8, 1, 64, 16, { 1, 20, 16 }, { 33, 50, 16 }, 0, true, 0, 1, false },
    { "mha d128 bs1 window i64 7 splits", 2, 2, 128, 1, { 1, 4, 1 }, { 100, 70, 5 }, 30, true, 0, 7, false },
    { "mha qlen16 d64 bs5 window, 2 splits", 3, 3, 64, 5, { 16, 1 }, { 40, 23 }, 9, false, 0, 2, false },
    // a key block wholly below the diagonal that only the chunk's first queries' windows cut
    { "gqa4 qlen4 d64 bs16 window past a key block, 2 splits", 8, 2, 64, 16, { 4, 16 }, { 300, 300 }, 100, false, 0, 2, false },
    { "g3 d80 bs5 pad 5 splits", 6, 2, 80, 5, { 1, 5 }, { 150, 77 }, 0, false, 8, 5, false },
    { "g2 d36 bs16 window (scalar copies)", 4, 2, 36, 16, { 1, 2 }, { 33, 80 }, 12, false, 0, 2, false },
    { "gqa4 d100 bs16 (bucket 128) more splits than key blocks", 8, 2, 100, 16, { 1, 1 }, { 20, 3 }, 0, true, 0, 9, false },
    { "gqa4 d128 bad block id, 3 splits", 8, 2, 128, 16, { 2, 1 }, { 9, 90 }, 0, false, 0, 3, true },
    { "mha d64 bad block id, 1 split", 2, 2, 64, 16, { 1 }, { 70 }, 0, false, 0, 1, true },
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
