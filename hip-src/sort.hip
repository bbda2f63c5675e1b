// sort.hip: argsort and sort along the last dim of contiguous rows.
//
// Rows of up to a few thousand elements are sorted by one block each, longer rows by tiles of
// several blocks, both by a least-significant-digit radix sort with 8-bit digits on each dtype's
// order-preserving key (radix.h: NaN above +inf, -0 equal to +0, i64 signed; descending flips
// the key's bits). Why radix and not a merge sort: every pass is stable, so ties keep index
// order in both directions without comparing indices, and a row costs BITS / 8 passes (u8 one,
// f16/bf16 two, f32/u32 four, f64/i64 eight) of linear work, where the bitonic network this
// replaced did log2(n) (log2(n) + 1) / 2 compare-exchange steps over shared memory (78 at 4096)
// and a merge sort does log2(n) rounds of merge-path searches and serial merges. Within a pass
// a wave ranks equal digits through a shared lane mask per digit (radix.h: rank_digits), which
// works on 32- and 64-lane waves alike, and a pass whose tile holds one digit is skipped.
// Records carry the raw bits of the values, or their keys with the values read back through the
// indices, so sorted values are written bit for bit.
//
// Kernels (DT any dtype, T its storage type; outputs and inputs contiguous from their offsets;
// blocks of RADIX = 256 threads except sort_rows):
//   sort_rows_<DT>(u32* iy, T* vy, const T* x, i64 iOff, i64 vOff, i64 xOff,
//                  u64 rows, u64 cols, u32 cap, u32 per, u32 desc)
//       short rows (cols <= cap, a power of 2): the bitonic network over (key, index) records in
//       shared memory, `per` rows a block's pass, dynamic shared memory per * cap * (8 for
//       32-bit keys, 12 for 64-bit) bytes. Kept for short rows, where a block of 256 threads
//       would mostly idle through the radix passes. iy = sorted positions, vy (may be 0) values.
//   radix_rows<I>_<DT>(u32* iy, T* vy, const T* x, i64 iOff, i64 vOff, i64 xOff,
//                      u64 rows, u64 cols, u32 desc)       (I = 1, 2, 4, 8, 16)
//       rows of cols <= 256 * I elements, one block a row, every pass in LDS; dynamic LDS
//       radixLdsBytes(256 * I) (src/ops/gpu/radix.ts).
//   Longer rows, per pass (shift = 0, 8, ... BITS - 8), over tiles of 256 * items elements,
//   `tiles` a row, with ping-pong workspaces of values and indices between passes:
//   radix_hist_<DT>(u32* hist, const T* x, i64 xOff, u64 rows, u64 cols, u32 tiles, u32 items,
//                   u32 shift, u32 desc)
//       hist[(row * 256 + digit) * tiles + tile] = the tile's count of the digit (tiles of
//       256 * items); dynamic LDS radixHistLdsBytes.
//   radix_scan(u32* hist, u32* totals, u64 units, u32 tiles)
//       per unit (row * 256 + digit), one wave: hist becomes the exclusive prefix over tiles,
//       totals[unit] the digit's count in the row.
//   radix_scatter_<DT>(T* ko, u32* io, const T* ki, const u32* ii, const u32* hist,
//                      const u32* totals, i64 koOff, i64 ioOff, i64 kiOff, i64 iiOff, u64 rows,
//                      u64 cols, u32 tiles, u32 shift, u32 desc)
//       ranks the tile by digit (a tile of one digit keeps its order), stages it in LDS in that
//       order and writes each record to its place in the row: the row's count of smaller
//       digits, plus the digit's count in earlier tiles, plus its rank in the tile. ii = 0 on the first pass (index = position); ko = 0
//       on an argsort's last pass. Tiles of 4096, 2048 for 64-bit keys (ScatterItems); dynamic
//       LDS radixLdsBytes(tile).
#include "radix.h"

// ---- short rows: a bitonic network over (key, index) records in shared memory ---------------
// Records compare by key, then by index, so the network (not stable by itself) gives the stable
// order. 32-bit keys: one u64 word (key << 32 | index); 64-bit keys: a u64 key array and a u32
// index array. Padding records (key and index all ones) sort after every real record.
template <int KB> struct Recs;

