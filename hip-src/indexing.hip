// indexing.hip: gather-style reads (indexSelect, gather, embedding) and scatter-style writes
// (scatter, scatterAdd, indexAdd), for every dtype, with u8, u32 or i64 ids.
//
// Every kernel walks one Geom over the iteration shape (the ids' shape for gather/scatter,
// the output's for indexSelect/embedding, src's for indexAdd). Its operands:
//   gather family:  0 y (the output), 1 x with stride 0 on the indexed dim, 2 ids, 3 pos
//   scatter family: 0 y (the output) with stride 0 on the indexed dim, 1 ids, 2 pos, 3 src
// `pos` is the id's row-major position in the ids tensor (a contiguous-stride operand of the
// ids' logical shape, offset 0): it orders duplicate scatter targets and names a bad id.
// The indexed element is operand 0 (or 1) plus id * dimStride.
//
// Ids are not checked on the host (that would need a hidden sync). An id outside [0, limit)
// is skipped, never read through nor written through, and the first such id on the device is
// recorded in the error record `err` (record_bad_id in bad-id.h), which src/runtime/device-errors.ts
// reads back and turns into an IndexError at the next readback.
//
// Kernels (W element width b1 b2 b4 b8, E its storage type; I in u8 u32 i64; DT any dtype):
//   gather_<W>_<I>(E* y, const E* x, const I* ids, Geom g, i64 dimStride, u64 limit, u64* err, u32 tag)
//       y[o0] = x[o1 + id * dimStride]: bits copied unchanged.
//   scatter_mark_<I>(u32* win, const I* ids, Geom g, i64 dimStride, u64 limit, u64* err, u32 tag)
//       win (zeroed, the output's size) gets, per target, 1 + the largest pos aimed at it.
//   scatter_write_<W>_<I>(E* y, const E* src, const I* ids, const u32* win, Geom g, i64 dimStride, u64 limit)
//       only the source whose 1 + pos is its target's win entry writes: with duplicate ids the
//       last in row-major order of ids wins, deterministically (the CPU reference's rule).
//   index_set_<W>_<I>(E* y, const E* src, const I* ids, const u32* win, Geom g, i64 dimStride, u64 limit, u64* err, u32 tag)
//       indexSet's write: every element of a source row goes where its row's id points, so the
//       winner is kept per id, not per element: win [limit] (scatter_mark over the 1-d ids with
//       a zero-stride output and dimStride 1) and pos the id's position. With win null (one id,
//       nothing to order) every row writes and this kernel records a bad id itself.
//   scatter_add_<DT>_<I>(A* acc, const T* src, const I* ids, Geom g, i64 dimStride, u64 limit, u64* err, u32 tag)
//       acc[o0 + id * dimStride] += src[o3] with atomics. A is T for f32 f64 u32 i64 u8 and
//       f32 for f16/bf16 (the host accumulates in an f32 copy and rounds once at the end).
//       Integers wrap; u8 adds through a compare-and-swap on its aligned 32-bit word, so acc
//       must be a block whose size is a multiple of 4 bytes (the allocator's blocks are).
#include "bad-id.h"
#include "atomic-add.h"

template <class E, class I>
RT_DEVICE void gather_impl(E* y, const E* x, const I* ids, const Geom& g, i64 dimStride, u64 limit, u64* err, u32 tag) {
  grid_loop((u64)g.numel, [&](auto i) {
    i64 off[4];
    geom_offsets<4>(g, i, off);
    const u64 id = (u64)ids[off[2]];
    if (id < limit) y[off[0]] = x[off[1] + (i64)id * dimStride];
    else record_bad_id(err, tag, id, (u64)off[3], limit);
  });
}

template <class I>
RT_DEVICE void scatter_mark_impl(u32* win, const I* ids, const Geom& g, i64 dimStride, u64 limit, u64* err, u32 tag) {
  grid_loop((u64)g.numel, [&](auto i) {
    i64 off[3];
    geom_offsets<3>(g, i, off);
    const u64 id = (u64)ids[off[1]];
    if (id < limit) atomicMax(win + off[0] + (i64)id * dimStride, (u32)off[2] + 1u);
    else record_bad_id(err, tag, id, (u64)off[2], limit);
  });
}

