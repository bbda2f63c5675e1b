// gemv-fused.hip: the matrix-vector products of a batch-1 decode step with the small ops around
// them folded in, so a transformer layer is a handful of launches instead of a dozen. At batch 1
// every op of a layer but the GEMVs moves a few KB, and each one still costs a launch and a
// kernel's ramp (2.5-5.5 us each on an H200, about half the step of a 1B model); folded into the
// GEMV they cost nothing, since its time is the stream over W.
//
// The plain product (matmul's one-row case) is the same kernel with nothing folded in: one wave
// reads a row of W with 16-byte loads, several in flight per lane, and dots it with x from the
// caches. Measured on an H200 beside cuBLAS (bf16, W 14336 x 4096 and 4096 x 14336, in HBM):
// 31-32 us both, about 87% of the copy bandwidth; a version taking up to 4 rows of x was 0.6x
// cuBLAS at 4 rows (the loads of x per byte of W outran the L1), so more rows go to BLAS.
//
// A unit is one output row of W (or a pair of rows that the epilogue combines), computed by
// `split` waves of one block that share its k range (short or few rows fill the GPU that way);
// partial sums meet in shared memory and the first lane of the unit runs the epilogue. Sums in
// f32, each output rounded once. With NORM, x is RMS-normalised on the fly: the dot product runs
// over x * g and the unit also sums x^2 over its k range, so the scale 1 / sqrt(mean(x^2) + eps)
// (norm.hip's formula) multiplies the finished sum: no separate pass, nothing written.
//
// Kernels (DT in f32 f16 bf16; T storage; N in n (plain) r (RMS-normalised x)):
//   gemvf_<N>_<DT>(T* y, const T* x, const T* w, const T* g, const T* bias, const T* r,
//                  i64 yOff, i64 xOff, i64 wOff, i64 gOff, i64 bOff, i64 rOff,
//                  u32 n, u32 k, u64 ldw, float eps, u32 flags, u32 split)
//       y[j] = x . W[j] (+ bias[j]) (+ r[j]), j < n; flags: 1 bias, 2 residual r.
//   gemvf_swiglu_<N>_<DT>(same arguments)
//       y[j] = silu(x . W[j] + bias[j]) * (x . W[n + j] + bias[n + j]) (+ r[j]), j < n: W is
//       the stacked [gate; up] projection [2n, k] (Llama's fused gate_up).
//   gemvf_qkv_<N>_<DT>(T* q, T* kc, T* vc, const T* x, const T* w, const T* g, const T* bias,
//                      const T* cs, const T* sn, const u32* posPtr,
//                      i64 qOff, i64 kOff, i64 vOff, i64 xOff, i64 wOff, i64 gOff, i64 bOff,
//                      i64 cOff, i64 sOff, u32 k, u64 ldw, float eps, u32 flags, u32 split,
//                      u32 heads, u32 kvHeads, u32 d, u32 pos, i64 headStride, i64 posStride)
//       the fused q/k/v projection W [(heads + 2 kvHeads) d, k] of one token at position
//       p = posPtr ? *posPtr : pos (a replayed graph keeps it on the device): rotary embedding
//       (the halves pairing, cos/sin tables [*, d/2] at row p) on the q and k heads; q goes to
//       q[h d + i], k and v into the caches at kc/vc[head * headStride + p * posStride + i].
//       Units are the rotary pairs (i, i + d/2) of every head. flags: 1 bias.
// x, g, bias, r, y, q contiguous; W row j at w + j * ldw with unit stride along k. Any grid is
// correct (units go to blocks grid-stride); split must divide the waves of a block.
#include "rowreduce.h"

// independent 16-byte loads of W per lane (per row) before any is consumed
#define GF_UNROLL 4
#define GF_BIAS 1u
#define GF_RESID 2u

struct GfSums { float a, b, sq; };