template <> struct Recs<4> {
  u64* w;
  static constexpr u32 BYTES = 8;
  RT_DEVICE Recs(u64* w_, u32*) : w(w_) {}
  RT_DEVICE void put(u64 i, u64 key, u32 idx) const { w[i] = (key << 32) | idx; }
  RT_DEVICE void pad(u64 i) const { w[i] = ~0ull; }
  RT_DEVICE u32 index(u64 i) const { return (u32)w[i]; }
  // records a < b end in order `up` (ascending) or reversed
  RT_DEVICE void cmpx(u64 a, u64 b, bool up) const {
    const u64 x = w[a], y = w[b];
    if ((x > y) == up && x != y) { w[a] = y; w[b] = x; }
  }
};

template <> struct Recs<8> {
  u64* k;
  u32* ix;
  static constexpr u32 BYTES = 12;
  RT_DEVICE Recs(u64* k_, u32* ix_) : k(k_), ix(ix_) {}
  RT_DEVICE void put(u64 i, u64 key, u32 idx) const { k[i] = key; ix[i] = idx; }
  RT_DEVICE void pad(u64 i) const { k[i] = ~0ull; ix[i] = 0xffffffffu; }
  RT_DEVICE u32 index(u64 i) const { return ix[i]; }
  RT_DEVICE void cmpx(u64 a, u64 b, bool up) const {
    const u64 ka = k[a], kb = k[b];
    const u32 ia = ix[a], ib = ix[b];
    const bool gt = ka > kb || (ka == kb && ia > ib);
    const bool lt = ka < kb || (ka == kb && ia < ib);
    if (up ? gt : lt) { k[a] = kb; k[b] = ka; ix[a] = ib; ix[b] = ia; }
  }
};

extern __shared__ u64 sort_lds[];

// `n` records in dynamic shared memory: the u64 part first, then the u32 indices
template <int KB> RT_DEVICE Recs<KB> lds_recs(u32 n) { return Recs<KB>(sort_lds, reinterpret_cast<u32*>(sort_lds + n)); }

RT_DEVICE u32 log2_u32(u32 x) { return 31u - (u32)__clz((int)x); }

// One step (k, j) of the network over `2*half` shared records split into rows of `cap`; a
// record's position in its row sets its pair's direction.
template <int KB>
RT_DEVICE void lds_step(const Recs<KB>& r, u32 half, u32 cap, u32 k, u32 j) {
  for (u32 t = threadIdx.x; t < half; t += blockDim.x) {
    const u32 i = ((t & ~(j - 1u)) << 1) | (t & (j - 1u));
    r.cmpx(i, i + j, ((i & (cap - 1u)) & k) == 0);
  }
  __syncthreads();
}

// Stages 2..cap: every row of cap records ends sorted ascending.
template <int KB>
RT_DEVICE void lds_sort(const Recs<KB>& r, u32 n, u32 cap) {
  for (u32 k = 2; k <= cap; k <<= 1)
    for (u32 j = k >> 1; j > 0; j >>= 1) lds_step(r, n / 2, cap, k, j);
}

// one pass of a block sorts `per` rows
template <class T>
RT_DEVICE void sort_rows(u32* iy, T* vy, const T* x, u64 rows, u64 cols, u32 cap, u32 per, u32 desc) {
  typedef RKey<T> K;
  typedef typename K::R R;
  constexpr int KB = (int)sizeof(R);
  const R flip = desc ? K::MASK : (R)0;
  const u32 n = per * cap, lg = log2_u32(cap);
  const Recs<KB> r = lds_recs<KB>(n);
  const typename K::S* xs = reinterpret_cast<const typename K::S*>(x);
  for (u64 r0 = (u64)blockIdx.x * per; r0 < rows; r0 += (u64)gridDim.x * per) {
    for (u32 e = threadIdx.x; e < n; e += blockDim.x) {
      const u64 row = r0 + (e >> lg);
      const u32 p = e & (cap - 1u);
      if (row < rows && p < cols) r.put(e, (u64)(K::key((R)xs[row * cols + p]) ^ flip), p);
      else r.pad(e);
    }
    __syncthreads();
    lds_sort(r, n, cap);
    for (u32 e = threadIdx.x; e < n; e += blockDim.x) {
      const u64 row = r0 + (e >> lg);
      const u32 p = e & (cap - 1u);
      if (row < rows && p < cols) {
        const u32 src = r.index(e);
        iy[row * cols + p] = src;
        if (vy) vy[row * cols + p] = x[row * cols + src];
      }
    }
    __syncthreads();  // the next pass overwrites the records
  }
}

