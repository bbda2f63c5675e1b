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
#include "rowreduce.h"

template <class C>
RT_DEVICE C sigmoid_of(C a) { return C(1) / (C(1) + exp(-a)); }

template <class T>
RT_DEVICE void swiglu_fwd(T* y, const T* x, u64 rows, u64 n) {
  typedef typename Elem<T>::C C;
  for (u64 r = blockIdx.x; r < rows; r += gridDim.x) {
    const T* xr = x + r * 2 * n;
    T* yr = y + r * n;
    for (u64 c = threadIdx.x; c < n; c += blockDim.x) {
      const C a = Elem<T>::load(xr[c]), b = Elem<T>::load(xr[n + c]);
      yr[c] = Elem<T>::store(a * sigmoid_of(a) * b);
    }
  }
}

template <class T>
RT_DEVICE void swiglu_bwd(T* dx, const T* g, const T* x, u64 rows, u64 n) {
  typedef typename Elem<T>::C C;
  for (u64 r = blockIdx.x; r < rows; r += gridDim.x) {
    const T* xr = x + r * 2 * n;
    const T* gr = g + r * n;
    T* dr = dx + r * 2 * n;
    for (u64 c = threadIdx.x; c < n; c += blockDim.x) {
      const C a = Elem<T>::load(xr[c]), b = Elem<T>::load(xr[n + c]), gv = Elem<T>::load(gr[c]);
      const C s = sigmoid_of(a);
      dr[c] = Elem<T>::store(gv * b * s * (C(1) + a * (C(1) - s)));
      dr[n + c] = Elem<T>::store(gv * a * s);
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
