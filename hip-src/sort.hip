// sort.hip: argsort and sort along the last dim of contiguous rows, by a bitonic network over
// (key, index) records. Every dtype maps to an unsigned key whose unsigned order is the sort
// order (floats: NaN above +inf, -0 equal to +0; i64 signed); descending flips the key's bits.
// Records compare by key, then by index, so the network (not stable by itself) gives the
// stable order: ties keep index order, NaN last ascending and first descending.
//
// Keys are 32 bits for u8 u32 f16 bf16 f32 (f16/bf16 compared as f32), 64 bits for f64 i64.
// A record is one u64 word (key << 32 | index) for 32-bit keys; for 64-bit keys a u64 key
// array and a u32 index array. Padding records (key and index all ones) sort after every
// real record in both directions.
//
// Kernels (DT any dtype, T its storage type; K in k32 k64, the key width of DT):
//   sort_rows_<DT>(u32* iy, T* vy, const T* x, i64 iOff, i64 vOff, i64 xOff,
//                  u64 rows, u64 cols, u32 cap, u32 per, u32 desc)
//       rows of cols <= cap elements, sorted in shared memory: cap a power of 2, `per` rows a
//       pass of a block, dynamic shared memory per * cap * (8 for k32, 12 for k64) bytes.
//       iy[r*cols + p] = sorted positions; vy (may be 0) the values x[r*cols + iy[...]].
//   Longer rows: the host pads each row to npow = 2^m > cap records in a workspace
//   (w: u64 [rows*npow]; wi: u32 [rows*npow] for k64, unused (0) for k32), then
//   sort_chunks_<DT>(u64* w, u32* wi, const T* x, i64 xOff, u64 rows, u64 cols, u64 npow,
//                    u32 cap, u32 desc)
//       loads the records and runs the network's stages 2..cap chunk by chunk in shared memory
//       (cap * record bytes of dynamic shared memory);
//   for each stage k = 2cap, 4cap, ..., npow:
//     sort_merge_<K>(u64* w, u32* wi, u64 total, u64 npow, u64 k, u64 j)
//         one global compare-exchange step, for j = k/2, k/4, ..., cap (total = rows*npow);
//     sort_mergelds_<K>(u64* w, u32* wi, u64 total, u64 npow, u64 k, u32 cap)
//         the steps j = cap/2 ... 1 of stage k, chunk by chunk in shared memory;
//   sort_emit_<DT>(u32* iy, T* vy, const u64* w, const u32* wi, const T* x, i64 iOff,
//                  i64 vOff, i64 xOff, u64 rows, u64 cols, u64 npow)
//       writes the first cols records of each row as in sort_rows.
// All outputs and x are contiguous from their offsets; every kernel loops grid-stride.
#include "compat.h"

// ---- keys ---------------------------------------------------------------------------------
RT_DEVICE u32 key_f32(float f) {
  if (f != f) return 0xffffffffu;
  const u32 b = f == 0.0f ? 0u : f32_bits(f);  // -0 ties with +0, as the CPU compares
  return (b & 0x80000000u) ? ~b : (b | 0x80000000u);
}
RT_DEVICE u64 key_f64(double d) {
  if (d != d) return ~0ull;
  const u64 b = d == 0.0 ? 0ull : f64_bits(d);
  return (b >> 63) ? ~b : (b | 0x8000000000000000ull);
}

template <class T> struct Key;
template <> struct Key<float> { typedef u32 K; static RT_DEVICE K of(float x) { return key_f32(x); } };
template <> struct Key<f16> { typedef u32 K; static RT_DEVICE K of(f16 x) { return key_f32(f16_to_f32(x)); } };
template <> struct Key<bf16> { typedef u32 K; static RT_DEVICE K of(bf16 x) { return key_f32(bf16_to_f32(x)); } };
template <> struct Key<u8> { typedef u32 K; static RT_DEVICE K of(u8 x) { return x; } };
template <> struct Key<u32> { typedef u32 K; static RT_DEVICE K of(u32 x) { return x; } };
template <> struct Key<double> { typedef u64 K; static RT_DEVICE K of(double x) { return key_f64(x); } };
template <> struct Key<i64> { typedef u64 K; static RT_DEVICE K of(i64 x) { return (u64)x ^ 0x8000000000000000ull; } };

