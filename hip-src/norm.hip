// norm.hip: layerNorm (optional bias) and rmsNorm over the last dim of contiguous rows. Sums in
// f32 for f32/f16/bf16 and f64 for f64; the variance is the mean squared deviation from the
// mean (two passes over the row, held in registers when it fits, so no E[x^2] - mean^2
// cancellation). One warp a row up to RT_WARP_ROW_MAX elements, else one block a row.
//
// Kernels (DT in f32 f64 f16 bf16; T storage; C = double for f64, float otherwise):
//   layernorm_<DT>(T* y, const T* x, const T* w, const T* b, i64 yOff, i64 xOff, i64 wOff,
//                  i64 bOff, u64 rows, u64 cols, C eps, u32 hasBias)
//       y = (x - mean) / sqrt(var + eps) * w + b; b is ignored (may be 0) when hasBias is 0.
//   rmsnorm_<DT>(T* y, const T* x, const T* w, i64 yOff, i64 xOff, i64 wOff, u64 rows,
//                u64 cols, C eps)
//       y = x / sqrt(mean(x^2) + eps) * w
// x and y contiguous [rows, cols], w and b contiguous [cols]; cols < 2^32.
#include "rowreduce.h"

#define NORM_KV 4

template <class T, class C>
RT_DEVICE void layernorm_rows(T* y, const T* x, const T* w, const T* b, u64 rows, u64 cols, C eps, bool hasBias) {
  typedef Elem<T> E;
  const RowGroup g(cols);
  const u32 n = (u32)cols;
  for (u64 r = g.first; r < rows; r += g.step) {
    const T* p = x + r * cols;
    RowCache<T, NORM_KV> cache;
    C s = C(0);
    row_pass<true>(p, n, g.lane, g.size, cache, [&](u32, C v) { s += v; });
    const C mean = group_all(s, SumOp<C>(), g.block) / (C)cols;
    C q = C(0);
    row_pass<false>(p, n, g.lane, g.size, cache, [&](u32, C v) { const C d = v - mean; q += d * d; });
    const C inv = C(1) / sqrt(group_all(q, SumOp<C>(), g.block) / (C)cols + eps);
    if (hasBias) {
      row_map(y + r * cols, p, n, g.lane, g.size, cache,
        [&](u32 k, C v) { return (v - mean) * inv * E::load(w[k]) + E::load(b[k]); });
    } else {
      row_map(y + r * cols, p, n, g.lane, g.size, cache,
        [&](u32 k, C v) { return (v - mean) * inv * E::load(w[k]); });
    }
  }
}

template <class T, class C>
RT_DEVICE void rmsnorm_rows(T* y, const T* x, const T* w, u64 rows, u64 cols, C eps) {
  typedef Elem<T> E;
  const RowGroup g(cols);
  const u32 n = (u32)cols;
  for (u64 r = g.first; r < rows; r += g.step) {
    const T* p = x + r * cols;
    RowCache<T, NORM_KV> cache;
    C q = C(0);
    row_pass<true>(p, n, g.lane, g.size, cache, [&](u32, C v) { q += v * v; });
    const C inv = C(1) / sqrt(group_all(q, SumOp<C>(), g.block) / (C)cols + eps);
    row_map(y + r * cols, p, n, g.lane, g.size, cache, [&](u32 k, C v) { return v * inv * E::load(w[k]); });
  }
}

#define NORM_DT(DT, T, C) \
  RT_KERNEL void layernorm_##DT(T* y, const T* x, const T* w, const T* b, i64 yOff, i64 xOff, i64 wOff, \
      i64 bOff, u64 rows, u64 cols, C eps, u32 hasBias) { \
    layernorm_rows<T, C>(y + yOff, x + xOff, w + wOff, hasBias ? b + bOff : b, rows, cols, eps, hasBias != 0); } \
  RT_KERNEL void rmsnorm_##DT(T* y, const T* x, const T* w, i64 yOff, i64 xOff, i64 wOff, u64 rows, \
      u64 cols, C eps) { \
    rmsnorm_rows<T, C>(y + yOff, x + xOff, w + wOff, rows, cols, eps); }

NORM_DT(f32, float, float) NORM_DT(f64, double, double) NORM_DT(f16, f16, float) NORM_DT(bf16, bf16, float)
