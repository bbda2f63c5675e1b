// elementwise.h: the loops every elementwise family shares (unary, binary, compare, where,
// cast). A family supplies a functor over storage values; these loops handle offsets, the
// vector path for contiguous aligned data, scalar tails, and the strided path.
#pragma once
#include "compat.h"
#include "convert.h"

// ---- contiguous loops ------------------------------------------------------------------------
// Every operand moves N elements per access, N = 16 bytes / the widest operand type, so mixed
// widths vectorize too (where's u8 condition, f32 -> bf16 casts, compares): the widest operand
// takes one 16-byte access and the narrower ones one N * sizeof(T)-byte access each.
// A block owns a tile of blockDim.x * U vectors; each thread loads its U vectors of every
// operand before it computes any, so several requests per thread are in flight at once. The
// host launches one block per tile (Kernels.launchContig in src/runtime/kernels.ts, told N * U
// by the glue in src/ops/gpu/), so the grid-stride loop over tiles runs once; it stays so that
// any grid is still correct. U is RT_UNROLL unless a family passes its own (unary.hip: 1 for
// f64, whose pow and erf bodies would otherwise spill). NVIDIA takes 2: on an H200 (one run,
// 64-thread blocks) every add, mul, exp, where and broadcast row at 2^26 and 2^28 elements, f32
// and bf16, was 0.5-2% faster than with 4 (exp bf16 2^26 69.8 -> 68.4 us, add f32 2^28 746.3 ->
// 739.5), where 1 slowed exp by a quarter. AMD keeps 4 (untimed). The host's mapUnroll
// (src/ops/gpu/copy.ts) follows this.
#if RT_CUDA
#define RT_UNROLL 2
#else
#define RT_UNROLL 4
#endif

// N elements of T as one aligned access (N * sizeof(T) is 1, 2, 4, 8 or 16 bytes).
template <class T, int N> struct alignas(sizeof(T) * N) Pack { T v[N]; };

// One vector of an input. On CUDA it takes the read-only data path (ld.global.nc): a kernel
// never writes an input element it has not already read itself (y may be x, in place, but at
// the same index), so the non-coherent cache cannot hand back a stale line. nvcc infers .nc
// only from __restrict__ on every pointer, which an in-place call would make a false promise.
template <class P> RT_DEVICE P load_ro(const P* p) {
#if RT_CUDA
  P r;
  if constexpr (sizeof(P) == 16) { const uint4 v = __ldg(reinterpret_cast<const uint4*>(p)); __builtin_memcpy(&r, &v, 16); }
  else if constexpr (sizeof(P) == 8) { const uint2 v = __ldg(reinterpret_cast<const uint2*>(p)); __builtin_memcpy(&r, &v, 8); }
  else if constexpr (sizeof(P) == 4) { const unsigned v = __ldg(reinterpret_cast<const unsigned*>(p)); __builtin_memcpy(&r, &v, 4); }
  else if constexpr (sizeof(P) == 2) { const unsigned short v = __ldg(reinterpret_cast<const unsigned short*>(p)); __builtin_memcpy(&r, &v, 2); }
  else { const unsigned char v = __ldg(reinterpret_cast<const unsigned char*>(p)); __builtin_memcpy(&r, &v, 1); }
  return r;
#else
  return *p;
#endif
}

// the size of the widest of T... (a type trait, not a constexpr function: nvcc would not call
// a host constexpr function from device code)
template <class T, class... R> struct Widest {
  static constexpr int bytes = (int)sizeof(T) > Widest<R...>::bytes ? (int)sizeof(T) : Widest<R...>::bytes;
};
template <class T> struct Widest<T> { static constexpr int bytes = (int)sizeof(T); };

template <class A, class B> struct Same { static constexpr bool value = false; };
template <class A> struct Same<A, A> { static constexpr bool value = true; };

// a pointer may take Pack<T, N> accesses: aligned to the access width
template <class T, int N> RT_DEVICE bool pack_aligned(const T* p) { return ((u64)p & (sizeof(T) * N - 1)) == 0; }

