// flash-emu.cpp: runs flash.hip (flash_fwd, flash_dec) and attention.hip (attn_decode,
// attn_merge) as written, through their HIP path, on the host emulator (hip-host/hip/hip_runtime.h: a block's threads as
// fibers, at the wave size the arch's code path fixes), with the matrix instructions from
// hip-host/amdgcn-mma.h (layouts from AMD's calculator). One build per arch, picked like the AMD
// compiler does (-D__gfx942__, -D__gfx1100__, -D__gfx1200__, -D__gfx1030__, -D__gfx90a__), so
// FL_FAMILY, FlCfg (key block, column split, transposed V) and the arch layer are the real ones.
// Checked against a double-precision reference of attention written here from the op's
// definition (src/backends/cpu's rules: diagonal and window visibility, u8 and additive masks, a
// row that sees nothing gives zeros, NaN propagates), with inputs rounded to the dtype.
// Launch shapes as the host makes them on ROCm (src/runtime/rocm/tuning.ts, gpu/flash.ts's
// decodePlan, gpu/attention.ts's mergeSplits): flash_fwd 256 threads over 64 query rows;
// flash_dec 64 threads a split, splits along y; attn_decode 256 threads over 1 or 4 query rows,
// splits along y; attn_merge one wave doubled while its first loads do not cover the splits.
// Prints `ok <what>` per case family; exits 1 on a mismatch (an emulator abort exits otherwise).
//   clang++ -std=c++20 -O1 -mavx -D__HIP__ -D__gfx942__ -Itest/emu/hip-host test/emu/flash-emu.cpp && ./a.out [f16|bf16 [fwd|dec]]
#include "hip-host/amdgcn-mma.h"
#include "../../hip-src/flash.hip"
// attention.hip writes `__shared__ alignas(16)`, which reads `static alignas(16)` here: the GNU
// spelling takes that place
#define alignas(n) __attribute__((aligned(n)))
#include "../../hip-src/attention.hip"
#undef alignas
#include <string>

#include "attn-emu.h"

static bool quiet = false;  // measurements count mismatches without printing them

// flash_fwd / flash_dec entry points of a dtype by head-dim bucket
template <class T> struct Kern;
#define EMU_KERN(DT, T)                                                                                                  \
  template <> struct Kern<T> {                                                                                           \
    static auto fwd(int hd) {                                                                                            \
      switch (hd) {                                                                                                      \
        case 64: return &flash_fwd_##DT##_64;                                                                            \
        case 80: return &flash_fwd_##DT##_80;                                                                            \
        case 96: return &flash_fwd_##DT##_96;                                                                            \
        case 128: return &flash_fwd_##DT##_128;                                                                          \
        default: return &flash_fwd_##DT##_256;                                                                           \
      }                                                                                                                  \
    }                                                                                                                    \
    static auto dec(int hd) {                                                                                            \
      switch (hd) {                                                                                                      \
        case 64: return &flash_dec_##DT##_64;                                                                            \
        case 80: return &flash_dec_##DT##_80;                                                                            \
        case 96: return &flash_dec_##DT##_96;                                                                            \
        case 128: return &flash_dec_##DT##_128;                                                                          \
        default: return &flash_dec_##DT##_256;                                                                           \
      }                                                                                                                  \
    }                                                                                                                    \
    static constexpr auto merge = &attn_merge_##DT;                                                                      \
    static constexpr auto att1 = &attn_decode_r1_##DT, att4 = &attn_decode_r4_##DT;                                      \
  };
EMU_KERN(f16, f16)
EMU_KERN(bf16, bf16)

static int bucket(int d) { return d <= 64 ? 64 : d <= 80 ? 80 : d <= 96 ? 96 : d <= 128 ? 128 : 256; }

