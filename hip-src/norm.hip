// norm.hip: layerNorm (optional bias) and rmsNorm over the last dim of contiguous rows. Sums in
// f32 for f32/f16/bf16 and f64 for f64; the variance never comes from E[x^2] - mean^2, which
// cancels: it is the mean squared deviation from the mean, or for bf16's register kernels from
// a pivot inside the row, whose cancellation the row bounds (RowStats below).
// Three shapes of kernel, as in softmax.hip:
//  - layernorm_<DT>_v<V>, rmsnorm_<DT>_v<V> (f32 f16 bf16): the row in registers (rowreg.h),
//    weight and bias vectors loaded beside it or after the statistics (EarlyWeights), read once
//    and written once; for rows of whole 16-byte vectors at 16-byte boundaries that fit G * V
//    vectors. One group reduction gives layerNorm's statistics: f32 and f16 merge each lane's
//    count, mean and squared deviations (Chan et al.), bf16 sums deviations from a pivot and
//    their squares.
//  - layernorm_part_<DT> / rmsnorm_part_<DT>, then layernorm_fin_<DT> / rmsnorm_fin_<DT>: a
//    long row split over blocks; the first kernel writes each chunk's statistics (layerNorm:
//    the chunk's mean and sum of squared deviations from it, merged by Chan's rule, so still no
//    cancellation; rmsNorm: the sum of squares), the second merges a row's and writes the
//    chunk's outputs.
//  - layernorm_<DT>, rmsnorm_<DT> (every float dtype): the general kernel: a group of `group`
//    threads takes a row, the first 16 bytes x NORM_KV of each thread's share kept in
//    registers; any alignment, any length. Two group reductions (mean, then variance)
//    measured faster on NVIDIA here than one merging per-lane (count, mean, M2) parts: the
//    merge's divisions and extra registers cost more than the barrier they save (the register
//    kernels, whose weights load beside the row, measured the other way).
//
// Kernels (T storage; C = double for f64, float otherwise):
//   layernorm_<DT>(T* y, const T* x, const T* w, const T* b, i64 yOff, i64 xOff, i64 wOff,
//                  i64 bOff, u64 rows, u64 cols, C eps, u32 hasBias, u32 group)
//       y = (x - mean) / sqrt(var + eps) * w + b; b is ignored (may be 0) when hasBias is 0.
//   rmsnorm_<DT>(T* y, const T* x, const T* w, i64 yOff, i64 xOff, i64 wOff, u64 rows,
//                u64 cols, C eps, u32 group)
//       y = x / sqrt(mean(x^2) + eps) * w
//       x and y contiguous [rows, cols], w and b contiguous [cols]; rows < 2^31, cols < 2^32.
//       group: threads per row, a multiple of the wave size dividing the block (else the
//       whole block).
//   layernorm_<DT>_v<V>(T* y, const T* x, const T* w, const T* b, i64 yOff, i64 xOff, i64 wOff,
//                       i64 bOff, u32 rows, u32 cols, float eps, u32 hasBias, u32 group)
//   rmsnorm_<DT>_v<V>(T* y, const T* x, const T* w, i64 yOff, i64 xOff, i64 wOff, u32 rows,
//                     u32 cols, float eps, u32 group)
//       V in 1 2 4. cols a multiple of 16 / sizeof(T), at most group * V vectors;
//       every pointer plus its offset 16-byte aligned. group: threads per row
//       (rowreg.h: a power of two up to the wave size, else the whole block).
//   layernorm_part_<DT>(float* part, const T* x, i64 xOff, u32 rows, u32 cols, u32 chunkVecs, u32 chunks)
//       part[2t], part[2t + 1] = the mean and the sum of squared deviations from it of chunk
//       t % chunks of row t / chunks: vectors [c * chunkVecs, (c + 1) * chunkVecs) of the row,
//       chunkVecs <= blockDim.x * RT_NORM_SPLIT_V; a block a chunk. Alignment as the _v kernels.
//   rmsnorm_part_<DT>(float* part, same): part[t] = the chunk's sum of squares.
//   layernorm_fin_<DT>(T* y, const T* x, const T* w, const T* b, const float* part, i64 yOff,
//                      i64 xOff, i64 wOff, i64 bOff, u32 rows, u32 cols, u32 chunkVecs,
//                      u32 chunks, float eps, u32 hasBias)
//   rmsnorm_fin_<DT>(T* y, const T* x, const T* w, const float* part, i64 yOff, i64 xOff,
//                    i64 wOff, u32 rows, u32 cols, u32 chunkVecs, u32 chunks, float eps)
//       the outputs of each chunk from its row's parts; rows * chunks < 2^31.
// Any grid is correct for every kernel.
#include "rowreduce.h"
#include "rowreg.h"