// ---- records ----------------------------------------------------------------------------
// The same accessors over global memory and over shared memory.
template <int KB> struct Recs;

template <> struct Recs<4> {
  u64* w;
  static constexpr u32 BYTES = 8;
  RT_DEVICE Recs(u64* w_, u32*) : w(w_) {}
  RT_DEVICE void put(u64 i, u64 key, u32 idx) const { w[i] = (key << 32) | idx; }
  RT_DEVICE void pad(u64 i) const { w[i] = ~0ull; }
  RT_DEVICE u32 index(u64 i) const { return (u32)w[i]; }
  RT_DEVICE void take(u64 i, const Recs& s, u64 j) const { w[i] = s.w[j]; }
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
  RT_DEVICE void take(u64 i, const Recs& s, u64 j) const { k[i] = s.k[j]; ix[i] = s.ix[j]; }
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
RT_DEVICE u32 log2_u64(u64 x) { return 63u - (u32)__clzll((long long)x); }

// One step (k, j) of the network over `2*half` shared records split into segments of `cap`;
// segment records sit at row positions base + (i mod cap), which set each pair's direction.
template <int KB>
RT_DEVICE void lds_step(const Recs<KB>& r, u32 half, u32 cap, u64 base, u64 k, u32 j) {
  for (u32 t = threadIdx.x; t < half; t += blockDim.x) {
    const u32 i = ((t & ~(j - 1u)) << 1) | (t & (j - 1u));
    r.cmpx(i, i + j, ((base + (i & (cap - 1u))) & k) == 0);
  }
  __syncthreads();
}

// Stages 2..cap: every segment of cap records ends sorted in the direction its position gives.
template <int KB>
RT_DEVICE void lds_sort(const Recs<KB>& r, u32 n, u32 cap, u64 base) {
  for (u32 k = 2; k <= cap; k <<= 1)
    for (u32 j = k >> 1; j > 0; j >>= 1) lds_step(r, n / 2, cap, base, k, j);
}

// ---- short rows: one pass sorts `per` rows in shared memory ------------------------------
template <class T>
RT_DEVICE void sort_rows(u32* iy, T* vy, const T* x, u64 rows, u64 cols, u32 cap, u32 per, u32 desc) {
  typedef Key<T> KT;
  constexpr int KB = (int)sizeof(typename KT::K);
  const typename KT::K flip = desc ? (typename KT::K)~(typename KT::K)0 : (typename KT::K)0;
  const u32 n = per * cap, lg = log2_u32(cap);
  const Recs<KB> r = lds_recs<KB>(n);
  for (u64 r0 = (u64)blockIdx.x * per; r0 < rows; r0 += (u64)gridDim.x * per) {
    for (u32 e = threadIdx.x; e < n; e += blockDim.x) {
      const u64 row = r0 + (e >> lg);
      const u32 p = e & (cap - 1u);
      if (row < rows && p < cols) r.put(e, (u64)(KT::of(x[row * cols + p]) ^ flip), p);
      else r.pad(e);
    }
    __syncthreads();
    lds_sort(r, n, cap, 0);
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

// ---- long rows: chunks sorted in shared memory, merged in global memory ------------------
template <class T>
RT_DEVICE void sort_chunks(u64* w, u32* wi, const T* x, u64 rows, u64 cols, u64 npow, u32 cap, u32 desc) {
  typedef Key<T> KT;
  constexpr int KB = (int)sizeof(typename KT::K);
  const typename KT::K flip = desc ? (typename KT::K)~(typename KT::K)0 : (typename KT::K)0;
  const Recs<KB> g(w, wi), r = lds_recs<KB>(cap);
  const u64 chunks = npow / cap, segs = rows * chunks;
  const u32 lc = log2_u64(chunks);
  for (u64 s = blockIdx.x; s < segs; s += gridDim.x) {
    const u64 row = s >> lc, base = (s & (chunks - 1)) * cap;
    for (u32 e = threadIdx.x; e < cap; e += blockDim.x) {
      const u64 p = base + e;
      if (p < cols) r.put(e, (u64)(KT::of(x[row * cols + p]) ^ flip), (u32)p);
      else r.pad(e);
    }
    __syncthreads();
    lds_sort(r, cap, cap, base);
    for (u32 e = threadIdx.x; e < cap; e += blockDim.x) g.take(s * cap + e, r, e);
    __syncthreads();
  }
}

template <int KB>
RT_DEVICE void sort_merge(u64* w, u32* wi, u64 total, u64 npow, u64 k, u64 j) {
  const Recs<KB> g(w, wi);
  grid_loop64(total / 2, [&](u64 t) {
    const u64 i = ((t & ~(j - 1)) << 1) | (t & (j - 1));
    g.cmpx(i, i + j, ((i & (npow - 1)) & k) == 0);
  });
}

template <int KB>
RT_DEVICE void sort_mergelds(u64* w, u32* wi, u64 total, u64 npow, u64 k, u32 cap) {
  const Recs<KB> g(w, wi), r = lds_recs<KB>(cap);
  for (u64 s = blockIdx.x; s < total / cap; s += gridDim.x) {
    const u64 at = s * cap;
    for (u32 e = threadIdx.x; e < cap; e += blockDim.x) r.take(e, g, at + e);
    __syncthreads();
    for (u32 j = cap >> 1; j > 0; j >>= 1) lds_step(r, cap / 2, cap, at & (npow - 1), k, j);
    for (u32 e = threadIdx.x; e < cap; e += blockDim.x) g.take(at + e, r, e);
    __syncthreads();
  }
}

template <class T>
RT_DEVICE void sort_emit(u32* iy, T* vy, u64* w, u32* wi, const T* x, u64 rows, u64 cols, u64 npow) {
  constexpr int KB = (int)sizeof(typename Key<T>::K);
  const Recs<KB> g(w, wi);
  grid_loop64(rows * cols, [&](u64 e) {
    const u64 row = e / cols, p = e - row * cols;
    const u32 src = g.index(row * npow + p);
    iy[e] = src;
    if (vy) vy[e] = x[row * cols + src];
  });
}

#define SORT_DT(DT, T) \
  RT_KERNEL void sort_rows_##DT(u32* iy, T* vy, const T* x, i64 iOff, i64 vOff, i64 xOff, \
      u64 rows, u64 cols, u32 cap, u32 per, u32 desc) { \
    sort_rows(iy + iOff, vy ? vy + vOff : vy, x + xOff, rows, cols, cap, per, desc); } \
  RT_KERNEL void sort_chunks_##DT(u64* w, u32* wi, const T* x, i64 xOff, u64 rows, u64 cols, \
      u64 npow, u32 cap, u32 desc) { \
    sort_chunks(w, wi, x + xOff, rows, cols, npow, cap, desc); } \
  RT_KERNEL void sort_emit_##DT(u32* iy, T* vy, const u64* w, const u32* wi, const T* x, \
      i64 iOff, i64 vOff, i64 xOff, u64 rows, u64 cols, u64 npow) { \
    sort_emit(iy + iOff, vy ? vy + vOff : vy, const_cast<u64*>(w), const_cast<u32*>(wi), x + xOff, rows, cols, npow); }

SORT_DT(f32, float) SORT_DT(f64, double) SORT_DT(f16, f16) SORT_DT(bf16, bf16)
SORT_DT(u8, u8) SORT_DT(u32, u32) SORT_DT(i64, i64)

#define SORT_K(K, KB) \
  RT_KERNEL void sort_merge_##K(u64* w, u32* wi, u64 total, u64 npow, u64 k, u64 j) { \
    sort_merge<KB>(w, wi, total, npow, k, j); } \
  RT_KERNEL void sort_mergelds_##K(u64* w, u32* wi, u64 total, u64 npow, u64 k, u32 cap) { \
    sort_mergelds<KB>(w, wi, total, npow, k, cap); }

SORT_K(k32, 4) SORT_K(k64, 8)