// One attention problem: q [b, hq, tq, d], k and v [b, hkv, tk, d] read through strides (in
// elements) from larger buffers, an optional mask [b, hq|1, tq, tk] (msh 0: shared by the heads).
struct Case {
  const char* what;
  unsigned b, hq, hkv, tq, tk, d;
  unsigned maskKind = 0, hasDiag = 0;
  long long diag = 0, window = 0;
  double qmag = 1;        // query magnitude: larger makes later key blocks raise the running max
  bool interleaved = false;  // q as [b, tq, hq, d] and k, v as [b, tk, hkv, d + pad]: not head-major
  bool oddStrides = false;   // strides not multiples of 8 elements: the kernels' scalar copy paths
  int nanKey = -1;         // a NaN in this key's row of k (batch 0, kv head 0)
  int hideRow = -1;        // with a u8 mask, this query row sees no key
  unsigned splits = 1;     // flash_dec: splits asked for
  // an additive mask lifting key 0 by 10 over keys of scores near 0: every other probability is
  // e^-10 = 4.5e-5, below f16's smallest normal 2^-14 (gfx90a's MFMA flushes such inputs)
  bool spike = false;
};

template <class T> struct Problem {
  Case c;
  std::vector<T> q, k, v, mask;
  std::vector<uint8_t> mask8;
  long long qsb, qsh, qst, ksb, ksh, kst, vsb, vsh, vst, msb = 0, msh = 0, mst = 0, msk = 0;
  std::vector<double> ref;     // [b, hq, tq, d]
  std::vector<double> refLse;  // [b, hq, tq]
  float scale;

  explicit Problem(const Case& cs, uint64_t seed) : c(cs) {
    Rng rng{seed * 0x9E3779B97F4A7C15ull + 1};
    const unsigned pad = c.oddStrides ? 3 : 8;
    const unsigned dp = c.d + pad;
    if (c.interleaved) {
      qst = (long long)c.hq * dp; qsh = dp; qsb = (long long)c.tq * qst;
      kst = (long long)c.hkv * dp; ksh = dp; ksb = (long long)c.tk * kst;
    } else {
      qst = dp; qsh = (long long)c.tq * qst; qsb = (long long)c.hq * qsh;
      kst = dp; ksh = (long long)c.tk * kst; ksb = (long long)c.hkv * ksh;
    }
    vst = kst; vsh = ksh; vsb = ksb;
    q.assign((size_t)c.b * qsb, Io<T>::put(NAN));
    k.assign((size_t)c.b * ksb, Io<T>::put(NAN));
    v.assign((size_t)c.b * vsb, Io<T>::put(NAN));
    auto fill = [&](std::vector<T>& x, long long sb, long long sh, long long st, unsigned h, unsigned t, double mag) {
      for (unsigned bi = 0; bi < c.b; bi++)
        for (unsigned hi = 0; hi < h; hi++)
          for (unsigned ti = 0; ti < t; ti++)
            for (unsigned di = 0; di < c.d; di++) x[bi * sb + hi * sh + ti * st + di] = Io<T>::put(mag * rng.uni(-1, 1));
    };
    fill(q, qsb, qsh, qst, c.hq, c.tq, c.qmag);
    fill(k, ksb, ksh, kst, c.hkv, c.tk, c.spike ? 0.01 : 1);
    fill(v, vsb, vsh, vst, c.hkv, c.tk, 1);
    // (spike: values of one sign, so what the flushed probabilities carry adds up)
    if (c.spike) for (T& x : v) x = Io<T>::put(std::fabs(Io<T>::get(x)));
    if (c.nanKey >= 0) k[(size_t)c.nanKey * kst + 1] = Io<T>::put(NAN);
    if (c.maskKind) {
      mst = c.tk + 5; msk = 1; msh = 0; msb = (long long)c.tq * mst;
      const size_t n = (size_t)c.b * msb;
      if (c.maskKind == 1) {
        mask8.assign(n, 7);
        for (size_t x = 0; x < n; x++) mask8[x] = rng.uni(0, 1) < 0.3 ? 0 : (uint8_t)(1 + x % 5);
        if (c.hideRow >= 0)
          for (unsigned bi = 0; bi < c.b; bi++)
            for (unsigned j = 0; j < c.tk; j++) mask8[bi * msb + c.hideRow * mst + j] = 0;
      } else {
        mask.assign(n, Io<T>::put(0));
        for (size_t x = 0; x < n; x++) {
          const double u = rng.uni(0, 1);
          mask[x] = Io<T>::put(c.spike ? (x % mst == 0 ? 10 : 0) : u < 0.2 ? -INFINITY : 4 * u - 2);
        }
      }
    }
    scale = (float)(1.0 / std::sqrt((double)c.d));
    reference();
  }

  bool visible(long long i, long long j) const {
    if (!c.hasDiag) return true;
    if (j > i + c.diag) return false;
    return c.window <= 0 || j > i + c.diag - c.window;
  }

  void reference() {
    ref.assign((size_t)c.b * c.hq * c.tq * c.d, 0);
    // each row's log-sum-exp of the scaled scores: +inf where it sees nothing, NaN with a NaN score
    refLse.assign((size_t)c.b * c.hq * c.tq, INFINITY);
    const unsigned g = c.hq / c.hkv;
    std::vector<double> s(c.tk);
    for (unsigned bi = 0; bi < c.b; bi++)
      for (unsigned h = 0; h < c.hq; h++)
        for (unsigned i = 0; i < c.tq; i++) {
          const unsigned kh = h / g;
          double mx = -INFINITY;
          bool nan = false, any = false;
          for (unsigned j = 0; j < c.tk; j++) {
            s[j] = -INFINITY;
            if (!visible(i, j)) continue;
            const long long mo = bi * msb + h * msh + i * mst + j * msk;
            if (c.maskKind == 1 && mask8[mo] == 0) continue;
            double dot = 0;
            for (unsigned e = 0; e < c.d; e++)
              dot += Io<T>::get(q[bi * qsb + h * qsh + i * qst + e]) * Io<T>::get(k[bi * ksb + kh * ksh + j * kst + e]);
            double x = dot * scale;
            if (c.maskKind == 2) x += Io<T>::get(mask[mo]);
            if (x != x) nan = true;
            if (x == -INFINITY) continue;
            s[j] = x;
            any = true;
            mx = std::max(mx, x);
          }
          double* out = &ref[(((size_t)bi * c.hq + h) * c.tq + i) * c.d];
          double& lse = refLse[((size_t)bi * c.hq + h) * c.tq + i];
          if (nan) { for (unsigned e = 0; e < c.d; e++) out[e] = NAN; lse = NAN; continue; }
          if (!any) continue;
          double sum = 0;
          for (unsigned j = 0; j < c.tk; j++) {
            if (s[j] == -INFINITY) continue;
            const double p = std::exp(s[j] - mx);
            sum += p;
            for (unsigned e = 0; e < c.d; e++) out[e] += p * Io<T>::get(v[bi * vsb + kh * vsh + j * vst + e]);
          }
          for (unsigned e = 0; e < c.d; e++) out[e] /= sum;
          lse = mx + std::log(sum);
        }
  }

  // compares flash_fwd's lse [b, hq, tq] (f32: the products' f32 sums and the exp2 approximation)
  void check_lse(const std::vector<float>& lse, const std::string& label) {
    int bad = 0;
    for (size_t x = 0; x < refLse.size(); x++) {
      const double got = lse[x], want = refLse[x];
      const bool ok = want != want ? got != got : std::isinf(want) ? got == want : std::fabs(got - want) <= 1e-4 * (1 + std::fabs(want));
      if (!ok && bad++ < 5 && !quiet) std::printf("MISMATCH %s: lse[%zu] = %.8g, want %.8g\n", label.c_str(), x, got, want);
    }
    if (bad) {
      if (!quiet) std::printf("MISMATCH %s: %d of %zu lse rows\n", label.c_str(), bad, refLse.size());
      failures++;
    }
  }

  const void* maskPtr() const { return c.maskKind == 1 ? (const void*)mask8.data() : c.maskKind == 2 ? (const void*)mask.data() : nullptr; }

  // compares o [b, hq, tq, d]; returns the largest error over the tolerance's scale
  double check(const std::vector<T>& o, const std::string& label) {
    // P is rounded to the dtype for the second product and o is stored in it: a few roundings
    // of values below 1, plus the f32 sums
    const double tol = Io<T>::eps;
    double worst = 0;
    int bad = 0;
    for (size_t x = 0; x < ref.size(); x++) {
      const double got = Io<T>::get(o[x]), want = ref[x];
      const bool ok = want != want ? got != got : (got == got && std::fabs(got - want) <= tol * (1 + std::fabs(want)));
      if (want == want && got == got) worst = std::max(worst, std::fabs(got - want) / (1 + std::fabs(want)));
      if (!ok && bad++ < 5 && !quiet) {
        const size_t e = x % c.d, i = x / c.d % c.tq, h = x / c.d / c.tq % c.hq, bi = x / c.d / c.tq / c.hq;
        std::printf("MISMATCH %s: o[%zu, %zu, %zu, %zu] = %.6g, want %.6g\n", label.c_str(), bi, h, i, e, got, want);
      }
    }
    if (bad) {
      if (!quiet) std::printf("MISMATCH %s: %d of %zu elements\n", label.c_str(), bad, ref.size());
      failures++;
    }
    return worst;
  }
};

