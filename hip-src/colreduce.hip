// colreduce.hip: sum, mean, min, max, argmin, argmax down columns, for reductions whose
// reduced dim is not the innermost one while the innermost kept dim is unit-stride (sum over
// dim 0 of [rows, cols], over dim 1 of [b, rows, cols]). reduce.hip's strided kernel takes
// these too, one thread per output with a Geom division per element; here neighbouring
// threads read neighbouring 16-byte vectors of one row, and no index is divided per element.
//
// The host (src/ops/gpu/colreduce.ts) views x as x[b, r, c] = x[xOff + b*xBatch + r*xRow + c]
// for b < batch, r < rows, c < cols; output o = b*cols + c (y contiguous from yOff) reduces
// over r. A block's task is a tile of tx*V neighbouring columns of one b and one segment of
// `segLen` rows: thread (ty, tx') of the block, tx' = threadIdx.x % tx, takes the V columns
// from tx'*V and rows lo + ty, lo + ty + TY, ... (TY = blockDim.x / tx), RT_ROW_BATCH loads in
// flight. The TY states of each column then fold through shared memory in ty order, so the
// result depends only on (tx, segLen), never on timing: deterministic. With several segments
// the states park in pv/pi as pv[s*outer + o] and reduce.hip's _final kernel folds them.
//
// Kernels (OP, DT, T, Y, A as in reduce.hip):
//   reduce_<OP>_<DT>_cols(Y* y, A* pv, u32* pi, const T* x, i64 yOff, i64 xOff, u64 rows,
//                         u64 cols, i64 xBatch, i64 xRow, u64 segLen, u32 batch, u32 segs,
//                         u32 tiles, u32 tx, u32 vec)
//       V = min(16 / sizeof(T), 8; 4 for argmin/argmax) columns a thread. vec = 1: x + xOff,
//       xBatch, xRow are aligned to V elements (the host checks) and each row's V columns are
//       one load; vec = 0: any alignment, V element loads. tx: a power of two dividing the block (else
//       the whole block). Any grid is correct (tasks go grid-stride, whole blocks at a time).
//       segs = ceil(rows / segLen) and tiles = ceil(cols / (tx*V)) come from the host, with
//       segs * batch * tiles < 2^31 (it takes reduce.hip's strided kernel otherwise).
#include "reduce-ops.h"

// V neighbouring columns as one aligned load. V is at most 8 (4 for argmin/argmax, whose
// states are pairs): a thread's V states go through shared memory together, and more would
// cost occupancy and, on AMD, scalar registers past the limit (spills).
template <class T, int V> struct alignas(sizeof(T) * V) ColPack { T v[V]; };

// Storage to compute type: widen() (reduce-ops.h), and on AMD f16 through the hardware
// conversion too (exact, subnormals included; compat.h's software one costs branches and, in
// argmin/argmax, scalar registers past gfx90a's limit). NaN payloads may differ, which no
// result shows (stores canonicalize half NaNs, argmin/argmax return indices).
template <class T> RT_DEVICE typename Elem<T>::C cwiden(T x) { return widen(x); }
#if RT_HIP
template <> RT_DEVICE float cwiden<f16>(f16 x) { _Float16 h; __builtin_memcpy(&h, &x.bits, 2); return (float)h; }
#endif
template <class T, int CAP> struct ColsV { static constexpr int N = 16 / (int)sizeof(T) < CAP ? 16 / (int)sizeof(T) : CAP; };

// Folds rows [lo, hi) of this thread's share (lo + ty, step TY) of the V columns at p (row 0,
// first column) into acc; nc of them are live (the last tile of a row may be partial). With
// vec they are one aligned load a row, else V element loads (still coalesced, through the
// cache: neighbouring threads read the neighbouring V). One instantiation serves both: two
// would double the registers the compiler hoists out of the loops (scalar spills on AMD). Row
// indices go to argmin/argmax in 32 bits (their extent is below 2^32: reduce.ts checks).
template <class R, class T, int V>
RT_DEVICE void cols_fold(typename R::S (&acc)[V], const T* p, u32 nc, bool vec, u64 lo, u64 hi, u32 ty, u32 TY, i64 xRow) {
  constexpr u32 B = RT_ROW_BATCH;
  u64 r = lo + ty;
  if (vec && nc == (u32)V) {
    typedef ColPack<T, V> L;
    auto get = [&](const L& v, int e) -> T { return v.v[e]; };
#pragma unroll 1
    for (; r + (B - 1) * (u64)TY < hi; r += B * (u64)TY) {
      L v[B];
#pragma unroll
      for (u32 u = 0; u < B; u++) v[u] = *reinterpret_cast<const L*>(p + (i64)(r + u * TY) * xRow);
#pragma unroll
      for (u32 u = 0; u < B; u++) {
#pragma unroll
        for (int e = 0; e < V; e++) acc[e] = R::combine(acc[e], R::elem(cwiden(get(v[u], e)), (u32)r + u * TY));
      }
    }
#pragma unroll 1
    for (; r < hi; r += TY) {
      const L v = *reinterpret_cast<const L*>(p + (i64)r * xRow);
#pragma unroll
      for (int e = 0; e < V; e++) acc[e] = R::combine(acc[e], R::elem(cwiden(get(v, e)), (u32)r));
    }
  } else {
    for (; r < hi; r += TY) {
#pragma unroll
      for (int e = 0; e < V; e++) {
        if ((u32)e < nc) acc[e] = R::combine(acc[e], R::elem(cwiden(p[(i64)r * xRow + e]), (u32)r));
      }
    }
  }
}

