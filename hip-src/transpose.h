// transpose.h: the tiled copy between two layouts whose unit-stride dims differ (x.T.contiguous(),
// batched [b, r, c] -> [b, c, r], and writes of a contiguous tensor into a transposed view).
// copy.hip instantiates it per element width; src/ops/gpu/transpose.ts finds the layouts.
//
// The copy, in the form the host reduces every such pair to:
//   y[yOff + b*yB + i*yI + j] = x[xOff + b*xB + j*xJ + i]     b < batch, i < nI, j < nJ
// i runs along x's unit-stride dim, j along y's. A block moves one tile of TI x TJ elements at a
// time through LDS: it reads TJ rows of x (256 contiguous bytes each, 16-byte loads), then writes
// TI rows of y (TJ elements each, 16-byte stores built from LDS words). The store phase reads LDS
// down the columns, so the tile is kept as rows of 16-byte chunks with the chunk index XORed by a
// function of the row (no padding, which would break the 16-byte alignment of the row writes):
//  - load phase: 8 neighbouring threads write 8 chunks of one row; the XOR permutes chunks
//    within an aligned group of 8, so one 128-byte access covers all banks once.
//  - store phase: a wave's lanes are 4 (or 2) words of one chunk x 8 row groups; the XOR by the
//    row group puts the 8 groups in 8 different chunks, so each read hits 32 distinct banks.
// 16-bit and 8-bit elements are read from LDS 4 bytes at a time (2 or 4 rows of y per word) and
// regrouped in registers, so a thread's LDS reads are words, never single elements.
// Chunks past the edge of the tensor, or not 16-byte aligned (row strides that are not a whole
// number of chunks), move element by element: any size and stride is correct.
// Works for any wave size (only __syncthreads); blocks must have TP_THREADS threads.
#pragma once
#include "compat.h"

#define TP_THREADS 256

template <int E> struct TpWord;
template <> struct TpWord<1> { typedef u8 T; typedef u32 W; };
template <> struct TpWord<2> { typedef u16 T; typedef u32 W; };
template <> struct TpWord<4> { typedef u32 T; typedef u32 W; };
template <> struct TpWord<8> { typedef u64 T; typedef u64 W; };

template <int E> struct TpShape {
  typedef typename TpWord<E>::T T;            // the element's bits
  typedef typename TpWord<E>::W W;            // a word of the store phase's LDS reads
  static constexpr int V = 16 / E;            // elements of a 16-byte chunk
  static constexpr int TI = 256 / E;          // tile extent along i: 16 chunks, a 256-byte LDS row
  static constexpr int TJ = E == 1 ? 128 : 64;  // along j: LDS rows (128 for bytes, so a y row gets 128 bytes)
  static constexpr int WB = (int)sizeof(W);
  static constexpr int QW = 16 / WB;          // words of a chunk
  static constexpr int PER = WB / E;          // elements of a word: the y rows one word feeds
  static constexpr int G = TJ / V;            // groups of V rows: one 16-byte y store each
  static constexpr int LOADS = TJ * 16 / TP_THREADS;        // chunks a thread loads
  static constexpr int ITEMS = G * 16 * QW / TP_THREADS;    // word columns a thread stores
  static_assert(LOADS * TP_THREADS == TJ * 16, "load items");
  static_assert(ITEMS * TP_THREADS == G * 16 * QW, "store items");
};

// V elements as 16 bytes: a whole chunk in one access where it lies in range and aligned, else
// the elements that exist one by one (the rest of the chunk is zero and never stored)
template <int E>
RT_DEVICE uint4 tp_load_chunk(const typename TpShape<E>::T* __restrict__ p, u64 have) {
  typedef typename TpShape<E>::T T;
  constexpr int V = TpShape<E>::V;
  if (have >= (u64)V && aligned16(p)) return *reinterpret_cast<const uint4*>(p);
  Vec16<T> c;
  static_assert(Vec16<T>::N == V, "a chunk is one 16-byte vector");
#pragma unroll
  for (int k = 0; k < V; k++) c.v[k] = (u64)k < have ? p[k] : (T)0;
  uint4 r;
  __builtin_memcpy(&r, &c, 16);
  return r;
}

// one 16-byte store. nvcc splits a plain uint4 store into four 32-bit stores when the value was
// put together from shifted words (tp_gather), so CUDA gets the instruction spelled out.
RT_DEVICE void tp_store16(void* p, const uint4& v) {
#if RT_CUDA
  asm volatile("st.global.v4.u32 [%0], {%1, %2, %3, %4};" :: "l"(__cvta_generic_to_global(p)), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w) : "memory");
#else
  *reinterpret_cast<uint4*>(p) = v;
#endif
}