template <class T> static std::string label(const char* kern, const Case& c) {
  char b[256];
  std::snprintf(b, sizeof b, "%s %s %s %s d%u (hd %d) b%u hq%u hkv%u tq%u tk%u", ARCH, kern, Io<T>::name, c.what, c.d, bucket(c.d), c.b, c.hq,
      c.hkv, c.tq, c.tk);
  return b;
}

// keep: pass lse (as flash.ts does while autograd records) and check it; else null, as inference
template <class T> static double run_fwd(const Case& cs, uint64_t seed, bool keep = true) {
  Problem<T> p(cs, seed);
  const Case& c = p.c;
  std::vector<T> o((size_t)c.b * c.hq * c.tq * c.d, Io<T>::put(NAN));
  // the rows' log-sum-exp at an offset (what precedes it must stay untouched)
  std::vector<float> lse(keep ? (size_t)c.b * c.hq * c.tq + 3 : 0, NAN);
  const auto fn = Kern<T>::fwd(bucket(c.d));
  const emu::Dim3 grid{c.b * c.hq, (c.tq + 63) / 64, 1};
  emu::launch(grid, 256, L::WAVE, [&] {
    fn(o.data(), p.q.data(), p.k.data(), p.v.data(), p.maskPtr(), 0, 0, 0, 0, 0, c.hq, c.hkv, c.tq, c.tk, c.d, p.qsb, p.qsh, p.qst, p.ksb,
        p.ksh, p.kst, p.vsb, p.vsh, p.vst, p.msb, p.msh, p.mst, p.msk, c.maskKind, c.hasDiag, c.diag, c.window, p.scale,
        keep ? lse.data() : nullptr, 3);
  });
  const std::string lb = label<T>("flash_fwd", c);
  if (keep) {
    for (int x = 0; x < 3; x++)
      if (!std::isnan(lse[x])) {
        std::printf("MISMATCH %s: lse written before its offset\n", lb.c_str());
        failures++;
      }
    p.check_lse(std::vector<float>(lse.begin() + 3, lse.end()), lb);
  }
  return p.check(o, lb);
}

