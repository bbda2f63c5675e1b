// rowreduce.h: what the row-wise families (reduce, softmax, norm) share: warp and group
// reductions that work for any wave size, and passes over one row by a group of threads with
// 16-byte loads, several in flight per thread, optionally keeping the row in registers between
// passes.
//
// A group is G threads working on one row: G a multiple of the wave size that divides the block
// (several rows per block when G < blockDim.x). Every thread of a block must call the group
// reductions together (they may synchronize the block): the row loops below run the same
// number of iterations on every thread of a block, with an empty row where a group has none.
#pragma once
#include "compat.h"

// independent 16-byte loads a thread issues before it consumes any: enough bytes in flight per
// multiprocessor to cover memory latency at full bandwidth without a large register cost
#define RT_ROW_BATCH 4

// A row kernel that must keep MIN blocks of RT_BLOCK_MAX threads resident per multiprocessor.
// The row kernels are bound by how many rows are in flight per multiprocessor (each row waits
// on its loads, then on its group reduction), and left alone ptxas keeps converted copies of
// the cached row in extra registers, which costs whole resident blocks. On NVIDIA the bound caps
// registers at 65536 / (MIN * 256) (MIN 0: no cap); AMD keeps the plain bound (its register
// files are per SIMD and the code objects already hold 0 spills there).
#if RT_CUDA
#define RT_ROW_KERNEL(MIN) extern "C" __global__ __launch_bounds__(RT_BLOCK_MAX, MIN)
#else
#define RT_ROW_KERNEL(MIN) RT_KERNEL
#endif

#if RT_HIP
template <class T> RT_DEVICE T shfl_xor(T v, int m) { return __shfl_xor(v, m, warpSize); }
#else
template <class T> RT_DEVICE T shfl_xor(T v, int m) { return __shfl_xor_sync(0xffffffffu, v, m, warpSize); }
#endif

// A butterfly, so every lane ends with the same value. `op` must be commutative bit for bit
// (IEEE + and the NaN-aware min/max below are, up to the sign of a zero), which makes the
// result identical on all lanes.
template <class S, class Op>
RT_DEVICE S warp_all(S v, Op op) {
  for (int m = warpSize >> 1; m > 0; m >>= 1) v = op(v, op.shfl(v, m));
  return v;
}

// A group of `size` threads (a multiple of the wave size dividing the block, the same on every
// thread): each warp reduces, lane 0 parks the warp's value in shared memory, then every thread
// folds its group's per-warp values in the same order (broadcast reads: no bank conflicts).
template <class S, class Op>
RT_DEVICE S group_all(S v, Op op, u32 size) {
  __shared__ S parts[RT_BLOCK_MAX / 32];
  v = warp_all(v, op);
  if (size <= (u32)warpSize) return v;
  const u32 nw = size / warpSize, w0 = threadIdx.x / size * nw;
  __syncthreads();  // an earlier call may still be reading parts[]
  if (threadIdx.x % warpSize == 0) parts[threadIdx.x / warpSize] = v;
  __syncthreads();
  v = parts[w0];
  for (u32 w = 1; w < nw; w++) v = op(v, parts[w0 + w]);
  return v;
}

// The whole block as one group.
template <class S, class Op>
RT_DEVICE S block_all(S v, Op op) { return group_all(v, op, blockDim.x); }

// ---- rows handed out to groups ----------------------------------------------------------
// Rows go to groups of `size` threads, blockDim.x / size rows per block per step, grid-stride.
// `want` is the host's choice; anything that is not a wave multiple dividing the block means
// the whole block.
struct RowGroup {
  u32 lane, size, gid, first, step;
  RT_DEVICE explicit RowGroup(u32 want) {
    const u32 ws = (u32)warpSize, bd = blockDim.x;
    size = (want >= ws && want <= bd && want % ws == 0 && bd % want == 0) ? want : bd;
    const u32 per = bd / size;
    lane = threadIdx.x % size; gid = threadIdx.x / size;
    first = blockIdx.x * per; step = gridDim.x * per;
  }
};

// body(r, live) for this group's rows. Every thread of a block runs the same steps: a group
// past the last row gets live = false (and r = 0) and must still join the block's reductions.
// rows < 2^31 (the host splits bigger launches), so the loop runs in 32 bits: 64-bit row
// arithmetic costs registers the row cache needs.
template <class F>
RT_DEVICE void for_rows(const RowGroup& g, u32 rows, F body) {
  for (u32 r0 = g.first; r0 < rows; r0 += g.step) {
    const u32 r = r0 + g.gid;
    body(r < rows ? r : 0u, r < rows);
  }
}

