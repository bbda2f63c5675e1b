// scan.hip: inclusive prefix sums (cumsum) along contiguous rows. A block takes a row (grid-
// stride over rows) and walks it in chunks of blockDim.x * RT_SCAN_K elements: each thread owns
// RT_SCAN_K consecutive elements (16-byte loads where the rows allow), sums them in order, the
// block scans the threads' totals (a shuffle scan per wave, then the waves' totals), and each
// element's output is the running total of the chunks before + the threads before + its own
// prefix, rounded once. Memory is one read and one write of every element.
//
// Kernels (DT in f32 f64 f16 bf16; T storage; sums in f32, f64 for f64):
//   cumsum_<DT>(T* y, const T* x, i64 yOff, i64 xOff, u32 rows, u32 cols)
//       y and x contiguous [rows, cols] from their offsets. Any grid and any block of whole
//       waves up to RT_BLOCK_MAX threads is correct.
#include "rowreduce.h"

// elements a thread owns per chunk: 64 bytes of f32, 32 of the 16-bit types
#define RT_SCAN_K 16

#if RT_HIP
template <class T> RT_DEVICE T shfl_up(T v, int d) { return __shfl_up(v, d, warpSize); }
#else
template <class T> RT_DEVICE T shfl_up(T v, int d) { return __shfl_up_sync(0xffffffffu, v, d, warpSize); }
#endif

// the sum over the block's threads before this one (exclusive) and over all of them; every
// thread of the block calls it together. `parts` holds a value per wave; a barrier ends the
// call, so the next call may write it again.
template <class A>
RT_DEVICE A block_exclusive(A v, A& total, A* parts) {
  const u32 ws = (u32)warpSize, lane = threadIdx.x % ws, w = threadIdx.x / ws, nw = blockDim.x / ws;
  A inc = v;
  for (u32 d = 1; d < ws; d <<= 1) {
    const A t = shfl_up(inc, (int)d);
    if (lane >= d) inc += t;
  }
  if (lane == ws - 1) parts[w] = inc;
  __syncthreads();
  A before = A(0), all = A(0);
  for (u32 i = 0; i < nw; i++) {
    const A p = parts[i];
    if (i < w) before += p;
    all += p;
  }
  __syncthreads();
  total = all;
  return before + inc - v;
}

template <class T, class A>
RT_DEVICE void cumsum_rows(T* y, const T* x, u32 rows, u32 cols) {
  typedef Elem<T> E;
  constexpr u32 K = RT_SCAN_K, PER = 16 / sizeof(T);
  __shared__ A parts[RT_BLOCK_MAX / 32];
  const u32 chunk = blockDim.x * K;
  // whole vectors in every thread's share of every row: rows and bases at 16-byte boundaries
  const bool vec = cols % PER == 0 && aligned16(x) && aligned16(y);
  for (u32 r = blockIdx.x; r < rows; r += gridDim.x) {
    const T* xr = x + (u64)r * cols;
    T* yr = y + (u64)r * cols;
    A carry = A(0);
    for (u32 c0 = 0; c0 < cols; c0 += chunk) {
      const u32 k0 = c0 + threadIdx.x * K;
      // a share of whole vectors in range is held and scanned in registers; the rest (a row's
      // last, partial share, or rows off the vector grid) is read twice element by element in
      // rolled loops: an unrolled one's per-element branches cost gfx9 an exec mask each, in
      // scalar registers it does not have
      const bool full = vec && k0 + K <= cols;
      A v[K], own = A(0);
      if (full) {
#pragma unroll
        for (u32 q = 0; q < K / PER; q++) {
          const Vec16<T> w = *reinterpret_cast<const Vec16<T>*>(xr + k0 + q * PER);
#pragma unroll
          for (u32 e = 0; e < PER; e++) v[q * PER + e] = (A)E::load(w.v[e]);
        }
#pragma unroll
        for (u32 k = 1; k < K; k++) v[k] += v[k - 1];
        own = v[K - 1];
      } else {
#pragma unroll 1
        for (u32 k = k0; k < k0 + K && k < cols; k++) own += (A)E::load(xr[k]);
      }
      A total;
      A run = carry + block_exclusive(own, total, parts);
      carry += total;
      if (full) {
#pragma unroll
        for (u32 q = 0; q < K / PER; q++) {
          Vec16<T> w;
#pragma unroll
          for (u32 e = 0; e < PER; e++) w.v[e] = E::store((typename E::C)(run + v[q * PER + e]));
          *reinterpret_cast<Vec16<T>*>(yr + k0 + q * PER) = w;
        }
      } else {
#pragma unroll 1
        for (u32 k = k0; k < k0 + K && k < cols; k++) {
          run += (A)E::load(xr[k]);
          yr[k] = E::store((typename E::C)run);
        }
      }
    }
  }
}

#define CUMSUM(DT, T, A) \
  RT_KERNEL void cumsum_##DT(T* y, const T* x, i64 yOff, i64 xOff, u32 rows, u32 cols) { RT_GRID_DEP(); \
    cumsum_rows<T, A>(y + yOff, x + xOff, rows, cols); }

CUMSUM(f32, float, float) CUMSUM(f64, double, double) CUMSUM(f16, f16, float) CUMSUM(bf16, bf16, float)
