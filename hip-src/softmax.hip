// softmax.hip: softmax and logSoftmax over the last dim of contiguous rows, numerically stable
// (the row max is subtracted first). Three shapes of kernel:
//  - softmax_<DT>_v<V> (f32 f16 bf16): the row in registers (rowreg.h), read once and written
//    once; for rows of whole 16-byte vectors at 16-byte boundaries that fit G * V vectors.
//  - softmax_part_<DT> then softmax_fin_<DT> (f32 f16 bf16): a long row split over blocks. The
//    first kernel writes each chunk's (max, sum of exp(x - max)), the second merges a row's
//    chunks and writes the chunk's outputs (re-reading x, from L2 where it still is).
//  - softmax_<DT> (every float dtype): the general kernel: a group of `group` threads takes a
//    row, the first 16 bytes x SOFTMAX_KV of each thread's share kept in registers, the rest
//    re-read; any alignment, any length.
//
// Kernels (T storage; half types compute in f32, f64 in f64):
//   softmax_<DT>(T* y, const T* x, i64 yOff, i64 xOff, u64 rows, u64 cols, u32 group)
//   logsoftmax_<DT>(T* y, const T* x, i64 yOff, i64 xOff, u64 rows, u64 cols, u32 group)
//       y and x contiguous [rows, cols] from their offsets; rows < 2^31, cols < 2^32. group:
//       threads per row, a multiple of the wave size dividing the block (else the whole block).
//   softmax_<DT>_v<V>(T* y, const T* x, i64 yOff, i64 xOff, u32 rows, u32 cols, u32 group)
//   logsoftmax_<DT>_v<V>(same)
//       V in 1 2 4 8. cols a multiple of 16 / sizeof(T), at most group * V
//       vectors; x + xOff and y + yOff 16-byte aligned. group: threads per row (rowreg.h: a
//       power of two up to the wave size, else the whole block).
//   softmax_part_<DT>(float* part, const T* x, i64 xOff, u32 rows, u32 cols, u32 chunkVecs, u32 chunks)
//       part[2t], part[2t + 1] = the max m and sum of exp(x - m) (0 when m is -inf) of chunk
//       t % chunks of row t / chunks: vectors [c * chunkVecs, (c + 1) * chunkVecs) of the row,
//       chunkVecs <= blockDim.x * RT_SOFTMAX_SPLIT_V; a block a chunk. Alignment as the _v kernels.
//   softmax_fin_<DT>(T* y, const T* x, const float* part, i64 yOff, i64 xOff, u32 rows,
//                    u32 cols, u32 chunkVecs, u32 chunks)
//   logsoftmax_fin_<DT>(same)
//       the outputs of each chunk from its row's parts; rows * chunks < 2^31.
// Any grid is correct for every kernel.
// Semantics (as the CPU reference): a NaN in a row makes the row NaN; a row of -inf gives NaN
// (+inf too). The 16-bit types take exp as one hardware 2^x of x * log2(e) - max * log2(e):
// its few-ulp f32 error is far below their rounding; f32 keeps the accurate expf.
#include "rowreduce.h"
#include "rowreg.h"

#define SOFTMAX_KV 4

template <bool LOG, class T>
RT_DEVICE void softmax_rows(T* y, const T* x, u64 rows, u64 cols, u32 group) {
  typedef typename Elem<T>::C C;
  const RowGroup g(group);
  const u32 nc = (u32)cols;
  const RowAux<T, 0> none{};
  for_rows(g, (u32)rows, [&](u32 r, bool live) {
    const u32 n = live ? nc : 0u;
    const T* p = x + (u64)r * nc;
    RowCache<T, SOFTMAX_KV> cache;
    C m = lowest<C>();
    row_pass<true>(p, n, g.lane, g.size, cache, [&](u32, C v) { m = MaxOp<C>()(m, v); });
    m = group_all(m, MaxOp<C>(), g.size);
    C s = C(0);
    row_pass<false>(p, n, g.lane, g.size, cache, [&](u32, C v) { s += exp(v - m); });
    s = group_all(s, SumOp<C>(), g.size);
    T* yr = y + (u64)r * nc;
    if (LOG) {
      const C ls = log(s);
      row_map(yr, p, n, g.lane, g.size, cache, none, [&](u32, C v, const C (&)[1]) { return (v - m) - ls; });
    } else {
      const C inv = C(1) / s;
      row_map(yr, p, n, g.lane, g.size, cache, none, [&](u32, C v, const C (&)[1]) { return exp(v - m) * inv; });
    }
  });
}

// MIN: resident blocks per NVIDIA multiprocessor (RT_ROW_KERNEL), the most that
// ptxas -arch=sm_90 fits without spilling
#define SOFTMAX_DT(DT, T, MIN) \
  RT_ROW_KERNEL(MIN) void softmax_##DT(T* y, const T* x, i64 yOff, i64 xOff, u64 rows, u64 cols, u32 group) { RT_GRID_DEP(); \
    softmax_rows<false>(y + yOff, x + xOff, rows, cols, group); } \
  RT_ROW_KERNEL(MIN) void logsoftmax_##DT(T* y, const T* x, i64 yOff, i64 xOff, u64 rows, u64 cols, u32 group) { RT_GRID_DEP(); \
    softmax_rows<true>(y + yOff, x + xOff, rows, cols, group); }

