// swiglu.hip: SwiGLU over the last dim of contiguous rows whose two halves are the gate a and the
// up projection b (a fused [gate; up] projection's output), forward and backward in one pass
// each. With s = sigmoid(a):
//   forward:  y = silu(a) b = a s b                                  y [rows, n], x [rows, 2n]
//   backward: da = g b s (1 + a (1 - s)),  db = g a s                dx [rows, 2n] = [da, db]
// The backward writes the whole input gradient in one tensor: no separate gate and up
// gradients to concatenate, no silu or sigmoid tensors kept.
// Kernels (T storage; half types compute in f32, f64 in f64):
//   swiglu_fwd_<DT>(T* y, const T* x, i64 yOff, i64 xOff, u64 rows, u64 n)
//   swiglu_bwd_<DT>(T* dx, const T* g, const T* x, i64 dxOff, i64 gOff, i64 xOff, u64 rows, u64 n)
//     every tensor contiguous from its offset: x and dx [rows, 2n], y and g [rows, n]. Rows
//     grid-stride over blocks, a row's columns over the block's threads: any grid, any block.
//     16-byte vectors where n is a multiple of one and the bases are aligned.
#include "rowreduce.h"

template <class C>
RT_DEVICE C sigmoid_of(C a) { return C(1) / (C(1) + exp(-a)); }

// Rows whose halves and outputs start on 16-byte boundaries (n a multiple of a vector, aligned
// bases) move in 16-byte vectors; others element by element.
template <class T>
RT_DEVICE bool swiglu_vec(u64 n, const void* a, const void* b, const void* c) {
  return n % Vec16<T>::N == 0 && aligned16(a) && aligned16(b) && aligned16(c);
}

template <class T>
RT_DEVICE void swiglu_fwd(T* y, const T* x, u64 rows, u64 n) {
  typedef typename Elem<T>::C C;
  typedef Vec16<T> V;
  constexpr u32 N = V::N;
  const auto f = [](C a, C b) { return a * sigmoid_of(a) * b; };
  if (swiglu_vec<T>(n, x, y, x)) {
    const u64 nv = n / N;
    for (u64 r = blockIdx.x; r < rows; r += gridDim.x) {
      const V* xa = reinterpret_cast<const V*>(x + r * 2 * n);
      const V* xb = xa + nv;
      V* yr = reinterpret_cast<V*>(y + r * n);
      for (u64 j = threadIdx.x; j < nv; j += blockDim.x) {
        const V va = xa[j], vb = xb[j];
        V o;
#pragma unroll
        for (u32 e = 0; e < N; e++) o.v[e] = Elem<T>::store(f(Elem<T>::load(va.v[e]), Elem<T>::load(vb.v[e])));
        yr[j] = o;
      }
    }
    return;
  }
  for (u64 r = blockIdx.x; r < rows; r += gridDim.x) {
    const T* xr = x + r * 2 * n;
    T* yr = y + r * n;
    for (u64 c = threadIdx.x; c < n; c += blockDim.x) yr[c] = Elem<T>::store(f(Elem<T>::load(xr[c]), Elem<T>::load(xr[n + c])));
  }
}

// da and db of one element
template <class C>
RT_DEVICE void swiglu_grad1(C a, C b, C g, C& da, C& db) {
  const C s = sigmoid_of(a);
  da = g * b * s * (C(1) + a * (C(1) - s));
  db = g * a * s;
}

template <class T>
RT_DEVICE void swiglu_bwd(T* dx, const T* g, const T* x, u64 rows, u64 n) {
  typedef typename Elem<T>::C C;
  typedef Vec16<T> V;
  constexpr u32 N = V::N;
  if (swiglu_vec<T>(n, dx, g, x)) {
    const u64 nv = n / N;
    for (u64 r = blockIdx.x; r < rows; r += gridDim.x) {
      const V* xa = reinterpret_cast<const V*>(x + r * 2 * n);
      const V* gr = reinterpret_cast<const V*>(g + r * n);
      V* da = reinterpret_cast<V*>(dx + r * 2 * n);
      for (u64 j = threadIdx.x; j < nv; j += blockDim.x) {
        const V va = xa[j], vb = xa[nv + j], vg = gr[j];
        V oa, ob;
#pragma unroll
        for (u32 e = 0; e < N; e++) {
          C ga, gb;
          swiglu_grad1(Elem<T>::load(va.v[e]), Elem<T>::load(vb.v[e]), Elem<T>::load(vg.v[e]), ga, gb);
          oa.v[e] = Elem<T>::store(ga);
          ob.v[e] = Elem<T>::store(gb);
        }
        da[j] = oa;
        da[nv + j] = ob;
      }
    }
    return;
  }
  for (u64 r = blockIdx.x; r < rows; r += gridDim.x) {
    const T* xr = x + r * 2 * n;
    const T* gr = g + r * n;
    T* dr = dx + r * 2 * n;
    for (u64 c = threadIdx.x; c < n; c += blockDim.x) {
      C ga, gb;
      swiglu_grad1(Elem<T>::load(xr[c]), Elem<T>::load(xr[n + c]), Elem<T>::load(gr[c]), ga, gb);
      dr[c] = Elem<T>::store(ga);
      dr[n + c] = Elem<T>::store(gb);
    }
  }
}

#define SWIGLU_DT(DT, T) \
  RT_KERNEL void swiglu_fwd_##DT(T* y, const T* x, i64 yOff, i64 xOff, u64 rows, u64 n) { \
    RT_GRID_DEP(); \
    swiglu_fwd<T>(y + yOff, x + xOff, rows, n); } \
  RT_KERNEL void swiglu_bwd_##DT(T* dx, const T* g, const T* x, i64 dxOff, i64 gOff, i64 xOff, u64 rows, u64 n) { \
    RT_GRID_DEP(); \
    swiglu_bwd<T>(dx + dxOff, g + gOff, x + xOff, rows, n); }

SWIGLU_DT(f32, float) SWIGLU_DT(f64, double) SWIGLU_DT(f16, f16) SWIGLU_DT(bf16, bf16)
