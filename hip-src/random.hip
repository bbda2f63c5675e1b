// random.hip: counter-based random numbers (Philox 4x32-10), bit-identical to the CPU reference
// in src/ops/cpu/philox.ts and src/ops/cpu/random.ts. The seed is the key (k0 = low 32 bits,
// k1 = high 32 bits); block b of the counter is (b low, b high, 0, 0). 32-bit draws: element i
// takes word i & 3 of block i >> 2; 64-bit draws: words 2(i & 1) (high) and 2(i & 1) + 1 (low)
// of block i >> 1. Everything comes from the kernel arguments, so a captured graph replays it.
//
// Floats: no fast-math functions (logf differs between vendors and from the host). randn's
// inverse normal CDF (a table of cubics, randn-table.h) and multinomial's log are polynomials
// evaluated with one rounding per operation, in the same order as the host; fused multiply-add
// is off (CUDA: the __f*_rn intrinsics, which nvcc never contracts; AMD: -ffp-contract=off and
// the pragma below), and division and sqrt are the correctly rounded ones on both (CUDA:
// __fdiv_rn, __fsqrt_rn; AMD: the default -fhip-fp32-correctly-rounded-divide-sqrt, named in
// the flags so it cannot drift).
//
// Kernels (T a storage type, DT its dtype; n elements; y contiguous from element 0):
//   rand_<DT>(T* y, u64 n, u32 k0, u32 k1)               DT float: uniform [0, 1)
//   randn_<DT>(T* y, u64 n, u32 k0, u32 k1)              DT float: standard normal
//   randint_<DT>(T* y, u64 n, u32 k0, u32 k1, i64 low, u64 range)     every DT, range <= 2^32
//   bernoulli_scalar_<DT>(T* y, u64 n, u32 k0, u32 k1, u32 thr)       1 where (w >> 8) < thr
//   bernoulli_<PT>_<DT>(T* y, const P* p, i64 pOff, u64 n, u32 k0, u32 k1)   p contiguous
//   dropout_<DT>(T* y, const T* x, i64 xOff, u64 n, u32 k0, u32 k1, u32 thr, C scale)
//   multinomial_keys_<PT>(float* keys, const P* p, i64 pOff, u64 n, u32 k0, u32 k1)
//   multinomial_cdf_<PT>(double* cdf, const P* p, i64 pOff, u64 rows, u64 cols)   a block a row
//   multinomial_draw_<IT>(I* y, const double* cdf, u64 rows, u64 cols, u64 ns, u32 k0, u32 k1)
// amd-flags: -ffp-contract=off -fhip-fp32-correctly-rounded-divide-sqrt
#include "compat.h"
#include "convert.h"
#include "randn-table.h"

#if defined(RT_HIP)
#pragma clang fp contract(off)
#endif

// ---- correctly rounded f32 operations, never fused ------------------------------------------
#if defined(RT_CUDA)
RT_DEVICE float radd(float a, float b) { return __fadd_rn(a, b); }
RT_DEVICE float rsub(float a, float b) { return __fsub_rn(a, b); }
RT_DEVICE float rmul(float a, float b) { return __fmul_rn(a, b); }
RT_DEVICE float rdiv(float a, float b) { return __fdiv_rn(a, b); }
RT_DEVICE float rsqrt_cr(float a) { return __fsqrt_rn(a); }
#else
RT_DEVICE float radd(float a, float b) { return a + b; }
RT_DEVICE float rsub(float a, float b) { return a - b; }
RT_DEVICE float rmul(float a, float b) { return a * b; }
RT_DEVICE float rdiv(float a, float b) { return a / b; }
RT_DEVICE float rsqrt_cr(float a) { return __builtin_sqrtf(a); }
#endif

// ---- Philox 4x32-10 --------------------------------------------------------------------------
struct Words { u32 w[4]; };

// The ten round keys, computed once before a grid loop. On CUDA each is passed through an empty
// asm so the compiler cannot fold it back into "k0 + constant" inside the rounds, which costs an
// add per key per block (AMD adds them on the scalar unit, from SGPRs).
struct Keys {
  u32 k[20];
  RT_DEVICE Keys(u32 k0, u32 k1) {
#pragma unroll
    for (int r = 0; r < 10; r++) {
      k[2 * r] = k0; k[2 * r + 1] = k1;
#if defined(RT_CUDA)
      asm volatile("" : "+r"(k[2 * r]), "+r"(k[2 * r + 1]));
#endif
      k0 += 0x9e3779b9u; k1 += 0xbb67ae85u;
    }
  }
};

