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
//   Longer rows: tiles of 256 * ITEMS elements (4096, 2048 for 64-bit keys: ScatterItems),
//   `tiles` a row, values and indices ping-ponging through workspaces between passes, and a
//   workspace `ws` of counts and look-back status that the host zeroes first (SweepWs):
//   radix_counts_<DT>(u32* ws, const T* x, i64 xOff, u64 rows, u64 cols, u32 tiles, u32 items,
//                     u32 passes, u32 desc)
//       every pass's digit counts of each row, in one read (tiles of 256 * items); dynamic LDS
//       radixCountsLdsBytes.
//   radix_sweep_<DT>(T* ko, u32* io, const T* ki, const u32* ii, u32* ws, i64 koOff, i64 ioOff,
//                    i64 kiOff, i64 iiOff, u64 rows, u64 cols, u32 tiles, u32 pass,
//                    u32 passes, u32 desc)
//       one pass (shift = 8 * pass): ranks a tile by digit, finds where its digits start in the
//       row by a decoupled look-back over the row's earlier tiles, and writes each record to
//       its place. ii = 0 on the first pass (index = position); ko = 0 on an argsort's last
//       pass. Dynamic LDS radixLdsBytes(tile). One launch a pass where hist, scan and scatter
//       kernels took three: a row of 128256 is latency-bound, 12 launches of 32 blocks for f32.
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
// The dynamic LDS of radix_rows and radix_sweep: rank_digits' lane masks (cleared here, left
// clear by every rank), the global base of each digit (radix_sweep; its [0] first carries the
// tile a block took), block_scan's wave totals, tile_uniform's votes, rank_digits' counters,
// then `cap` records (raw bits or keys, and index).
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

// ---- radix: long rows, a kernel a pass with a decoupled look-back ----------------------------
// Workspace (the host zeroes it before radix_counts): hist [rows][passes][RADIX] u32, the row's
// count of each digit of each pass; next [passes] u32 (padded to an even count), the tiles each
// pass's blocks have taken; status [rows * tiles][RADIX] u64, what a tile has published for a
// digit in the current pass: the pass and a flag in the high word (zero: nothing yet), a count in
// the low word.
#define SWEEP_AGG 1u   // the tile's own count of the digit
#define SWEEP_INCL 2u  // the count of the digit in the row's tiles up to and including it

struct SweepWs {
  u32* hist;
  u32* next;
  u64* status;
  RT_DEVICE SweepWs(u32* ws, u64 rows, u32 passes) {
    hist = ws;
    next = ws + rows * passes * RADIX;
    status = reinterpret_cast<u64*>(next + ((passes + 1u) & ~1u));
  }
};

// Every digit pass's counts of a row at once: one read of the data. Counters [passes][RADIX] in
// LDS (radixCountsLdsBytes), then one global atomic a nonzero counter.
template <class T>
RT_DEVICE void radix_counts(u32* ws, const T* x, u64 rows, u64 cols, u32 tiles, u32 items, u32 passes, u32 desc) {
  typedef RKey<T> K;
  typedef typename K::R R;
  typedef typename K::S S;
  const R flip = desc ? K::MASK : (R)0;
  const u32 tile = items * RADIX, units = (u32)(rows * tiles);  // the host checks rows * tiles < 2^31
  const SweepWs W(ws, rows, passes);
  u32* cnt = reinterpret_cast<u32*>(sort_lds);
  const S* xs = reinterpret_cast<const S*>(x);
  for (u32 u = blockIdx.x; u < units; u += gridDim.x) {
    const u32 row = u / tiles, t = u - row * tiles;
    const u64 first = (u64)t * tile;
    const u32 n = (u32)(cols - first < tile ? cols - first : tile);
    const S* xr = xs + (u64)row * cols + first;
    for (u32 i = threadIdx.x; i < passes * RADIX; i += RADIX) cnt[i] = 0;
    __syncthreads();
    // positions striped over the block: loads coalesced, counts independent of order
    for (u32 p = threadIdx.x; p < n; p += RADIX) {
      const R key = K::key((R)xr[p]) ^ flip;
      for (u32 q = 0; q < passes; q++) atomicAdd(&cnt[q * RADIX + digit_of(key, q * RADIX_BITS)], 1u);
    }
    __syncthreads();
    for (u32 i = threadIdx.x; i < passes * RADIX; i += RADIX) {
      if (cnt[i]) atomicAdd(&W.hist[(u64)row * passes * RADIX + i], cnt[i]);
    }
    __syncthreads();  // the next unit clears the counters
  }
}