// ---- walks over one row ------------------------------------------------------------------
// The row p[0, n) splits into a head up to the first 16-byte boundary, whole 16-byte vectors,
// and a tail; lane l of a group of G takes vectors l, l + G, ... (each warp-wide load covers
// contiguous bytes).
template <class T>
RT_DEVICE u32 row_head(const T* p, u32 n) {
  const u32 mis = (u32)(((u64)p & 15u) / sizeof(T));
  const u32 h = mis ? (u32)(16 / sizeof(T)) - mis : 0u;
  return h < n ? h : n;
}

// Vectors from index j0 on (lane l's share), B loads issued before any is used: fv(slot, k0, v)
// for each, slot the load's place in its batch (a constant after unrolling, so callers can keep
// one accumulator per slot), k0 the row index of the vector's first element. Whole batches run
// with no per-load range tests (a test per load turns the consuming adds into selects on
// NVIDIA); only the last, partial batch tests each load. Vector j + u*G goes to slot u either
// way, so results do not depend on where the batches end.
template <u32 B, class T, class FV>
RT_DEVICE void row_vectors(const Vec16<T>* q, u32 h, u32 j0, u32 nv, u32 G, FV fv) {
  typedef Vec16<T> V;
  constexpr u32 N = V::N;
  u32 j = j0;
  // nv < 2^31 and G <= RT_BLOCK_MAX, so j + (B - 1) * G cannot wrap
  for (; j + (B - 1) * G < nv; j += B * G) {
    V v[B];
#pragma unroll
    for (u32 u = 0; u < B; u++) v[u] = q[j + u * G];
#pragma unroll
    for (u32 u = 0; u < B; u++) fv(u, h + (j + u * G) * N, v[u]);
  }
  if (B > 1 && j < nv) {
    V v[B > 1 ? B - 1 : 1];
#pragma unroll
    for (u32 u = 0; u + 1 < B; u++) if (j + u * G < nv) v[u] = q[j + u * G];
#pragma unroll
    for (u32 u = 0; u + 1 < B; u++) if (j + u * G < nv) fv(u, h + (j + u * G) * N, v[u]);
  }
}

// fe(k, x) for each head and tail element of lane l, fv(slot, k0, v) for each whole vector.
template <class T, class FE, class FV>
RT_DEVICE void row_walk(const T* p, u32 n, u32 l, u32 G, FE fe, FV fv) {
  typedef Vec16<T> V;
  constexpr u32 N = V::N;
  const u32 h = row_head(p, n);
  const u32 nv = (n - h) / N, t0 = h + nv * N;
  for (u32 k = l; k < h; k += G) fe(k, p[k]);
  row_vectors<RT_ROW_BATCH, T>(reinterpret_cast<const V*>(p + h), h, l, nv, G, fv);
  for (u32 k = t0 + l; k < n; k += G) fe(k, p[k]);
}

// ---- passes that keep the row in registers --------------------------------------------------
// The first KV vectors a lane reads can be kept in `cache`, so later passes over the same row
// cost no memory traffic.
template <class T, int KV> struct RowCache { Vec16<T> v[KV > 0 ? KV : 1]; };

// f(k, value) for every element k of the row, value in the compute type. FILL: read memory
// (the KV cached vectors all in flight at once) and keep them; otherwise take them from the
// cache. Vectors past the cache are read from memory in batches either way.
template <bool FILL, int KV, class T, class F>
RT_DEVICE void row_pass(const T* p, u32 n, u32 l, u32 G, RowCache<T, KV>& cache, F f) {
  typedef Elem<T> E;
  typedef Vec16<T> V;
  constexpr u32 N = V::N;
  const u32 h = row_head(p, n);
  const u32 nv = (n - h) / N, t0 = h + nv * N;
  const V* q = reinterpret_cast<const V*>(p + h);
  for (u32 k = l; k < h; k += G) f(k, E::load(p[k]));
  if (FILL) {
#pragma unroll
    for (int c = 0; c < KV; c++) if (l + (u32)c * G < nv) cache.v[c] = q[l + (u32)c * G];
  }
#pragma unroll
  for (int c = 0; c < KV; c++) {
    const u32 j = l + (u32)c * G;
    if (j < nv) {
#pragma unroll
      for (u32 e = 0; e < N; e++) f(h + j * N + e, E::load(cache.v[c].v[e]));
    }
  }
  row_vectors<1, T>(q, h, l + (u32)KV * G, nv, G, [&](u32, u32 k0, const V& v) {
#pragma unroll
    for (u32 e = 0; e < N; e++) f(k0 + e, E::load(v.v[e]));
  });
  for (u32 k = t0 + l; k < n; k += G) f(k, E::load(p[k]));
}

// Per-column operands read beside the row (a norm's weight and bias): NA contiguous arrays
// indexed like the row. Vectors are 16-byte loads where an array sits at the row's 16-byte
// phase (the usual case), element loads otherwise.
template <class T, int NA> struct RowAux { const T* a[NA > 0 ? NA : 1]; };

