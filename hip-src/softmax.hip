// softmax.hip: softmax and logSoftmax over the last dim of contiguous rows, numerically stable
// (the row max is subtracted first). One warp a row up to RT_WARP_ROW_MAX elements, else one
// block a row; the row stays in registers between the passes when it fits (16 bytes x KV per
// thread), so a row is read from memory once.
//
// Kernels (DT in f32 f64 f16 bf16; T storage; half types compute in f32, f64 in f64):
//   softmax_<DT>(T* y, const T* x, i64 yOff, i64 xOff, u64 rows, u64 cols)
//   logsoftmax_<DT>(T* y, const T* x, i64 yOff, i64 xOff, u64 rows, u64 cols)
// y and x contiguous [rows, cols] from their offsets; cols < 2^32.
// Semantics (as the CPU reference): a NaN in a row makes the row NaN; a row of -inf gives NaN.
#include "rowreduce.h"

#define SOFTMAX_KV 4

template <bool LOG, class T>
RT_DEVICE void softmax_rows(T* y, const T* x, u64 rows, u64 cols) {
  typedef typename Elem<T>::C C;
  const RowGroup g(cols);
  const u32 n = (u32)cols;
  for (u64 r = g.first; r < rows; r += g.step) {
    const T* p = x + r * cols;
    RowCache<T, SOFTMAX_KV> cache;
    C m = lowest<C>();
    row_pass<true>(p, n, g.lane, g.size, cache, [&](u32, C v) { m = MaxOp<C>()(m, v); });
    m = group_all(m, MaxOp<C>(), g.block);
    C s = C(0);
    row_pass<false>(p, n, g.lane, g.size, cache, [&](u32, C v) { s += exp(v - m); });
    s = group_all(s, SumOp<C>(), g.block);
    if (LOG) {
      const C ls = log(s);
      row_map(y + r * cols, p, n, g.lane, g.size, cache, [&](u32, C v) { return (v - m) - ls; });
    } else {
      const C inv = C(1) / s;
      row_map(y + r * cols, p, n, g.lane, g.size, cache, [&](u32, C v) { return exp(v - m) * inv; });
    }
  }
}

#define SOFTMAX_DT(DT, T) \
  RT_KERNEL void softmax_##DT(T* y, const T* x, i64 yOff, i64 xOff, u64 rows, u64 cols) { \
    softmax_rows<false>(y + yOff, x + xOff, rows, cols); } \
  RT_KERNEL void logsoftmax_##DT(T* y, const T* x, i64 yOff, i64 xOff, u64 rows, u64 cols) { \
    softmax_rows<true>(y + yOff, x + xOff, rows, cols); }

SOFTMAX_DT(f32, float) SOFTMAX_DT(f64, double) SOFTMAX_DT(f16, f16) SOFTMAX_DT(bf16, bf16)