#define NORM_KV 4

template <class T, class C, bool BIAS>
RT_DEVICE void layernorm_rows(T* y, const T* x, const T* w, const T* b, u64 rows, u64 cols, C eps, u32 group) {
  const RowGroup g(group);
  const u32 nc = (u32)cols;
  RowAux<T, BIAS ? 2 : 1> aux;
  aux.a[0] = w;
  if (BIAS) aux.a[BIAS ? 1 : 0] = b;
  for_rows(g, (u32)rows, [&](u32 r, bool live) {
    const u32 n = live ? nc : 0u;
    const u64 at = (u64)r * nc;
    const T* p = x + at;
    RowCache<T, NORM_KV> cache;
    C s = C(0);
    row_pass<true>(p, n, g.lane, g.size, cache, [&](u32, C v) { s += v; });
    const C mean = group_all(s, SumOp<C>(), g.size) / (C)nc;
    C q = C(0);
    row_pass<false>(p, n, g.lane, g.size, cache, [&](u32, C v) { const C d = v - mean; q += d * d; });
    const C inv = C(1) / sqrt(group_all(q, SumOp<C>(), g.size) / (C)nc + eps);
    row_map(y + at, p, n, g.lane, g.size, cache, aux, [&](u32, C v, const C (&a)[BIAS ? 2 : 1]) {
      const C t = (v - mean) * inv * a[0];
      return BIAS ? t + a[BIAS ? 1 : 0] : t;
    });
  });
}

template <class T, class C>
RT_DEVICE void rmsnorm_rows(T* y, const T* x, const T* w, u64 rows, u64 cols, C eps, u32 group) {
  const RowGroup g(group);
  const u32 nc = (u32)cols;
  RowAux<T, 1> aux;
  aux.a[0] = w;
  for_rows(g, (u32)rows, [&](u32 r, bool live) {
    const u32 n = live ? nc : 0u;
    const u64 at = (u64)r * nc;
    const T* p = x + at;
    RowCache<T, NORM_KV> cache;
    C q = C(0);
    row_pass<true>(p, n, g.lane, g.size, cache, [&](u32, C v) { q += v * v; });
    const C inv = C(1) / sqrt(group_all(q, SumOp<C>(), g.size) / (C)nc + eps);
    row_map(y + at, p, n, g.lane, g.size, cache, aux, [&](u32, C v, const C (&a)[1]) { return v * inv * a[0]; });
  });
}

// LN, RMS: resident blocks per NVIDIA multiprocessor (RT_ROW_KERNEL) of layernorm and rmsnorm,
// the most that ptxas -arch=sm_90 fits without spilling
#define NORM_DT(DT, T, C, LN, RMS) \
  RT_ROW_KERNEL(LN) void layernorm_##DT(T* y, const T* x, const T* w, const T* b, i64 yOff, i64 xOff, i64 wOff, \
      i64 bOff, u64 rows, u64 cols, C eps, u32 hasBias, u32 group) { RT_GRID_DEP(); \
    if (hasBias) layernorm_rows<T, C, true>(y + yOff, x + xOff, w + wOff, b + bOff, rows, cols, eps, group); \
    else layernorm_rows<T, C, false>(y + yOff, x + xOff, w + wOff, b, rows, cols, eps, group); } \
  RT_ROW_KERNEL(RMS) void rmsnorm_##DT(T* y, const T* x, const T* w, i64 yOff, i64 xOff, i64 wOff, u64 rows, \
      u64 cols, C eps, u32 group) { RT_GRID_DEP(); \
    rmsnorm_rows<T, C>(y + yOff, x + xOff, w + wOff, rows, cols, eps, group); }

NORM_DT(f32, float, float, 4, 5) NORM_DT(f64, double, double, 3, 4) NORM_DT(f16, f16, float, 3, 3)
NORM_DT(bf16, bf16, float, 4, 5)