RT_DEVICE Words philox_block(u64 b, const Keys& ks) {
  u32 c0 = (u32)b, c1 = (u32)(b >> 32), c2 = 0, c3 = 0;
#pragma unroll
  for (int r = 0; r < 10; r++) {
    const u32 hi0 = __umulhi(0xd2511f53u, c0), lo0 = 0xd2511f53u * c0;
    const u32 hi1 = __umulhi(0xcd9e8d57u, c2), lo1 = 0xcd9e8d57u * c2;
    c0 = hi1 ^ c1 ^ ks.k[2 * r]; c1 = lo1; c2 = hi0 ^ c3 ^ ks.k[2 * r + 1]; c3 = lo0;
  }
  Words o; o.w[0] = c0; o.w[1] = c1; o.w[2] = c2; o.w[3] = c3;
  return o;
}

// ---- f32 log (constants as bits; the same ones as src/ops/cpu/philox.ts) ------------------------
#define F(bits) __uint_as_float(bits##u)

// log(k 2^-24) for an integer k in [1, 2^24]
RT_DEVICE float log_u24(u32 k) {
  const u32 kb = __float_as_uint((float)k);         // exact: k <= 2^24
  int e = (int)(kb >> 23) - 127 - 24;
  float m = __uint_as_float((kb & 0x7fffffu) | 0x3f800000u);  // k = m 2^(e + 24), m in [1, 2)
  if (m >= F(0x3fb504f3)) { m = m * 0.5f; e += 1; }
  const float f = rsub(m, 1.0f);
  const float s = rdiv(f, radd(2.0f, f));
  const float z = rmul(s, s);
  float R = rmul(z, F(0x3e638e39));
  R = rmul(z, radd(F(0x3e924925), R));
  R = rmul(z, radd(F(0x3ecccccd), R));
  R = rmul(z, radd(F(0x3f2aaaab), R));
  const float hfsq = rmul(rmul(0.5f, f), f);
  const float ef = (float)e;
  const float inner = rsub(rsub(hfsq, radd(rmul(s, radd(hfsq, R)), rmul(ef, F(0x35bfbe8e)))), f);
  return rsub(rmul(ef, F(0x3f317200)), inner);
}

RT_DEVICE float u24(u32 w) { return (float)(w >> 8) * 5.9604644775390625e-8f; }
RT_DEVICE double u53(u32 hi, u32 lo) { return (double)(((u64)(hi >> 5) << 26) | (lo >> 6)) * 1.1102230246251565e-16; }

// ---- uniform and normal floats -----------------------------------------------------------------
// f32 values into a vector of T, each rounded once to nearest even; f16/bf16 two at a time
// (round_pair: one conversion instruction a pair on CUDA)
template <class T> RT_DEVICE Vec16<T> narrow(const float* z) {
  Vec16<T> f;
#pragma unroll
  for (int j = 0; j < Vec16<T>::N / 2; j++) {
    const u32 w = round_pair<T>(z[2 * j], z[2 * j + 1]);
    __builtin_memcpy(&f.v[2 * j], &w, 4);
  }
  return f;
}
template <> RT_DEVICE Vec16<float> narrow<float>(const float* z) {
  Vec16<float> f;
#pragma unroll
  for (int j = 0; j < 4; j++) f.v[j] = z[j];
  return f;
}

// Uniforms: f16/bf16 take the f32 value rounded by narrow, in pairs (rounded element by element
// in software, rand bf16 2^28 took 381.5 us against f32's 256.9 on an H200); 1.0 (from values
// within half an ulp of it) becomes the largest value below 1, keeping [0, 1).
template <class T> struct OneBits;
template <> struct OneBits<f16> { static constexpr u32 v = 0x3c00u; };
template <> struct OneBits<bf16> { static constexpr u32 v = 0x3f80u; };
template <class T> RT_DEVICE u32 below_one(u32 w) {
  constexpr u32 one = OneBits<T>::v;
  if ((w & 0xffffu) == one) w -= 1u;
  if ((w >> 16) == one) w -= 0x10000u;
  return w;
}
template <class T> RT_DEVICE Vec16<T> narrow_unit(const float* z) {
  Vec16<T> f = narrow<T>(z);
  u32 w[4];
  __builtin_memcpy(w, &f, 16);
#pragma unroll
  for (int j = 0; j < 4; j++) w[j] = below_one<T>(w[j]);
  __builtin_memcpy(&f, w, 16);
  return f;
}
template <> RT_DEVICE Vec16<float> narrow_unit<float>(const float* z) { return narrow<float>(z); }

