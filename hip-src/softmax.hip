// softmax.hip: softmax and logSoftmax over the last dim of contiguous rows, numerically stable
// (the row max is subtracted first). A group of `group` threads takes a row (the host picks it
// so the row fits the group's registers where it can: 16 bytes x SOFTMAX_KV per thread), so a
// row is read from memory once; longer rows are re-read in batches.
//
// Kernels (DT in f32 f64 f16 bf16; T storage; half types compute in f32, f64 in f64):
//   softmax_<DT>(T* y, const T* x, i64 yOff, i64 xOff, u64 rows, u64 cols, u32 group)
//   logsoftmax_<DT>(T* y, const T* x, i64 yOff, i64 xOff, u64 rows, u64 cols, u32 group)
// y and x contiguous [rows, cols] from their offsets; rows < 2^31, cols < 2^32. group: threads per row, a
// multiple of the wave size dividing the block (else the whole block); any grid is correct.
// Semantics (as the CPU reference): a NaN in a row makes the row NaN; a row of -inf gives NaN.
#include "rowreduce.h"

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
  RT_ROW_KERNEL(MIN) void softmax_##DT(T* y, const T* x, i64 yOff, i64 xOff, u64 rows, u64 cols, u32 group) { \
    softmax_rows<false>(y + yOff, x + xOff, rows, cols, group); } \
  RT_ROW_KERNEL(MIN) void logsoftmax_##DT(T* y, const T* x, i64 yOff, i64 xOff, u64 rows, u64 cols, u32 group) { \
    softmax_rows<true>(y + yOff, x + xOff, rows, cols, group); }

SOFTMAX_DT(f32, float, 5) SOFTMAX_DT(f64, double, 0) SOFTMAX_DT(f16, f16, 3) SOFTMAX_DT(bf16, bf16, 5)