// a status word, read where every block's atomics land (a plain load could be served from a
// multiprocessor's stale cache line while the flag is being waited for)
RT_DEVICE u64 sweep_read(u64* p) { return atomicAdd(reinterpret_cast<unsigned long long*>(p), 0ull); }
RT_DEVICE void sweep_publish(u64* p, u32 pass, u32 flag, u32 count) {
  atomicExch(reinterpret_cast<unsigned long long*>(p), ((u64)(pass << 2 | flag) << 32) | count);
}

// One digit pass (shift = 8 * pass) over tiles of ITEMS * RADIX records. Blocks take tiles in
// the order of an atomic counter (row-major), so a tile's earlier tiles in its row belong to
// blocks that are already running: waiting on them cannot deadlock, however few blocks are
// resident. A block ranks its tile by digit (rank_digits; a tile of one digit keeps its order),
// publishes its count of each digit, then thread d walks back over the row's earlier tiles,
// adding their counts until one has published its inclusive count, and publishes its own. A
// record lands at: the row's count of smaller digits (the counts of radix_counts), plus the
// digit's count in earlier tiles, plus its rank in the tile. A pass whose digit is one value
// across the whole row moves nothing: each tile is copied in place, with no look-back.
// ki/ii: this pass's input (ii = 0 on the first pass: index = position); ko = 0 on an
// argsort's last pass.
template <int ITEMS, class T>
RT_DEVICE void radix_sweep(T* ko, u32* io, const T* ki, const u32* ii, u32* ws, u64 rows, u64 cols, u32 tiles, u32 pass,
                           u32 passes, u32 desc) {
  typedef RKey<T> K;
  typedef typename K::R R;
  typedef typename K::S S;
  const R flip = desc ? K::MASK : (R)0;
  const u32 tile = ITEMS * RADIX, shift = pass * RADIX_BITS;
  const RadixLds<R> L(tile);
  const SweepWs W(ws, rows, passes);
  // units in 32 bits (the host checks rows * tiles < 2^31): a 64-bit division is a long routine
  // that takes registers the item arrays need
  const u32 units = (u32)(rows * tiles);
  const S* ks = reinterpret_cast<const S*>(ki);
  S* kd = reinterpret_cast<S*>(ko);
  u32 calls = 0;
  for (;;) {
    if (threadIdx.x == 0) L.gbase[0] = atomicAdd(&W.next[pass], 1u);
    __syncthreads();
    const u32 u = L.gbase[0];
    if (u >= units) break;
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
    const u32* hr = W.hist + ((u64)row * passes + pass) * RADIX;
    // the row's digit at position 0, and whether it is the row's only digit this pass (the same
    // answer in every block of the row)
    const u32 dfirst = digit_of(K::key((R)ks[(u64)row * cols]) ^ flip, shift);
    const bool row_one = (u64)hr[dfirst] == cols;
    // a row of one digit: each tile stays where it is (no look-back: the same in every tile)
    const bool uniform = row_one || tile_uniform(dr, digit_of(K::key((R)ks[at]) ^ flip, shift), L.votes, calls);
    const u32 d0 = dr[0] & (RADIX - 1u);  // (a uniform tile's one digit: position 0 is real)
    if (!uniform) rank_digits<ITEMS>(dr, L.rk);
    if (!row_one) {
      // thread d: the tile's count of digit d, published; the earlier tiles' count, looked back
      const u32 d = threadIdx.x;
      u32 mine;
      if (uniform) mine = d == d0 ? n : 0u;
      else {
        const u32 end = d == RADIX - 1u ? n : L.rk.start[d + 1];
        // padding (digit 255, past n) is not the tile's
        mine = (end < n ? end : n) - (L.rk.start[d] < n ? L.rk.start[d] : n);
      }
      u64* st = W.status + (u64)u * RADIX + d;
      u32 before_tiles = 0;
      if (t == 0) {
        sweep_publish(st, pass, SWEEP_INCL, mine);
      } else {
        sweep_publish(st, pass, SWEEP_AGG, mine);
        for (u64* q = st - RADIX;; q -= RADIX) {
          u64 w;
          do { w = sweep_read(q); } while ((u32)(w >> 34) != pass || ((u32)(w >> 32) & 3u) == 0);
          before_tiles += (u32)w;
          if ((((u32)(w >> 32)) & 3u) == SWEEP_INCL) break;
        }
        sweep_publish(st, pass, SWEEP_INCL, before_tiles + mine);
      }
      u32 all;
      const u32 below = block_scan(hr[d], L.rk.wtot, all);
      L.gbase[d] = below + before_tiles;
    }
    if (uniform) {
      // one digit: the tile keeps its order and lands in one run (where it is, for a row of one
      // digit)
      __syncthreads();
      const u64 to = row_one ? at : (u64)row * cols + L.gbase[d0];
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
    __syncthreads();  // the next tile's counters, records and bases overwrite the LDS read above
  }
}

// records a block of the long-row passes ranks: 4096 with 32-bit keys, 2048 with 64-bit keys
// (12-byte records: 4096 would pass 48 KiB of LDS)
template <class T> struct ScatterItems { static constexpr int N = sizeof(typename RKey<T>::R) == 8 ? 8 : 16; };

// MIN blocks a multiprocessor on NVIDIA (radix.h): radix_rows 3 for 32-bit keys, 2 for 64-bit
// keys and for 16-item tiles, radix_sweep 2 (fewer registers spill there).
#define SORT_ROWS(DT, T, I, MIN) \
  RT_RADIX_KERNEL(MIN) void radix_rows##I##_##DT(u32* iy, T* vy, const T* x, i64 iOff, i64 vOff, i64 xOff, \
      u64 rows, u64 cols, u32 desc) { RT_GRID_DEP(); \
    radix_rows<I>(iy + iOff, vy ? vy + vOff : vy, x + xOff, rows, cols, desc); }