// The unit's dot products over the vectors c = first, first + stride, ... of k: row a (and b
// for pairs), and sum(x^2) with NORM. `vec`: 16-byte loads (aligned, k and ldw multiples).
template <class T, bool NORM, bool PAIR>
RT_DEVICE GfSums gf_dot(const T* x, const T* g, const T* wa, const T* wb, u32 k, u32 first, u32 stride, bool vec) {
  typedef Vec16<T> V;
  typedef Elem<T> E;
  constexpr u32 VN = V::N;
  GfSums s = {0.f, 0.f, 0.f};
  // one element of x (normalised by g when NORM) against W's elements
  auto term = [&](T xe, T ge, T ae, T be) {
    float xf = E::load(xe);
    if (NORM) { s.sq += xf * xf; xf *= E::load(ge); }
    s.a += E::load(ae) * xf;
    if (PAIR) s.b += E::load(be) * xf;
  };
  if (vec) {
    const V *xv = (const V*)x, *gv = (const V*)g, *av = (const V*)wa, *bv = (const V*)wb;
    const u32 kv = k / VN;
    u32 c = first;
    for (; c + (GF_UNROLL - 1) * stride < kv; c += GF_UNROLL * stride) {
      V a[GF_UNROLL], b[GF_UNROLL];
#pragma unroll
      for (int u = 0; u < GF_UNROLL; u++) {
        a[u] = av[c + u * stride];
        if (PAIR) b[u] = bv[c + u * stride];
      }
#pragma unroll
      for (int u = 0; u < GF_UNROLL; u++) {
        const V xx = xv[c + u * stride];
        V gg;
        if (NORM) gg = gv[c + u * stride];
#pragma unroll
        for (u32 e = 0; e < VN; e++) term(xx.v[e], NORM ? gg.v[e] : xx.v[e], a[u].v[e], PAIR ? b[u].v[e] : a[u].v[e]);
      }
    }
    for (; c < kv; c += stride) {
      const V xx = xv[c], a = av[c];
      V gg, b;
      if (NORM) gg = gv[c];
      if (PAIR) b = bv[c];
#pragma unroll
      for (u32 e = 0; e < VN; e++) term(xx.v[e], NORM ? gg.v[e] : xx.v[e], a.v[e], PAIR ? b.v[e] : a.v[e]);
    }
  } else {
    for (u32 c = first; c < k; c += stride) term(x[c], NORM ? g[c] : x[c], wa[c], PAIR ? wb[c] : wa[c]);
  }
  return s;
}

// Runs every unit: rows(u, wa, wb) names its rows of W, epi(u, a, b) gets the finished,
// normalised sums on one lane. Every thread of a block runs the same iterations (the shared
// memory exchange synchronises the block).
template <class T, bool NORM, bool PAIR, class Rows, class Epi>
RT_DEVICE void gf_units(u32 units, const T* x, const T* g, u32 k, u64 ldw, float eps, u32 split,
                        const T* w, Rows rows, Epi epi) {
  __shared__ GfSums part[RT_BLOCK_MAX / 32];
  const u32 ws = (u32)warpSize, wid = threadIdx.x / ws, lane = threadIdx.x % ws;
  const u32 upb = blockDim.x / ws / split, sub = wid % split, slot = wid / split;
  // a uniform choice: every lane and wave takes the same path
  const bool vec = aligned16(x) && aligned16(w) && (!NORM || aligned16(g)) && k % Vec16<T>::N == 0 && ldw % Vec16<T>::N == 0;
  for (u32 first = blockIdx.x * upb; first < units; first += gridDim.x * upb) {
    const u32 u = first + slot;
    GfSums s = {0.f, 0.f, 0.f};
    if (u < units) {
      const T *wa, *wb;
      rows(u, wa, wb);
      s = gf_dot<T, NORM, PAIR>(x, g, wa, wb, k, sub * ws + lane, split * ws, vec);
    }
    s.a = warp_all(s.a, SumOp<float>());
    if (PAIR) s.b = warp_all(s.b, SumOp<float>());
    if (NORM) s.sq = warp_all(s.sq, SumOp<float>());
    if (split > 1) {
      if (lane == 0) part[wid] = s;
      __syncthreads();
      if (sub == 0) {
        for (u32 i = 1; i < split; i++) { const GfSums p = part[wid + i]; s.a += p.a; s.b += p.b; s.sq += p.sq; }
      }
      __syncthreads();  // the next iteration rewrites part[]
    }
    if (sub == 0 && lane == 0 && u < units) {
      const float scale = NORM ? 1.f / sqrtf(s.sq / (float)k + eps) : 1.f;
      epi(u, s.a * scale, s.b * scale);
    }
  }
}

template <class T>
RT_DEVICE float gf_opt(const T* p, u32 flags, u32 bit, u64 i) { return (flags & bit) ? Elem<T>::load(p[i]) : 0.f; }

template <class T, bool NORM>
RT_DEVICE void gemvf(T* y, const T* x, const T* w, const T* g, const T* bias, const T* r,
                     u32 n, u32 k, u64 ldw, float eps, u32 flags, u32 split) {
  gf_units<T, NORM, false>(n, x, g, k, ldw, eps, split, w,
    [&](u32 j, const T*& wa, const T*& wb) { wa = wb = w + (u64)j * ldw; },
    [&](u32 j, float a, float) {
      y[j] = Elem<T>::store(a + gf_opt(bias, flags, GF_BIAS, j) + gf_opt(r, flags, GF_RESID, j));
    });
}

