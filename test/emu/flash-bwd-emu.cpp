// flash-bwd-emu.cpp: runs hip-src/flash-bwd.hip (flash_bwd_dq, then flash_bwd_dkdv) as written,
// through its HIP path, on the host emulator (hip-host/hip/hip_runtime.h: a block's threads as
// fibers, at the wave size of the arch picked with -D__gfx942__, -D__gfx90a__, -D__gfx1100__,
// -D__gfx1200__ or -D__gfx1030__, which also picks the kernels' matrix-instruction family), with
// the matrix instructions from hip-host/amdgcn-mma.h (layouts from AMD's calculator), launched as
// src/backends/gpu/flash-grad.ts launches them (B x B threads, grids over blocks of query and
// key rows), each 16-bit case through both bodies (FMA, and matrix cores where the arch has them:
// the tiled body up to head dim 128, the 16 x 16 one at 256). Checked against a double-precision gradient of
// attention written here from the op's definition (diagonal and window visibility, u8 and
// additive masks, a row that sees nothing has zero output and gradient, NaN propagates), with
// inputs rounded to the dtype. The forward output o the kernels read is the reference's, rounded.
// -DFB_HOST_NV builds the NVIDIA body instead (wave 32, mma.sync and ldmatrix modelled from the
// PTX ISA).
// Prints `ok <what>` per dtype; exits 1 on a mismatch.
//   clang++ -std=c++20 -O1 -mavx -D__HIP__ -D__gfx942__ -Itest/emu/hip-host test/emu/flash-bwd-emu.cpp && ./a.out
#include "hip-host/amdgcn-mma.h"
#if defined(FB_HOST_NV)
// The NVIDIA body on the host: mma.sync.m16n8k16 as a wave operation of 32 lanes, each lane's
// result from the PTX ISA's fragment layout (isa-models.h), which is written independently of
// hip-src/mma-layout.h, whose index functions the kernels' operand gathers use.
#include "isa-models.h"
#include "../../hip-src/compat.h"
namespace fb_nv {
struct Lane {
  u32 a[4], b[2];
  float c[4];
};
struct Out {
  float d[4];
};
}  // namespace fb_nv
template <class T> void fb_mma_nv(float* c, const u32 (&a)[4], u32 b0, u32 b1);
template <class T> static void fb_mma_nv_host(float* c, const u32 (&a)[4], u32 b0, u32 b1, Dt dt) {
  fb_nv::Lane me{{a[0], a[1], a[2], a[3]}, {b0, b1}, {c[0], c[1], c[2], c[3]}};
  const int lane = (int)emu::lane();
  const fb_nv::Out r = emu::wave_op_wide(&me, sizeof me, [&](const unsigned char* lanes) {
    WaveRegs ra{}, rb{};
    WaveAcc cc{}, d{};
    for (int l = 0; l < 32; l++) {
      fb_nv::Lane x;
      std::memcpy(&x, lanes + l * emu::WIDE, sizeof x);
      for (int w = 0; w < 4; w++) ra.w[l][w] = x.a[w];
      rb.w[l][0] = x.b[0];
      rb.w[l][1] = x.b[1];
      for (int e = 0; e < 4; e++) cc.f[l][e] = x.c[e];
    }
    const std::string err = model_mma_m16n8k16(d, ra, rb, cc, dt);
    if (!err.empty()) {
      std::fprintf(stderr, "emu: %s\n", err.c_str());
      std::abort();
    }
    fb_nv::Out o;
    for (int e = 0; e < 4; e++) o.d[e] = d.f[lane][e];
    return o;
  });
  for (int e = 0; e < 4; e++) c[e] = r.d[e];
}
template <> void fb_mma_nv<f16>(float* c, const u32 (&a)[4], u32 b0, u32 b1) { fb_mma_nv_host<f16>(c, a, b0, b1, DT_F16); }
template <> void fb_mma_nv<bf16>(float* c, const u32 (&a)[4], u32 b0, u32 b1) { fb_mma_nv_host<bf16>(c, a, b0, b1, DT_BF16); }
// ldmatrix.sync.aligned.m8n8.x4(.trans).shared.b16 from the PTX ISA: lanes 8 i .. 8 i + 7 give the
// addresses of rows 0..7 of matrix i; without .trans lane l receives in register i row l / 4 of
// matrix i, elements 2 (l % 4) and 2 (l % 4) + 1 (the first in the low half); with .trans, element
// l / 4 of rows 2 (l % 4) and 2 (l % 4) + 1
template <int TRANS> void fb_ldsm(u32 (&r)[4], const void* p);
template <int TRANS> static void fb_ldsm_host(u32 (&r)[4], const void* p) {
  struct Regs {
    u32 r[4];
  };
  const int lane = (int)emu::lane();
  const Regs got = emu::wave_op_wide(&p, sizeof p, [&](const unsigned char* lanes) {
    const auto row = [&](int m, int rr) {
      const void* at;
      std::memcpy(&at, lanes + (8 * m + rr) * emu::WIDE, sizeof at);
      return (const uint16_t*)at;
    };
    Regs x;
    for (int m = 0; m < 4; m++) {
      if (TRANS) x.r[m] = row(m, 2 * (lane % 4))[lane / 4] | (u32)row(m, 2 * (lane % 4) + 1)[lane / 4] << 16;
      else x.r[m] = row(m, lane / 4)[2 * (lane % 4)] | (u32)row(m, lane / 4)[2 * (lane % 4) + 1] << 16;
    }
    return x;
  });
  for (int m = 0; m < 4; m++) r[m] = got.r[m];
}
template <> void fb_ldsm<0>(u32 (&r)[4], const void* p) { fb_ldsm_host<0>(r, p); }
template <> void fb_ldsm<1>(u32 (&r)[4], const void* p) { fb_ldsm_host<1>(r, p); }
#endif
#include "../../hip-src/flash-bwd.hip"
#include <string>

