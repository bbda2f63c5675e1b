// reduce.hip: sum, mean, min, max, argmin, argmax. The host views the input as [outer, inner]
// with the reduced dims last (permuted there, src/ops/gpu/reduce.ts); each output reduces one
// run of `inner` elements. Long runs split into segments of `segLen` whose partial results go
// to a workspace (pv values, pi indices) and a second kernel (_final) folds them.
//
// Kernels (OP in sum min max mean argmin argmax; DT in f32 f64 f16 bf16 u8 u32 i64, mean floats
// only; T storage type; Y = T, or u32 for argmin/argmax; A the accumulator: float for
// f32/f16/bf16, double for f64, u32 for u8/u32, i64 for i64):
//   reduce_<OP>_<DT>_rows(Y* y, A* pv, u32* pi, const T* x, i64 yOff, i64 xOff,
//                          u64 outer, u64 inner, u64 segLen, u32 mode)
//       x contiguous from xOff: output o reduces x[o*inner, (o+1)*inner).
//   reduce_<OP>_<DT>_strided(Y* y, A* pv, u32* pi, const T* x, i64 yOff, Geom g,
//                          u64 outer, u64 inner, u64 segLen, u32 mode)
//       g describes x alone (operand 0 = x, over the permuted shape): element r of output o is
//       logical element o*inner + r of g.
//   reduce_<OP>_<DT>_final(Y* y, const A* pv, const u32* pi, i64 yOff, u64 outer, u64 segs,
//                          u64 count, u32 mode)
//       output o folds pv[s*outer + o] (and pi) for s < segs; mean divides by count.
//   reduce_<OP>_<DT>_rows32(T* y, const T* x, i64 yOff, i64 xOff, u32 rows, u32 inner)
//       (OP in sum mean min max, DT in f32 f16 bf16) the common case of the _rows kernel, one
//       warp per row, one segment, rows < 2^31: output r reduces x[r*inner, (r+1)*inner).
//       No task state in 64 bits and no workspace, so it fits 32 registers (more rows in flight).
// With segs = ceil(inner / segLen) == 1 the first two write y directly; otherwise they write
// pv[s*outer + o] (and pi[...] for argmin/argmax) for every segment s. Unused pointers may be 0.
// mode: 0 one thread per (output, segment), 1 one warp, 2 one block; any grid is correct.
// Semantics: min/max propagate NaN; argmin/argmax take NaN as the extreme and the first index
// among equals; integer sums wrap; half types accumulate in f32.
#include "reduce-ops.h"

// ---- the shared driver -------------------------------------------------------------------
// Which tasks this thread works on: mode 0 one thread a task, 1 one warp, 2 one block.
struct Tasks {
  u32 l, G;
  u64 first, step;
  RT_DEVICE explicit Tasks(u32 mode) {
    if (mode == 0) { l = 0; G = 1; first = global_thread(); step = grid_threads(); }
    else if (mode == 1) {
      const u32 per = blockDim.x / warpSize;
      l = threadIdx.x % warpSize; G = warpSize;
      first = (u64)blockIdx.x * per + threadIdx.x / warpSize; step = (u64)gridDim.x * per;
    } else { l = threadIdx.x; G = blockDim.x; first = blockIdx.x; step = gridDim.x; }
  }
};

template <class R>
RT_DEVICE typename R::S group_fold(typename R::S v, u32 mode) {
  if (mode == 1) return warp_all(v, ROp<R>());
  if (mode == 2) return block_all(v, ROp<R>());
  return v;
}

// Hands (output, segment) tasks out; task t is segment t / outer of output t % outer, so with
// mode 0 neighbouring threads take neighbouring outputs. `fold(o, lo, hi, l, G)` reduces
// elements [lo, hi) of output o on lane l of a group of G and returns the lane's state.
template <class R, class A, class Fold>
RT_DEVICE void reduce_tasks(typename R::Out* y, A* pv, u32* pi, u64 outer, u64 inner, u64 segLen, u32 mode, Fold fold) {
  if (segLen == 0 || segLen > inner) segLen = inner > 0 ? inner : 1;
  const u64 segs = inner == 0 ? 1 : (inner + segLen - 1) / segLen;
  const u64 tasks = outer * segs;
  const Tasks w(mode);
  for (u64 t = w.first; t < tasks; t += w.step) {
    const u64 o = t % outer, s = t / outer;
    const u64 lo = s * segLen, hi = lo + segLen < inner ? lo + segLen : inner;
    const typename R::S v = group_fold<R>(fold(o, lo, hi, w.l, w.G), mode);
    if (w.l == 0) {
      if (segs == 1) y[o] = R::finish(v, inner);
      else R::park(v, pv, pi, t);
    }
  }
}

