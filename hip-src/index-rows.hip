// index-rows.hip: the fast paths of indexSelect, embedding and gather, for layouts where the
// copied data runs along rows (src/ops/gpu/index-rows.ts decides; indexing.hip's kernels take
// every other layout). A group of threads owns one output row at a time, so the id of a row
// (indexSelect, embedding) is read and range-checked once per row, not once per element, and
// the only divisions left are one per row.
//
// Rows go to groups of `group` threads (row-groups.h): any grid is correct.
//
// Kernels (W the unit moved: b1 b2 b4 b8, and b16 for row copies; E its storage type;
// I in u8 u32 i64):
//   index_rows_<W>_<I>(E* y, const E* x, const I* ids, u64* err, i64 yOff, i64 xOff, i64 idsOff,
//                      u64 rows, u64 n, u64 len, i64 xPre, i64 xDim, i64 idsStride,
//                      u64 limit, u32 group, u32 tag)
//       Output row r (rows = pre * n, each `len` units, y contiguous from yOff) is the x row
//       at xOff + p * xPre + id * xDim, p = r / n, id = ids[idsOff + (r % n) * idsStride].
//       The host picks W so that every row start is W-aligned (16-byte loads where it can).
//       A bad id skips its row (lane 0 records it, at position r % n of the ids).
//   gather_rows_<W>_<I>(E* y, const E* x, const I* ids, u64* err, i64 yOff, Geom g,
//                      u64 rows, u64 cols, i64 xCol, i64 idsCol, i64 xDim,
//                      u64 limit, u32 group, u32 tag)
//       y (contiguous from yOff) is [rows, cols]; g walks the rows: operand 0 gives the x row
//       start (stride 0 on the gathered dim), operand 1 the ids row start. Then
//       y[r * cols + c] = x[xRow + c * xCol + ids[idsRow + c * idsCol] * xDim]; a bad id
//       skips its element and is recorded at position r * cols + c. cols < 2^31.
//   index_add_rows_<DT>_<I>(A* acc, const T* src, const I* ids, u64* err, i64 accOff, i64 srcOff,
//                      i64 idsOff, u64 rows, u64 n, u64 len, i64 accPre, i64 accDim, i64 srcPre,
//                      i64 srcDim, i64 idsStride, u64 limit, u32 group, u32 tag)
//       indexAdd's rows: src row r (rows = pre * n, p = r / n, j = r % n; each `len` elements at
//       srcOff + p * srcPre + j * srcDim, unit stride) is added with atomics to the acc row at
//       accOff + p * accPre + id * accDim, id = ids[idsOff + j * idsStride]. A is atomic-add.h's
//       accumulator type (f32 for f16/bf16). Repeated ids add every row. A bad id skips its row
//       (lane 0 records it, at position j). len < 2^31.
//   put_rows_<W>_<I>(E* y, const E* x, const I* ids, u64* err, i64 yOff, i64 xOff, i64 idsOff,
//                      u64 rows, u64 n, u64 len, i64 yPre, i64 yDim, i64 xPre, i64 xDim,
//                      i64 idsStride, u64 limit, u32 group, u32 tag)
//       indexSetDistinct's rows: x row r (rows = pre * n, p = r / n, j = r % n; each `len` units
//       at xOff + p * xPre + j * xDim) is copied to the y row at yOff + p * yPre + id * yDim,
//       id = ids[idsOff + j * idsStride]. The ids are distinct (the caller's promise), so rows
//       need no ordering: no buffer, one launch. A bad id skips its row (recorded at position j).
#include "bad-id.h"
#include "row-groups.h"
#include "atomic-add.h"

template <class E, class I>
RT_DEVICE void index_rows_impl(E* __restrict__ y, const E* __restrict__ x, const I* __restrict__ ids, u64* err,
    u64 rows, u64 n, u32 len, i64 xPre, i64 xDim, i64 idsStride, u64 limit, u32 group, u32 tag) {
  const Groups g(group);
  for (u64 r = g.first; r < rows; r += g.step) {
    // one division a row (32-bit where rows allow), none at all for the common single-block
    // case (indexSelect on dim 0, embedding): the branches are uniform
    const u64 p = n >= rows ? 0 : rows <= 0xffffffffull ? (u64)((u32)r / (u32)n) : r / n, j = r - p * n;
    const u64 id = (u64)ids[(i64)j * idsStride];
    if (id >= limit) {
      if (g.lane == 0) record_bad_id(err, tag, id, j, limit);
      continue;
    }
    copy_row(y + r * len, x + (i64)p * xPre + (i64)id * xDim, len, g.lane, g.size);
  }
}