// ---- results to storage ------------------------------------------------------------------------
// A family's functor returns either the output's storage type or, for an f16/bf16 output, the
// f32 value still to be rounded: a vector then rounds its elements two at a time
// (round_pair in convert.h: one hardware conversion per pair on CUDA), a lone element alone.
template <class TY, class R> RT_DEVICE TY to_storage(R v) {
  if constexpr (Same<TY, R>::value) return v;
  else return Elem<TY>::store(v);
}

// y[i] = the N results in v, as one access
template <class TY, int N, class R> RT_DEVICE void store_pack(TY* y, u64 i, const R (&v)[N]) {
  if constexpr (!Same<TY, R>::value && sizeof(TY) == 2 && N % 2 == 0) {
    Pack<u32, N / 2> w;
#pragma unroll
    for (int k = 0; k < N / 2; k++) w.v[k] = round_pair<TY>(v[2 * k], v[2 * k + 1]);
    reinterpret_cast<Pack<u32, N / 2>*>(y)[i] = w;
  } else {
    Pack<TY, N> r;
#pragma unroll
    for (int k = 0; k < N; k++) r.v[k] = to_storage<TY>(v[k]);
    reinterpret_cast<Pack<TY, N>*>(y)[i] = r;
  }
}

// Runs load(i) for each of this thread's vectors of a tile, then store(i, loaded) for each.
// A whole tile (every one but the last) loads and stores with no bounds test, so the loads
// issue back to back before any compute and the compiler cannot sink one into a branch; the
// last tile goes vector by vector, in a loop kept rolled so the body is not unrolled twice.
template <int U, class L, class S>
RT_DEVICE void tile_loop(u64 nv, L load, S store) {
  typedef decltype(load(u64(0))) In;
  const u64 b = blockDim.x, tile = b * U;
  for (u64 t = blockIdx.x; t * tile < nv; t += gridDim.x) {
    const u64 i0 = t * tile + threadIdx.x;
    if (t * tile + tile <= nv) {
      In in[U];
#pragma unroll
      for (int u = 0; u < U; u++) in[u] = load(i0 + u * b);
#pragma unroll
      for (int u = 0; u < U; u++) store(i0 + u * b, in[u]);
    } else {
#pragma unroll 1
      for (int u = 0; u < U; u++) {
        const u64 i = i0 + u * b;
        if (i < nv) store(i, load(i));
      }
    }
  }
}

// y[i] = f(x[i]) over n contiguous elements; scalar when a pointer is not aligned to its
// access width (views at odd offsets).
template <int U = RT_UNROLL, class TY, class TX, class F>
RT_DEVICE void map1_contig(TY* y, const TX* x, u64 n, F f) {
  constexpr int N = 16 / Widest<TY, TX>::bytes;
  typedef Pack<TX, N> PX;
  typedef decltype(f(x[0])) R;
  if (pack_aligned<TY, N>(y) && pack_aligned<TX, N>(x)) {
    const u64 nv = n / N;
    tile_loop<U>(nv, [&](u64 i) { return load_ro(reinterpret_cast<const PX*>(x) + i); }, [&](u64 i, const PX& a) {
      R r[N];
#pragma unroll
      for (int k = 0; k < N; k++) r[k] = f(a.v[k]);
      store_pack<TY, N>(y, i, r);
    });
    const u64 t = nv * N + global_thread();
    if (t < n) y[t] = to_storage<TY>(f(x[t]));
  } else {
    grid_loop64(n, [&](auto i) { y[i] = to_storage<TY>(f(x[i])); });
  }
}