#include "emu-rng.h"
#include "emu-io.h"

#if defined(FB_HOST_NV)
static const char* ARCH = "nvidia";
static const int WAVE = 32;
#elif defined(__gfx90a__)
static const char* ARCH = "gfx90a";
static const int WAVE = 64;
#elif defined(__gfx942__)
static const char* ARCH = "gfx942";
static const int WAVE = 64;
#elif defined(__gfx1100__)
static const char* ARCH = "gfx1100";
static const int WAVE = 32;
#elif defined(__gfx1200__)
static const char* ARCH = "gfx1200";
static const int WAVE = 32;
#else
static const char* ARCH = "gfx1030";
static const int WAVE = 32;
#endif

static int failures = 0;

template <class T> struct Io;
template <> struct Io<float> : EmuIo<float> {
  // f32 sums of a few hundred products
  static constexpr double tol = 2e-5;
};
template <> struct Io<f16> : EmuIo<f16> {
  // one ulp at the scale: the output rounding (half an ulp) and D = rowsum(dO * O) from the rounded o
  static constexpr double tol = 1.0 / 1024;
};
template <> struct Io<bf16> : EmuIo<bf16> {
  static constexpr double tol = 1.0 / 128;
};

static unsigned mma = 0;  // the kernels' mma argument: 1 takes the matrix-core body where there is one

// rows a block owns, as flash-grad.ts picks them: 64 where the tiled body runs, else the tile B
template <class T, int HD> static int rows() { return mma && FbTc<T, HD>::ON ? FbTc<T, HD>::BT : FbCfg<T, HD>::B; }