// Folds one 16-byte vector whose first element is row index k0 into `acc`, element by element.
// Specialized below where a vector folds in fewer instructions.
template <class R, class T> struct VecFold {
  static RT_DEVICE void fold(typename R::S& acc, const Vec16<T>& v, u64 k0) {
#pragma unroll
    for (int e = 0; e < Vec16<T>::N; e++) acc = R::combine(acc, R::elem(widen(v.v[e]), k0 + (u64)e));
  }
};
// Sums of bf16 add a vector's elements pairwise before the accumulator (each element widens
// with one bit operation): a chain of log2(N) + 1 dependent adds per vector instead of N, so
// each batch of loads is consumed, and the next one issued, sooner. f32 sums keep the plain
// element-by-element chain, the shape of the f32 max: measured on NVIDIA, the pairwise form
// made f32 sums slower, not faster (four elements leave little chain to shorten).
template <> struct VecFold<SumR<bf16, float>, bf16> {
  static RT_DEVICE void fold(float& acc, const Vec16<bf16>& v, u64) {
    const uint4 w = *reinterpret_cast<const uint4*>(&v);
    const u32 q[4] = { w.x, w.y, w.z, w.w };
    float s[4];
#pragma unroll
    for (int i = 0; i < 4; i++) s[i] = bits_f32(q[i] << 16) + bits_f32(q[i] & 0xffff0000u);
    acc += (s[0] + s[1]) + (s[2] + s[3]);
  }
};

// means fold like sums (the same accumulator); only finish differs
template <class T, class A> struct VecFold<MeanR<T, A>, T> : VecFold<SumR<T, A>, T> {};