SOFTMAX_DT(f32, float, 5) SOFTMAX_DT(f64, double, 0) SOFTMAX_DT(f16, f16, 3) SOFTMAX_DT(bf16, bf16, 5)

// ---- rows in registers, and rows split over blocks ---------------------------------------------
// exp(v - m) as the row's sums and outputs take it: accurate for f32; for the 16-bit types
// 2^(v * log2e - mL) with mL = m * log2e (an error in mL is common to a whole row and
// cancels in the division by the sum).
template <class T> RT_DEVICE float sm_exp(float v, float m, float mL) {
  if constexpr (sizeof(T) == 4) { (void)mL; return expf(v - m); }
  else { (void)m; return ex2_fast(fmaf(v, RT_LOG2E, -mL)); }
}

// Sum of exp(v - p) over a lane's vectors, p the pivot: m, or 0 where m is -inf (a share of
// -inf only: its terms are 0, not exp(-inf - -inf)).
template <class T, int V>
RT_DEVICE float sm_sum(const uint4 (&a)[V], float m) {
  const float p = m == lowest<float>() ? 0.0f : m, pL = p * RT_LOG2E;
  float s[V];
#pragma unroll
  for (int c = 0; c < V; c++) s[c] = 0.0f;
  reg_each<T>(a, [&](int c, int, float v) { s[c] += sm_exp<T>(v, p, pL); });
#pragma unroll
  for (int c = 1; c < V; c++) s[0] += s[c];
  return s[0];
}

template <class T, int V>
RT_DEVICE float sm_max(const uint4 (&a)[V]) {
  float m = vec_max<T>(a[0]);
#pragma unroll
  for (int c = 1; c < V; c++) m = max_nan(m, vec_max<T>(a[c]));
  return m;
}

// The outputs of a lane's vectors given the row's max m and sum s. An output is NaN only where
// the whole row is (m or s NaN): such a row is stored as NaN outright, so the others round
// with no NaN test.
template <bool LOG, class T, int V>
RT_DEVICE void sm_store(T* y, const RegSpan& sp, const uint4 (&a)[V], float m, float s) {
  if (!(m == m && s == s)) { reg_fill<V>(y, sp, RegVec<T>::nan()); return; }
  if (LOG) {
    const float ls = logf(s);
    reg_store<false, T>(y, sp, a, [&](int, int, float v) { return (v - m) - ls; });
  } else {
    const float inv = sizeof(T) == 4 ? 1.0f / s : rcp_fast(s), mL = m * RT_LOG2E;
    reg_store<false, T>(y, sp, a, [&](int, int, float v) { return sm_exp<T>(v, m, mL) * inv; });
  }
}

template <bool LOG, class T, int V>
RT_DEVICE void softmax_reg(T* __restrict__ y, const T* __restrict__ x, u32 rows, u32 cols, u32 want) {
  __shared__ float shm[RT_REG_SLOTS];
  RegSlots<float> slots(shm);
  const RegGroup g(want);
  const u32 nv = cols / RegVec<T>::N;
  reg_rows(g, rows, [&](u32 r, bool live) {
    const u64 at = (u64)r * cols;
    const RegSpan sp = reg_span(x + at, g.lane, g.size, live ? nv : 0u);
    uint4 a[V];
    reg_load(a, sp, RegVec<T>::neg_inf());
    const float m = reg_all(sm_max<T>(a), MaxOp<float>(), g.size, slots);
    if constexpr (sizeof(T) == 4 && !LOG) {
      // f32: each exp computed once and kept in place of its value (the same registers)
      float s = 0.0f;
      float e[V][4];
      reg_each<T>(a, [&](int c, int k, float v) { e[c][k] = expf(v - m); s += e[c][k]; });
      s = reg_all(s, SumOp<float>(), g.size, slots);
      if (s == s) {
        const float inv = 1.0f / s;
        reg_store<false, T>(y + at, sp, a, [&](int c, int k, float) { return e[c][k] * inv; });
      } else {
        reg_fill<V>(y + at, sp, RegVec<T>::nan());
      }
    } else {
      const float s = reg_all(sm_sum<T>(a, m), SumOp<float>(), g.size, slots);
      sm_store<LOG>(y + at, sp, a, m, s);
    }
  });
}

// chunk t % chunks of row t / chunks: where it starts (in elements), and its vectors
struct SplitTask {
  u64 at;
  u32 n;
  RT_DEVICE SplitTask(u32 t, u32 cols, u32 chunkVecs, u32 chunks, u32 N) {
    const u32 nv = cols / N, v0 = (t % chunks) * chunkVecs;
    at = (u64)(t / chunks) * cols + (u64)v0 * N;
    n = nv - v0 < chunkVecs ? nv - v0 : chunkVecs;
  }
};