template <class T> struct Kern;
// the tiled kernels (f16 and bf16 up to head dim 128) where FbTc::ON and mma, as flash-grad.ts
// picks them; else the 16 x 16 bodies' kernels
#define EMU_KERN(DT, T, TC)                                                   \
  template <> struct Kern<T> {                                                \
    static auto dq(int hd) {                                                  \
      const bool tc = mma && FbTc<T, 64>::ON;                                 \
      switch (hd) {                                                           \
        case 64: return tc ? TC(dq, DT, 64) : &flash_bwd_dq_##DT##_64;        \
        case 80: return tc ? TC(dq, DT, 80) : &flash_bwd_dq_##DT##_80;        \
        case 96: return tc ? TC(dq, DT, 96) : &flash_bwd_dq_##DT##_96;        \
        case 128: return tc ? TC(dq, DT, 128) : &flash_bwd_dq_##DT##_128;     \
        default: return &flash_bwd_dq_##DT##_256;                             \
      }                                                                       \
    }                                                                         \
    static auto dkdv(int hd) {                                                \
      const bool tc = mma && FbTc<T, 64>::ON;                                 \
      switch (hd) {                                                           \
        case 64: return tc ? TC(dkdv, DT, 64) : &flash_bwd_dkdv_##DT##_64;    \
        case 80: return tc ? TC(dkdv, DT, 80) : &flash_bwd_dkdv_##DT##_80;    \
        case 96: return tc ? TC(dkdv, DT, 96) : &flash_bwd_dkdv_##DT##_96;    \
        case 128: return tc ? TC(dkdv, DT, 128) : &flash_bwd_dkdv_##DT##_128; \
        default: return &flash_bwd_dkdv_##DT##_256;                           \
      }                                                                       \
    }                                                                         \
    static int tile(int hd) {                                                 \
      switch (hd) {                                                           \
        case 64: return rows<T, 64>();                                        \
        case 80: return rows<T, 80>();                                        \
        case 96: return rows<T, 96>();                                        \
        case 128: return rows<T, 128>();                                      \
        default: return rows<T, 256>();                                       \
      }                                                                       \
    }                                                                         \
    static unsigned threads(int hd) {                                         \
      if (hd <= 128 && mma && FbTc<T, 64>::ON) return 256;                    \
      switch (hd) {                                                           \
        case 64: return FbCfg<T, 64>::NT;                                     \
        case 80: return FbCfg<T, 80>::NT;                                     \
        case 96: return FbCfg<T, 96>::NT;                                     \
        case 128: return FbCfg<T, 128>::NT;                                   \
        default: return FbCfg<T, 256>::NT;                                    \
      }                                                                       \
    }                                                                         \
  };
#define EMU_TC(K, DT, HD) &flash_bwd_##K##_tc_##DT##_##HD
// f32 has no tiled kernels (FbTc::ON is false for it)
#define EMU_NO_TC(K, DT, HD) &flash_bwd_##K##_##DT##_##HD
EMU_KERN(f32, float, EMU_NO_TC)
EMU_KERN(f16, f16, EMU_TC)
EMU_KERN(bf16, bf16, EMU_TC)

// which body the kernels run: the matrix cores only for 16-bit types on archs that have them
template <class T> static const char* body() { return mma && FbHasMma<T>::v ? "mma" : "fma"; }

static int bucket(int d) { return d <= 64 ? 64 : d <= 80 ? 80 : d <= 96 ? 96 : d <= 128 ? 128 : 256; }

// One problem: q, o, dO [b, hq, tq, d], k, v [b, hkv, tk, d] contiguous; an optional mask
// [b, 1, tq, tk] (msh 0: shared by the heads) or [b, hq, tq, tk], read through strides.
struct Case {
  const char* what;
  unsigned b, hq, hkv, tq, tk, d;
  unsigned maskKind = 0, hasDiag = 0;
  long long diag = 0, window = 0;
  double qmag = 1;
  int nanKey = -1;   // a NaN in this key's row of k (batch 0, kv head 0)
  int hideRow = -1;  // with a u8 mask, this query row sees no key
  bool maskPerHead = false;  // a mask [b, hq, tq, tk] instead of one shared by the heads
};