#if RT_CUDA
// f16 sums pairwise, like the bf16 ones above
template <> struct VecFold<SumR<f16, float>, f16> {
  static RT_DEVICE void fold(float& acc, const Vec16<f16>& v, u64) {
    const uint4 w = *reinterpret_cast<const uint4*>(&v);
    const u32 q[4] = { w.x, w.y, w.z, w.w };
    float s[4];
#pragma unroll
    for (int i = 0; i < 4; i++) s[i] = f16_widen_hw((u16)(q[i] & 0xffffu)) + f16_widen_hw((u16)(q[i] >> 16));
    acc += (s[0] + s[1]) + (s[2] + s[3]);
  }
};
// Max and min of half types are exact in the half type: NaN-propagating packed pairs (sm_80)
// fold the eight elements of a vector in three instructions, then one pair goes to f32.
#define RT_PACKED_EXT(T, PT, NAME, OPNAME, MAX) \
  RT_DEVICE u32 NAME(u32 a, u32 b) { u32 d; asm(OPNAME " %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b)); return d; } \
  template <> struct VecFold<ExtR<T, MAX>, T> { \
    static RT_DEVICE void fold(float& acc, const Vec16<T>& v, u64) { \
      const uint4 w = *reinterpret_cast<const uint4*>(&v); \
      const u32 p = NAME(NAME(w.x, w.y), NAME(w.z, w.w)); \
      const float lo = widen(T{ (u16)(p & 0xffffu) }), hi = widen(T{ (u16)(p >> 16) }); \
      acc = ExtR<T, MAX>::combine(acc, ExtR<T, MAX>::combine(lo, hi)); \
    } \
  };
RT_PACKED_EXT(bf16, bf16, max_nan_bf16x2, "max.NaN.bf16x2", true)
RT_PACKED_EXT(bf16, bf16, min_nan_bf16x2, "min.NaN.bf16x2", false)
RT_PACKED_EXT(f16, f16, max_nan_f16x2, "max.NaN.f16x2", true)
RT_PACKED_EXT(f16, f16, min_nan_f16x2, "min.NaN.f16x2", false)
#undef RT_PACKED_EXT
#endif

// Lane l of a group of G reduces x[lo, lo + n): RT_ROW_BATCH 16-byte loads in flight, one
// accumulator per load of a batch (independent dependency chains), folded together at the end.
template <class R, class T>
RT_DEVICE typename R::S fold_row(const T* p, u32 n, u64 lo, u32 l, u32 G) {
  typedef typename R::S S;
  S acc[RT_ROW_BATCH];
#pragma unroll
  for (int u = 0; u < RT_ROW_BATCH; u++) acc[u] = R::init();
  row_walk(p, n, l, G,
    [&](u32 k, T x) { acc[0] = R::combine(acc[0], R::elem(widen(x), lo + k)); },
    [&](u32 u, u32 k0, const Vec16<T>& v) { VecFold<R, T>::fold(acc[u], v, lo + k0); });
#pragma unroll
  for (int u = 1; u < RT_ROW_BATCH; u++) acc[0] = R::combine(acc[0], acc[u]);
  return acc[0];
}

template <class R, class T, class A>
RT_DEVICE void reduce_rows(typename R::Out* y, A* pv, u32* pi, const T* x, u64 outer, u64 inner, u64 segLen, u32 mode) {
  reduce_tasks<R>(y, pv, pi, outer, inner, segLen, mode, [&](u64 o, u64 lo, u64 hi, u32 l, u32 G) {
    // a segment is below 2^32 elements (the host caps segLen)
    return fold_row<R>(x + o * inner + lo, (u32)(hi - lo), lo, l, G);
  });
}

template <class R, class T, class A>
RT_DEVICE void reduce_strided(typename R::Out* y, A* pv, u32* pi, const T* x, const Geom& g, u64 outer, u64 inner, u64 segLen, u32 mode) {
  typedef typename R::S S;
  // 32-bit logical indices make the per-element divisions of geom_offsets much cheaper
  const bool narrow = outer * inner <= 0x7fffffffull;
  reduce_tasks<R>(y, pv, pi, outer, inner, segLen, mode, [&](u64 o, u64 lo, u64 hi, u32 l, u32 G) {
    S acc = R::init();
    i64 off[1];
    if (narrow) {
      const u32 at = (u32)(o * inner);
      for (u32 r = (u32)lo + l; r < (u32)hi; r += G) {
        geom_offsets<1>(g, at + r, off);
        acc = R::combine(acc, R::elem(Elem<T>::load(x[off[0]]), r));
      }
    } else {
      for (u64 r = lo + l; r < hi; r += G) {
        geom_offsets<1>(g, o * inner + r, off);
        acc = R::combine(acc, R::elem(Elem<T>::load(x[off[0]]), r));
      }
    }
    return acc;
  });
}

// One warp per row, rows walked grid-stride in 32 bits (any grid is correct); every lane of a
// warp takes the same rows, so the shuffles see whole warps.
template <class R, class T>
RT_DEVICE void reduce_rows32(typename R::Out* y, const T* x, u32 rows, u32 inner) {
  const u32 per = blockDim.x / warpSize, l = threadIdx.x % warpSize;
  for (u32 r = blockIdx.x * per + threadIdx.x / warpSize; r < rows; r += gridDim.x * per) {
    const typename R::S v = warp_all(fold_row<R>(x + (u64)r * inner, inner, 0, l, warpSize), ROp<R>());
    // every lane finishes (the same value): under the lane test the f32 divide's slow path spills
    const typename R::Out o = R::finish(v, inner);
    if (l == 0) y[r] = o;
  }
}

// The partials of output o sit `outer` apart (pv[s*outer + o]); count is what mean divides by.
template <class R, class A>
RT_DEVICE void reduce_final(typename R::Out* y, const A* pv, const u32* pi, u64 outer, u64 segs, u64 count, u32 mode) {
  typedef typename R::S S;
  const Tasks w(mode);
  for (u64 o = w.first; o < outer; o += w.step) {
    S acc = R::init();
    u64 s = w.l;
    // the partials' loads go out FB at a time (a thread per output has a chain of segs loads
    // otherwise); the combine order is unchanged, so the result is too
    constexpr u32 FB = 8;
#pragma unroll 1
    for (; s + (FB - 1) * (u64)w.G < segs; s += FB * (u64)w.G) {
      S v[FB];
#pragma unroll
      for (u32 u = 0; u < FB; u++) v[u] = R::fetch(pv, pi, (s + u * (u64)w.G) * outer + o);
#pragma unroll
      for (u32 u = 0; u < FB; u++) acc = R::combine(acc, v[u]);
    }
#pragma unroll 1
    for (; s < segs; s += w.G) acc = R::combine(acc, R::fetch(pv, pi, s * outer + o));
    acc = group_fold<R>(acc, mode);
    if (w.l == 0) y[o] = R::finish(acc, count);
  }
}

// ---- instantiation -------------------------------------------------------------------------
#define REDUCE_KERNELS(OP, DT, T, R, A) \
  RT_KERNEL void reduce_##OP##_##DT##_rows(R::Out* y, A* pv, u32* pi, const T* x, i64 yOff, i64 xOff, \
      u64 outer, u64 inner, u64 segLen, u32 mode) { RT_GRID_DEP(); \
    reduce_rows<R>(y + yOff, pv, pi, x + xOff, outer, inner, segLen, mode); } \
  RT_KERNEL void reduce_##OP##_##DT##_strided(R::Out* y, A* pv, u32* pi, const T* x, i64 yOff, Geom g, \
      u64 outer, u64 inner, u64 segLen, u32 mode) { RT_GRID_DEP(); \
    reduce_strided<R>(y + yOff, pv, pi, x, g, outer, inner, segLen, mode); } \
  RT_KERNEL void reduce_##OP##_##DT##_final(R::Out* y, const A* pv, const u32* pi, i64 yOff, u64 outer, \
      u64 segs, u64 count, u32 mode) { RT_GRID_DEP(); \
    reduce_final<R>(y + yOff, pv, pi, outer, segs, count, mode); }