#define SORT_DT(DT, T, MIN) \
  RT_KERNEL void sort_rows_##DT(u32* iy, T* vy, const T* x, i64 iOff, i64 vOff, i64 xOff, \
      u64 rows, u64 cols, u32 cap, u32 per, u32 desc) { RT_GRID_DEP(); \
    sort_rows(iy + iOff, vy ? vy + vOff : vy, x + xOff, rows, cols, cap, per, desc); } \
  SORT_ROWS(DT, T, 1, MIN) SORT_ROWS(DT, T, 2, MIN) SORT_ROWS(DT, T, 4, MIN) SORT_ROWS(DT, T, 8, MIN) \
  SORT_ROWS(DT, T, 16, 2) \
  RT_RADIX_KERNEL(1) void radix_counts_##DT(u32* ws, const T* x, i64 xOff, u64 rows, u64 cols, u32 tiles, u32 items, \
      u32 passes, u32 desc) { RT_GRID_DEP(); \
    radix_counts(ws, x + xOff, rows, cols, tiles, items, passes, desc); } \
  RT_RADIX_KERNEL(2) void radix_sweep_##DT(T* ko, u32* io, const T* ki, const u32* ii, u32* ws, i64 koOff, i64 ioOff, \
      i64 kiOff, i64 iiOff, u64 rows, u64 cols, u32 tiles, u32 pass, u32 passes, u32 desc) { RT_GRID_DEP(); \
    radix_sweep<ScatterItems<T>::N>(ko ? ko + koOff : ko, io + ioOff, ki + kiOff, ii ? ii + iiOff : ii, ws, rows, cols, tiles, \
        pass, passes, desc); }

SORT_DT(f32, float, 3) SORT_DT(f64, double, 2) SORT_DT(f16, f16, 3) SORT_DT(bf16, bf16, 3)
SORT_DT(u8, u8, 3) SORT_DT(u32, u32, 3) SORT_DT(i64, i64, 2)

