// topk.hip: the k largest (or smallest) elements of each row of contiguous rows, with their
// indices, in order: values descending (ascending), ties by index, NaN as the largest value.
//
// Every element gets the key of radix.h, flipped for `largest`, so both directions ask for the
// k smallest (key, index) pairs: a strict total order, whose first k are exactly the first k of
// the stable sort. A block takes a slice of ITEMS * 256 elements of one row and finds its first
// kk = min(k, slice length) by a radix select, most significant digit first: a histogram of
// the digit among the elements that match the digits chosen so far, then the digit where the
// count reaches the kk-th element (one pass for u8, two for f16/bf16, four for f32/u32, eight
// for f64/i64; it stops early once the chosen digit's elements are exactly the ones still
// needed). It takes the elements below that prefix and, in position order, the first of the
// ones equal to it; ranks the kk taken by counting (kk^2 comparisons: kk <= TOPK_MAX) and
// writes them in order.
// Rows of several slices are reduced in levels (src/ops/gpu/topk.ts): each slice's kk best
// become a row of candidates (values and original indices, slices in order, so among equal
// values position order is still index order) and the next level selects from those, until
// one slice holds a row. A slice's best k contain every element of the row's best k that lies
// in it, so the last level's k are the row's.
//
// Kernels (DT any dtype, T its storage type, I = ITEMS in 4, 8; blocks of 256 threads):
//   topk<I>_<DT>(T* vo, u32* io, const T* x, const u32* ii, i64 voOff, i64 ioOff, i64 xOff,
//                i64 iiOff, u64 rows, u64 cols, u64 ocols, u32 k, u32 largest)
//       x [rows, cols] (indices ii [rows, cols], or 0: the positions); slice s of row r writes
//       its kk in order to vo/io [r * ocols + s * k, + kk). Dynamic LDS topkLdsBytes
//       (src/ops/gpu/radix.ts).
#include "radix.h"

#define TOPK_MAX 256

extern __shared__ u64 topk_lds[];

// LDS: the waves' digit counters, block_scan's wave totals, the select's shared state, then
// the taken records (raw bits, index). Word counts keep the records 8-byte aligned.
template <class R> struct TopkLds {
  u32* hw;
  u32* wtot;
  u32* state;  // [0] chosen digit, [1] still needed, [2] done, [3] records taken
  R* key;
  u32* idx;
  RT_DEVICE TopkLds() {
    u32* p = reinterpret_cast<u32*>(topk_lds);
    hw = p; p += waves() * RADIX;
    wtot = p; p += RADIX_WAVES_MAX;
    state = p; p += 8;
    key = reinterpret_cast<R*>(p);
    idx = reinterpret_cast<u32*>(key + TOPK_MAX);
  }
};