// decodePlan on ROCm for a given number of splits asked for
template <class T> static double run_dec(const Case& cs, uint64_t seed) {
  Problem<T> p(cs, seed);
  const Case& c = p.c;
  const int hd = bucket(c.d);
  const unsigned bn = L::WAVE == 32 || hd > 128 ? 16 : 64;
  const unsigned g = c.hq / c.hkv, tiles = (g * c.tq + 15) / 16, per = c.b * c.hkv * tiles;
  const unsigned keyBlocks = (c.tk + bn - 1) / bn, want = std::max(1u, std::min(keyBlocks, c.splits));
  const unsigned bps = (keyBlocks + want - 1) / want, splits = (keyBlocks + bps - 1) / bps, perSplit = bps * bn;
  const size_t rows = (size_t)c.b * c.hq * c.tq;
  std::vector<T> o(rows * c.d, Io<T>::put(NAN));
  std::vector<float> wso(rows * splits * c.d, NAN), wsml(rows * splits * 2, NAN);
  const auto fn = Kern<T>::dec(hd);
  emu::launch(emu::Dim3{per, splits, 1}, 64, L::WAVE, [&] {
    fn(o.data(), wso.data(), wsml.data(), p.q.data(), p.k.data(), p.v.data(), p.maskPtr(), 0, 0, 0, 0, 0, c.hq, c.hkv, c.tq, c.tk, c.d, p.qsb,
        p.qsh, p.qst, p.ksb, p.ksh, p.kst, p.vsb, p.vsh, p.vst, p.msb, p.msh, p.mst, p.msk, c.maskKind, c.hasDiag, c.diag, c.window, p.scale,
        splits, perSplit);
  });
  if (splits > 1) {
    unsigned threads = (unsigned)L::WAVE;
    while (threads < 256 && threads / 32 * 8 < splits) threads *= 2;
    emu::launch(emu::Dim3{(unsigned)rows, (c.d + 31) / 32, 1}, threads, L::WAVE, [&] {
      Kern<T>::merge(o.data(), wso.data(), wsml.data(), 0, splits, c.d);
    });
  }
  char what[64];
  std::snprintf(what, sizeof what, "flash_dec(%u splits)", splits);
  return p.check(o, label<T>(what, c));
}