// y's 16-byte vectors from gen(t) (vector t: elements [t N, t N + N)), a thread a vector: the
// whole vectors of an aligned y in a loop with no bounds test, then what is left (the last
// partial vector, or all of an unaligned y) element by element. One loop testing every vector
// for both (a 64-bit compare, a branch and a divergence region a vector) took randn f32 2^28 on
// an H200 from 27.6 to 29.1 instructions a number, 331 to 352 us under ncu.
template <class T, class G>
RT_DEVICE void fill16(T* y, u64 n, G gen) {
  constexpr u32 N = Vec16<T>::N;
  const u64 whole = aligned16(y) ? n / N : 0;
  grid_loop(whole, [&](auto t) { *(Vec16<T>*)(y + (u64)t * N) = gen((u64)t); });
  grid_loop((n - whole * N + N - 1) / N, [&](auto r) {
    const u64 t = whole + r;
    const Vec16<T> f = gen(t);
#pragma unroll
    for (u32 k = 0; k < N; k++) if (t * N + k < n) y[t * N + k] = f.v[k];
  });
}

template <class T>
RT_DEVICE void rand32(T* y, u64 n, u32 k0, u32 k1) {
  constexpr int N = Vec16<T>::N, B = N / 4;
  const Keys ks(k0, k1);
  fill16(y, n, [&](u64 t) {
    float u[N];
#pragma unroll
    for (int h = 0; h < B; h++) {
      const Words w = philox_block(t * B + h, ks);
#pragma unroll
      for (int k = 0; k < 4; k++) u[4 * h + k] = u24(w.w[k]);
    }
    return narrow_unit<T>(u);
  });
}

// vector b (two f64) from block b
RT_DEVICE void rand64(double* y, u64 n, u32 k0, u32 k1) {
  const Keys ks(k0, k1);
  fill16(y, n, [&](u64 b) {
    const Words w = philox_block(b, ks);
    Vec16<double> f;
    f.v[0] = u53(w.w[0], w.w[1]);
    f.v[1] = u53(w.w[2], w.w[3]);
    return f;
  });
}

// ---- normal floats: the inverse normal CDF of one word (scripts/randn/gen-table.ts) -----------
// The table sits in LDS, loaded once per block (coalesced) before the grid loop; every thread
// of the block reaches the barrier. A segment's four coefficients sit together, read with one
// 16-byte load: four scalar reads an element made randn issue-bound (ncu on an H200, 2^28 f32:
// 71.6% of issue slots, L1 74%, DRAM 59%).
struct NormalTable {
  Vec16<float> s[RANDN_SEGMENTS];
  RT_DEVICE void load() {
    for (u32 i = threadIdx.x; i < RANDN_SEGMENTS; i += blockDim.x) {
#pragma unroll
      for (u32 k = 0; k < 4; k++) s[i].v[k] = __uint_as_float(RANDN_TABLE[k * RANDN_SEGMENTS + i]);
    }
    __syncthreads();
  }
  // v = f32(2 (w mod 2^31) + 1) rounded to nearest; segment (bits(v) >> 20) - 127 * 8; the cubic
  // in d = v - (the segment's middle), which is exact; the sign is w's top bit
  RT_DEVICE float normal(u32 w) const {
    const float v = (float)((w << 1) | 1u);
    const u32 vb = __float_as_uint(v), i = (vb >> 20) - 127u * 8u;
    const float d = rsub(v, __uint_as_float((vb & 0xfff00000u) | 0x00080000u));
    const Vec16<float> q = s[i];
    float z = q.v[3];
    z = radd(rmul(z, d), q.v[2]);
    z = radd(rmul(z, d), q.v[1]);
    z = radd(rmul(z, d), q.v[0]);
    return __uint_as_float(__float_as_uint(z) ^ (w & 0x80000000u));
  }
};

template <class T>
RT_DEVICE void randn32(T* y, u64 n, u32 k0, u32 k1) {
  __shared__ NormalTable tab;
  tab.load();
  constexpr int N = Vec16<T>::N, B = N / 4;
  const Keys ks(k0, k1);
  fill16(y, n, [&](u64 t) {
    float z[N];
#pragma unroll
    for (int h = 0; h < B; h++) {
      const Words w = philox_block(t * B + h, ks);
#pragma unroll
      for (int k = 0; k < 4; k++) z[4 * h + k] = tab.normal(w.w[k]);
    }
    return narrow<T>(z);
  });
}