// ---- radix: LDS ---------------------------------------------------------------------------
// The dynamic LDS of radix_rows and radix_scatter: rank_digits' lane masks (cleared here, left
// clear by every rank), the global base of each digit (scatter), block_scan's wave totals,
// tile_uniform's votes, rank_digits' counters, then `cap` records (raw bits or keys, and index).
// The sizes keep each part aligned; src/ops/gpu/radix.ts sizes the buffer the same way
// (radixLdsBytes). The constructor ends with a barrier.
template <class R> struct RadixLds {
  RankLds rk;
  u32* gbase;
  u32* votes;
  R* key;
  u32* idx;
  RT_DEVICE explicit RadixLds(u32 cap) {
    const u32 nw = waves();
    rk.match = reinterpret_cast<LaneMask*>(sort_lds);
    u32* p = reinterpret_cast<u32*>(rk.match + nw * RADIX);
    rk.start = p; p += RADIX;
    gbase = p; p += RADIX;
    rk.wtot = p; p += RADIX_WAVES_MAX;
    votes = p; p += 2 * RADIX_WAVES_MAX;
    rk.hw = reinterpret_cast<u16*>(p);
    key = reinterpret_cast<R*>(rk.hw + nw * RADIX);
    idx = reinterpret_cast<u32*>(key + cap);
    for (u32 i = threadIdx.x; i < nw * RADIX; i += RADIX) rk.match[i] = 0;
    __syncthreads();
  }
};

// ---- radix: rows that fit one block ------------------------------------------------------------
// Items carry their keys (flipped for descending) from the load to the end, and values are read
// back through the sorted indices: the key is computed once, not once a pass, and padding is
// simply the all-ones key (it sorts last: ties keep position order).
template <int ITEMS, class T>
RT_DEVICE void radix_rows(u32* iy, T* vy, const T* x, u64 rows, u64 cols, u32 desc) {
  typedef RKey<T> K;
  typedef typename K::R R;
  typedef typename K::S S;
  const R flip = desc ? K::MASK : (R)0;
  const u32 n = (u32)cols;
  const RadixLds<R> L(ITEMS * RADIX);
  const S* xs = reinterpret_cast<const S*>(x);
  S* vs = reinterpret_cast<S*>(vy);
  u32 calls = 0;
  for (u64 row = blockIdx.x; row < rows; row += gridDim.x) {
    const S* xr = xs + row * cols;
    R kv[ITEMS];
    u32 iv[ITEMS], dr[ITEMS];
    const u32 nr = opaque(n);  // (radix.h: before)
#pragma unroll
    for (int it = 0; it < ITEMS; it++) {
      // past the row: a clamped (harmless) load, then the all-ones key
      const u32 p = tile_pos<ITEMS>(it);
      const R real = before_r<R>(p, nr);
      kv[it] = ((K::key((R)xr[p < nr ? p : nr - 1]) ^ flip) & real) | (K::MASK & ~real);
      iv[it] = p;
    }
    R first = K::key((R)xr[0]) ^ flip;  // the key at position 0
    for (u32 shift = 0; shift < (u32)K::BITS; shift += RADIX_BITS) {
#pragma unroll
      for (int it = 0; it < ITEMS; it++) dr[it] = digit_of(kv[it], shift);
      if (tile_uniform(dr, digit_of(first, shift), L.votes, calls)) continue;
      // rank_digits clears its counters first: every thread is past the last reads of them
      // (the previous pass's places) once it reaches a barrier in there
      rank_digits<ITEMS>(dr, L.rk);
#pragma unroll
      for (int it = 0; it < ITEMS; it++) {
        const u32 q = rank_place(dr[it], L.rk);
        L.key[q] = kv[it];
        L.idx[q] = iv[it];
      }
      __syncthreads();
      // the next writes of the records come after the barriers of the next rank
#pragma unroll
      for (int it = 0; it < ITEMS; it++) {
        const u32 p = tile_pos<ITEMS>(it);
        kv[it] = L.key[p];
        iv[it] = L.idx[p];
      }
      first = L.key[0];
    }
    // the final order through LDS (the last passes may have been skipped), then out striped:
    // each thread writes only the places it read last, so no barrier is needed before
#pragma unroll
    for (int it = 0; it < ITEMS; it++) L.idx[tile_pos<ITEMS>(it)] = iv[it];
    __syncthreads();
    for (u32 e = threadIdx.x; e < n; e += RADIX) {
      const u32 src = L.idx[e];
      iy[row * cols + e] = src;
      if (vs) vs[row * cols + e] = xr[src];
    }
    // the next row writes the records only past the barriers of a pass
  }
}