// ---- rows in registers, and rows split over blocks ---------------------------------------------
// The lane's weight (and bias) vectors beside its row's: the register kernels load them with
// the row, before the reductions, so their latency hides behind the row's (bf16 layerNorm
// [8192, 4096] on an H200: 45.0 -> 42.6 us with the one-reduction statistics below).
template <bool BIAS, int V, class T>
RT_DEVICE void ln_weights(uint4 (&wv)[V], uint4 (&bv)[V], const T* __restrict__ w, const T* __restrict__ b, const RegSpan& sp) {
  reg_load(wv, reg_span(w, sp.lane, sp.G, sp.nv), splat4(0u));
  if (BIAS) reg_load(bv, reg_span(b, sp.lane, sp.G, sp.nv), splat4(0u));
}

// y = (x - mean) * inv * w (+ b) over a lane's vectors, the bias added in the same rounding
// (fma). A weight or bias that is not finite can make any output NaN, so the rounding keeps its
// NaN test (RegVec16::pack).
template <bool BIAS, class T, int V>
RT_DEVICE void ln_apply(T* y, const uint4 (&wv)[V], const uint4 (&bv)[V], const RegSpan& sp, const uint4 (&a)[V], float mean, float inv) {
  reg_store<true, T>(y, sp, a, [&](int c, int e, float v) {
    float wf[RegVec<T>::N], bf[RegVec<T>::N];
    RegVec<T>::unpack(wv[c], wf);
    const float t = (v - mean) * inv;
    if (!BIAS) return t * wf[e];
    RegVec<T>::unpack(bv[c], bf);
    return fmaf(t, wf[e], bf[e]);
  });
}

// f(element) over the vectors the lane holds (a missing one's fill of 0 is no element)
template <class T, int V, class F>
RT_DEVICE void each_held(const uint4 (&a)[V], const RegSpan& sp, F f) {
#pragma unroll
  for (int c = 0; c < V; c++) {
    if (sp.has(c)) {
      float v[RegVec<T>::N];
      RegVec<T>::unpack(a[c], v);
#pragma unroll
      for (int e = 0; e < RegVec<T>::N; e++) f(v[e]);
    }
  }
}

// the lane's sum of squared deviations from the mean, over the vectors it holds
template <class T, int V>
RT_DEVICE float sq_dev(const uint4 (&a)[V], const RegSpan& sp, float mean) {
  float q = 0.0f;
  each_held<T>(a, sp, [&](float v) { const float d = v - mean; q += d * d; });
  return q;
}

// A row's statistics for the register kernels: its mean and 1 / sqrt(var + eps), from one
// group reduction.
// f32, f16: each lane's count, mean and sum of squared deviations from that mean, merged by Chan et
// al.'s rule, written so that merge(a, b) and merge(b, a) agree bit for bit (reg_all's
// butterfly needs every lane to end with one value): each step is a commutative float operation
// on the same operands.
struct MeanM2 { float n, mean, m2; };
struct MergeOp {
  RT_DEVICE MeanM2 operator()(const MeanM2& a, const MeanM2& b) const {
    const float n = a.n + b.n;
    if (n == 0.0f) return a;
    const float r = rcp_fast(n), d = b.mean - a.mean;
    return MeanM2{ n, (a.n * a.mean + b.n * b.mean) * r, (a.m2 + b.m2) + d * d * (a.n * b.n * r) };
  }
  RT_DEVICE MeanM2 shfl(const MeanM2& v, int m) const { return MeanM2{ shfl_xor(v.n, m), shfl_xor(v.mean, m), shfl_xor(v.m2, m) }; }
};

// bf16: sums of t = x - p and t^2 about a pivot p, the mean of the row's first vector (every lane
// loads it too, a broadcast), reduced as two plain sums: var = S2/n - (S1/n)^2. The difference
// cancels only as far as p sits from the mean in standard deviations, and the first vector
// bounds that: its N elements alone give n var >= N (p - mean)^2, so S2/n <= (1 + n/N) var and
// the subtraction magnifies the sums' relative rounding error at most 1 + n/N times (513 at
// n = 4096, for a row whose first vector sits that far out; about 1e-3 of the variance at
// worst, under half a bf16 ulp of the scale). Against Chan's merge this drops the merge's
// reciprocals and a third value a shuffle (timings at EarlyWeights). f16's finer outputs could
// show the worst case, so f32 and f16 keep Chan.
struct Sums2 { float s, q; };
struct Sums2Op {
  RT_DEVICE Sums2 operator()(const Sums2& a, const Sums2& b) const { return Sums2{ a.s + b.s, a.q + b.q }; }
  RT_DEVICE Sums2 shfl(const Sums2& v, int m) const { return Sums2{ shfl_xor(v.s, m), shfl_xor(v.q, m) }; }
};

