// cross-entropy.hip: cross entropy of logit rows against class ids, forward and backward, one
// row a block (whole-block reductions of rowreduce.h), rows grid-stride.
//
// With p = softmax(x) over a row of C classes, lse = logsumexp(x), t the row's class, w the
// class weights (1 without them) and W = sum_c w_c, label smoothing s:
//   loss = (1 - s) w_t (lse - x_t) + (s / C) (W lse - sum_c w_c x_c)
//   dloss/dx_j = p_j ((1 - s) w_t + (s / C) W) - (1 - s) w_t [j == t] - (s / C) w_j
// A row whose class is ignoreIndex has loss 0 and gradient 0; a class outside [0, C) (and not
// ignoreIndex) gives a NaN loss and NaN gradients, never a read out of bounds.
//
// Kernels (T storage; half types compute in f32, f64 in f64):
//   xent_fwd_<DT>(T* loss, const T* x, const i64* target, const T* weight, i64 lossOff, i64 xOff,
//       i64 tOff, i64 wOff, u64 rows, u64 cols, i64 ignoreIndex, f64 smoothing)
//     x contiguous [rows, cols] from xOff; loss [rows], target [rows] contiguous; weight [cols]
//     or null.
//   xent_bwd_<DT>(T* dx, const T* gLoss, const T* x, const i64* target, const T* weight,
//       i64 dxOff, i64 gOff, i64 xOff, i64 tOff, i64 wOff, u64 rows, u64 cols, i64 gStride,
//       i64 ignoreIndex, f64 smoothing)
//     dx [rows, cols] contiguous = gLoss[r * gStride] dloss_r/dx (gStride 0: one gradient for
//     every row, as a reduced loss hands back).
// Any grid and any block of whole waves are correct; cols < 2^32. Rows move in 16-byte vectors.
#include "rowreduce.h"

// what a row's loss and gradient need: max, sum of exp(x - max), and, with smoothing, the sum of
// w_c x_c and of w_c. One pass over the row: each thread keeps a running max and its sum of
// exponentials, rescaled when the max grows (one exp an element either way), and the block
// combines them at the common max. (A row of 32000 bf16 logits is 64 KB: a second pass for the
// sum read it again from memory.) A NaN logit makes max and sum NaN.
// AMD walks rows element by element: the 16-byte paths spilled scalar registers in the f16 and
// f64 backward on gfx90a, gfx942 and gfx950 (whose kernels already hold ~100 of them)
#if RT_HIP
#define XENT_VEC 0
#else
#define XENT_VEC 1
#endif

template <class T>
struct XentRow {
  typedef typename Elem<T>::C C;
  C m, s, wx, ws;
  RT_DEVICE XentRow(const T* xr, const T* w, u64 cols, bool smooth) {
    C mv = lowest<C>(), sv = C(0), wxv = C(0), wsv = C(0);
    auto one = [&](u32 k, C v) {
      if (v > mv) {
        sv = sv * exp(mv - v) + C(1);
        mv = v;
      } else if (v != v) {
        mv = v;
      } else {
        sv += exp(v - mv);
      }
      if (smooth) {
        const C wc = w ? Elem<T>::load(w[k]) : C(1);
        wxv += wc * v;
        wsv += wc;
      }
    };
#if XENT_VEC
    typedef Vec16<T> V;
    // 16-byte loads, several in flight (rowreduce.h)
    row_walk(xr, (u32)cols, threadIdx.x, blockDim.x, [&](u32 k, T v) { one(k, Elem<T>::load(v)); },
             [&](u32, u32 k0, const V& v) {
#pragma unroll
               for (u32 e = 0; e < V::N; e++) one(k0 + e, Elem<T>::load(v.v[e]));
             });
#else
    for (u32 k = threadIdx.x; k < (u32)cols; k += blockDim.x) one(k, Elem<T>::load(xr[k]));
#endif
    m = block_all(mv, MaxOp<C>());
    // a thread that saw no element (or only -inf) adds 0
    s = block_all(sv == C(0) ? C(0) : sv * exp(mv - m), SumOp<C>());
    wx = smooth ? block_all(wxv, SumOp<C>()) : C(0);
    ws = smooth ? block_all(wsv, SumOp<C>()) : C(0);
  }
};