template <class R, class T, class A, int V>
RT_DEVICE void cols_tasks(typename R::Out* y, A* pv, u32* pi, const T* x, u64 rows, u64 cols,
    i64 xBatch, i64 xRow, u64 segLen, u32 batch, u32 segs, u32 tiles, u32 tx, bool vec) {
  typedef typename R::S S;
  __shared__ S part[V][RT_BLOCK_MAX];
  const u32 bd = blockDim.x;
  if (!(tx >= 1u && tx <= bd && bd % tx == 0u && (tx & (tx - 1u)) == 0u)) tx = bd;
  const u32 TY = bd / tx, lx = threadIdx.x % tx, ty = threadIdx.x / tx;
  // the host passes the task counts (below 2^31), so no 64-bit division is left: each costs
  // dozens of scalar registers, past the limit on some archs
  const u32 width = tx * (u32)V, perSeg = batch * tiles, tasks = segs * perSeg;
  const u64 outer = (u64)batch * cols;
  // t is uniform across the block, so every thread meets the same barriers
  for (u32 t = blockIdx.x; t < tasks; t += gridDim.x) {
    const u32 s = t / perSeg, bt = t - s * perSeg, b = bt / tiles, tile = bt - b * tiles;
    const u64 c0 = (u64)tile * width + (u64)lx * V;
    const u32 nc = c0 < cols ? (cols - c0 < (u64)V ? (u32)(cols - c0) : (u32)V) : 0u;
    const u64 lo = (u64)s * segLen, hi = lo + segLen < rows ? lo + segLen : rows;
    S acc[V];
#pragma unroll
    for (int e = 0; e < V; e++) acc[e] = R::init();
    if (nc > 0) cols_fold<R, T, V>(acc, x + (i64)b * xBatch + (i64)c0, nc, vec, lo, hi, ty, TY, xRow);
    // every thread parks its V states, then thread (ty, lx) folds column e = ty (and e + TY,
    // ... when TY < V) of its lx over the TY threads that read it, in ty order
#pragma unroll
    for (int e = 0; e < V; e++) part[e][threadIdx.x] = acc[e];
    __syncthreads();
    for (u32 e = ty; e < nc; e += TY) {
      S v = part[e][lx];
#pragma unroll 1
      for (u32 k = 1; k < TY; k++) v = R::combine(v, part[e][k * tx + lx]);
      const u64 o = (u64)b * cols + c0 + e;
      if (segs == 1) y[o] = R::finish(v, rows);
      else R::park(v, pv, pi, (u64)s * outer + o);
    }
    __syncthreads();  // the next task overwrites part[]
  }
}

#define REDUCE_COLS(OP, DT, T, R, A, CAP) \
  RT_KERNEL void reduce_##OP##_##DT##_cols(R::Out* y, A* pv, u32* pi, const T* x, i64 yOff, i64 xOff, \
      u64 rows, u64 cols, i64 xBatch, i64 xRow, u64 segLen, u32 batch, u32 segs, u32 tiles, u32 tx, u32 vec) { RT_GRID_DEP(); \
    cols_tasks<R, T, A, ColsV<T, CAP>::N>(y + yOff, pv, pi, x + xOff, rows, cols, xBatch, xRow, segLen, batch, segs, tiles, tx, vec != 0); }

// template arguments with commas go through typedefs
#define REDUCE_COLS_DT(DT, T) \
  typedef SumR<T, SumAcc<T>::A> Sum_##DT; typedef ExtR<T, false> Min_##DT; typedef ExtR<T, true> Max_##DT; \
  typedef ArgR<T, false> ArgMin_##DT; typedef ArgR<T, true> ArgMax_##DT; \
  REDUCE_COLS(sum, DT, T, Sum_##DT, SumAcc<T>::A, 8) \
  REDUCE_COLS(min, DT, T, Min_##DT, Elem<T>::C, 8) \
  REDUCE_COLS(max, DT, T, Max_##DT, Elem<T>::C, 8) \
  REDUCE_COLS(argmin, DT, T, ArgMin_##DT, Elem<T>::C, 4) \
  REDUCE_COLS(argmax, DT, T, ArgMax_##DT, Elem<T>::C, 4)
#define REDUCE_COLS_MEAN(DT, T) \
  typedef MeanR<T, SumAcc<T>::A> Mean_##DT; \
  REDUCE_COLS(mean, DT, T, Mean_##DT, SumAcc<T>::A, 8)

REDUCE_COLS_DT(f32, float) REDUCE_COLS_DT(f64, double) REDUCE_COLS_DT(f16, f16) REDUCE_COLS_DT(bf16, bf16)
REDUCE_COLS_DT(u8, u8) REDUCE_COLS_DT(u32, u32) REDUCE_COLS_DT(i64, i64)
REDUCE_COLS_MEAN(f32, float) REDUCE_COLS_MEAN(f64, double) REDUCE_COLS_MEAN(f16, f16) REDUCE_COLS_MEAN(bf16, bf16)