// f64 normals are the f32 ones widened (documented in README): the same numbers in every dtype.
// A thread writes two (16 bytes) from half a Philox block.
RT_DEVICE void randn64(double* y, u64 n, u32 k0, u32 k1) {
  __shared__ NormalTable tab;
  tab.load();
  const Keys ks(k0, k1);
  fill16(y, n, [&](u64 p) {
    const Words w = philox_block(p >> 1, ks);
    const bool odd = (p & 1) != 0;  // selects, not an index: an indexed Words goes to scratch on AMD
    Vec16<double> f;
    f.v[0] = (double)tab.normal(odd ? w.w[2] : w.w[0]);
    f.v[1] = (double)tab.normal(odd ? w.w[3] : w.w[1]);
    return f;
  });
}

#define RAND(DT, T) \
  RT_KERNEL void rand_##DT(T* y, u64 n, u32 k0, u32 k1) { RT_GRID_DEP(); rand32<T>(y, n, k0, k1); } \
  RT_KERNEL void randn_##DT(T* y, u64 n, u32 k0, u32 k1) { RT_GRID_DEP(); randn32<T>(y, n, k0, k1); }
RAND(f32, float) RAND(f16, f16) RAND(bf16, bf16)
RT_KERNEL void rand_f64(double* y, u64 n, u32 k0, u32 k1) { RT_GRID_DEP(); rand64(y, n, k0, k1); }
RT_KERNEL void randn_f64(double* y, u64 n, u32 k0, u32 k1) { RT_GRID_DEP(); randn64(y, n, k0, k1); }

// ---- integers -----------------------------------------------------------------------------------
// floor(((hi << 32) | lo) * range / 2^64) for range in [1, 2^32]: bias below range / 2^64
RT_DEVICE u64 scale64(u32 hi, u32 lo, u64 range) {
  if (range == 0x100000000ull) return hi;
  const u32 r = (u32)range;
  const u64 p = (u64)hi * r;                       // hi * r = H 2^32 + L
  const u32 c = __umulhi(lo, r);
  return (p >> 32) + ((((p & 0xffffffffull) + c) >> 32) & 1ull);
}

template <class T>
RT_DEVICE void randint_impl(T* y, u64 n, u32 k0, u32 k1, i64 low, u64 range) {
  const Keys ks(k0, k1);
  grid_loop64((n + 1) >> 1, [&](u64 b) {
    const Words w = philox_block(b, ks);
    const u64 i = b << 1;
    y[i] = cvt<T>((i64)(low + (i64)scale64(w.w[0], w.w[1], range)));
    if (i + 1 < n) y[i + 1] = cvt<T>((i64)(low + (i64)scale64(w.w[2], w.w[3], range)));
  });
}

template <class T>
RT_DEVICE void bern_scalar(T* y, u64 n, u32 k0, u32 k1, u32 thr) {
  const Keys ks(k0, k1);
  grid_loop64((n + 3) >> 2, [&](u64 b) {
    const Words w = philox_block(b, ks);
    const u64 i = b << 2;
#pragma unroll
    for (int k = 0; k < 4; k++) if (i + k < n) y[i + k] = cvt<T>((u32)((w.w[k] >> 8) < thr));
  });
}

#define INTS(DT, T) \
  RT_KERNEL void randint_##DT(T* y, u64 n, u32 k0, u32 k1, i64 low, u64 range) { RT_GRID_DEP(); randint_impl<T>(y, n, k0, k1, low, range); } \
  RT_KERNEL void bernoulli_scalar_##DT(T* y, u64 n, u32 k0, u32 k1, u32 thr) { RT_GRID_DEP(); bern_scalar<T>(y, n, k0, k1, thr); }
INTS(f32, float) INTS(f64, double) INTS(f16, f16) INTS(bf16, bf16) INTS(u8, u8) INTS(u32, u32) INTS(i64, i64)

// ---- bernoulli with a probability tensor, dropout ------------------------------------------------
// u (exact in f32) < p, compared in p's compute type: f32 for f32/f16/bf16, f64 for f64
template <class P, class T>
RT_DEVICE void bern_tensor(T* y, const P* p, u64 n, u32 k0, u32 k1) {
  const Keys ks(k0, k1);
  grid_loop64((n + 3) >> 2, [&](u64 b) {
    const Words w = philox_block(b, ks);
    const u64 i = b << 2;
#pragma unroll
    for (int k = 0; k < 4; k++) {
      if (i + k < n) y[i + k] = cvt<T>((u32)((typename Elem<P>::C)u24(w.w[k]) < Elem<P>::load(p[i + k])));
    }
  });
}

