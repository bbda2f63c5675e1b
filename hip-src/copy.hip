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
//       any layout on both sides (a strided destination writes into a view). W also b16: the
//       host recasts copies whose innermost dim is unit-stride on both sides in the widest
//       unit that divides their offsets, strides and bases.
//   copy_rows_<W>(E* y, const E* x, i64 yOff, i64 xOff, u64 rows, u64 len, i64 yRowStride,
//                 i64 xRowStride, u32 group)                        W also b16 (16-byte units)
//       y[yOff + r*yRowStride + k] = x[xOff + r*xRowStride + k] for k < len: copies whose both
//       sides are rows of contiguous units (cat, sliceSet, narrow). Strides and offsets are in
//       units of W; the host picks the widest W that every row start is aligned to, so most
//       rows move in 16-byte loads and stores, and there is no per-element index division
//       (the strided kernel divides per element per dim). A group of `group` threads (a power
//       of two dividing the block, else the whole block) copies one row at a time; len < 2^31.
//   transpose_<W>(E* y, const E* x, i64 yOff, i64 xOff, u64 nI, u64 nJ, u64 batch,
//                 i64 yI, i64 xJ, i64 yB, i64 xB)                   W in b1 b2 b4 b8
//       y[yOff + b*yB + i*yI + j] = x[xOff + b*xB + j*xJ + i]: copies whose unit-stride dims
//       differ (transpose.h). Blocks of TP_THREADS (256) threads, any grid.
//   cat_rows_<W>(E* y, CatArgs a)                                    W also b16
//       Input k of a.count copies a.rows rows of a.len[k] units, row r from
//       a.x[k] + a.xOff[k] + r*a.xRowStride[k] to y + a.yOff + r*a.yRowStride + a.col[k]: the
//       inputs of one cat in one launch. Units and strides as copy_rows. Block b works on input
//       b % a.count, so neighbouring blocks fill neighbouring parts of the same y rows; the grid
//       is a multiple of a.count, any multiple.
#include "elementwise.h"
#include "row-groups.h"
#include "transpose.h"

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
  RT_KERNEL void fill_##DT(T* y, i64 yOff, u64 n, V value) { RT_GRID_DEP(); fill_contig(y + yOff, n, MAKE); } \
  RT_KERNEL void fill_##DT##_strided(T* y, Geom g, V value) { RT_GRID_DEP(); fill_strided(y, g, MAKE); }

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

#define COPY_STRIDED(W, E) \
  RT_KERNEL void copy_strided_##W(E* y, const E* x, Geom g) { RT_GRID_DEP(); \
    map1_strided(y, x, g, [](E v) { return v; }); }
#define COPY(W, E) COPY_STRIDED(W, E) COPY_ROWS(W, E)
#define COPY_ROWS(W, E) \
  RT_KERNEL void copy_rows_##W(E* y, const E* x, i64 yOff, i64 xOff, u64 rows, u64 len, i64 yRowStride, i64 xRowStride, u32 group) { RT_GRID_DEP(); \
    copy_rows(y + yOff, x + xOff, rows, (u32)len, yRowStride, xRowStride, group); }

COPY(b1, u8)
COPY(b2, u16)
COPY(b4, u32)
COPY(b8, u64)
COPY_ROWS(b16, uint4)
COPY_STRIDED(b16, uint4)

#define TRANSPOSE(W, E) \
  RT_KERNEL void transpose_##W(TpShape<E>::T* y, const TpShape<E>::T* x, i64 yOff, i64 xOff, u64 nI, u64 nJ, u64 batch, \
      i64 yI, i64 xJ, i64 yB, i64 xB) { RT_GRID_DEP(); \
    transpose_tiles<E>(y + yOff, x + xOff, nI, nJ, batch, yI, xJ, yB, xB); }

TRANSPOSE(b1, 1)
TRANSPOSE(b2, 2)
TRANSPOSE(b4, 4)
TRANSPOSE(b8, 8)

// ---- cat: every input's rows in one launch ------------------------------------------------------
#define CAT_MAX 8
// By value (352 bytes); packed by launchCat() in src/ops/gpu/cat.ts: keep the two in step.
struct CatArgs {
  i64 yOff;                  // offset 0, in units
  i64 yRowStride;            // 8
  u64 rows;                  // 16
  u64 count;                 // 24: inputs used, <= CAT_MAX
  const void* x[CAT_MAX];    // 32
  i64 xOff[CAT_MAX];         // 96
  i64 xRowStride[CAT_MAX];   // 160
  u64 len[CAT_MAX];          // 224: units a row
  i64 col[CAT_MAX];          // 288: the input's first unit in a y row; 352 in all
};

// Each input as a flat run of rows * len units, tiles of blockDim.x * 4 units a block:
// one 64-bit division a tile gives its first row and column, and each unit's row follows by
// one compare (rows of at least a tile) or a 32-bit division (shorter rows), never a 64-bit
// division per unit. Four loads in flight before the stores, as copy_row.
template <class E>
RT_DEVICE void cat_rows(E* __restrict__ y, const CatArgs& a) {
  // inputs interleaved block by block (measured on an H200: 2% faster than one input a grid row)
  const u32 n = (u32)a.count, k = blockIdx.x % n, bx = blockIdx.x / n, gx = gridDim.x / n;
  const E* __restrict__ x = static_cast<const E*>(a.x[k]) + a.xOff[k];
  E* __restrict__ yk = y + a.yOff + a.col[k];
  const u64 len = a.len[k], total = a.rows * len;
  const i64 xs = a.xRowStride[k], ys = a.yRowStride;
  const u32 b = blockDim.x;
  const u64 tile = (u64)b * 4u;
  const bool longRows = len >= tile;
  for (u64 g0 = (u64)bx * tile; g0 < total; g0 += (u64)gx * tile) {
    const u64 r0 = g0 / len, u0 = g0 - r0 * len;
    i64 src[4], dst[4];
    bool ok[4];
#pragma unroll
    for (int s = 0; s < 4; s++) {
      const u64 o = u0 + threadIdx.x + (u64)s * b;   // < len + tile
      u64 r, u;
      if (longRows) {
        const bool wrap = o >= len;
        r = r0 + (wrap ? 1u : 0u);
        u = wrap ? o - len : o;
      } else {
        const u32 q = (u32)o / (u32)len;             // len < tile <= 1024: o < 2^32
        r = r0 + q;
        u = o - (u64)q * len;
      }
      ok[s] = g0 + threadIdx.x + (u64)s * b < total;
      src[s] = (i64)r * xs + (i64)u;
      dst[s] = (i64)r * ys + (i64)u;
    }
    E v0 = E(), v1 = E(), v2 = E(), v3 = E();
    if (ok[0]) v0 = x[src[0]];
    if (ok[1]) v1 = x[src[1]];
    if (ok[2]) v2 = x[src[2]];
    if (ok[3]) v3 = x[src[3]];
    if (ok[0]) yk[dst[0]] = v0;
    if (ok[1]) yk[dst[1]] = v1;
    if (ok[2]) yk[dst[2]] = v2;
    if (ok[3]) yk[dst[3]] = v3;
  }
}

#define CAT(W, E) \
  RT_KERNEL void cat_rows_##W(E* y, CatArgs a) { RT_GRID_DEP(); cat_rows(y, a); }

CAT(b1, u8)
CAT(b2, u16)
CAT(b4, u32)
CAT(b8, u64)
CAT(b16, uint4)