// attention.hip's decode kernel on the same problems, as gpu/attention.ts launches it: RT 1 or
// 4 query rows a block of 256 threads, the keys split in `splits` (then attn_merge)
template <class T> static double run_att(const Case& cs, uint64_t seed) {
  Problem<T> p(cs, seed);
  const Case& c = p.c;
  const unsigned g = c.hq / c.hkv, rt = g * c.tq == 1 ? 1 : 4, tiles = (g * c.tq + rt - 1) / rt;
  const unsigned perSplit = (c.tk + c.splits - 1) / c.splits, used = (c.tk + perSplit - 1) / perSplit;
  const size_t rows = (size_t)c.b * c.hq * c.tq;
  std::vector<T> o(rows * c.d, Io<T>::put(NAN));
  std::vector<float> wso(rows * used * c.d, NAN), wsml(rows * used * 2, NAN);
  const auto fn = rt == 1 ? Kern<T>::att1 : Kern<T>::att4;
  emu::launch(emu::Dim3{c.b * c.hkv * tiles, used, 1}, 256, L::WAVE, [&] {
    fn(o.data(), wso.data(), wsml.data(), p.q.data(), p.k.data(), p.v.data(), p.maskPtr(), 0, 0, 0, 0, 0, c.hq, c.hkv, c.tq, c.tk, c.d, c.d, p.qsb,
        p.qsh, p.qst, p.ksb, p.ksh, p.kst, p.vsb, p.vsh, p.vst, p.msb, p.msh, p.mst, p.msk, c.maskKind, c.hasDiag, c.diag, c.window, p.scale, used,
        perSplit);
  });
  if (used > 1) {
    unsigned threads = (unsigned)L::WAVE;
    while (threads < 256 && threads / 32 * 8 < used) threads *= 2;
    emu::launch(emu::Dim3{(unsigned)rows, (c.d + 31) / 32, 1}, threads, L::WAVE, [&] {
      Kern<T>::merge(o.data(), wso.data(), wsml.data(), 0, used, c.d);
    });
  }
  char what[64];
  std::snprintf(what, sizeof what, "attn_decode_r%u(%u splits)", rt, used);
  return p.check(o, label<T>(what, c));
}

enum Kind { FWD, DEC, ATT };

template <class T> static void family(const char* name, const std::vector<Case>& cases, Kind kind) {
  const int before = failures;
  double worst = 0;
  uint64_t seed = 1;
  for (const Case& c : cases)
    worst = std::max(worst, kind == DEC ? run_dec<T>(c, seed++) : kind == ATT ? run_att<T>(c, seed++) : run_fwd<T>(c, seed++));
  if (failures == before) std::printf("ok %s %s %s wave%d (%zu cases, worst error %.3g of the scale)\n", ARCH, name, Io<T>::name, L::WAVE, cases.size(), worst);
}

static std::string only_kernel;  // argv[2]: fwd or dec (both if absent)