// template arguments with commas go through typedefs
#define REDUCE_DT(DT, T) \
  typedef SumR<T, SumAcc<T>::A> Sum_##DT; typedef ExtR<T, false> Min_##DT; typedef ExtR<T, true> Max_##DT; \
  typedef ArgR<T, false> ArgMin_##DT; typedef ArgR<T, true> ArgMax_##DT; \
  REDUCE_KERNELS(sum, DT, T, Sum_##DT, SumAcc<T>::A) \
  REDUCE_KERNELS(min, DT, T, Min_##DT, Elem<T>::C) \
  REDUCE_KERNELS(max, DT, T, Max_##DT, Elem<T>::C) \
  REDUCE_KERNELS(argmin, DT, T, ArgMin_##DT, Elem<T>::C) \
  REDUCE_KERNELS(argmax, DT, T, ArgMax_##DT, Elem<T>::C)
#define REDUCE_MEAN(DT, T) \
  typedef MeanR<T, SumAcc<T>::A> Mean_##DT; \
  REDUCE_KERNELS(mean, DT, T, Mean_##DT, SumAcc<T>::A)

REDUCE_DT(f32, float) REDUCE_DT(f64, double) REDUCE_DT(f16, f16) REDUCE_DT(bf16, bf16)
REDUCE_DT(u8, u8) REDUCE_DT(u32, u32) REDUCE_DT(i64, i64)
REDUCE_MEAN(f32, float) REDUCE_MEAN(f64, double) REDUCE_MEAN(f16, f16) REDUCE_MEAN(bf16, bf16)

#define REDUCE_ROWS32(OP, DT, T, R) \
  RT_KERNEL void reduce_##OP##_##DT##_rows32(R::Out* y, const T* x, i64 yOff, i64 xOff, u32 rows, u32 inner) { RT_GRID_DEP(); \
    reduce_rows32<R>(y + yOff, x + xOff, rows, inner); }
#define REDUCE_ROWS32_DT(DT, T) \
  REDUCE_ROWS32(sum, DT, T, Sum_##DT) REDUCE_ROWS32(mean, DT, T, Mean_##DT) \
  REDUCE_ROWS32(min, DT, T, Min_##DT) REDUCE_ROWS32(max, DT, T, Max_##DT)
REDUCE_ROWS32_DT(f32, float) REDUCE_ROWS32_DT(f16, f16) REDUCE_ROWS32_DT(bf16, bf16)