template <int U = RT_UNROLL, class TY, class TA, class TB, class F>
RT_DEVICE void map2_contig(TY* y, const TA* a, const TB* b, u64 n, F f) {
  constexpr int N = 16 / Widest<TY, TA, TB>::bytes;
  typedef Pack<TA, N> PA;
  typedef Pack<TB, N> PB;
  typedef decltype(f(a[0], b[0])) R;
  struct In { PA a; PB b; };
  if (pack_aligned<TY, N>(y) && pack_aligned<TA, N>(a) && pack_aligned<TB, N>(b)) {
    const u64 nv = n / N;
    tile_loop<U>(nv, [&](u64 i) {
      In r;
      r.a = load_ro(reinterpret_cast<const PA*>(a) + i);
      r.b = load_ro(reinterpret_cast<const PB*>(b) + i);
      return r;
    }, [&](u64 i, const In& v) {
      R r[N];
#pragma unroll
      for (int k = 0; k < N; k++) r[k] = f(v.a.v[k], v.b.v[k]);
      store_pack<TY, N>(y, i, r);
    });
    const u64 t = nv * N + global_thread();
    if (t < n) y[t] = to_storage<TY>(f(a[t], b[t]));
  } else {
    grid_loop64(n, [&](auto i) { y[i] = to_storage<TY>(f(a[i], b[i])); });
  }
}

// where: the u8 condition takes an N-byte access next to the data's 16 bytes.
template <int U = RT_UNROLL, class TY, class TC, class TA, class TB, class F>
RT_DEVICE void map3_contig(TY* y, const TC* c, const TA* a, const TB* b, u64 n, F f) {
  constexpr int N = 16 / Widest<TY, TC, TA, TB>::bytes;
  typedef Pack<TC, N> PC;
  typedef Pack<TA, N> PA;
  typedef Pack<TB, N> PB;
  typedef decltype(f(c[0], a[0], b[0])) R;
  struct In { PC c; PA a; PB b; };
  if (pack_aligned<TY, N>(y) && pack_aligned<TC, N>(c) && pack_aligned<TA, N>(a) && pack_aligned<TB, N>(b)) {
    const u64 nv = n / N;
    tile_loop<U>(nv, [&](u64 i) {
      In r;
      r.c = load_ro(reinterpret_cast<const PC*>(c) + i);
      r.a = load_ro(reinterpret_cast<const PA*>(a) + i);
      r.b = load_ro(reinterpret_cast<const PB*>(b) + i);
      return r;
    }, [&](u64 i, const In& v) {
      R r[N];
#pragma unroll
      for (int k = 0; k < N; k++) r[k] = f(v.c.v[k], v.a.v[k], v.b.v[k]);
      store_pack<TY, N>(y, i, r);
    });
    const u64 t = nv * N + global_thread();
    if (t < n) y[t] = to_storage<TY>(f(c[t], a[t], b[t]));
  } else {
    grid_loop64(n, [&](auto i) { y[i] = to_storage<TY>(f(c[i], a[i], b[i])); });
  }
}

// Strided forms: g describes the output (operand 0) and inputs 1..K-1.
template <class TY, class TX, class F>
RT_DEVICE void map1_strided(TY* y, const TX* x, const Geom& g, F f) {
  grid_loop((u64)g.numel, [&](auto i) {
    i64 off[2];
    geom_offsets<2>(g, i, off);
    y[off[0]] = to_storage<TY>(f(x[off[1]]));
  });
}

template <class TY, class TA, class TB, class F>
RT_DEVICE void map2_strided(TY* y, const TA* a, const TB* b, const Geom& g, F f) {
  grid_loop((u64)g.numel, [&](auto i) {
    i64 off[3];
    geom_offsets<3>(g, i, off);
    y[off[0]] = to_storage<TY>(f(a[off[1]], b[off[2]]));
  });
}

template <class TY, class TC, class TA, class TB, class F>
RT_DEVICE void map3_strided(TY* y, const TC* c, const TA* a, const TB* b, const Geom& g, F f) {
  grid_loop((u64)g.numel, [&](auto i) {
    i64 off[4];
    geom_offsets<4>(g, i, off);
    y[off[0]] = to_storage<TY>(f(c[off[1]], a[off[2]], b[off[3]]));
  });
}
