// paged-prefill-emu.cpp: runs paged-prefill.hip (paged_fwd: flash.hip's forward kernel with its
// key and value tiles loaded through the block table) as written, through its HIP path, on the
// host emulator (hip-host/hip/hip_runtime.h: a block's threads as fibers), once per AMD code path
// (-D__gfx942__ / __gfx90a__: MFMA, wave64; __gfx1100__: WMMA RDNA3, wave32; __gfx1200__: WMMA
// RDNA4, wave32; __gfx1030__: FMA, wave32), with the matrix instructions in the layouts of AMD's
// calculator (hip-host/amdgcn-mma.h), against a double-precision reference of paged attention
// written here (query i of a sequence with qlen queries and ctx cached tokens sits at
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
    static auto fwd(unsigned hd) {                                                                      \
      switch (hd) {                                                                                     \
        case 64: return &paged_fwd_##DT##_64;                                                           \
        default: return &paged_fwd_##DT##_128;                                                          \
      }                                                                                                 \
    }                                                                                                   \
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
  int fault;         // 0 none, 1 a bad block id, 2 a NaN key
};

template <class T> static void run(const Case& c, uint64_t seed) {
  Rng rng{ seed };
  const unsigned seqs = (unsigned)c.qlens.size();
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
  if (c.fault == 1) {
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
  long long nanBlock = -1;
  if (c.fault == 2) {
    const unsigned j = c.ctxs[0] / 3;
    nanBlock = ids[j / c.bs];
    kp[nanBlock * kbk + (j % c.bs) * kss + 0 * ksh + 2] = Io<T>::put(NAN);
  }
  // meta: first rows, contexts, then the tiles of 64 rows
  std::vector<unsigned> meta(2 * seqs + 1, 0);
  for (unsigned s = 0; s < seqs; s++) meta[s + 1] = meta[s] + c.qlens[s];
  for (unsigned s = 0; s < seqs; s++) meta[seqs + 1 + s] = c.ctxs[s];
  unsigned tiles = 0;
  for (unsigned s = 0; s < seqs; s++)
    for (unsigned m0 = 0; m0 < c.qlens[s]; m0 += 64, tiles++) { meta.push_back(s); meta.push_back(m0); }
  const double scale = 1.0 / std::sqrt((double)c.d);
  std::vector<T> o((size_t)tokens * c.hq * c.d, Io<T>::put(NAN));
  unsigned long long err[4] = { 0, 0, 0, 0 };
  const unsigned tag = 0x5a5a3;
  const void* table = c.i64Table ? (const void*)t64.data() : (const void*)t32.data();
  const auto fn = Io<T>::fwd(bucket(c.d));
  emu::launch(emu::Dim3{ tiles, c.hq, 1 }, 256, L::WAVE, [&] {
    fn(o.data(), q.data(), kp.data(), vp.data(), table, meta.data(), err, 0, 0, 0, 0, 0, 0, seqs, c.hq, c.hkv, c.d, c.bs, nblocks, maxBlocks,
        c.i64Table ? 1u : 0u, tag, (long long)c.hq * c.d, c.d, kss, ksh, kss, ksh, tsr, 1, c.window, (float)scale);
  });

  bool ok = true;
  unsigned t = 0;
  std::vector<double> w, out(c.d);
  for (unsigned s = 0; s < seqs; s++) {
    for (unsigned i = 0; i < c.qlens[s]; i++, t++) {
      for (unsigned h = 0; h < c.hq; h++) {
        const unsigned kh = h / (c.hq / c.hkv);
        const long long pos = (long long)c.ctxs[s] - c.qlens[s] + i;
        bool nan = false;
        w.clear();
        std::vector<long long> rows;
        double m = -INFINITY;
        for (long long j = 0; j <= pos && !nan; j++) {
          if (c.window > 0 && j <= pos - c.window) continue;
          const long long id = ids[(size_t)s * maxBlocks + j / c.bs];
          if (id < 0 || id >= (long long)nblocks) { nan = true; break; }
          const long long row = id * kbk + (j % c.bs) * kss + kh * ksh;
          double sc = 0;
          for (unsigned e = 0; e < c.d; e++) sc += Io<T>::get(q[((size_t)t * c.hq + h) * c.d + e]) * Io<T>::get(kp[row + e]);
          sc *= scale;
          if (std::isnan(sc)) { nan = true; break; }
          w.push_back(sc);
          rows.push_back(row);
          m = std::max(m, sc);
        }
        double sum = 0;
        for (auto& x : w) sum += (x = std::exp(x - m));
        std::fill(out.begin(), out.end(), 0.0);
        for (size_t n = 0; n < w.size(); n++)
          for (unsigned e = 0; e < c.d; e++) out[e] += w[n] / sum * Io<T>::get(vp[rows[n] + e]);
        for (unsigned e = 0; e < c.d; e++) {
          const double got = Io<T>::get(o[((size_t)t * c.hq + h) * c.d + e]);
          const bool good = nan ? std::isnan(got) : (got == got && std::fabs(got - out[e]) <= Io<T>::eps * (1 + std::fabs(out[e])));
          if (!good) {
            if (ok) std::printf("FAIL %s paged_fwd %s %s: token %u head %u col %u: %.6g, want %s%.6g\n", ARCH, Io<T>::name, c.name, t, h, e, got, nan ? "NaN, not " : "", out[e]);
            ok = false;
          }
        }
      }
    }
  }
  const unsigned* head = (const unsigned*)err;
  if (c.fault == 1) {
    const unsigned long long pos = (unsigned long long)badSeq * maxBlocks + badCol;
    if (head[0] != tag || head[1] != 1 || err[1] != (unsigned long long)badId || err[2] != pos || err[3] != nblocks) {
      std::printf("FAIL %s paged_fwd %s %s: error record %x %u %llu %llu %llu\n", ARCH, Io<T>::name, c.name, head[0], head[1], err[1], err[2], err[3]);
      ok = false;
    }
  } else if (head[0] != 0) {
    std::printf("FAIL %s paged_fwd %s %s: an error was recorded with good ids\n", ARCH, Io<T>::name, c.name);
    ok = false;
  }
  if (!ok) failures++;
}

template <class T> static void all() {
  const std::vector<Case> cs = {
    { "gqa4 d64 bs16 chunk+prompt", 8, 2, 64, 16, { 70, 1, 20 }, { 200, 9, 20 }, 0, false, 0, 0 },
    { "mha d128 bs1 window i64", 2, 2, 128, 1, { 40, 3 }, { 100, 3 }, 30, true, 0, 0 },
    { "g3 d80 bs5 pad", 6, 2, 80, 5, { 130 }, { 150 }, 0, false, 8, 0 },
    { "g2 d36 bs16 window (scalar copies)", 4, 2, 36, 16, { 33, 17 }, { 33, 80 }, 12, false, 0, 0 },
    { "d100 bs16 (bucket 128)", 2, 1, 100, 16, { 20 }, { 60 }, 0, true, 0, 0 },
    { "d96 bad block id", 2, 1, 96, 16, { 5, 30 }, { 9, 64 }, 0, false, 0, 1 },
    { "d64 nan key", 4, 1, 64, 16, { 40 }, { 90 }, 0, false, 0, 2 },
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
