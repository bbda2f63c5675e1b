// copy.hip: fill, strided copy and 2-D copy. Copies move bits, so they go by element width:
// b1 (u8), b2 (f16 bf16), b4 (f32 u32), b8 (f64 i64). A contiguous copy needs no kernel: use
// the runtime's device-to-device memcpy.
//
// Kernels:
//   fill_<DT>(T* y, i64 yOff, u64 n, V value)
//   fill_<DT>_strided(T* y, Geom g, V value)                          operand 0 = y
//       V: float for f32, double for f64, i64 for i64, u32 otherwise (f16/bf16: the 16-bit
//       pattern in the low bits; u8: the low 8 bits).
//   copy_strided_<W>(E* y, const E* x, Geom g)                       operands y, x
//       any layout on both sides (a strided destination writes into a view).
//   copy_rows_<W>(E* y, const E* x, i64 yOff, i64 xOff, u64 rows, u64 len, i64 yRowStride,
//                 i64 xRowStride, u32 group)                        W also b16 (16-byte units)
//       y[yOff + r*yRowStride + k] = x[xOff + r*xRowStride + k] for k < len: copies whose both
//       sides are rows of contiguous units (cat, sliceSet, narrow). Strides and offsets are in
//       units of W; the host picks the widest W that every row start is aligned to, so most
//       rows move in 16-byte loads and stores, and there is no per-element index division
//       (the strided kernel divides per element per dim). A group of `group` threads (a power
//       of two dividing the block, else the whole block) copies one row at a time; len < 2^31.
#include "elementwise.h"
#include "row-groups.h"

template <class T>
RT_DEVICE void fill_contig(T* y, u64 n, T v) {
  if (aligned16(y)) {
    typedef Vec16<T> V;
    V r;
#pragma unroll
    for (int k = 0; k < V::N; k++) r.v[k] = v;
    const u64 nv = n / V::N;
    grid_loop64(nv, [&](u64 i) { reinterpret_cast<V*>(y)[i] = r; });
    const u64 t = nv * V::N + global_thread();
    if (t < n) y[t] = v;
  } else {
    grid_loop64(n, [&](u64 i) { y[i] = v; });
  }
}
template <class T>
RT_DEVICE void fill_strided(T* y, const Geom& g, T v) {
  grid_loop((u64)g.numel, [&](auto i) {
    i64 off[1];
    geom_offsets<1>(g, i, off);
    y[off[0]] = v;
  });
}

#define FILL(DT, T, V, MAKE) \
  RT_KERNEL void fill_##DT(T* y, i64 yOff, u64 n, V value) { fill_contig(y + yOff, n, MAKE); } \
  RT_KERNEL void fill_##DT##_strided(T* y, Geom g, V value) { fill_strided(y, g, MAKE); }

FILL(f32, float, float, value)
FILL(f64, double, double, value)
FILL(f16, f16, u32, (f16{ (u16)value }))
FILL(bf16, bf16, u32, (bf16{ (u16)value }))
FILL(u8, u8, u32, ((u8)value))
FILL(u32, u32, u32, value)
FILL(i64, i64, i64, value)

template <class E>
RT_DEVICE void copy_rows(E* y, const E* x, u64 rows, u32 len, i64 yRowStride, i64 xRowStride, u32 group) {
  const Groups g(group);
  for (u64 r = g.first; r < rows; r += g.step) copy_row(y + (i64)r * yRowStride, x + (i64)r * xRowStride, len, g.lane, g.size);
}

#define COPY(W, E) \
  RT_KERNEL void copy_strided_##W(E* y, const E* x, Geom g) { \
    map1_strided(y, x, g, [](E v) { return v; }); } \
  COPY_ROWS(W, E)
#define COPY_ROWS(W, E) \
  RT_KERNEL void copy_rows_##W(E* y, const E* x, i64 yOff, i64 xOff, u64 rows, u64 len, i64 yRowStride, i64 xRowStride, u32 group) { \
    copy_rows(y + yOff, x + xOff, rows, (u32)len, yRowStride, xRowStride, group); }

COPY(b1, u8)
COPY(b2, u16)
COPY(b4, u32)
COPY(b8, u64)
COPY_ROWS(b16, uint4)