#define BERN_P(PT, P) \
  RT_KERNEL void bernoulli_##PT##_f32(float* y, const P* p, i64 pOff, u64 n, u32 k0, u32 k1) { RT_GRID_DEP(); bern_tensor<P, float>(y, p + pOff, n, k0, k1); } \
  RT_KERNEL void bernoulli_##PT##_f64(double* y, const P* p, i64 pOff, u64 n, u32 k0, u32 k1) { RT_GRID_DEP(); bern_tensor<P, double>(y, p + pOff, n, k0, k1); } \
  RT_KERNEL void bernoulli_##PT##_f16(f16* y, const P* p, i64 pOff, u64 n, u32 k0, u32 k1) { RT_GRID_DEP(); bern_tensor<P, f16>(y, p + pOff, n, k0, k1); } \
  RT_KERNEL void bernoulli_##PT##_bf16(bf16* y, const P* p, i64 pOff, u64 n, u32 k0, u32 k1) { RT_GRID_DEP(); bern_tensor<P, bf16>(y, p + pOff, n, k0, k1); } \
  RT_KERNEL void bernoulli_##PT##_u8(u8* y, const P* p, i64 pOff, u64 n, u32 k0, u32 k1) { RT_GRID_DEP(); bern_tensor<P, u8>(y, p + pOff, n, k0, k1); } \
  RT_KERNEL void bernoulli_##PT##_u32(u32* y, const P* p, i64 pOff, u64 n, u32 k0, u32 k1) { RT_GRID_DEP(); bern_tensor<P, u32>(y, p + pOff, n, k0, k1); } \
  RT_KERNEL void bernoulli_##PT##_i64(i64* y, const P* p, i64 pOff, u64 n, u32 k0, u32 k1) { RT_GRID_DEP(); bern_tensor<P, i64>(y, p + pOff, n, k0, k1); }
BERN_P(f32, float) BERN_P(f64, double) BERN_P(f16, f16) BERN_P(bf16, bf16)

// kept where (w >> 8) >= thr, times scale in the compute type, rounded once to T
template <class T>
RT_DEVICE void dropout_impl(T* y, const T* x, u64 n, u32 k0, u32 k1, u32 thr, typename Elem<T>::C scale) {
  const Keys ks(k0, k1);
  grid_loop64((n + 3) >> 2, [&](u64 b) {
    const Words w = philox_block(b, ks);
    const u64 i = b << 2;
#pragma unroll
    for (int k = 0; k < 4; k++) {
      if (i + k < n) {
        const typename Elem<T>::C v = Elem<T>::load(x[i + k]);
        y[i + k] = Elem<T>::store((w.w[k] >> 8) >= thr ? v * scale : (typename Elem<T>::C)0);
      }
    }
  });
}
RT_KERNEL void dropout_f32(float* y, const float* x, i64 xOff, u64 n, u32 k0, u32 k1, u32 thr, float scale) { RT_GRID_DEP(); dropout_impl<float>(y, x + xOff, n, k0, k1, thr, scale); }
RT_KERNEL void dropout_f64(double* y, const double* x, i64 xOff, u64 n, u32 k0, u32 k1, u32 thr, double scale) { RT_GRID_DEP(); dropout_impl<double>(y, x + xOff, n, k0, k1, thr, scale); }
RT_KERNEL void dropout_f16(f16* y, const f16* x, i64 xOff, u64 n, u32 k0, u32 k1, u32 thr, float scale) { RT_GRID_DEP(); dropout_impl<f16>(y, x + xOff, n, k0, k1, thr, scale); }
RT_KERNEL void dropout_bf16(bf16* y, const bf16* x, i64 xOff, u64 n, u32 k0, u32 k1, u32 thr, float scale) { RT_GRID_DEP(); dropout_impl<bf16>(y, x + xOff, n, k0, k1, thr, scale); }

