// softmax-grad.hip: the backward of softmax and logSoftmax over the last dim of contiguous rows,
// from the forward's output y and the output's gradient g. One row a block (the whole-block
// reductions of rowreduce.h), rows grid-stride.
//   softmax:    dx = y (g - sum(g y))
//   logSoftmax: dx = g - exp(y) sum(g)
// Kernels (T storage; half types compute in f32, f64 in f64):
//   softmaxgrad_<DT>(T* dx, const T* g, const T* y, i64 dxOff, i64 gOff, i64 yOff, u64 rows,
//       u64 cols, u32 log)
//     dx, g, y contiguous [rows, cols] from their offsets. Any grid and any block of whole
//     waves are correct.
#include "rowreduce.h"

template <class T>
RT_DEVICE void softmax_grad(T* dx, const T* g, const T* y, u64 rows, u64 cols, bool lg) {
  typedef typename Elem<T>::C C;
  for (u64 r = blockIdx.x; r < rows; r += gridDim.x) {
    const T* gr = g + r * cols;
    const T* yr = y + r * cols;
    T* dr = dx + r * cols;
    C s = C(0);
    for (u64 c = threadIdx.x; c < cols; c += blockDim.x)
      s += lg ? Elem<T>::load(gr[c]) : Elem<T>::load(gr[c]) * Elem<T>::load(yr[c]);
    s = block_all(s, SumOp<C>());
    for (u64 c = threadIdx.x; c < cols; c += blockDim.x) {
      const C gv = Elem<T>::load(gr[c]), yv = Elem<T>::load(yr[c]);
      dr[c] = Elem<T>::store(lg ? gv - exp(yv) * s : yv * (gv - s));
    }
  }
}

#define SOFTMAX_GRAD_DT(DT, T) \
  RT_KERNEL void softmaxgrad_##DT(T* dx, const T* g, const T* y, i64 dxOff, i64 gOff, i64 yOff, u64 rows, u64 cols, u32 log) { \
    RT_GRID_DEP(); \
    softmax_grad<T>(dx + dxOff, g + gOff, y + yOff, rows, cols, log != 0u); }

SOFTMAX_GRAD_DT(f32, float) SOFTMAX_GRAD_DT(f64, double) SOFTMAX_GRAD_DT(f16, f16) SOFTMAX_GRAD_DT(bf16, bf16)