// Not a check: how far flash_fwd lands from the reference when most probabilities are f16
// subnormals (Case::spike), printed for docs/internals/amd-emulation.md. On gfx90a the MFMA
// flushes them to zero in the P V product while the row sum keeps them.
template <class T> static void measure_flush() {
  Case s{"spike", 1, 2, 2, 32, 1024, 64, 2};
  s.spike = true;
  const int before = failures;
  quiet = true;
  const double worst = run_fwd<T>(s, 99, false);
  quiet = false;
  const bool over = failures != before;
  failures = before;
  std::printf("measure %s flash_fwd %s: %u keys, all but one at p = e^-10, values in [0, 1]: worst error %.3g of the scale (%s the 1-ulp tolerance)\n", ARCH,
      Io<T>::name, s.tk, worst, over ? "over" : "within");
}

template <class T> static void all() {
  std::vector<Case> fwd = {
      {"plain", 1, 2, 2, 64, 64, 64},
      {"gqa rows cut keys cut", 2, 4, 2, 70, 100, 64, 0, 0, 0, 0, 3.0},
      {"causal", 1, 2, 1, 80, 80, 64, 0, 1, 0},
      {"causal offset window", 1, 2, 2, 40, 130, 64, 0, 1, 90, 50, 2.0},
      {"u8 mask hidden row interleaved", 1, 4, 2, 33, 70, 64, 1, 0, 0, 0, 1.0, true, false, -1, 5},
      {"additive mask", 1, 2, 2, 30, 90, 64, 2},
      {"odd strides d 60", 1, 2, 2, 20, 50, 60, 0, 0, 0, 0, 1.0, false, true},
      {"nan key", 1, 2, 1, 20, 40, 64, 0, 0, 0, 0, 1.0, false, false, 7},
      {"hd 80 causal", 1, 2, 2, 24, 40, 80, 0, 1, 16},
      {"hd 128 d 120", 1, 1, 1, 20, 36, 120},
      {"hd 256 window", 1, 1, 1, 20, 40, 256, 0, 1, 20, 12, 2.0},
  };
  if (only_kernel != "dec") family<T>("flash_fwd", fwd, FWD);
  std::vector<Case> dec = {
      {"one query gqa", 2, 4, 1, 1, 100, 64},
      {"split", 1, 8, 2, 1, 300, 64, 0, 0, 0, 0, 3.0, false, false, -1, -1, 4},
      {"split causal tq 3", 1, 4, 2, 3, 150, 64, 0, 1, 147, 0, 1.0, false, false, -1, -1, 3},
      {"split window interleaved", 1, 4, 1, 2, 200, 64, 0, 1, 198, 60, 2.0, true, false, -1, -1, 5},
      {"u8 mask split", 1, 2, 1, 4, 120, 64, 1, 0, 0, 0, 1.0, false, false, -1, 2, 2},
      {"additive mask split", 1, 2, 2, 1, 90, 64, 2, 0, 0, 0, 1.0, false, false, -1, -1, 3},
      {"odd strides split", 1, 2, 2, 1, 70, 56, 0, 0, 0, 0, 1.0, false, true, -1, -1, 2},
      {"nan key split", 1, 2, 1, 1, 80, 64, 0, 0, 0, 0, 1.0, false, false, 5, -1, 2},
      {"hd 80 split", 1, 4, 4, 1, 60, 80, 0, 0, 0, 0, 1.0, false, false, -1, -1, 2},
      {"hd 256 split", 1, 2, 1, 2, 50, 256, 0, 1, 48, 0, 1.0, false, false, -1, -1, 2},
  };
  if (only_kernel != "fwd") family<T>("flash_dec+attn_merge", dec, DEC);
  if (only_kernel.empty()) family<T>("attn_decode+attn_merge", dec, ATT);
}

// flash-emu [f16|bf16 [fwd|dec]]: a subset (the mutation controls run one), else everything
int main(int argc, char** argv) {
  const std::string dt = argc > 1 ? argv[1] : "";
  if (dt == "measure-flush") {
    measure_flush<f16>();
    measure_flush<bf16>();
    return 0;
  }
  if (argc > 2) only_kernel = argv[2];
  if (dt != "bf16") all<f16>();
  if (dt != "f16") all<bf16>();
  if (dt.empty()) {
    measure_flush<f16>();
    measure_flush<bf16>();
  }
  if (failures) {
    std::printf("%d mismatching cases\n", failures);
    return 1;
  }
  return 0;
}