template <int ITEMS, class T>
RT_DEVICE void topk_rows(T* vo, u32* io, const T* x, const u32* ii, u64 rows, u64 cols, u64 ocols, u32 k, u32 largest) {
  typedef RKey<T> K;
  typedef typename K::R R;
  typedef typename K::S S;
  const R flip = largest ? K::MASK : (R)0, pad = K::pad(largest != 0);
  const u32 slice = ITEMS * RADIX, w = wave_id(), lane = lane_id(), nw = waves();
  // units in 32 bits (the host checks rows * slices < 2^31): a 64-bit division is a long
  // routine that takes registers the item arrays need
  const u32 slices = (u32)((cols + slice - 1) / slice), units = (u32)(rows * slices);
  const LaneMask below = lane_bit() - 1;
  const TopkLds<R> L;
  const S* xs = reinterpret_cast<const S*>(x);
  S* vs = reinterpret_cast<S*>(vo);
  for (u32 u = blockIdx.x; u < units; u += gridDim.x) {
    const u32 row = u / slices, s = u - row * slices;
    const u64 first = (u64)s * slice, at = row * cols + first;
    const u32 n = (u32)(cols - first < slice ? cols - first : slice), kk = k < n ? k : n;
    // the items' keys only: the few taken re-read their value and index
    R kq[ITEMS];
#pragma unroll
    for (int it = 0; it < ITEMS; it++) {
      const u32 p = tile_pos<ITEMS>(it);
      // padding (past the slice's end) is the worst value and loses ties by position, so it
      // is never among the kk <= n taken
      kq[it] = K::key(p < n ? (R)xs[at + p] : pad) ^ flip;
    }

    // radix select: pre holds the chosen digits (msk their bits), rem how many of the elements
    // matching them are still to take
    R pre = 0, msk = 0;
    u32 rem = kk;
    int shift = K::BITS;
    bool done = false;
    while (!done && shift > 0) {
      shift -= RADIX_BITS;
      for (u32 i = threadIdx.x; i < nw * RADIX; i += RADIX) L.hw[i] = 0;
      __syncthreads();
#pragma unroll
      for (int it = 0; it < ITEMS; it++) {
        if ((kq[it] & msk) == pre) atomicAdd(&L.hw[w * RADIX + digit_of(kq[it], (u32)shift)], 1u);
      }
      __syncthreads();
      const u32 d = threadIdx.x;
      u32 c = 0;
      for (u32 v = 0; v < nw; v++) c += L.hw[v * RADIX + d];
      u32 total;
      const u32 before = block_scan(c, L.wtot, total);
      if (before < rem && rem <= before + c) {
        L.state[0] = d;
        L.state[1] = rem - before;
        L.state[2] = c == rem - before;
      }
      __syncthreads();
      pre |= (R)L.state[0] << shift;
      msk |= (R)(RADIX - 1u) << shift;
      rem = L.state[1];
      done = L.state[2] != 0;
    }

    // take every element below the prefix, and the first `rem` equal to it in position order:
    // each wave counts its equal ones, then ranks them by ballots in (item, lane) order
    u32 cnt = 0;
#pragma unroll
    for (int it = 0; it < ITEMS; it++) cnt += popc_mask(wave_ballot((kq[it] & msk) == pre));
    if (lane == 0) L.wtot[w] = cnt;
    if (threadIdx.x == 0) L.state[3] = 0;
    __syncthreads();
    u32 base = 0;
    for (u32 v = 0; v < w; v++) base += L.wtot[v];
    u32 taken = 0;  // bit it: item it is taken
#pragma unroll
    for (int it = 0; it < ITEMS; it++) {
      const R km = kq[it] & msk;
      const LaneMask eq = wave_ballot(km == pre);
      const bool take = km < pre || (km == pre && base + popc_mask(eq & below) < rem);
      base += popc_mask(eq);
      taken |= (take ? 1u : 0u) << it;
    }
    // the taken records, in any order (ranked below)
    u32 slot = taken ? atomicAdd(&L.state[3], (u32)__popc(taken)) : 0u;
#pragma unroll
    for (int it = 0; it < ITEMS; it++) {
      if ((taken >> it) & 1u) {
        const u32 p = tile_pos<ITEMS>(it);
        L.key[slot] = (R)xs[at + p];
        L.idx[slot] = ii ? ii[at + p] : (u32)(first + p);
        slot++;
      }
    }
    __syncthreads();

    // the kk taken, each at its rank among them; the next unit writes records only past the
    // barriers of its select
    for (u32 j = threadIdx.x; j < kk; j += RADIX) {
      const R kj = K::key(L.key[j]) ^ flip;
      const u32 ij = L.idx[j];
      u32 r = 0;
      for (u32 i = 0; i < kk; i++) {
        const R ki = K::key(L.key[i]) ^ flip;
        r += (ki < kj || (ki == kj && L.idx[i] < ij)) ? 1u : 0u;
      }
      const u64 o = row * ocols + (u64)s * k + r;
      vs[o] = (S)L.key[j];
      io[o] = ij;
    }
  }
}

#define TOPK(DT, T, I) \
  RT_RADIX_KERNEL(1) void topk##I##_##DT(T* vo, u32* io, const T* x, const u32* ii, i64 voOff, i64 ioOff, \
      i64 xOff, i64 iiOff, u64 rows, u64 cols, u64 ocols, u32 k, u32 largest) { \
    topk_rows<I>(vo + voOff, io + ioOff, x + xOff, ii ? ii + iiOff : ii, rows, cols, ocols, k, largest); }
// no 16-item tiles: on 64-lane waves they spill scalar registers (clang 21, gfx90a/gfx942/gfx950)
#define TOPK_DT(DT, T) TOPK(DT, T, 4) TOPK(DT, T, 8)

TOPK_DT(f32, float) TOPK_DT(f64, double) TOPK_DT(f16, f16) TOPK_DT(bf16, bf16)
TOPK_DT(u8, u8) TOPK_DT(u32, u32) TOPK_DT(i64, i64)