// ---- radix: long rows, one pass in three kernels -----------------------------------------------
template <class T>
RT_DEVICE void radix_hist(u32* hist, const T* x, u64 rows, u64 cols, u32 tiles, u32 items, u32 shift, u32 desc) {
  typedef RKey<T> K;
  typedef typename K::R R;
  typedef typename K::S S;
  const R flip = desc ? K::MASK : (R)0;
  const u32 tile = items * RADIX, nw = waves();
  // one counter set a wave, so only lanes of one wave contend for a counter
  u32* hw = reinterpret_cast<u32*>(sort_lds);
  u32* mine = hw + wave_id() * RADIX;
  const u32 units = (u32)(rows * tiles);  // the host checks rows * tiles < 2^31
  const S* xs = reinterpret_cast<const S*>(x);
  for (u32 u = blockIdx.x; u < units; u += gridDim.x) {
    const u32 row = u / tiles, t = u - row * tiles;
    const u64 first = (u64)t * tile;
    const u32 n = (u32)(cols - first < tile ? cols - first : tile);
    const S* xr = xs + (u64)row * cols + first;
    for (u32 i = threadIdx.x; i < nw * RADIX; i += RADIX) hw[i] = 0;
    __syncthreads();
    // counts do not depend on order: positions striped over the block, loads coalesced
    for (u32 p = threadIdx.x; p < n; p += RADIX) atomicAdd(&mine[digit_of(K::key((R)xr[p]) ^ flip, shift)], 1u);
    __syncthreads();
    u32 c = 0;
    for (u32 v = 0; v < nw; v++) c += hw[v * RADIX + threadIdx.x];
    hist[((u64)row * RADIX + threadIdx.x) * tiles + t] = c;
    __syncthreads();  // the next unit clears the counters
  }
}

RT_DEVICE void radix_scan_(u32* hist, u32* totals, u64 units, u32 tiles) {
  const u32 ws = (u32)warpSize, lane = lane_id();
  const u64 nwaves = grid_threads() / ws;
  for (u64 u = global_thread() / ws; u < units; u += nwaves) {
    u32* h = hist + u * tiles;
    u32 carry = 0;
    for (u32 b = 0; b < tiles; b += ws) {
      const u32 i = b + lane;
      const u32 v = i < tiles ? h[i] : 0u;
      const u32 inc = wave_scan(v);
      if (i < tiles) h[i] = carry + inc - v;
      carry += wave_shfl(inc, (int)ws - 1);
    }
    if (lane == 0) totals[u] = carry;
  }
}

template <int ITEMS, class T>
RT_DEVICE void radix_scatter(T* ko, u32* io, const T* ki, const u32* ii, const u32* hist, const u32* totals,
                             u64 rows, u64 cols, u32 tiles, u32 shift, u32 desc) {
  typedef RKey<T> K;
  typedef typename K::R R;
  typedef typename K::S S;
  const R flip = desc ? K::MASK : (R)0;
  const u32 tile = ITEMS * RADIX;
  const RadixLds<R> L(tile);
  // units in 32 bits (the host checks rows * tiles < 2^31): a 64-bit division is a long routine
  // that takes registers the item arrays need
  const u32 units = (u32)(rows * tiles);
  const S* ks = reinterpret_cast<const S*>(ki);
  S* kd = reinterpret_cast<S*>(ko);
  u32 calls = 0;
  for (u32 u = blockIdx.x; u < units; u += gridDim.x) {
    const u32 row = u / tiles, t = u - row * tiles;
    const u64 first = (u64)t * tile, at = (u64)row * cols + first;
    const u32 n = (u32)(cols - first < tile ? cols - first : tile), nr = opaque(n);
    R kv[ITEMS];
    u32 iv[ITEMS], dr[ITEMS];
#pragma unroll
    for (int it = 0; it < ITEMS; it++) {
      // the last tile of a row pads its end with digit 255: padding ranks last and is never
      // written (its loads clamped into the tile, harmless)
      const u32 p = tile_pos<ITEMS>(it), q = p < nr ? p : nr - 1;
      const u32 real = before(p, nr);
      kv[it] = (R)ks[at + q];
      iv[it] = ii ? ii[at + q] : (u32)(first + q);
      dr[it] = (digit_of(K::key(kv[it]) ^ flip, shift) & real) | ((RADIX - 1u) & ~real);
    }
    const u32 d0 = digit_of(K::key((R)ks[at]) ^ flip, shift);
    const bool uniform = tile_uniform(dr, d0, L.votes, calls);
    if (!uniform) rank_digits<ITEMS>(dr, L.rk);
    {
      // where each digit starts in the row (smaller digits of the whole row first), plus the
      // earlier tiles' records of the same digit
      const u32 d = threadIdx.x;
      u32 all;
      const u32 below = block_scan(totals[(u64)row * RADIX + d], L.rk.wtot, all);
      L.gbase[d] = below + hist[((u64)row * RADIX + d) * tiles + t];
    }
    if (uniform) {
      // one digit: the tile keeps its order and lands in one run
      __syncthreads();
      const u64 to = (u64)row * cols + L.gbase[d0];
#pragma unroll
      for (int it = 0; it < ITEMS; it++) {
        const u32 p = tile_pos<ITEMS>(it);
        if (p < n) {
          if (kd) kd[to + p] = (S)kv[it];
          io[to + p] = iv[it];
        }
      }
    } else {
#pragma unroll
      for (int it = 0; it < ITEMS; it++) {
        const u32 q = rank_place(dr[it], L.rk);
        L.key[q] = kv[it];
        L.idx[q] = iv[it];
      }
      __syncthreads();
      // in tile order: runs of one digit go to consecutive places of the row
      for (u32 e = threadIdx.x; e < n; e += RADIX) {
        const R k = L.key[e];
        const u32 d = digit_of(K::key(k) ^ flip, shift);
        const u64 dst = (u64)row * cols + L.gbase[d] + (e - L.rk.start[d]);
        if (kd) kd[dst] = (S)k;
        io[dst] = L.idx[e];
      }
    }
    __syncthreads();  // the next unit's counters and records overwrite the LDS read above
  }
}

