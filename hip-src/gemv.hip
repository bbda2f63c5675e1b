// gemv.hip: y[n] = W[n, k] x[k] for one row x: the matmuls of a batch-1 decode step, where an
// nn.Linear weight W (rows contiguous, seen by matmul as a transposed [k, n] operand) meets one
// activation row. The work is a stream over W, and a GEMM library call costs several times the
// host time of one launch (its heuristics and tile choice are made for large m): here one wave
// takes one row of W, reads it with 16-byte loads, several in flight per lane, dots it with x (a
// few KB, served from the caches) and reduces across the wave. Sums in f32; each output rounded
// once. Measured on an H200 against cuBLAS (bf16, W 14336 x 4096 and 4096 x 14336, HBM-resident):
// 31-32 us both, about 87% of the copy bandwidth. A version taking up to 4 rows of x at once was
// 0.6x cuBLAS at 4 rows (the loads of x per byte of W outrun the L1), so more rows go to BLAS.
//
// Kernels (DT in f32 f16 bf16; T storage):
//   gemv_<DT>(T* y, const T* x, const T* w, i64 yOff, i64 xOff, i64 wOff, u32 n, u32 k, u64 ldw)
// x and y contiguous; W row j at w + j * ldw, unit stride along k. Rows of W go to waves
// grid-stride, so any grid is correct.
#include "rowreduce.h"

// independent 16-byte loads of W per lane before any is consumed (2, 4 and 8 measured equal)
#define GEMV_UNROLL 4

template <class T>
RT_DEVICE void gemv_rows(T* y, const T* x, const T* w, u32 n, u32 k, u64 ldw) {
  typedef Vec16<T> V;
  typedef Elem<T> E;
  constexpr u32 VN = V::N;
  const u32 ws = (u32)warpSize, lane = threadIdx.x % ws, wpb = blockDim.x / ws;
  const u32 step = gridDim.x * wpb;
  // a uniform choice: every lane and wave takes the same path
  const bool vec = aligned16(x) && aligned16(w) && k % VN == 0 && ldw % VN == 0;
  const V* xv = (const V*)x;
  for (u32 j = blockIdx.x * wpb + threadIdx.x / ws; j < n; j += step) {
    const T* wr = w + (u64)j * ldw;
    float acc = 0.f;
    if (vec) {
      const V* wv = (const V*)wr;
      const u32 kv = k / VN;
      u32 c = lane;
      for (; c + (GEMV_UNROLL - 1) * ws < kv; c += GEMV_UNROLL * ws) {
        V a[GEMV_UNROLL];
#pragma unroll
        for (int u = 0; u < GEMV_UNROLL; u++) a[u] = wv[c + u * ws];
#pragma unroll
        for (int u = 0; u < GEMV_UNROLL; u++) {
          const V b = xv[c + u * ws];
#pragma unroll
          for (u32 e = 0; e < VN; e++) acc += E::load(a[u].v[e]) * E::load(b.v[e]);
        }
      }
      for (; c < kv; c += ws) {
        const V a = wv[c], b = xv[c];
#pragma unroll
        for (u32 e = 0; e < VN; e++) acc += E::load(a.v[e]) * E::load(b.v[e]);
      }
    } else {
      for (u32 c = lane; c < k; c += ws) acc += E::load(wr[c]) * E::load(x[c]);
    }
    const float s = warp_all(acc, SumOp<float>());
    if (lane == 0) y[j] = E::store(s);
  }
}

#define GEMV(DT, T) \
  RT_KERNEL void gemv_##DT(T* y, const T* x, const T* w, i64 yOff, i64 xOff, i64 wOff, u32 n, u32 k, u64 ldw) { \
    gemv_rows<T>(y + yOff, x + xOff, w + wOff, n, k, ldw); }

GEMV(f32, float) GEMV(f16, f16) GEMV(bf16, bf16)