template <class T>
RT_DEVICE void softmax_part(float* __restrict__ part, const T* __restrict__ x, u32 rows, u32 cols, u32 chunkVecs, u32 chunks) {
  __shared__ float shm[RT_REG_SLOTS];
  RegSlots<float> slots(shm);
  const u32 G = blockDim.x, tasks = rows * chunks;
  for (u32 t = blockIdx.x; t < tasks; t += gridDim.x) {
    const SplitTask k(t, cols, chunkVecs, chunks, RegVec<T>::N);
    uint4 a[RT_SOFTMAX_SPLIT_V];
    reg_load(a, reg_span(x + k.at, threadIdx.x, G, k.n), RegVec<T>::neg_inf());
    const float m = reg_all(sm_max<T>(a), MaxOp<float>(), G, slots);
    const float s = reg_all(sm_sum<T>(a, m), SumOp<float>(), G, slots);
    if (threadIdx.x == 0) { part[2 * (u64)t] = m; part[2 * (u64)t + 1] = s; }
  }
}

template <bool LOG, class T>
RT_DEVICE void softmax_fin(T* __restrict__ y, const T* __restrict__ x, const float* __restrict__ part, u32 rows, u32 cols, u32 chunkVecs, u32 chunks) {
  __shared__ float shm[RT_REG_SLOTS];
  RegSlots<float> slots(shm);
  const u32 G = blockDim.x, tasks = rows * chunks;
  for (u32 t = blockIdx.x; t < tasks; t += gridDim.x) {
    const SplitTask k(t, cols, chunkVecs, chunks, RegVec<T>::N);
    const RegSpan sp = reg_span(x + k.at, threadIdx.x, G, k.n);
    uint4 a[RT_SOFTMAX_SPLIT_V];
    reg_load(a, sp, RegVec<T>::neg_inf());
    // the row's max and sum from its chunks: a chunk of -inf only adds nothing (its sum is 0,
    // and exp(-inf - m) would be NaN where m is -inf too, a row of -inf)
    const float* p = part + 2 * (u64)(t / chunks) * chunks;
    float m = lowest<float>();
    for (u32 i = threadIdx.x; i < chunks; i += G) m = max_nan(m, p[2 * i]);
    m = reg_all(m, MaxOp<float>(), G, slots);
    float s = 0.0f;
    for (u32 i = threadIdx.x; i < chunks; i += G) {
      const float mi = p[2 * i], si = p[2 * i + 1];
      if (mi != lowest<float>()) s += si * expf(mi - m);
    }
    s = reg_all(s, SumOp<float>(), G, slots);
    sm_store<LOG>(y + k.at, sp, a, m, s);
  }
}

#define SOFTMAX_REG(DT, T, V) \
  RT_ROW_KERNEL(RT_REG_MIN(V)) void softmax_##DT##_v##V(T* y, const T* x, i64 yOff, i64 xOff, u32 rows, u32 cols, u32 group) { RT_GRID_DEP(); \
    softmax_reg<false, T, V>(y + yOff, x + xOff, rows, cols, group); } \
  RT_ROW_KERNEL(RT_REG_MIN(V)) void logsoftmax_##DT##_v##V(T* y, const T* x, i64 yOff, i64 xOff, u32 rows, u32 cols, u32 group) { RT_GRID_DEP(); \
    softmax_reg<true, T, V>(y + yOff, x + xOff, rows, cols, group); }
#define SOFTMAX_SPLIT(DT, T) \
  RT_ROW_KERNEL(RT_REG_MIN(RT_SOFTMAX_SPLIT_V)) void softmax_part_##DT(float* part, const T* x, i64 xOff, u32 rows, u32 cols, u32 chunkVecs, u32 chunks) { RT_GRID_DEP(); \
    softmax_part<T>(part, x + xOff, rows, cols, chunkVecs, chunks); } \
  RT_ROW_KERNEL(RT_REG_MIN(RT_SOFTMAX_SPLIT_V)) void softmax_fin_##DT(T* y, const T* x, const float* part, i64 yOff, i64 xOff, u32 rows, u32 cols, u32 chunkVecs, u32 chunks) { RT_GRID_DEP(); \
    softmax_fin<false, T>(y + yOff, x + xOff, part, rows, cols, chunkVecs, chunks); } \
  RT_ROW_KERNEL(RT_REG_MIN(RT_SOFTMAX_SPLIT_V)) void logsoftmax_fin_##DT(T* y, const T* x, const float* part, i64 yOff, i64 xOff, u32 rows, u32 cols, u32 chunkVecs, u32 chunks) { RT_GRID_DEP(); \
    softmax_fin<true, T>(y + yOff, x + xOff, part, rows, cols, chunkVecs, chunks); }
#define SOFTMAX_REG_DT(DT, T) SOFTMAX_REG(DT, T, 1) SOFTMAX_REG(DT, T, 2) SOFTMAX_REG(DT, T, 4) SOFTMAX_REG(DT, T, 8) SOFTMAX_SPLIT(DT, T)

SOFTMAX_REG_DT(f32, float) SOFTMAX_REG_DT(f16, f16) SOFTMAX_REG_DT(bf16, bf16)