// dr[j] = f(j, xr[j]) over a row, in 16-byte vectors where dr sits at xr's 16-byte phase
template <class T, class F>
RT_DEVICE void xent_row_map(T* dr, const T* xr, u32 n, F f) {
  typedef Vec16<T> V;
  constexpr u32 N = V::N;
  const u32 h = row_head(xr, n);
  if (!XENT_VEC || !aligned16(dr + h)) {
    for (u32 j = threadIdx.x; j < n; j += blockDim.x) dr[j] = f(j, xr[j]);
    return;
  }
  const u32 nv = (n - h) / N, t0 = h + nv * N;
  for (u32 j = threadIdx.x; j < h; j += blockDim.x) dr[j] = f(j, xr[j]);
  const V* q = reinterpret_cast<const V*>(xr + h);
  V* o = reinterpret_cast<V*>(dr + h);
  for (u32 j = threadIdx.x; j < nv; j += blockDim.x) {
    const V v = q[j];
    V r;
#pragma unroll
    for (u32 e = 0; e < N; e++) r.v[e] = f(h + j * N + e, v.v[e]);
    o[j] = r;
  }
  for (u32 j = t0 + threadIdx.x; j < n; j += blockDim.x) dr[j] = f(j, xr[j]);
}

template <class T>
RT_DEVICE void xent_fwd(T* loss, const T* x, const i64* target, const T* w, u64 rows, u64 cols, i64 ignore, double smoothing) {
  typedef typename Elem<T>::C C;
  const C sm = (C)smoothing;
  const bool smooth = smoothing != 0.0;
  for (u64 r = blockIdx.x; r < rows; r += gridDim.x) {
    const T* xr = x + r * cols;
    const XentRow<T> k(xr, w, cols, smooth);
    if (threadIdx.x != 0) continue;
    const i64 t = target[r];
    C l;
    if (t == ignore) l = C(0);
    else if (t < 0 || (u64)t >= cols) l = (C)bits_f32(0x7fc00000u);
    else {
      const C lse = k.m + log(k.s), wt = w ? Elem<T>::load(w[t]) : C(1);
      l = (C(1) - sm) * wt * (lse - Elem<T>::load(xr[t]));
      if (smooth) l += sm / (C)cols * (k.ws * lse - k.wx);
    }
    loss[r] = Elem<T>::store(l);
  }
}

template <class T>
RT_DEVICE void xent_bwd(T* dx, const T* gl, const T* x, const i64* target, const T* w, u64 rows, u64 cols, i64 gStride, i64 ignore,
                        double smoothing) {
  typedef typename Elem<T>::C C;
  const C sm = (C)smoothing;
  const bool smooth = smoothing != 0.0;
  for (u64 r = blockIdx.x; r < rows; r += gridDim.x) {
    const T* xr = x + r * cols;
    T* dr = dx + r * cols;
    const i64 t = target[r];
    const XentRow<T> k(xr, w, cols, smooth);
    if (t == ignore) {
      xent_row_map(dr, xr, (u32)cols, [](u32, T) { return Elem<T>::store(C(0)); });
      continue;
    }
    const bool bad = t < 0 || (u64)t >= cols;
    const C g = Elem<T>::load(gl[(i64)r * gStride]);
    const C wt = bad ? (C)bits_f32(0x7fc00000u) : (w ? Elem<T>::load(w[t]) : C(1));
    const C hard = (C(1) - sm) * wt, soft = sm / (C)cols;
    const C coef = hard + (smooth ? soft * k.ws : C(0)), inv = C(1) / k.s;
    xent_row_map(dr, xr, (u32)cols, [&](u32 j, T xv) {
      const C p = exp(Elem<T>::load(xv) - k.m) * inv;
      C d = p * coef;
      if ((i64)j == t) d -= hard;
      if (smooth) d -= soft * (w ? Elem<T>::load(w[j]) : C(1));
      return Elem<T>::store(g * d);
    });
  }
}

#define XENT_DT(DT, T) \
  RT_KERNEL void xent_fwd_##DT(T* loss, const T* x, const i64* target, const T* weight, i64 lossOff, i64 xOff, i64 tOff, i64 wOff, \
      u64 rows, u64 cols, i64 ignoreIndex, double smoothing) { RT_GRID_DEP(); \
    xent_fwd<T>(loss + lossOff, x + xOff, target + tOff, weight ? weight + wOff : weight, rows, cols, ignoreIndex, smoothing); } \
  RT_KERNEL void xent_bwd_##DT(T* dx, const T* gLoss, const T* x, const i64* target, const T* weight, i64 dxOff, i64 gOff, i64 xOff, \
      i64 tOff, i64 wOff, u64 rows, u64 cols, i64 gStride, i64 ignoreIndex, double smoothing) { RT_GRID_DEP(); \
    xent_bwd<T>(dx + dxOff, gLoss + gOff, x + xOff, target + tOff, weight ? weight + wOff : weight, rows, cols, gStride, ignoreIndex, \
                smoothing); }

XENT_DT(f32, float) XENT_DT(f64, double) XENT_DT(f16, f16) XENT_DT(bf16, bf16)
