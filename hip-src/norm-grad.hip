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
//   layernormgrad_<DT>_w<V>, rmsnormgrad_<DT>_w<V> (f32 f16 bf16; V 24): the same
//       arguments and partials, for rows of at most V x wave size columns: one row a wave (wave
//       shuffles only, no block barrier a row), the row's x and g and the wave's share of the
//       partials in registers (lane l owns columns l + k * wave, k < V), the block's waves'
//       partials summed in shared memory in wave order at the end. The block-a-row kernel waits
//       on two block-wide reductions a row: at 768 columns it moves a third of the bandwidth.
//   normgrad_cols_<DT>(T* dw, T* db, const C* part, i64 dwOff, i64 dbOff, u64 cols, u32 parts,
//       u32 nvec)
//     dw[c] (and db[c] when nvec is 2) = the sum over parts of part[b][0 (1)][c], in a fixed
//     order (eight running sums over b mod 8, then added in order). Any grid.
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
  // eight sums a column, over parts b = j (mod 8), added in order at the end: eight loads in
  // flight instead of one (a column's loads would otherwise wait on each other's adds)
  constexpr u32 U = 8;
  for (u64 c = (u64)blockIdx.x * blockDim.x + threadIdx.x; c < cols; c += (u64)gridDim.x * blockDim.x) {
    C sw[U], sb[U];
#pragma unroll
    for (u32 j = 0; j < U; j++) sw[j] = sb[j] = C(0);
    u32 b = 0;
    for (; b + U <= parts; b += U) {
#pragma unroll
      for (u32 j = 0; j < U; j++) {
        const C* p = part + (u64)(b + j) * nvec * cols;
        sw[j] += p[c];
        if (nvec == 2u) sb[j] += p[cols + c];
      }
    }
    for (u32 j = 0; b + j < parts; j++) {
      const C* p = part + (u64)(b + j) * nvec * cols;
      sw[j] += p[c];
      if (nvec == 2u) sb[j] += p[cols + c];
    }
    C tw = C(0), tb = C(0);
#pragma unroll
    for (u32 j = 0; j < U; j++) {
      tw += sw[j];
      tb += sb[j];
    }
    dw[c] = Elem<T>::store(tw);
    if (nvec == 2u) db[c] = Elem<T>::store(tb);
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

// ---- one row a wave -----------------------------------------------------------------------
template <class T, bool RMS, int V>
RT_DEVICE void norm_grad_wave(T* dx, float* part, const T* g, const T* x, const T* w, u64 rows, u64 cols, float eps, bool bias) {
  typedef float C;
  // the block's partials, summed wave by wave (V x the widest wave, dw's then db's)
  __shared__ C acc[2 * V * 64];
  const u32 ws = (u32)warpSize, lane = threadIdx.x % ws, wave = threadIdx.x / ws, waves = blockDim.x / ws;
  const u32 n = (u32)cols;
  C pw[V], pb[V];
#pragma unroll
  for (int k = 0; k < V; k++) pw[k] = pb[k] = C(0);
  const C nf = (C)cols;
  for (u64 r = (u64)blockIdx.x * waves + wave; r < rows; r += (u64)gridDim.x * waves) {
    const T* xr = x + r * cols;
    const T* gr = g + r * cols;
    T* dr = dx + r * cols;
    C xv[V], gv[V];
#pragma unroll
    for (int k = 0; k < V; k++) {
      const u32 c = lane + (u32)k * ws;
      xv[k] = c < n ? Elem<T>::load(xr[c]) : C(0);
      gv[k] = c < n ? Elem<T>::load(gr[c]) : C(0);
    }
    C mean = C(0);
    if (!RMS) {
      C s = C(0);
#pragma unroll
      for (int k = 0; k < V; k++) s += xv[k];
      mean = warp_all(s, SumOp<C>()) / nf;
    }
    C sq = C(0);
#pragma unroll
    for (int k = 0; k < V; k++) {
      const u32 c = lane + (u32)k * ws;
      const C d = c < n ? xv[k] - mean : C(0);
      sq += d * d;
    }
    const C rs = C(1) / sqrt(warp_all(sq, SumOp<C>()) / nf + eps);
    C a = C(0), b = C(0);
#pragma unroll
    for (int k = 0; k < V; k++) {
      const u32 c = lane + (u32)k * ws;
      if (c < n) {
        xv[k] = (xv[k] - mean) * rs;  // xhat from here on
        const C gh = gv[k] * Elem<T>::load(w[c]);
        a += gh * xv[k];
        if (!RMS) b += gh;
        pw[k] += gv[k] * xv[k];
        if (bias) pb[k] += gv[k];
      }
    }
    const C ma = warp_all(a, SumOp<C>()) / nf;
    const C mb = RMS ? C(0) : warp_all(b, SumOp<C>()) / nf;
#pragma unroll
    for (int k = 0; k < V; k++) {
      const u32 c = lane + (u32)k * ws;
      if (c < n) dr[c] = Elem<T>::store(rs * (gv[k] * Elem<T>::load(w[c]) - mb - xv[k] * ma));
    }
  }
  // the block's sum of its waves' partials, in wave order, then one row of partials a block
  const u32 nvec = bias ? 2u : 1u;
  for (u32 c = threadIdx.x; c < nvec * V * ws; c += blockDim.x) acc[c] = C(0);
  for (u32 wv = 0; wv < waves; wv++) {
    __syncthreads();
    if (wave == wv) {
#pragma unroll
      for (int k = 0; k < V; k++) {
        const u32 c = lane + (u32)k * ws;
        acc[c] += pw[k];
        if (bias) acc[V * ws + c] += pb[k];
      }
    }
  }
  __syncthreads();
  C* out = part + (u64)blockIdx.x * nvec * cols;
  for (u32 c = threadIdx.x; c < n; c += blockDim.x) {
    out[c] = acc[c];
    if (bias) out[cols + c] = acc[V * ws + c];
  }
}

#define NORM_GRAD_WAVE(DT, T, V) \
  RT_KERNEL void layernormgrad_##DT##_w##V(T* dx, float* part, const T* g, const T* x, const T* w, i64 dxOff, i64 gOff, i64 xOff, \
      i64 wOff, u64 rows, u64 cols, double eps, u32 flags) { RT_GRID_DEP(); \
    norm_grad_wave<T, false, V>(dx + dxOff, part, g + gOff, x + xOff, w + wOff, rows, cols, (float)eps, (flags & 1u) != 0u); } \
  RT_KERNEL void rmsnormgrad_##DT##_w##V(T* dx, float* part, const T* g, const T* x, const T* w, i64 dxOff, i64 gOff, i64 xOff, \
      i64 wOff, u64 rows, u64 cols, double eps) { RT_GRID_DEP(); \
    norm_grad_wave<T, true, V>(dx + dxOff, part, g + gOff, x + xOff, w + wOff, rows, cols, (float)eps, false); }
// one row length: up to 24 waves of columns (768 on NVIDIA, a common model width; shorter rows
// mask lanes off); V 32 spilled scalar registers on gfx90a/gfx942/gfx950, and every V more is
// code size in kernels/
#define NORM_GRAD_WAVES(DT, T) NORM_GRAD_WAVE(DT, T, 24)

NORM_GRAD_WAVES(f32, float) NORM_GRAD_WAVES(f16, f16) NORM_GRAD_WAVES(bf16, bf16)
