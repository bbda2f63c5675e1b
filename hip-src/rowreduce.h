// rowreduce.h: what the row-wise families (reduce, softmax, norm) share: warp and block
// reductions that work for any wave size, and passes over one row by a group of threads with
// 16-byte loads, optionally keeping the row in registers between passes.
//
// A group is either one warp (G = warpSize) or the whole block (G = blockDim.x); every thread of
// a group must call the group functions together (the loops below keep that uniform).
#pragma once
#include "compat.h"

// rows up to this many elements take one warp each; longer rows one block each
// (rowLaunch() in src/ops/gpu/reduce.ts mirrors it)
#define RT_WARP_ROW_MAX 1024

#if RT_HIP
template <class T> RT_DEVICE T shfl_xor(T v, int m) { return __shfl_xor(v, m, warpSize); }
#else
template <class T> RT_DEVICE T shfl_xor(T v, int m) { return __shfl_xor_sync(0xffffffffu, v, m, warpSize); }
#endif

// A butterfly, so every lane ends with the same value. `op` must be commutative bit for bit
// (IEEE + and the NaN-aware min/max below are), which makes the result identical on all lanes.
template <class S, class Op>
RT_DEVICE S warp_all(S v, Op op) {
  for (int m = warpSize >> 1; m > 0; m >>= 1) v = op(v, op.shfl(v, m));
  return v;
}

// The whole block: each warp reduces, lane 0 parks the warp's value in shared memory, then every
// thread folds the per-warp values in the same order (broadcast reads: no bank conflicts).
template <class S, class Op>
RT_DEVICE S block_all(S v, Op op) {
  __shared__ S parts[RT_BLOCK_MAX / 32];
  v = warp_all(v, op);
  const int nw = blockDim.x / warpSize;
  if (nw == 1) return v;
  __syncthreads();  // an earlier call may still be reading parts[]
  if (threadIdx.x % warpSize == 0) parts[threadIdx.x / warpSize] = v;
  __syncthreads();
  v = parts[0];
  for (int w = 1; w < nw; w++) v = op(v, parts[w]);
  return v;
}

template <class S, class Op>
RT_DEVICE S group_all(S v, Op op, bool block) { return block ? block_all(v, op) : warp_all(v, op); }

// ---- rows handed out to groups ----------------------------------------------------------
// Rows of `cols` elements go one per warp (short rows) or one per block, grid-stride.
struct RowGroup {
  bool block;
  u32 lane, size;
  u64 first, step;
  RT_DEVICE explicit RowGroup(u64 cols) {
    block = cols > RT_WARP_ROW_MAX;
    if (block) {
      lane = threadIdx.x; size = blockDim.x; first = blockIdx.x; step = gridDim.x;
    } else {
      const u32 per = blockDim.x / warpSize;
      lane = threadIdx.x % warpSize; size = warpSize;
      first = (u64)blockIdx.x * per + threadIdx.x / warpSize; step = (u64)gridDim.x * per;
    }
  }
};

// ---- passes over one row ----------------------------------------------------------------
// The row p[0, n) splits into a head up to the first 16-byte boundary, whole 16-byte vectors,
// and a tail; lane l of a group of G takes vectors l, l + G, ... The first KV vectors a lane
// reads can be kept in `cache`, so later passes over the same row cost no memory traffic.
template <class T, int KV> struct RowCache { Vec16<T> v[KV > 0 ? KV : 1]; };

template <class T>
RT_DEVICE u32 row_head(const T* p, u32 n) {
  const u32 mis = (u32)(((u64)p & 15u) / sizeof(T));
  const u32 h = mis ? (u32)(16 / sizeof(T)) - mis : 0u;
  return h < n ? h : n;
}

