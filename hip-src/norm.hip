// norm.hip: layerNorm (optional bias) and rmsNorm over the last dim of contiguous rows. Sums in
// f32 for f32/f16/bf16 and f64 for f64; the variance is the mean squared deviation from the
// mean (two passes over the row, held in registers when it fits, so no E[x^2] - mean^2
// cancellation). A group of `group` threads takes a row (the host picks it so the row fits the
// group's registers where it can: 16 bytes x NORM_KV per thread); weight and bias are read in
// 16-byte vectors beside the row. Two group reductions (mean, then variance) measured faster
// on NVIDIA than one merging per-lane (count, mean, M2) parts: the merge's divisions and
// extra registers cost more than the barrier they save.
//
// Kernels (DT in f32 f64 f16 bf16; T storage; C = double for f64, float otherwise):
//   layernorm_<DT>(T* y, const T* x, const T* w, const T* b, i64 yOff, i64 xOff, i64 wOff,
//                  i64 bOff, u64 rows, u64 cols, C eps, u32 hasBias, u32 group)
//       y = (x - mean) / sqrt(var + eps) * w + b; b is ignored (may be 0) when hasBias is 0.
//   rmsnorm_<DT>(T* y, const T* x, const T* w, i64 yOff, i64 xOff, i64 wOff, u64 rows,
//                u64 cols, C eps, u32 group)
//       y = x / sqrt(mean(x^2) + eps) * w
// x and y contiguous [rows, cols], w and b contiguous [cols]; rows < 2^31, cols < 2^32. group: threads per
// row, a multiple of the wave size dividing the block (else the whole block); any grid works.
#include "rowreduce.h"

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
      i64 bOff, u64 rows, u64 cols, C eps, u32 hasBias, u32 group) { \
    if (hasBias) layernorm_rows<T, C, true>(y + yOff, x + xOff, w + wOff, b + bOff, rows, cols, eps, group); \
    else layernorm_rows<T, C, false>(y + yOff, x + xOff, w + wOff, b, rows, cols, eps, group); } \
  RT_ROW_KERNEL(RMS) void rmsnorm_##DT(T* y, const T* x, const T* w, i64 yOff, i64 xOff, i64 wOff, u64 rows, \
      u64 cols, C eps, u32 group) { \
    rmsnorm_rows<T, C>(y + yOff, x + xOff, w + wOff, rows, cols, eps, group); }

NORM_DT(f32, float, float, 4, 5) NORM_DT(f64, double, double, 3, 4) NORM_DT(f16, f16, float, 3, 3)
NORM_DT(bf16, bf16, float, 4, 5)