template <class T> struct Problem {
  Case c;
  std::vector<T> q, k, v, o, dout, mask;
  std::vector<uint8_t> mask8;
  long long msb = 0, msh = 0, mst = 0, msk = 0;
  std::vector<double> dq, dk, dv, lse, dd;
  float scale;

  explicit Problem(const Case& cs, uint64_t seed) : c(cs) {
    Rng rng{seed * 0x9E3779B97F4A7C15ull + 7};
    const size_t nq = (size_t)c.b * c.hq * c.tq * c.d, nk = (size_t)c.b * c.hkv * c.tk * c.d;
    auto fill = [&](std::vector<T>& x, size_t n, double mag) {
      x.resize(n);
      for (T& e : x) e = Io<T>::put(mag * rng.uni(-1, 1));
    };
    fill(q, nq, c.qmag);
    fill(k, nk, 1);
    fill(v, nk, 1);
    fill(dout, nq, 1);
    if (c.nanKey >= 0) k[(size_t)c.nanKey * c.d + 1] = Io<T>::put(NAN);
    if (c.maskKind) {
      mst = c.tk + 3; msk = 1;
      msh = c.maskPerHead ? (long long)c.tq * mst : 0;
      msb = c.maskPerHead ? (long long)c.hq * msh : (long long)c.tq * mst;
      const size_t n = (size_t)c.b * msb;
      if (c.maskKind == 1) {
        mask8.assign(n, 9);
        for (size_t x = 0; x < n; x++) mask8[x] = rng.uni(0, 1) < 0.3 ? 0 : (uint8_t)(1 + x % 5);
        if (c.hideRow >= 0)
          for (unsigned bi = 0; bi < c.b; bi++)
            for (unsigned h = 0; h < (c.maskPerHead ? c.hq : 1); h++)
            for (unsigned j = 0; j < c.tk; j++) mask8[bi * msb + h * msh + c.hideRow * mst + j] = 0;
      } else {
        mask.assign(n, Io<T>::put(0));
        for (size_t x = 0; x < n; x++) {
          const double u = rng.uni(0, 1);
          mask[x] = Io<T>::put(u < 0.2 ? -INFINITY : 4 * u - 2);
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
  double Q(unsigned bi, unsigned h, unsigned i, unsigned e) const { return Io<T>::get(q[(((size_t)bi * c.hq + h) * c.tq + i) * c.d + e]); }
  double dO(unsigned bi, unsigned h, unsigned i, unsigned e) const { return Io<T>::get(dout[(((size_t)bi * c.hq + h) * c.tq + i) * c.d + e]); }
  double K(unsigned bi, unsigned h, unsigned j, unsigned e) const { return Io<T>::get(k[(((size_t)bi * c.hkv + h) * c.tk + j) * c.d + e]); }
  double V(unsigned bi, unsigned h, unsigned j, unsigned e) const { return Io<T>::get(v[(((size_t)bi * c.hkv + h) * c.tk + j) * c.d + e]); }

  void reference() {
    const size_t nq = (size_t)c.b * c.hq * c.tq * c.d, nk = (size_t)c.b * c.hkv * c.tk * c.d;
    dq.assign(nq, 0);
    dk.assign(nk, 0);
    dv.assign(nk, 0);
    lse.assign((size_t)c.b * c.hq * c.tq, 0);
    dd = lse;
    o.assign(nq, Io<T>::put(0));
    const unsigned g = c.hq / c.hkv;
    std::vector<double> s(c.tk), p(c.tk), ov(c.d);
    for (unsigned bi = 0; bi < c.b; bi++)
      for (unsigned h = 0; h < c.hq; h++)
        for (unsigned i = 0; i < c.tq; i++) {
          const unsigned kh = h / g;
          const size_t row = ((size_t)bi * c.hq + h) * c.tq + i;
          double mx = -INFINITY, sum = 0;
          for (unsigned j = 0; j < c.tk; j++) {
            s[j] = -INFINITY;
            if (!visible(i, j)) continue;
            const long long mo = bi * msb + h * msh + i * mst + j * msk;
            if (c.maskKind == 1 && mask8[mo] == 0) continue;
            double dot = 0;
            for (unsigned e = 0; e < c.d; e++) dot += Q(bi, h, i, e) * K(bi, kh, j, e);
            s[j] = dot * scale + (c.maskKind == 2 ? Io<T>::get(mask[mo]) : 0.0);
            if (s[j] > mx) mx = s[j];
          }
          bool nan = false;
          for (unsigned j = 0; j < c.tk; j++) nan |= s[j] != s[j];
          if (nan) mx = NAN;
          for (unsigned j = 0; j < c.tk; j++)
            if (s[j] != -INFINITY) sum += std::exp(s[j] - mx);
          const bool none = mx == -INFINITY;
          lse[row] = none ? INFINITY : mx + std::log(sum);
          for (unsigned j = 0; j < c.tk; j++) p[j] = s[j] == -INFINITY ? 0 : std::exp(s[j] - lse[row]);
          for (unsigned e = 0; e < c.d; e++) {
            double a = 0;
            for (unsigned j = 0; j < c.tk; j++)
              if (p[j] != 0 || p[j] != p[j]) a += p[j] * V(bi, kh, j, e);
            ov[e] = a;
            o[row * c.d + e] = Io<T>::put(a);
          }
          // D from the rounded o (what the kernel reads) is checked against dd; the gradient
          // uses the exact rowsum(dP * P)
          double dRounded = 0;
          for (unsigned e = 0; e < c.d; e++) dRounded += dO(bi, h, i, e) * Io<T>::get(o[row * c.d + e]);
          dd[row] = dRounded;
          double D = 0;
          std::vector<double> dp(c.tk, 0);
          for (unsigned j = 0; j < c.tk; j++) {
            if (p[j] == 0) continue;
            for (unsigned e = 0; e < c.d; e++) dp[j] += dO(bi, h, i, e) * V(bi, kh, j, e);
            D += p[j] * dp[j];
          }
          for (unsigned j = 0; j < c.tk; j++) {
            if (p[j] == 0) continue;
            const double ds = p[j] * (dp[j] - D);
            for (unsigned e = 0; e < c.d; e++) {
              dq[row * c.d + e] += scale * ds * K(bi, kh, j, e);
              const size_t kr = (((size_t)bi * c.hkv + kh) * c.tk + j) * c.d + e;
              dk[kr] += scale * ds * Q(bi, h, i, e);
              dv[kr] += p[j] * dO(bi, h, i, e);
            }
          }
        }
  }

  const void* maskPtr() const {
    return c.maskKind == 1 ? (const void*)mask8.data() : c.maskKind == 2 ? (const void*)mask.data() : nullptr;
  }
};

// got against want, |error| within tol of the tensor's largest finite |want| (at least 0.1: a
// gradient that should be 0, as with a single key, is the difference of two f32 dot products);
// NaN where the reference has NaN, nowhere else
template <class G>
static double check(const std::vector<G>& got, const std::vector<double>& want, double (*get)(G), double tol, const std::string& label,
    const char* what) {
  double big = 0.1;
  for (double w : want)
    if (std::isfinite(w)) big = std::max(big, std::fabs(w));
  double worst = 0;
  int bad = 0;
  for (size_t x = 0; x < want.size(); x++) {
    const double g = get(got[x]), w = want[x];
    bool ok;
    if (w != w) ok = g != g;
    else if (std::isinf(w)) ok = g == w;
    else {
      const double err = std::fabs(g - w) / big;
      ok = g == g && err <= tol;
      if (g == g) worst = std::max(worst, err);
    }
    if (!ok && bad++ < 5) std::printf("MISMATCH %s: %s[%zu] = %.8g, want %.8g (scale %.3g)\n", label.c_str(), what, x, g, w, big);
  }
  if (bad) {
    std::printf("MISMATCH %s: %s: %d of %zu elements\n", label.c_str(), what, bad, want.size());
    failures++;
  }
  return worst;
}

template <class T> static double run(const Case& cs, uint64_t seed) {
  Problem<T> p(cs, seed);
  const Case& c = p.c;
  const int hd = bucket(c.d), B = Kern<T>::tile(hd);
  const size_t nq = (size_t)c.b * c.hq * c.tq * c.d, nk = (size_t)c.b * c.hkv * c.tk * c.d, rows = (size_t)c.b * c.hq * c.tq;
  std::vector<T> dq(nq, Io<T>::put(NAN)), dk(nk, Io<T>::put(NAN)), dv(nk, Io<T>::put(NAN));
  std::vector<float> lse(rows, NAN), dd(rows, NAN);
  const auto fq = Kern<T>::dq(hd);
  const auto fk = Kern<T>::dkdv(hd);
  const void* m = p.maskPtr();
  // the tiled kernels, every other case: lse given (the forward's, as flash-grad.ts passes it
  // where flash_fwd kept one), which the query pass reads instead of recomputing
  const bool tc = mma && hd <= 128 && FbTc<T, 64>::ON, given = tc && seed % 2 == 0;
  if (given)
    for (size_t i = 0; i < rows; i++) lse[i] = (float)p.lse[i];
  emu::launch(emu::Dim3{c.b * c.hq, (c.tq + B - 1) / B, 1}, Kern<T>::threads(hd), WAVE, [&] {
    fq(dq.data(), lse.data(), dd.data(), p.q.data(), p.k.data(), p.v.data(), p.o.data(), p.dout.data(), m, 0, 0, 0, 0, 0, 0, 0, 0, 0, c.hq,
        c.hkv, c.tq, c.tk, c.d, p.msb, p.msh, p.mst, p.msk, c.maskKind, c.hasDiag, c.diag, c.window, p.scale,
        tc ? (unsigned)given : mma);
  });
  emu::launch(emu::Dim3{c.b * c.hkv, (c.tk + B - 1) / B, 1}, Kern<T>::threads(hd), WAVE, [&] {
    fk(dk.data(), dv.data(), lse.data(), dd.data(), p.q.data(), p.k.data(), p.v.data(), p.dout.data(), m, 0, 0, 0, 0, 0, 0, 0, 0, 0, c.hq,
        c.hkv, c.tq, c.tk, c.d, p.msb, p.msh, p.mst, p.msk, c.maskKind, c.hasDiag, c.diag, c.window, p.scale, mma);
  });
  char label[256];
  std::snprintf(label, sizeof label, "%s flash_bwd %s %s %s%s d%u (hd %d, tile %d) b%u hq%u hkv%u tq%u tk%u", ARCH, body<T>(), Io<T>::name,
      c.what, given ? " (lse given)" : "", c.d, hd, B, c.b, c.hq, c.hkv, c.tq, c.tk);
  const auto getT = +[](T x) { return Io<T>::get(x); };
  const auto getF = +[](float x) { return (double)x; };
  double worst = 0;
  worst = std::max(worst, check<float>(lse, p.lse, getF, 1e-5, label, "lse"));
  worst = std::max(worst, check<float>(dd, p.dd, getF, 1e-5, label, "D"));
  // the matrix-core body rounds P and dS to the dtype for its products (as FlashAttention
  // does): up to a further ulp
  const double tol = Io<T>::tol * (mma && FbHasMma<T>::v ? 2 : 1);
  worst = std::max(worst, check<T>(dq, p.dq, getT, tol, label, "dq"));
  worst = std::max(worst, check<T>(dk, p.dk, getT, tol, label, "dk"));
  worst = std::max(worst, check<T>(dv, p.dv, getT, tol, label, "dv"));
  return worst;
}

template <class T> static void all() {
  // tiles are 16 (8 for f32 at head dim 256) and, for f16 and bf16 up to head dim 128, blocks of
  // 64 rows: lengths off both, several of each, GQA groups
  const std::vector<Case> cases = {
      {"plain", 1, 2, 2, 40, 50, 64},
      {"gqa 2 of 4", 2, 4, 2, 37, 45, 64, 0, 0, 0, 0, 2.0},
      {"gqa 4 of 4 one kv head", 1, 4, 1, 19, 33, 64},
      {"causal top-left square", 1, 2, 1, 40, 40, 64, 0, 1, 0},
      {"causal top-left tq < tk", 1, 2, 2, 30, 50, 64, 0, 1, 0},
      {"causal bottom-right tq < tk", 1, 2, 2, 20, 53, 64, 0, 1, 33},
      {"causal bottom-right tq > tk (rows see nothing)", 1, 2, 1, 50, 20, 64, 0, 1, -30},
      {"window 7 bottom-right", 1, 2, 2, 45, 60, 64, 0, 1, 15, 7, 2.0},
      {"window 20 top-left gqa", 1, 4, 2, 50, 50, 64, 0, 1, 0, 20},
      {"u8 mask with a hidden row", 1, 4, 2, 33, 41, 64, 1, 0, 0, 0, 1.0, -1, 5},
      {"additive mask with -inf", 1, 2, 2, 30, 38, 64, 2},
      {"u8 mask and causal", 1, 2, 1, 35, 35, 64, 1, 1, 0},
      {"u8 mask per head gqa 3", 2, 6, 2, 21, 29, 64, 1, 0, 0, 0, 1.0, -1, 4, true},
      {"additive mask per head, causal bottom-right", 2, 2, 1, 17, 40, 64, 2, 1, 23, 0, 1.0, -1, -1, true},
      {"gqa 3 window bottom-right", 1, 6, 2, 33, 47, 64, 0, 1, 14, 9},
      {"d 60", 1, 2, 2, 20, 50, 60},
      {"hd 80 causal", 1, 2, 2, 24, 40, 80, 0, 1, 16},
      {"hd 96 d 90", 1, 2, 1, 21, 30, 90},
      {"hd 128 d 120", 1, 1, 1, 20, 36, 120},
      {"hd 256 d 200 window", 1, 2, 1, 20, 40, 200, 0, 1, 20, 12},
      {"nan key", 1, 2, 1, 20, 40, 64, 0, 0, 0, 0, 1.0, 7},
      {"one query one key", 1, 1, 1, 1, 1, 64},
      // past the 64-row blocks of the tiled matrix-core body: several blocks and inner tiles,
      // partial last ones, chunks skipped under the diagonal and outside windows
      {"long plain", 1, 2, 2, 150, 170, 64},
      {"long causal top-left square gqa 2", 1, 4, 2, 130, 130, 64, 0, 1, 0},
      {"long causal bottom-right tq < tk", 1, 2, 1, 70, 200, 64, 0, 1, 130},
      {"long causal bottom-right tq > tk", 1, 2, 1, 200, 70, 64, 0, 1, -130},
      {"long window 40 top-left", 1, 2, 2, 190, 190, 64, 0, 1, 0, 40},
      {"long window 33 bottom-right gqa 3", 1, 6, 2, 100, 150, 64, 0, 1, 50, 33},
      {"long u8 mask with a hidden row", 1, 2, 1, 100, 140, 64, 1, 0, 0, 0, 1.0, -1, 77},
      {"long additive mask per head, causal", 1, 2, 1, 90, 130, 64, 2, 1, 40, 0, 1.0, -1, -1, true},
      {"long nan key", 1, 2, 1, 80, 150, 64, 0, 0, 0, 0, 1.0, 100},
      {"long d 60 causal", 1, 2, 1, 100, 100, 60, 0, 1, 0},
      {"long hd 80 d 72 causal", 1, 2, 1, 100, 100, 72, 0, 1, 0},
      {"long hd 96 window", 1, 2, 2, 80, 140, 96, 0, 1, 60, 50},
      {"long hd 128 causal bottom-right", 1, 2, 1, 130, 150, 128, 0, 1, 20},
      {"long hd 128 d 120", 1, 1, 1, 70, 90, 120},
      {"long hd 256", 1, 1, 1, 40, 70, 256},
  };
  const int before = failures;
  double worst = 0;
  uint64_t seed = 1;
  for (const Case& c : cases) worst = std::max(worst, run<T>(c, seed++));
  if (failures == before)
    std::printf("ok %s flash_bwd %s %s wave%d (%zu cases, worst error %.3g of the scale)\n", ARCH, body<T>(), Io<T>::name, WAVE, cases.size(),
        worst);
}

// flash-bwd-emu [f32|f16|bf16 [fma|mma]]: one dtype and body, else all
int main(int argc, char** argv) {
  const std::string dt = argc > 1 ? argv[1] : "", which = argc > 2 ? argv[2] : "";
  for (unsigned m = 0; m < 2; m++) {
    if ((which == "fma" && m == 1) || (which == "mma" && m == 0)) continue;
    mma = m;
    // f32 has no matrix-core body: once is enough
    if ((dt.empty() || dt == "f32") && m == 0) all<float>();
    if (dt.empty() || dt == "f16") all<f16>();
    if (dt.empty() || dt == "bf16") all<bf16>();
  }
  if (failures) {
    std::printf("%d mismatching checks\n", failures);
    return 1;
  }
  return 0;
}