template <class E, class I>
RT_DEVICE void gather_rows_impl(E* __restrict__ y, const E* __restrict__ x, const I* __restrict__ ids, u64* err,
    const Geom& geom, u64 rows, u32 cols, i64 xCol, i64 idsCol, i64 xDim, u64 limit, u32 group, u32 tag) {
  constexpr u32 B = 4;  // ids a thread loads before it gathers any (loads in flight)
  const Groups g(group);
  const u32 G = g.size;
  const bool narrow = rows <= 0x7fffffffull;
  for (u64 r = g.first; r < rows; r += g.step) {
    i64 off[2];
    if (narrow) geom_offsets<2>(geom, (u32)r, off);
    else geom_offsets<2>(geom, r, off);
    const E* xr = x + off[0];
    const I* ir = ids + off[1];
    E* yr = y + r * cols;
    // B ids, then the B elements they pick, then the stores: loads in flight, not round trips
    u32 c = g.lane;
    for (; c + (B - 1) * G < cols; c += B * G) {
      u64 id[B];
      E v[B];
#pragma unroll
      for (u32 u = 0; u < B; u++) id[u] = (u64)ir[(i64)(c + u * G) * idsCol];
#pragma unroll
      for (u32 u = 0; u < B; u++) if (id[u] < limit) v[u] = xr[(i64)(c + u * G) * xCol + (i64)id[u] * xDim];
#pragma unroll
      for (u32 u = 0; u < B; u++) {
        if (id[u] < limit) yr[c + u * G] = v[u];
        else record_bad_id(err, tag, id[u], r * cols + c + u * G, limit);
      }
    }
    for (; c < cols; c += G) {
      const u64 id = (u64)ir[(i64)c * idsCol];
      if (id < limit) yr[c] = xr[(i64)c * xCol + (i64)id * xDim];
      else record_bad_id(err, tag, id, r * cols + c, limit);
    }
  }
}

// dst[k] += src[k] for k = l, l + G, ... < len: consecutive lanes load consecutive elements and
// add to consecutive accumulators, so each wave's atomic covers whole lines of acc once (the
// L2 takes an atomic request per line; 16-byte source loads would spread one instruction's
// atomics over four times the lines). Four loads in flight before the atomics.
template <class T>
RT_DEVICE void add_row(typename AddVal<T>::A* dst, const T* __restrict__ src, u32 len, u32 l, u32 G) {
  u32 k = l;
  for (; k + 3 * G < len; k += 4 * G) {
    const T a = src[k], b = src[k + G], c = src[k + 2 * G], d = src[k + 3 * G];
    atomic_add(dst + k, AddVal<T>::get(a));
    atomic_add(dst + k + G, AddVal<T>::get(b));
    atomic_add(dst + k + 2 * G, AddVal<T>::get(c));
    atomic_add(dst + k + 3 * G, AddVal<T>::get(d));
  }
  for (; k < len; k += G) atomic_add(dst + k, AddVal<T>::get(src[k]));
}

template <class T, class I>
RT_DEVICE void index_add_rows_impl(typename AddVal<T>::A* acc, const T* __restrict__ src, const I* __restrict__ ids, u64* err,
    u64 rows, u64 n, u32 len, i64 accPre, i64 accDim, i64 srcPre, i64 srcDim, i64 idsStride, u64 limit, u32 group, u32 tag) {
  const Groups g(group);
  for (u64 r = g.first; r < rows; r += g.step) {
    // as index_rows: no division for one block of rows (dim 0), else one a row
    const u64 p = n >= rows ? 0 : rows <= 0xffffffffull ? (u64)((u32)r / (u32)n) : r / n, j = r - p * n;
    const u64 id = (u64)ids[(i64)j * idsStride];
    if (id >= limit) {
      if (g.lane == 0) record_bad_id(err, tag, id, j, limit);
      continue;
    }
    add_row<T>(acc + (i64)p * accPre + (i64)id * accDim, src + (i64)p * srcPre + (i64)j * srcDim, len, g.lane, g.size);
  }
}

