// norm-grad.hip: the backward of layerNorm and rmsNorm over the last dim. One row a block (the
// whole-block reductions of rowreduce.h), rows grid-stride: each row's dx, and the block's share
// of dw (and db) as per-block partial sums, which a second kernel folds per column in block
// order: deterministic, no atomics.
//
// With r = 1 / sqrt(var + eps) (layerNorm, var biased, xhat = (x - mean) r) or
// r = 1 / sqrt(mean(x^2) + eps) (rmsNorm, xhat = x r), gh = g w, n the row length:
//   layerNorm: dx = r (gh - mean(gh) - xhat mean(gh xhat)); dw = sum_rows g xhat; db = sum_rows g
//   rmsNorm:   dx = r gh - x r^3 mean(gh x);                dw = sum_rows g x r
//
// Kernels (T storage; C = f32 for f32/f16/bf16, f64 for f64):
//   layernormgrad_<DT>(T* dx, C* part, const T* g, const T* x, const T* w, i64 dxOff, i64 gOff,
//       i64 xOff, i64 wOff, u64 rows, u64 cols, f64 eps, u32 flags)
//     flags 1: the bias's partials too. part: [gridDim.x][1 or 2][cols] (dw's, then db's).
//   rmsnormgrad_<DT>(T* dx, C* part, const T* g, const T* x, const T* w, i64 dxOff, i64 gOff,
//       i64 xOff, i64 wOff, u64 rows, u64 cols, f64 eps)
//     part: [gridDim.x][cols].
//   normgrad_cols_<DT>(T* dw, T* db, const C* part, i64 dwOff, i64 dbOff, u64 cols, u32 parts,
//       u32 nvec)
//     dw[c] (and db[c] when nvec is 2) = the sum over parts b = 0, 1, ... in order of
//     part[b][0 (1)][c]. Any grid.
// Every tensor contiguous from its offset; g, x and dx [rows, cols], w [cols]. Any grid and any
// block of whole waves are correct for the row kernels; `parts` of the fold is the row kernel's
// grid.
#include "rowreduce.h"

template <class T, bool RMS>
RT_DEVICE void norm_grad(T* dx, typename Elem<T>::C* part, const T* g, const T* x, const T* w, u64 rows, u64 cols, double eps,
                         bool bias) {
  typedef typename Elem<T>::C C;
  const u64 nvec = bias ? 2u : 1u;
  C* pw = part + (u64)blockIdx.x * nvec * cols;
  C* pb = pw + cols;
  // a thread owns columns threadIdx.x + k blockDim.x of the block's partials for every row
  for (u64 c = threadIdx.x; c < cols; c += blockDim.x) {
    pw[c] = C(0);
    if (bias) pb[c] = C(0);
  }
  const C n = (C)cols, ep = (C)eps;
  for (u64 r = blockIdx.x; r < rows; r += gridDim.x) {
    const T* xr = x + r * cols;
    const T* gr = g + r * cols;
    T* dr = dx + r * cols;
    C mean = C(0);
    if (!RMS) {
      C s = C(0);
      for (u64 c = threadIdx.x; c < cols; c += blockDim.x) s += Elem<T>::load(xr[c]);
      mean = block_all(s, SumOp<C>()) / n;
    }
    C sq = C(0);
    for (u64 c = threadIdx.x; c < cols; c += blockDim.x) {
      const C d = Elem<T>::load(xr[c]) - mean;
      sq += d * d;
    }
    const C rs = C(1) / sqrt(block_all(sq, SumOp<C>()) / n + ep);
    C a = C(0), b = C(0);
    for (u64 c = threadIdx.x; c < cols; c += blockDim.x) {
      const C gv = Elem<T>::load(gr[c]), gh = gv * Elem<T>::load(w[c]), xh = (Elem<T>::load(xr[c]) - mean) * rs;
      a += gh * xh;
      if (!RMS) b += gh;
      pw[c] += gv * xh;
      if (bias) pb[c] += gv;
    }
    const C ma = block_all(a, SumOp<C>()) / n;
    const C mb = RMS ? C(0) : block_all(b, SumOp<C>()) / n;
    for (u64 c = threadIdx.x; c < cols; c += blockDim.x) {
      const C gh = Elem<T>::load(gr[c]) * Elem<T>::load(w[c]), xh = (Elem<T>::load(xr[c]) - mean) * rs;
      // rmsNorm: r gh - x r^3 mean(gh x) = r (gh - xhat mean(gh xhat)), the same form as layerNorm's
      dr[c] = Elem<T>::store(rs * (gh - mb - xh * ma));
    }
  }
}

template <class T>
RT_DEVICE void norm_cols(T* dw, T* db, const typename Elem<T>::C* part, u64 cols, u32 parts, u32 nvec) {
  typedef typename Elem<T>::C C;
  for (u64 c = (u64)blockIdx.x * blockDim.x + threadIdx.x; c < cols; c += (u64)gridDim.x * blockDim.x) {
    C sw = C(0), sb = C(0);
    for (u32 b = 0; b < parts; b++) {
      const C* p = part + (u64)b * nvec * cols;
      sw += p[c];
      if (nvec == 2u) sb += p[cols + c];
    }
    dw[c] = Elem<T>::store(sw);
    if (nvec == 2u) db[c] = Elem<T>::store(sb);
  }
}

#define NORM_GRAD_DT(DT, T) \
  RT_KERNEL void layernormgrad_##DT(T* dx, Elem<T>::C* part, const T* g, const T* x, const T* w, i64 dxOff, i64 gOff, i64 xOff, \
      i64 wOff, u64 rows, u64 cols, double eps, u32 flags) { RT_GRID_DEP(); \
    norm_grad<T, false>(dx + dxOff, part, g + gOff, x + xOff, w + wOff, rows, cols, eps, (flags & 1u) != 0u); } \
  RT_KERNEL void rmsnormgrad_##DT(T* dx, Elem<T>::C* part, const T* g, const T* x, const T* w, i64 dxOff, i64 gOff, i64 xOff, \
      i64 wOff, u64 rows, u64 cols, double eps) { RT_GRID_DEP(); \
    norm_grad<T, true>(dx + dxOff, part, g + gOff, x + xOff, w + wOff, rows, cols, eps, false); } \
  RT_KERNEL void normgrad_cols_##DT(T* dw, T* db, const Elem<T>::C* part, i64 dwOff, i64 dbOff, u64 cols, u32 parts, u32 nvec) { \
    RT_GRID_DEP(); \
    norm_cols<T>(dw + dwOff, db ? db + dbOff : db, part, cols, parts, nvec); }

NORM_GRAD_DT(f32, float) NORM_GRAD_DT(f64, double) NORM_GRAD_DT(f16, f16) NORM_GRAD_DT(bf16, bf16)