template <class T> struct RowStats {
  using S = MeanM2;
  template <int V>
  RT_DEVICE static void get(const uint4 (&a)[V], const RegSpan& sp, u32 cols, float eps, RegSlots<S>& slots, float& mean, float& inv) {
    float s = 0.0f, n = 0.0f;
    reg_each<T>(a, [&](int, int, float v) { s += v; });
#pragma unroll
    for (int c = 0; c < V; c++) n += sp.has(c) ? (float)RegVec<T>::N : 0.0f;
    const float lm = n > 0.0f ? s * rcp_fast(n) : 0.0f;
    const MeanM2 t = reg_all(MeanM2{ n, lm, sq_dev<T>(a, sp, lm) }, MergeOp(), sp.G, slots);
    mean = t.mean;
    inv = 1.0f / sqrtf(t.m2 / (float)cols + eps);
  }
};

template <> struct RowStats<bf16> {
  using T = bf16;
  using S = Sums2;
  template <int V>
  RT_DEVICE static void get(const uint4 (&a)[V], const RegSpan& sp, u32 cols, float eps, RegSlots<S>& slots, float& mean, float& inv) {
    const float p = vec_sum<T>(sp.q[0]) * (1.0f / (float)RegVec<T>::N);
    float s = 0.0f, q = 0.0f;
    each_held<T>(a, sp, [&](float v) { const float t = v - p; s += t; q = fmaf(t, t, q); });
    const Sums2 r = reg_all(Sums2{ s, q }, Sums2Op(), sp.G, slots);
    const float ms = r.s / (float)cols, var = r.q / (float)cols - ms * ms;
    mean = p + ms;
    inv = 1.0f / sqrtf((var < 0.0f ? 0.0f : var) + eps);  // a NaN variance stays NaN
  }
};

// Where the weight and bias vectors load: f32 beside the row (their latency hides behind the
// row's); f16 and bf16 after the statistics, which frees their 32 registers during the row's
// loads and the reduction (f16 spilled at RT_NORM_MIN's caps otherwise) and lets bf16's V = 4
// kernel run at 64 registers without spilling (BF16_LN_MIN below). bf16 [8192, 4096] on an
// H200, one call: 42.8-43.0 us with Chan's merge and early weights at 69 registers, 41.6-41.7
// with the pivot sums, 41.0-41.1 with them late (70), 39.9 at 64.
template <class T> struct EarlyWeights { static constexpr bool value = sizeof(T) == 4; };

template <bool BIAS, class T, int V>
RT_DEVICE void layernorm_reg(T* __restrict__ y, const T* __restrict__ x, const T* __restrict__ w, const T* __restrict__ b, u32 rows, u32 cols, float eps, u32 want) {
  __shared__ typename RowStats<T>::S shm[RT_REG_SLOTS];
  RegSlots<typename RowStats<T>::S> slots(shm);
  const RegGroup g(want);
  const u32 nv = cols / RegVec<T>::N;
  reg_rows(g, rows, [&](u32 r, bool live) {
    const u64 at = (u64)r * cols;
    const RegSpan sp = reg_span(x + at, g.lane, g.size, live ? nv : 0u);
    uint4 a[V], wv[V], bv[V];
    reg_load(a, sp, splat4(0u));
    if (EarlyWeights<T>::value) ln_weights<BIAS>(wv, bv, w, b, sp);
    float mean, inv;
    RowStats<T>::get(a, sp, cols, eps, slots, mean, inv);
    if (!EarlyWeights<T>::value) ln_weights<BIAS>(wv, bv, w, b, sp);
    ln_apply<BIAS, T>(y + at, wv, bv, sp, a, mean, inv);
  });
}

template <class T, int V>
RT_DEVICE void rmsnorm_reg(T* __restrict__ y, const T* __restrict__ x, const T* __restrict__ w, u32 rows, u32 cols, float eps, u32 want) {
  __shared__ float shm[RT_REG_SLOTS];
  RegSlots<float> slots(shm);
  const RegGroup g(want);
  const u32 nv = cols / RegVec<T>::N;
  reg_rows(g, rows, [&](u32 r, bool live) {
    const u64 at = (u64)r * cols;
    const RegSpan sp = reg_span(x + at, g.lane, g.size, live ? nv : 0u);
    uint4 a[V], wv[V];
    reg_load(a, sp, splat4(0u));
    ln_weights<false>(wv, wv, w, w, sp);
    float q = 0.0f;
    reg_each<T>(a, [&](int, int, float v) { q += v * v; });
    const float inv = 1.0f / sqrtf(reg_all(q, SumOp<float>(), g.size, slots) / (float)cols + eps);
    ln_apply<false, T>(y + at, wv, wv, sp, a, 0.0f, inv);
  });
}