// records a block of the long-row passes ranks: 4096 with 32-bit keys, 2048 with 64-bit keys
// (12-byte records: 4096 would pass 48 KiB of LDS)
template <class T> struct ScatterItems { static constexpr int N = sizeof(typename RKey<T>::R) == 8 ? 8 : 16; };

// MIN blocks a multiprocessor on NVIDIA (radix.h): radix_rows 3 for 32-bit keys, 2 for 64-bit
// keys and for 16-item tiles, radix_scatter 2 (fewer registers spill there). Checked with
// ptxas -v for sm_90: no spills.
#define SORT_ROWS(DT, T, I, MIN) \
  RT_RADIX_KERNEL(MIN) void radix_rows##I##_##DT(u32* iy, T* vy, const T* x, i64 iOff, i64 vOff, i64 xOff, \
      u64 rows, u64 cols, u32 desc) { \
    radix_rows<I>(iy + iOff, vy ? vy + vOff : vy, x + xOff, rows, cols, desc); }

#define SORT_DT(DT, T, MIN) \
  RT_KERNEL void sort_rows_##DT(u32* iy, T* vy, const T* x, i64 iOff, i64 vOff, i64 xOff, \
      u64 rows, u64 cols, u32 cap, u32 per, u32 desc) { \
    sort_rows(iy + iOff, vy ? vy + vOff : vy, x + xOff, rows, cols, cap, per, desc); } \
  SORT_ROWS(DT, T, 1, MIN) SORT_ROWS(DT, T, 2, MIN) SORT_ROWS(DT, T, 4, MIN) SORT_ROWS(DT, T, 8, MIN) \
  SORT_ROWS(DT, T, 16, 2) \
  RT_RADIX_KERNEL(1) void radix_hist_##DT(u32* hist, const T* x, i64 xOff, u64 rows, u64 cols, u32 tiles, \
      u32 items, u32 shift, u32 desc) { \
    radix_hist(hist, x + xOff, rows, cols, tiles, items, shift, desc); } \
  RT_RADIX_KERNEL(2) void radix_scatter_##DT(T* ko, u32* io, const T* ki, const u32* ii, const u32* hist, \
      const u32* totals, i64 koOff, i64 ioOff, i64 kiOff, i64 iiOff, u64 rows, u64 cols, u32 tiles, \
      u32 shift, u32 desc) { \
    radix_scatter<ScatterItems<T>::N>(ko ? ko + koOff : ko, io + ioOff, ki + kiOff, ii ? ii + iiOff : ii, \
        hist, totals, rows, cols, tiles, shift, desc); }

SORT_DT(f32, float, 3) SORT_DT(f64, double, 2) SORT_DT(f16, f16, 3) SORT_DT(bf16, bf16, 3)
SORT_DT(u8, u8, 3) SORT_DT(u32, u32, 3) SORT_DT(i64, i64, 2)

RT_KERNEL void radix_scan(u32* hist, u32* totals, u64 units, u32 tiles) { radix_scan_(hist, totals, units, tiles); }