template <int E>
RT_DEVICE void tp_store_chunk(typename TpShape<E>::T* __restrict__ p, u64 have, const uint4& v) {
  typedef typename TpShape<E>::T T;
  constexpr int V = TpShape<E>::V;
  if (have >= (u64)V && aligned16(p)) { tp_store16(p, v); return; }
  const u32 w[4] = { v.x, v.y, v.z, v.w };
#pragma unroll
  for (int k = 0; k < V; k++) {
    if ((u64)k < have) {
      T e;
      __builtin_memcpy(&e, reinterpret_cast<const u8*>(w) + k * E, E);
      p[k] = e;
    }
  }
}

// The 16 bytes of y row (m of the word's PER rows) from the V words of V consecutive LDS rows:
// element k of the result is element m of word k.
template <int E>
RT_DEVICE uint4 tp_gather(const typename TpShape<E>::W (&w)[TpShape<E>::V], int m) {
  typedef TpShape<E> S;
  if constexpr (E == 8) {
    return make_uint4((u32)w[0], (u32)(w[0] >> 32), (u32)w[1], (u32)(w[1] >> 32));
  } else {
    constexpr u32 bits = 8u * E, mask = E == 4 ? 0xffffffffu : (1u << bits) - 1u;
    u32 o[4];
#pragma unroll
    for (int p = 0; p < 4; p++) {
      u32 acc = 0;
#pragma unroll
      for (int t = 0; t < S::PER; t++) acc |= ((w[S::PER * p + t] >> (bits * (u32)m)) & mask) << (bits * (u32)t);
      o[p] = acc;
    }
    return make_uint4(o[0], o[1], o[2], o[3]);
  }
}

template <int E>
RT_DEVICE void transpose_tiles(typename TpShape<E>::T* __restrict__ y, const typename TpShape<E>::T* __restrict__ x,
    u64 nI, u64 nJ, u64 batch, i64 yI, i64 xJ, i64 yB, i64 xB) {
  typedef TpShape<E> S;
  typedef typename S::T T;
  typedef typename S::W W;
  __shared__ uint4 lds[S::TJ * 16];
  const u32 tid = threadIdx.x;
  const u64 tilesI = (nI + S::TI - 1) / S::TI, tilesJ = (nJ + S::TJ - 1) / S::TJ;
  const u64 total = tilesI * tilesJ * batch;
  for (u64 t = blockIdx.x; t < total; t += gridDim.x) {
    // one division chain a tile; j tiles vary fastest, so neighbouring blocks write the same y
    // rows (measured on an H200: 3% faster than i fastest)
    const u64 rest = t / tilesJ, tj = t - rest * tilesJ, b = rest / tilesI, ti = rest - b * tilesI;
    const u64 i0 = ti * S::TI, j0 = tj * S::TJ;
    const T* xt = x + (i64)b * xB;
    T* yt = y + (i64)b * yB;

    // load phase: every chunk of the tile's TJ x rows, all in flight before the LDS writes
    uint4 v[S::LOADS];
#pragma unroll
    for (int s = 0; s < S::LOADS; s++) {
      const u32 it = tid + (u32)s * TP_THREADS, c = it & 15u, r = it >> 4;
      const u64 j = j0 + r, i = i0 + (u64)c * S::V;
      v[s] = make_uint4(0, 0, 0, 0);
      if (j < nJ && i < nI) v[s] = tp_load_chunk<E>(xt + (i64)j * xJ + (i64)i, nI - i);
    }
#pragma unroll
    for (int s = 0; s < S::LOADS; s++) {
      const u32 it = tid + (u32)s * TP_THREADS, c = it & 15u, r = it >> 4;
      lds[r * 16u + (c ^ ((r / (u32)S::V) & 7u))] = v[s];
    }
    __syncthreads();

    // store phase: V words down a column of one chunk give PER 16-byte pieces of y rows
    const W* words = reinterpret_cast<const W*>(lds);
#pragma unroll
    for (int s = 0; s < S::ITEMS; s++) {
      const u32 it = tid + (u32)s * TP_THREADS, q = it % (u32)S::QW, rest2 = it / (u32)S::QW;
      const u32 jg = rest2 % (u32)S::G, c = rest2 / (u32)S::G;
      const u32 pc = c ^ (jg & 7u);
      W w[S::V];
#pragma unroll
      for (int k = 0; k < S::V; k++) w[k] = words[((jg * (u32)S::V + (u32)k) * 16u + pc) * (u32)S::QW + q];
      const u64 j = j0 + (u64)jg * S::V;
#pragma unroll
      for (int m = 0; m < S::PER; m++) {
        const u64 i = i0 + (u64)c * S::V + (u64)q * S::PER + (u64)m;
        if (i < nI && j < nJ) tp_store_chunk<E>(yt + (i64)i * yI + (i64)j, nJ - j, tp_gather<E>(w, m));
      }
    }
    __syncthreads();  // the next tile's loads overwrite lds
  }
}