// chunk t % chunks of row t / chunks: where it starts (in elements), its first vector, and
// how many it has
struct NormTask {
  u64 at;
  u32 v0, n;
  RT_DEVICE NormTask(u32 t, u32 cols, u32 chunkVecs, u32 chunks, u32 N) {
    const u32 nv = cols / N;
    v0 = (t % chunks) * chunkVecs;
    at = (u64)(t / chunks) * cols + (u64)v0 * N;
    n = nv - v0 < chunkVecs ? nv - v0 : chunkVecs;
  }
};

template <bool LN, class T>
RT_DEVICE void norm_part(float* __restrict__ part, const T* __restrict__ x, u32 rows, u32 cols, u32 chunkVecs, u32 chunks) {
  __shared__ float shm[RT_REG_SLOTS];
  RegSlots<float> slots(shm);
  const u32 G = blockDim.x, tasks = rows * chunks;
  for (u32 t = blockIdx.x; t < tasks; t += gridDim.x) {
    const NormTask k(t, cols, chunkVecs, chunks, RegVec<T>::N);
    const RegSpan sp = reg_span(x + k.at, threadIdx.x, G, k.n);
    uint4 a[RT_NORM_SPLIT_V];
    reg_load(a, sp, splat4(0u));
    if (LN) {
      float s = 0.0f;
      reg_each<T>(a, [&](int, int, float v) { s += v; });
      const float mean = reg_all(s, SumOp<float>(), G, slots) / (float)(k.n * RegVec<T>::N);
      const float q = reg_all(sq_dev<T>(a, sp, mean), SumOp<float>(), G, slots);
      if (threadIdx.x == 0) { part[2 * (u64)t] = mean; part[2 * (u64)t + 1] = q; }
    } else {
      float q = 0.0f;
      reg_each<T>(a, [&](int, int, float v) { q += v * v; });
      q = reg_all(q, SumOp<float>(), G, slots);
      if (threadIdx.x == 0) part[t] = q;
    }
  }
}

template <bool LN, bool BIAS, class T>
RT_DEVICE void norm_fin(T* __restrict__ y, const T* __restrict__ x, const T* __restrict__ w, const T* __restrict__ b, const float* __restrict__ part, u32 rows, u32 cols, u32 chunkVecs, u32 chunks, float eps) {
  __shared__ float shm[RT_REG_SLOTS];
  RegSlots<float> slots(shm);
  const u32 G = blockDim.x, tasks = rows * chunks;
  for (u32 t = blockIdx.x; t < tasks; t += gridDim.x) {
    const NormTask k(t, cols, chunkVecs, chunks, RegVec<T>::N);
    const RegSpan sp = reg_span(x + k.at, threadIdx.x, G, k.n);
    uint4 a[RT_NORM_SPLIT_V], wv[RT_NORM_SPLIT_V], bv[RT_NORM_SPLIT_V];
    reg_load(a, sp, splat4(0u));
    const u64 w0 = (u64)k.v0 * RegVec<T>::N;
    ln_weights<BIAS>(wv, bv, w + w0, b + w0, sp);
    // the row's statistics from its chunks' (chunk i holds n_i elements: chunkLen but the last)
    const u32 len = chunkVecs * RegVec<T>::N;
    float mean = 0.0f, var;
    if (LN) {
      const float* p = part + 2 * (u64)(t / chunks) * chunks;
      float s = 0.0f;
      for (u32 i = threadIdx.x; i < chunks; i += G) s += p[2 * i] * (float)(i + 1 < chunks ? len : cols - i * len);
      mean = reg_all(s, SumOp<float>(), G, slots) / (float)cols;
      // Chan et al.: the sum of squared deviations from the row's mean is each chunk's own plus
      // n_i (mean_i - mean)^2
      float q = 0.0f;
      for (u32 i = threadIdx.x; i < chunks; i += G) {
        const float d = p[2 * i] - mean;
        q += p[2 * i + 1] + (float)(i + 1 < chunks ? len : cols - i * len) * d * d;
      }
      var = reg_all(q, SumOp<float>(), G, slots) / (float)cols;
    } else {
      const float* p = part + (u64)(t / chunks) * chunks;
      float q = 0.0f;
      for (u32 i = threadIdx.x; i < chunks; i += G) q += p[i];
      var = reg_all(q, SumOp<float>(), G, slots) / (float)cols;
    }
    ln_apply<BIAS, T>(y + k.at, wv, bv, sp, a, mean, 1.0f / sqrtf(var + eps));
  }
}