template <class E, class I>
RT_DEVICE void scatter_write_impl(E* y, const E* src, const I* ids, const u32* win, const Geom& g, i64 dimStride, u64 limit) {
  grid_loop((u64)g.numel, [&](auto i) {
    i64 off[4];
    geom_offsets<4>(g, i, off);
    const u64 id = (u64)ids[off[1]];
    if (id >= limit) return;
    const i64 t = off[0] + (i64)id * dimStride;
    if (win[t] == (u32)off[2] + 1u) y[t] = src[off[3]];
  });
}

template <class E, class I>
RT_DEVICE void index_set_impl(E* y, const E* src, const I* ids, const u32* win, const Geom& g, i64 dimStride, u64 limit, u64* err, u32 tag) {
  grid_loop((u64)g.numel, [&](auto i) {
    i64 off[4];
    geom_offsets<4>(g, i, off);
    const u64 id = (u64)ids[off[1]];
    if (id >= limit) {
      if (!win) record_bad_id(err, tag, id, (u64)off[2], limit);
      return;
    }
    if (!win || win[id] == (u32)off[2] + 1u) y[off[0] + (i64)id * dimStride] = src[off[3]];
  });
}

template <class T, class I>
RT_DEVICE void scatter_add_impl(typename AddVal<T>::A* acc, const T* src, const I* ids, const Geom& g, i64 dimStride, u64 limit, u64* err, u32 tag) {
  grid_loop((u64)g.numel, [&](auto i) {
    i64 off[4];
    geom_offsets<4>(g, i, off);
    const u64 id = (u64)ids[off[1]];
    if (id < limit) atomic_add(acc + off[0] + (i64)id * dimStride, AddVal<T>::get(src[off[3]]));
    else record_bad_id(err, tag, id, (u64)off[2], limit);
  });
}

#define GATHER(W, E, IN, I) \
  RT_KERNEL void gather_##W##_##IN(E* y, const E* x, const I* ids, Geom g, i64 dimStride, u64 limit, u64* err, u32 tag) { RT_GRID_DEP(); \
    gather_impl(y, x, ids, g, dimStride, limit, err, tag); } \
  RT_KERNEL void scatter_write_##W##_##IN(E* y, const E* src, const I* ids, const u32* win, Geom g, i64 dimStride, u64 limit) { RT_GRID_DEP(); \
    scatter_write_impl(y, src, ids, win, g, dimStride, limit); } \
  RT_KERNEL void index_set_##W##_##IN(E* y, const E* src, const I* ids, const u32* win, Geom g, i64 dimStride, u64 limit, u64* err, u32 tag) { RT_GRID_DEP(); \
    index_set_impl(y, src, ids, win, g, dimStride, limit, err, tag); }

#define BY_WIDTH(IN, I) \
  GATHER(b1, u8, IN, I) GATHER(b2, u16, IN, I) GATHER(b4, u32, IN, I) GATHER(b8, u64, IN, I) \
  RT_KERNEL void scatter_mark_##IN(u32* win, const I* ids, Geom g, i64 dimStride, u64 limit, u64* err, u32 tag) { RT_GRID_DEP(); \
    scatter_mark_impl(win, ids, g, dimStride, limit, err, tag); }

BY_WIDTH(u8, u8)
BY_WIDTH(u32, u32)
BY_WIDTH(i64, i64)

#define SCATTER_ADD(DT, T, IN, I) \
  RT_KERNEL void scatter_add_##DT##_##IN(AddVal<T>::A* acc, const T* src, const I* ids, Geom g, i64 dimStride, u64 limit, u64* err, u32 tag) { RT_GRID_DEP(); \
    scatter_add_impl<T, I>(acc, src, ids, g, dimStride, limit, err, tag); }

#define SCATTER_ADD_ALL(IN, I) \
  SCATTER_ADD(f32, float, IN, I) SCATTER_ADD(f64, double, IN, I) SCATTER_ADD(f16, f16, IN, I) \
  SCATTER_ADD(bf16, bf16, IN, I) SCATTER_ADD(u8, u8, IN, I) SCATTER_ADD(u32, u32, IN, I) \
  SCATTER_ADD(i64, i64, IN, I)

SCATTER_ADD_ALL(u8, u8)
SCATTER_ADD_ALL(u32, u32)
SCATTER_ADD_ALL(i64, i64)