// f(k, value) for every element k of the row, value in the compute type. FILL: read memory
// and keep the first KV vectors; otherwise take them from the cache.
template <bool FILL, int KV, class T, class F>
RT_DEVICE void row_pass(const T* p, u32 n, u32 l, u32 G, RowCache<T, KV>& cache, F f) {
  typedef Elem<T> E;
  typedef Vec16<T> V;
  constexpr u32 N = V::N;
  const u32 h = row_head(p, n);
  const u32 nv = (n - h) / N, t0 = h + nv * N;
  const V* q = reinterpret_cast<const V*>(p + h);
  for (u32 k = l; k < h; k += G) f(k, E::load(p[k]));
#pragma unroll
  for (int c = 0; c < KV; c++) {
    const u32 j = l + (u32)c * G;
    if (j < nv) {
      V v;
      if (FILL) { v = q[j]; cache.v[c] = v; } else { v = cache.v[c]; }
#pragma unroll
      for (u32 e = 0; e < N; e++) f(h + j * N + e, E::load(v.v[e]));
    }
  }
  for (u32 j = l + (u32)KV * G; j < nv; j += G) {
    const V v = q[j];
#pragma unroll
    for (u32 e = 0; e < N; e++) f(h + j * N + e, E::load(v.v[e]));
  }
  for (u32 k = t0 + l; k < n; k += G) f(k, E::load(p[k]));
}

// y[k] = g(k, x[k]) over the row, in the same order as row_pass, taking the first KV vectors
// from the cache that pass filled; 16-byte stores where y sits at the same 16-byte phase as x.
template <int KV, class T, class G_>
RT_DEVICE void row_map(T* y, const T* p, u32 n, u32 l, u32 G, const RowCache<T, KV>& cache, G_ g) {
  typedef Elem<T> E;
  typedef Vec16<T> V;
  constexpr u32 N = V::N;
  const u32 h = row_head(p, n);
  const u32 nv = (n - h) / N, t0 = h + nv * N;
  const V* q = reinterpret_cast<const V*>(p + h);
  const bool vy = aligned16(y + h);
  auto put = [&](u32 j, const V& v) {
    V r;
#pragma unroll
    for (u32 e = 0; e < N; e++) r.v[e] = E::store(g(h + j * N + e, E::load(v.v[e])));
    if (vy) {
      reinterpret_cast<V*>(y + h)[j] = r;
    } else {
#pragma unroll
      for (u32 e = 0; e < N; e++) y[h + j * N + e] = r.v[e];
    }
  };
  for (u32 k = l; k < h; k += G) y[k] = E::store(g(k, E::load(p[k])));
#pragma unroll
  for (int c = 0; c < KV; c++) {
    const u32 j = l + (u32)c * G;
    if (j < nv) put(j, cache.v[c]);
  }
  for (u32 j = l + (u32)KV * G; j < nv; j += G) put(j, q[j]);
  for (u32 k = t0 + l; k < n; k += G) y[k] = E::store(g(k, E::load(p[k])));
}

// ---- combine operators (each carries its shuffle) ------------------------------------------
// the identities of max and min: -inf / +inf for floats, the range ends for integers
template <class A> RT_DEVICE A lowest();
template <class A> RT_DEVICE A highest();
template <> RT_DEVICE float lowest<float>() { return -__int_as_float(0x7f800000); }
template <> RT_DEVICE float highest<float>() { return __int_as_float(0x7f800000); }
template <> RT_DEVICE double lowest<double>() { return -__longlong_as_double(0x7ff0000000000000ll); }
template <> RT_DEVICE double highest<double>() { return __longlong_as_double(0x7ff0000000000000ll); }
template <> RT_DEVICE u32 lowest<u32>() { return 0u; }
template <> RT_DEVICE u32 highest<u32>() { return 0xffffffffu; }
template <> RT_DEVICE i64 lowest<i64>() { return (i64)0x8000000000000000ull; }
template <> RT_DEVICE i64 highest<i64>() { return 0x7fffffffffffffffll; }

template <class A> struct SumOp {
  RT_DEVICE A operator()(A a, A b) const { return a + b; }
  RT_DEVICE A shfl(A v, int m) const { return shfl_xor(v, m); }
};
// NaN propagates: either side NaN gives NaN (v != v only for NaN; integers never take it)
template <class A> struct MaxOp {
  RT_DEVICE A operator()(A a, A b) const { return a != a ? a : (b != b ? b : (b > a ? b : a)); }
  RT_DEVICE A shfl(A v, int m) const { return shfl_xor(v, m); }
};
template <class A> struct MinOp {
  RT_DEVICE A operator()(A a, A b) const { return a != a ? a : (b != b ? b : (b < a ? b : a)); }
  RT_DEVICE A shfl(A v, int m) const { return shfl_xor(v, m); }
};