// BF16_LN_MIN: bf16 layerNorm's resident blocks, one more than RT_NORM_MIN at V = 4 (a cap of 64
// registers: eight 128-thread blocks a multiprocessor instead of the seven that ptxas's own
// choice under 85 gave); f32 spills 40 bytes at that cap and f16 (Chan's merge) 16, so they
// keep RT_NORM_MIN.
#define BF16_LN_MIN(V) ((V) >= 4 ? 4 : RT_NORM_MIN(V))
#define NORM_REG(DT, T, V, LNMIN) \
  RT_ROW_KERNEL(LNMIN(V)) void layernorm_##DT##_v##V(T* y, const T* x, const T* w, const T* b, i64 yOff, i64 xOff, i64 wOff, \
      i64 bOff, u32 rows, u32 cols, float eps, u32 hasBias, u32 group) { RT_GRID_DEP(); \
    if (hasBias) layernorm_reg<true, T, V>(y + yOff, x + xOff, w + wOff, b + bOff, rows, cols, eps, group); \
    else layernorm_reg<false, T, V>(y + yOff, x + xOff, w + wOff, w + wOff, rows, cols, eps, group); } \
  RT_ROW_KERNEL(RT_NORM_MIN(V)) void rmsnorm_##DT##_v##V(T* y, const T* x, const T* w, i64 yOff, i64 xOff, i64 wOff, u32 rows, \
      u32 cols, float eps, u32 group) { RT_GRID_DEP(); \
    rmsnorm_reg<T, V>(y + yOff, x + xOff, w + wOff, rows, cols, eps, group); }
#define NORM_SPLIT(DT, T) \
  RT_ROW_KERNEL(RT_NORM_MIN(RT_NORM_SPLIT_V)) void layernorm_part_##DT(float* part, const T* x, i64 xOff, u32 rows, u32 cols, u32 chunkVecs, u32 chunks) { RT_GRID_DEP(); \
    norm_part<true, T>(part, x + xOff, rows, cols, chunkVecs, chunks); } \
  RT_ROW_KERNEL(RT_NORM_MIN(RT_NORM_SPLIT_V)) void rmsnorm_part_##DT(float* part, const T* x, i64 xOff, u32 rows, u32 cols, u32 chunkVecs, u32 chunks) { RT_GRID_DEP(); \
    norm_part<false, T>(part, x + xOff, rows, cols, chunkVecs, chunks); } \
  RT_ROW_KERNEL(RT_NORM_MIN(RT_NORM_SPLIT_V)) void layernorm_fin_##DT(T* y, const T* x, const T* w, const T* b, const float* part, i64 yOff, i64 xOff, i64 wOff, \
      i64 bOff, u32 rows, u32 cols, u32 chunkVecs, u32 chunks, float eps, u32 hasBias) { RT_GRID_DEP(); \
    if (hasBias) norm_fin<true, true, T>(y + yOff, x + xOff, w + wOff, b + bOff, part, rows, cols, chunkVecs, chunks, eps); \
    else norm_fin<true, false, T>(y + yOff, x + xOff, w + wOff, w + wOff, part, rows, cols, chunkVecs, chunks, eps); } \
  RT_ROW_KERNEL(RT_NORM_MIN(RT_NORM_SPLIT_V)) void rmsnorm_fin_##DT(T* y, const T* x, const T* w, const float* part, i64 yOff, i64 xOff, i64 wOff, u32 rows, \
      u32 cols, u32 chunkVecs, u32 chunks, float eps) { RT_GRID_DEP(); \
    norm_fin<false, false, T>(y + yOff, x + xOff, w + wOff, w + wOff, part, rows, cols, chunkVecs, chunks, eps); }
#define NORM_REG_DT(DT, T, LNMIN) NORM_REG(DT, T, 1, LNMIN) NORM_REG(DT, T, 2, LNMIN) NORM_REG(DT, T, 4, LNMIN) NORM_SPLIT(DT, T)

NORM_REG_DT(f32, float, RT_NORM_MIN) NORM_REG_DT(f16, f16, RT_NORM_MIN) NORM_REG_DT(bf16, bf16, BF16_LN_MIN)