// ---- multinomial --------------------------------------------------------------------------------
// Without replacement: key = E / p with E = -log(u), u = ((w >> 8) + 1) 2^-24 in (0, 1]; the
// smallest keys of a row are a sample without replacement (exponential race). p <= 0 (and NaN)
// never wins: key +inf.
template <class P>
RT_DEVICE void mn_keys(float* keys, const P* p, u64 n, u32 k0, u32 k1) {
  const Keys ks(k0, k1);
  grid_loop64((n + 3) >> 2, [&](u64 b) {
    const Words w = philox_block(b, ks);
    const u64 i = b << 2;
#pragma unroll
    for (int k = 0; k < 4; k++) {
      if (i + k < n) {
        const float pk = cvt<float>(p[i + k]);
        const float e = -log_u24((w.w[k] >> 8) + 1u);
        keys[i + k] = pk > 0.0f ? rdiv(e, pk) : __uint_as_float(0x7f800000u);
      }
    }
  });
}

// With replacement: the row's running sums in f64 in a fixed order that does not depend on the
// launch: 256 chunks of ceil(cols / 256), each summed left to right by one thread, then the
// chunk totals left to right by thread 0. The host emulates the same order.
#define MN_CHUNKS 256
template <class P>
RT_DEVICE void mn_cdf(double* cdf, const P* p, u64 rows, u64 cols) {
  __shared__ double tot[MN_CHUNKS];
  const u64 len = (cols + MN_CHUNKS - 1) / MN_CHUNKS;
  for (u64 row = blockIdx.x; row < rows; row += gridDim.x) {  // uniform across the block
    const P* pr = p + row * cols;
    double* cr = cdf + row * cols;
    for (u32 c = threadIdx.x; c < MN_CHUNKS; c += blockDim.x) {
      double s = 0;
      for (u64 j = c * len; j < cols && j < (c + 1) * len; j++) s += cvt<double>(pr[j]);
      tot[c] = s;
    }
    __syncthreads();
    if (threadIdx.x == 0) {
      double run = 0;
      for (int c = 0; c < MN_CHUNKS; c++) { const double t = tot[c]; tot[c] = run; run += t; }
    }
    __syncthreads();
    for (u32 c = threadIdx.x; c < MN_CHUNKS; c += blockDim.x) {
      double s = tot[c];
      for (u64 j = c * len; j < cols && j < (c + 1) * len; j++) { s += cvt<double>(pr[j]); cr[j] = s; }
    }
    __syncthreads();  // tot is rewritten by the next row
  }
}

#define MN_P(PT, P) \
  RT_KERNEL void multinomial_keys_##PT(float* keys, const P* p, i64 pOff, u64 n, u32 k0, u32 k1) { RT_GRID_DEP(); mn_keys<P>(keys, p + pOff, n, k0, k1); } \
  RT_KERNEL void multinomial_cdf_##PT(double* cdf, const P* p, i64 pOff, u64 rows, u64 cols) { RT_GRID_DEP(); mn_cdf<P>(cdf, p + pOff, rows, cols); }
MN_P(f32, float) MN_P(f64, double) MN_P(f16, f16) MN_P(bf16, bf16)

// sample s of row r: u = the f64 uniform of element r * ns + s, the first index whose running
// sum exceeds u * total; past the end (rounding), the last index with a nonzero probability
template <class I>
RT_DEVICE void mn_draw(I* y, const double* cdf, u64 rows, u64 cols, u64 ns, u32 k0, u32 k1) {
  const Keys ks(k0, k1);
  grid_loop64(rows * ns, [&](u64 e) {
    const Words w = philox_block(e >> 1, ks);
    const u32 a = (e & 1) ? w.w[2] : w.w[0], b = (e & 1) ? w.w[3] : w.w[1];
    const double* c = cdf + (e / ns) * cols;
    const double target = u53(a, b) * c[cols - 1];
    u64 lo = 0, hi = cols;
    while (lo < hi) {
      const u64 mid = (lo + hi) >> 1;
      if (c[mid] > target) hi = mid; else lo = mid + 1;
    }
    if (lo == cols) {
      lo = cols - 1;
      while (lo > 0 && c[lo - 1] == c[lo]) lo--;
    }
    y[e] = (I)lo;
  });
}
RT_KERNEL void multinomial_draw_i64(i64* y, const double* cdf, u64 rows, u64 cols, u64 ns, u32 k0, u32 k1) { RT_GRID_DEP(); mn_draw<i64>(y, cdf, rows, cols, ns, k0, k1); }
RT_KERNEL void multinomial_draw_u32(u32* y, const double* cdf, u64 rows, u64 cols, u64 ns, u32 k0, u32 k1) { RT_GRID_DEP(); mn_draw<u32>(y, cdf, rows, cols, ns, k0, k1); }