// y[k] = g(k, x[k], aux[.][k]) over the row (aux values in the compute type), the first KV
// vectors taken from the cache that a pass filled. VEC: y and every aux array sit at x's
// 16-byte phase, so their vectors are 16-byte stores and loads; else element by element.
template <bool VEC, int KV, int NA, class T, class G_>
RT_DEVICE void row_map_as(T* y, const T* p, u32 n, u32 l, u32 G, const RowCache<T, KV>& cache, const RowAux<T, NA>& aux, G_ g) {
  typedef Elem<T> E;
  typedef typename E::C C;
  typedef Vec16<T> V;
  constexpr u32 N = V::N;
  constexpr int NB = NA > 0 ? NA : 1;
  const u32 h = row_head(p, n);
  const u32 nv = (n - h) / N, t0 = h + nv * N;
  const V* q = reinterpret_cast<const V*>(p + h);
  auto one = [&](u32 k) {
    C a[NB] = {};
#pragma unroll
    for (int i = 0; i < NA; i++) a[i] = E::load(aux.a[i][k]);
    y[k] = E::store(g(k, E::load(p[k]), a));
  };
  auto put = [&](u32 k0, const V& v) {
    if (VEC) {
      V av[NB];
#pragma unroll
      for (int i = 0; i < NA; i++) av[i] = *reinterpret_cast<const V*>(aux.a[i] + k0);
      V r;
#pragma unroll
      for (u32 e = 0; e < N; e++) {
        C a[NB] = {};
#pragma unroll
        for (int i = 0; i < NA; i++) a[i] = E::load(av[i].v[e]);
        r.v[e] = E::store(g(k0 + e, E::load(v.v[e]), a));
      }
      *reinterpret_cast<V*>(y + k0) = r;
    } else {
#pragma unroll
      for (u32 e = 0; e < N; e++) {
        C a[NB] = {};
#pragma unroll
        for (int i = 0; i < NA; i++) a[i] = E::load(aux.a[i][k0 + e]);
        y[k0 + e] = E::store(g(k0 + e, E::load(v.v[e]), a));
      }
    }
  };
  for (u32 k = l; k < h; k += G) one(k);
#pragma unroll
  for (int c = 0; c < KV; c++) {
    const u32 j = l + (u32)c * G;
    if (j < nv) put(h + j * N, cache.v[c]);
  }
  row_vectors<1, T>(q, h, l + (u32)KV * G, nv, G, [&](u32, u32 k0, const V& v) { put(k0, v); });
  for (u32 k = t0 + l; k < n; k += G) one(k);
}

template <int KV, int NA, class T, class G_>
RT_DEVICE void row_map(T* y, const T* p, u32 n, u32 l, u32 G, const RowCache<T, KV>& cache, const RowAux<T, NA>& aux, G_ g) {
  const u32 h = row_head(p, n);
  bool vec = aligned16(y + h);
#pragma unroll
  for (int i = 0; i < NA; i++) vec = vec && aligned16(aux.a[i] + h);
  if (vec) row_map_as<true>(y, p, n, l, G, cache, aux, g);
  else row_map_as<false>(y, p, n, l, G, cache, aux, g);
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

// NaN-propagating max and min: either side NaN gives NaN (v != v only for NaN; integers never
// take it). On NVIDIA (sm_80 and newer, which the compute_80 PTX requires anyway) f32 and packed
// half pairs have one instruction for it; its NaN is the canonical one, and stores canonicalize
// half NaNs anyway.
template <class A> RT_DEVICE A max_nan(A a, A b) { return a != a ? a : (b != b ? b : (b > a ? b : a)); }
template <class A> RT_DEVICE A min_nan(A a, A b) { return a != a ? a : (b != b ? b : (b < a ? b : a)); }
#if RT_CUDA
template <> RT_DEVICE float max_nan<float>(float a, float b) {
  float d; asm("max.NaN.f32 %0, %1, %2;" : "=f"(d) : "f"(a), "f"(b)); return d;
}
template <> RT_DEVICE float min_nan<float>(float a, float b) {
  float d; asm("min.NaN.f32 %0, %1, %2;" : "=f"(d) : "f"(a), "f"(b)); return d;
}
#endif

template <class A> struct SumOp {
  RT_DEVICE A operator()(A a, A b) const { return a + b; }
  RT_DEVICE A shfl(A v, int m) const { return shfl_xor(v, m); }
};
template <class A> struct MaxOp {
  RT_DEVICE A operator()(A a, A b) const { return max_nan(a, b); }
  RT_DEVICE A shfl(A v, int m) const { return shfl_xor(v, m); }
};
template <class A> struct MinOp {
  RT_DEVICE A operator()(A a, A b) const { return min_nan(a, b); }
  RT_DEVICE A shfl(A v, int m) const { return shfl_xor(v, m); }
};