template <class E, class I>
RT_DEVICE void put_rows_impl(E* __restrict__ y, const E* __restrict__ x, const I* __restrict__ ids, u64* err,
    u64 rows, u64 n, u32 len, i64 yPre, i64 yDim, i64 xPre, i64 xDim, i64 idsStride, u64 limit, u32 group, u32 tag) {
  const Groups g(group);
  for (u64 r = g.first; r < rows; r += g.step) {
    // as index_rows: no division for one block of rows (dim 0), else one a row
    const u64 p = n >= rows ? 0 : rows <= 0xffffffffull ? (u64)((u32)r / (u32)n) : r / n, j = r - p * n;
    const u64 id = (u64)ids[(i64)j * idsStride];
    if (id >= limit) {
      if (g.lane == 0) record_bad_id(err, tag, id, j, limit);
      continue;
    }
    copy_row(y + (i64)p * yPre + (i64)id * yDim, x + (i64)p * xPre + (i64)j * xDim, len, g.lane, g.size);
  }
}

#define INDEX_ROWS(W, E, IN, I) \
  RT_KERNEL void index_rows_##W##_##IN(E* y, const E* x, const I* ids, u64* err, i64 yOff, i64 xOff, i64 idsOff, \
      u64 rows, u64 n, u64 len, i64 xPre, i64 xDim, i64 idsStride, u64 limit, u32 group, u32 tag) { RT_GRID_DEP(); \
    index_rows_impl(y + yOff, x + xOff, ids + idsOff, err, rows, n, (u32)len, xPre, xDim, idsStride, limit, group, tag); }
#define GATHER_ROWS(W, E, IN, I) \
  RT_KERNEL void gather_rows_##W##_##IN(E* y, const E* x, const I* ids, u64* err, i64 yOff, Geom g, \
      u64 rows, u64 cols, i64 xCol, i64 idsCol, i64 xDim, u64 limit, u32 group, u32 tag) { RT_GRID_DEP(); \
    gather_rows_impl(y + yOff, x, ids, err, g, rows, (u32)cols, xCol, idsCol, xDim, limit, group, tag); }

#define PUT_ROWS(W, E, IN, I) \
  RT_KERNEL void put_rows_##W##_##IN(E* y, const E* x, const I* ids, u64* err, i64 yOff, i64 xOff, i64 idsOff, \
      u64 rows, u64 n, u64 len, i64 yPre, i64 yDim, i64 xPre, i64 xDim, i64 idsStride, u64 limit, u32 group, u32 tag) { \
    RT_GRID_DEP(); \
    put_rows_impl(y + yOff, x + xOff, ids + idsOff, err, rows, n, (u32)len, yPre, yDim, xPre, xDim, idsStride, limit, group, tag); }

#define INDEX_ADD_ROWS(DT, T, IN, I) \
  RT_KERNEL void index_add_rows_##DT##_##IN(AddVal<T>::A* acc, const T* src, const I* ids, u64* err, i64 accOff, i64 srcOff, \
      i64 idsOff, u64 rows, u64 n, u64 len, i64 accPre, i64 accDim, i64 srcPre, i64 srcDim, i64 idsStride, u64 limit, \
      u32 group, u32 tag) { RT_GRID_DEP(); \
    index_add_rows_impl<T, I>(acc + accOff, src + srcOff, ids + idsOff, err, rows, n, (u32)len, accPre, accDim, srcPre, srcDim, \
      idsStride, limit, group, tag); }

#define BY_IDS(IN, I) \
  INDEX_ROWS(b1, u8, IN, I) INDEX_ROWS(b2, u16, IN, I) INDEX_ROWS(b4, u32, IN, I) \
  INDEX_ROWS(b8, u64, IN, I) INDEX_ROWS(b16, uint4, IN, I) \
  PUT_ROWS(b1, u8, IN, I) PUT_ROWS(b2, u16, IN, I) PUT_ROWS(b4, u32, IN, I) \
  PUT_ROWS(b8, u64, IN, I) PUT_ROWS(b16, uint4, IN, I) \
  GATHER_ROWS(b1, u8, IN, I) GATHER_ROWS(b2, u16, IN, I) GATHER_ROWS(b4, u32, IN, I) GATHER_ROWS(b8, u64, IN, I) \
  INDEX_ADD_ROWS(f32, float, IN, I) INDEX_ADD_ROWS(f64, double, IN, I) INDEX_ADD_ROWS(f16, f16, IN, I) \
  INDEX_ADD_ROWS(bf16, bf16, IN, I) INDEX_ADD_ROWS(u8, u8, IN, I) INDEX_ADD_ROWS(u32, u32, IN, I) \
  INDEX_ADD_ROWS(i64, i64, IN, I)

BY_IDS(u8, u8)
BY_IDS(u32, u32)
BY_IDS(i64, i64)