template <class T, bool NORM>
RT_DEVICE void gemvf_swiglu(T* y, const T* x, const T* w, const T* g, const T* bias, const T* r,
                            u32 n, u32 k, u64 ldw, float eps, u32 flags, u32 split) {
  gf_units<T, NORM, true>(n, x, g, k, ldw, eps, split, w,
    [&](u32 j, const T*& wa, const T*& wb) { wa = w + (u64)j * ldw; wb = w + (u64)(n + j) * ldw; },
    [&](u32 j, float a, float b) {
      const float gate = a + gf_opt(bias, flags, GF_BIAS, j), up = b + gf_opt(bias, flags, GF_BIAS, (u64)n + j);
      y[j] = Elem<T>::store(gate / (1.f + expf(-gate)) * up + gf_opt(r, flags, GF_RESID, j));
    });
}

template <class T, bool NORM>
RT_DEVICE void gemvf_qkv(T* q, T* kc, T* vc, const T* x, const T* w, const T* g, const T* bias,
                         const T* cs, const T* sn, const u32* posPtr, u32 k, u64 ldw, float eps,
                         u32 flags, u32 split, u32 heads, u32 kvHeads, u32 d, u32 pos,
                         i64 headStride, i64 posStride) {
  typedef Elem<T> E;
  const u32 half = d / 2;
  gf_units<T, NORM, true>((heads + 2 * kvHeads) * half, x, g, k, ldw, eps, split, w,
    [&](u32 u, const T*& wa, const T*& wb) {
      const u32 h = u / half, i = u - h * half;
      wa = w + (u64)(h * d + i) * ldw;
      wb = wa + (u64)half * ldw;
    },
    [&](u32 u, float a, float b) {
      const u32 h = u / half, i = u - h * half;
      a += gf_opt(bias, flags, GF_BIAS, (u64)h * d + i);
      b += gf_opt(bias, flags, GF_BIAS, (u64)h * d + i + half);
      const u32 p = posPtr ? *posPtr : pos;
      if (h < heads + kvHeads) {
        const float co = E::load(cs[(u64)p * half + i]), si = E::load(sn[(u64)p * half + i]);
        const float ra = a * co - b * si, rb = b * co + a * si;
        a = ra; b = rb;
      }
      T* dst;
      if (h < heads) dst = q + (u64)h * d;
      else dst = (h < heads + kvHeads ? kc + (i64)(h - heads) * headStride : vc + (i64)(h - heads - kvHeads) * headStride) + (i64)p * posStride;
      dst[i] = E::store(a);
      dst[i + half] = E::store(b);
    });
}

#define GF_LINEAR(NAME, FN, N, NORM, DT, T) \
  RT_KERNEL void NAME##_##N##_##DT(T* y, const T* x, const T* w, const T* g, const T* bias, const T* r, \
      i64 yOff, i64 xOff, i64 wOff, i64 gOff, i64 bOff, i64 rOff, u32 n, u32 k, u64 ldw, float eps, u32 flags, u32 split) { RT_GRID_DEP(); \
    FN<T, NORM>(y + yOff, x + xOff, w + wOff, g + gOff, bias + bOff, r + rOff, n, k, ldw, eps, flags, split); }
#define GF_QKV(N, NORM, DT, T) \
  RT_KERNEL void gemvf_qkv_##N##_##DT(T* q, T* kc, T* vc, const T* x, const T* w, const T* g, const T* bias, \
      const T* cs, const T* sn, const u32* posPtr, i64 qOff, i64 kOff, i64 vOff, i64 xOff, i64 wOff, i64 gOff, \
      i64 bOff, i64 cOff, i64 sOff, u32 k, u64 ldw, float eps, u32 flags, u32 split, u32 heads, u32 kvHeads, \
      u32 d, u32 pos, i64 headStride, i64 posStride) { RT_GRID_DEP(); \
    gemvf_qkv<T, NORM>(q + qOff, kc + kOff, vc + vOff, x + xOff, w + wOff, g + gOff, bias + bOff, cs + cOff, \
      sn + sOff, posPtr, k, ldw, eps, flags, split, heads, kvHeads, d, pos, headStride, posStride); }
#define GF_ALL(N, NORM, DT, T) GF_LINEAR(gemvf, gemvf, N, NORM, DT, T) \
  GF_LINEAR(gemvf_swiglu, gemvf_swiglu, N, NORM, DT, T) GF_QKV(N, NORM, DT, T)
#define GF_DT(DT, T) GF_ALL(n, false, DT, T) GF_ALL(r, true, DT, T)

GF_DT(f32, float) GF_DT(f16, f16) GF_DT(bf16, bf16)
