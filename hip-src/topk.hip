// topk.hip: the k largest (or smallest) elements of each row of contiguous rows, with their
// indices, in order: values descending (ascending), ties by index, NaN as the largest value.
//
// Every element gets the key of radix.h, flipped for `largest`, so both directions ask for the
// k smallest (key, index) pairs: a strict total order, whose first k are exactly the first k of
// the stable sort. A block takes a slice of a row (any length) and streams it in rounds of
// ITEMS * 256 elements (4096; 2048 of 64-bit ones), each thread ITEMS consecutive ones in
// registers (16-byte loads where the slice is aligned), each element read once. It keeps, in
// LDS, the best kk = min(k, slice length) found so far and appends the elements that may still
// belong among them; `thr` is a key that at least kk earlier elements reach, and only a key
// below it can still matter (an equal key comes later, so its index is larger).
//   - The first round is bounded before anything is appended: the kk-th best of the threads'
//     own best keys is a key at least kk elements reach (those threads' bests), so only
//     elements at or below it can be among the round's best kk. On ordinary data that leaves
//     about kk of the 4096, and finding it is a select of one key a thread, where a select over
//     the round would take an LDS atomic an element, most of them on the few digits that hold
//     most values (the top digits of floats' exponents).
//   - A round's candidates (below thr, and in the first round within that bound) are appended
//     in position order. Where they overflow the append area, the ones that fit go in, a select
//     keeps the best kk and tightens thr, and the rest are filtered again and appended.
//   - The select (at the end, and when the area is full) is a radix select over the LDS records,
//     most significant 8-bit digit first, stopping once the chosen digit's records are exactly
//     the ones still needed; it keeps the records below the chosen prefix and the first of those
//     equal to it, in position order, and thr becomes the prefix with the bits below it all ones.
// Positions stay in order throughout (kept, then appended; threads in order, each thread's items
// in order), so among equal keys position order is index order, which the select relies on.
// The kk kept are ranked by counting (kk^2 comparisons: kk <= TOPK_MAX) and written in order.
// Long rows are split over several blocks (src/ops/gpu/topk.ts), each slice's kk best written as
// a row of candidates (values and original indices, slices in order, so among equal values
// position order is still index order); one block a row then selects from those, the same
// kernel with the candidates' indices. A slice's best k contain every element of the row's best
// k that lies in it, so the last level's k are the row's.
//
// Kernels (DT any dtype, T its storage type; blocks of 256 threads):
//   topk_<DT>(T* vo, u32* io, const T* x, const u32* ii, i64 voOff, i64 ioOff, i64 xOff,
//             i64 iiOff, u64 rows, u64 cols, u64 ld, u64 slen, u64 ostride, u32 k, u32 largest)
//       x [rows, cols] with row stride ld (indices ii alike, or 0: the positions); slices of
//       slen elements (a multiple of 16, so an aligned row keeps its slices aligned); slice s of
//       row r writes its kk in order to vo/io [r * ostride + s * k, + kk). Dynamic LDS
//       topkLdsBytes (src/ops/gpu/radix.ts).
#include "radix.h"

#define TOPK_MAX 256
// records of the append area: a round whose candidates do not fit goes through a select
#define TOPK_CAP 2048

extern __shared__ u64 topk_lds[];

// items a thread a round: 16 (a round of 4096), 8 for 64-bit elements. ptxas -v, sm_90, capped
// at 64 registers (4 blocks a multiprocessor): 32 items spill up to 136 bytes a thread, 16 none
// (bf16 and f16: 8 bytes).
template <class T> struct TopkItems { static constexpr int N = sizeof(typename RKey<T>::R) == 8 ? 8 : 16; };

// v, hidden from the compiler (an empty asm): the items' keys are computed from their words
// where they are used, not once and held through the select (a register each)
RT_DEVICE u32 fresh(u32 v) {
#if defined(__HIP_DEVICE_COMPILE__)
  asm volatile("" : "+v"(v));
#elif defined(__CUDA_ARCH__)
  asm volatile("" : "+r"(v));
#endif
  return v;
}

// LDS: two sets of the waves' digit counters (used in turn: radix_find), wave totals (block_scan2
// and, in two sets used in turn, block_scan1), the select's state, then the records (raw bits,
// index): two kept sets of TOPK_MAX used in turn, and the append area. Word counts keep the
// raw-bit arrays 8-byte aligned.
template <class R> struct TopkLds {
  u32* hw;     // 2 * waves * RADIX, zero between radix_find calls
  u32* wtot;   // 2 * RADIX_WAVES_MAX (block_scan2)
  u32* wtot1;  // 2 * RADIX_WAVES_MAX (block_scan1)
  u32* state;  // [0] chosen digit, [1] still needed, [2] done
  R* kkey;     // kept set c at kkey + c * TOPK_MAX (no array of pointers: indexed by a variable,
  u32* kidx;   // it would live in scratch memory)
  R* akey;
  u32* aidx;
  // ends with a barrier: the counters are clear
  RT_DEVICE TopkLds() {
    u32* p = reinterpret_cast<u32*>(topk_lds);
    hw = p; p += 2 * waves() * RADIX;
    wtot = p; p += 2 * RADIX_WAVES_MAX;
    wtot1 = p; p += 2 * RADIX_WAVES_MAX;
    state = p; p += 8;
    kkey = reinterpret_cast<R*>(p);
    akey = kkey + 2 * TOPK_MAX;
    kidx = reinterpret_cast<u32*>(akey + TOPK_CAP);
    aidx = kidx + 2 * TOPK_MAX;
    for (u32 i = threadIdx.x; i < 2 * waves() * RADIX; i += RADIX) hw[i] = 0;
    __syncthreads();
  }
  RT_DEVICE R* keys(u32 c) const { return kkey + c * TOPK_MAX; }
  RT_DEVICE u32* idxs(u32 c) const { return kidx + c * TOPK_MAX; }
};

// ITEMS consecutive elements of a row in 32-bit words (memory order, little-endian on both
// vendors): f16/bf16 and u8 elements take a half and a quarter of the registers of their keys.
template <class S, int ITEMS> struct Chunk {
  static constexpr int WORDS = ITEMS * (int)sizeof(S) / 4;
  u32 w[WORDS];
  // nv elements from p (the rest zero, never used); one 16-byte load per 16 bytes where the
  // thread's elements are all there and p is aligned
  RT_DEVICE void load(const S* p, u32 nv, bool vec) {
    if (vec && nv == (u32)ITEMS) {
      const uint4* q = reinterpret_cast<const uint4*>(p);
#pragma unroll
      for (int v = 0; v < WORDS / 4; v++) {
        const uint4 x = q[v];
        w[4 * v] = x.x; w[4 * v + 1] = x.y; w[4 * v + 2] = x.z; w[4 * v + 3] = x.w;
      }
    } else {
#pragma unroll
      for (int i = 0; i < WORDS; i++) w[i] = 0;
#pragma unroll
      for (int j = 0; j < ITEMS; j++) {
        if ((u32)j < nv) put(j, p[j]);
      }
    }
  }
  RT_DEVICE void put(int j, S v) {
    if constexpr (sizeof(S) == 8) {
      w[2 * j] = (u32)v;
      w[2 * j + 1] = (u32)(v >> 32);
    } else if constexpr (sizeof(S) == 4) {
      w[j] = (u32)v;
    } else {
      constexpr int per = 4 / (int)sizeof(S);
      w[j / per] |= (u32)v << (8 * (int)sizeof(S) * (j % per));
    }
  }
  // the raw bits of element j (j a constant after unrolling)
  template <class R> RT_DEVICE R raw(int j) const {
    if constexpr (sizeof(S) == 8) {
      return (R)fresh(w[2 * j]) | ((R)fresh(w[2 * j + 1]) << 32);
    } else if constexpr (sizeof(S) == 4) {
      return (R)fresh(w[j]);
    } else {
      constexpr int per = 4 / (int)sizeof(S);
      constexpr u32 m = sizeof(S) == 2 ? 0xffffu : 0xffu;
      return (R)((fresh(w[j / per]) >> (8 * (int)sizeof(S) * (j % per))) & m);
    }
  }
};

// Exclusive prefix sums of two values a thread, in thread order, and their block totals; wt:
// 2 * RADIX_WAVES_MAX words. Every thread must call it; it ends with a barrier.
RT_DEVICE void block_scan2(u32 a, u32 b, u32* wt, u32& ea, u32& eb, u32& ta, u32& tb) {
  const u32 ia = wave_scan(a), ib = wave_scan(b), w = wave_id();
  if (lane_id() == (u32)warpSize - 1u) {
    wt[w] = ia;
    wt[RADIX_WAVES_MAX + w] = ib;
  }
  __syncthreads();
  u32 ba = 0, bb = 0, sa = 0, sb = 0;
  for (u32 i = 0; i < waves(); i++) {
    const u32 x = wt[i], y = wt[RADIX_WAVES_MAX + i];
    ba += i < w ? x : 0u;
    bb += i < w ? y : 0u;
    sa += x;
    sb += y;
  }
  ta = sa;
  tb = sb;
  ea = ba + ia - a;
  eb = bb + ib - b;
  __syncthreads();
}

// Exclusive prefix sum of one value a thread, in thread order, and its block total, with one
// barrier: the wave totals go to set `turn` of two (wt: 2 * RADIX_WAVES_MAX words), which the
// caller alternates, so a set is written again only past a barrier that every thread reaches
// after its reads of it.
RT_DEVICE u32 block_scan1(u32 v, u32* wt, u32& turn, u32& all) {
  u32* set = wt + (turn++ & 1u) * RADIX_WAVES_MAX;
  const u32 inc = wave_scan(v), w = wave_id();
  if (lane_id() == (u32)warpSize - 1u) set[w] = inc;
  __syncthreads();
  u32 before = 0, sum = 0;
  for (u32 i = 0; i < waves(); i++) {
    const u32 t = set[i];
    before += i < w ? t : 0u;
    sum += t;
  }
  all = sum;
  return before + inc - v;
}

// The `want`-th smallest (1-based) of the keys that `each(visit)` hands to visit(key) on every
// thread, as chosen digits: pre (msk: their bits) and rem, how many of the keys equal to pre on
// msk are still wanted; it stops once the chosen digit's keys are exactly the wanted ones (then
// rem is all of them). want is at least 1 and at most the keys' count. Every thread must call it.
template <class K, class F>
RT_DEVICE void radix_find(const TopkLds<typename K::R>& L, u32 want, F each, typename K::R& pre, typename K::R& msk, u32& rem) {
  typedef typename K::R R;
  // Two barriers a digit: the counters of pass p are set p & 1, and the other set (last read
  // before the previous pass's second barrier) is cleared while this one counts; one wave
  // chooses the digit between the barriers. Both sets are clear on entry and on return (the
  // caller's next barrier orders the last clearing before the next call's counts).
  const u32 nw = waves(), ws = (u32)warpSize, lane = lane_id();
  pre = 0;
  msk = 0;
  rem = want;
  u32 set = 0;
  for (int shift = K::BITS - RADIX_BITS; shift >= 0; shift -= RADIX_BITS) {
    u32* cur = L.hw + set * nw * RADIX;
    u32* other = L.hw + (set ^ 1u) * nw * RADIX;
    for (u32 i = threadIdx.x; i < nw * RADIX; i += RADIX) other[i] = 0;
    u32* mine = cur + wave_id() * RADIX;
    const R p = pre, m = msk;
    each([&](R key) {
      if ((key & m) == p) atomicAdd(&mine[digit_of(key, (u32)shift)], 1u);
    });
    __syncthreads();
    if (wave_id() == 0) {
      // lane l: digits [l * per, (l + 1) * per); the lane whose run holds the rem-th finds it.
      // The sum starts at a digit skewed by the lane's group of 32 / per lanes, so the lanes of
      // a 32-bank LDS read 32 different banks at each step (8 lanes a bank without the skew)
      const u32 per = RADIX / ws, d0 = lane * per, sk = (lane * per) >> 5;
      u32 tot = 0;
      for (u32 i = 0; i < per; i++) {
        const u32 d = d0 + ((i + sk) & (per - 1u));
        for (u32 v = 0; v < nw; v++) tot += cur[v * RADIX + d];
      }
      u32 run = wave_scan(tot) - tot;
      if (run < rem && rem <= run + tot) {
        for (u32 i = 0; i < per; i++) {
          u32 c = 0;
          for (u32 v = 0; v < nw; v++) c += cur[v * RADIX + d0 + i];
          if (run < rem && rem <= run + c) {
            L.state[0] = d0 + i;
            L.state[1] = rem - run;
            L.state[2] = c == rem - run;
          }
          run += c;
        }
      }
    }
    __syncthreads();
    pre |= (R)L.state[0] << shift;
    msk |= (R)(RADIX - 1u) << shift;
    rem = L.state[1];
    if (L.state[2] != 0 || shift == 0) break;
    set ^= 1u;
  }
  // the last pass's set: read by the choosing wave before the last barrier
  u32* last = L.hw + set * nw * RADIX;
  for (u32 i = threadIdx.x; i < nw * RADIX; i += RADIX) last[i] = 0;
}

// What a block knows of its slice so far (the same on every thread): kc records kept in set
// `cur`, ca appended after them, and once `bounded`, the key thr that at least kk of them reach.
template <class R> struct TopkState {
  u32 kc, ca, cur;
  bool bounded;
  R thr;
  RT_DEVICE void bound(R t) {
    thr = bounded && thr < t ? thr : t;
    bounded = true;
  }
};

// Keeps the best min(kk, all) of the kept set and the appended records, in position order, in
// the other kept set. Records only, none of the registers' items: a select whose digit passes
// tested each item's candidate bit would hold those bits across its loop (on 64-lane waves a
// pair of scalar registers each, radix.h: opaque). Every thread must call it.
template <class K>
RT_DEVICE void topk_keep(const TopkLds<typename K::R>& L, TopkState<typename K::R>& st, u32 kk, typename K::R flip) {
  typedef typename K::R R;
  __syncthreads();  // the appended records are all written
  const u32 V = st.kc + st.ca, want = kk < V ? kk : V, kc = st.kc;
  const R* k0 = L.keys(st.cur);
  const u32* i0 = L.idxs(st.cur);
  // the records in blocks of consecutive ones a thread, so thread order is position order
  const u32 per = (V + RADIX - 1u) / RADIX, v0 = threadIdx.x * per < V ? threadIdx.x * per : V, v1 = v0 + per < V ? v0 + per : V;
  auto rec = [&](u32 v) -> R { return v < kc ? k0[v] : L.akey[v - kc]; };
  R pre = 0, msk = 0;
  u32 rem = want;
  if (want < V) {
    radix_find<K>(L, want, [&](auto visit) {
      for (u32 v = v0; v < v1; v++) visit(K::key(rec(v)) ^ flip);
    }, pre, msk, rem);
  }
  // taken: below pre, or equal to it and among the first rem equal ones in position order
  u32 lt = 0, eq = 0;
  for (u32 v = v0; v < v1; v++) {
    const R km = (K::key(rec(v)) ^ flip) & msk;
    lt += km < pre ? 1u : 0u;
    eq += km == pre ? 1u : 0u;
  }
  u32 l, e, lts, eqs;
  block_scan2(lt, eq, L.wtot, l, e, lts, eqs);
  R* ok = L.keys(st.cur ^ 1u);
  u32* oi = L.idxs(st.cur ^ 1u);
  // a taken record's place: the taken records before it (those below pre, and of the equal ones
  // the first rem)
  for (u32 v = v0; v < v1; v++) {
    const R r = rec(v), km = (K::key(r) ^ flip) & msk;
    const bool below = km < pre;
    if (below || (km == pre && e < rem)) {
      const u32 q = l + (e < rem ? e : rem);
      ok[q] = r;
      oi[q] = v < kc ? i0[v] : L.aidx[v - kc];
    }
    l += below ? 1u : 0u;
    e += km == pre ? 1u : 0u;
  }
  __syncthreads();
  st.cur ^= 1u;
  st.kc = want;
  st.ca = 0;
  // kk records now reach pre on msk: every key at or below pre | (the bits below msk)
  if (want == kk) st.bound(pre | (K::MASK & ~msk));
}

template <class T>
RT_DEVICE void topk_rows(T* vo, u32* io, const T* x, const u32* ii, u64 rows, u64 cols, u64 ld, u64 slen, u64 ostride, u32 k,
                         u32 largest) {
  typedef RKey<T> K;
  typedef typename K::R R;
  typedef typename K::S S;
  constexpr int ITEMS = TopkItems<T>::N;
  constexpr u32 ROUND = (u32)ITEMS * RADIX;
  const R flip = largest ? K::MASK : (R)0;
  // units in 32 bits (the host checks rows * slices < 2^31): a 64-bit division is a long
  // routine that takes registers the items need
  const u32 slices = (u32)((cols + slen - 1) / slen), units = (u32)(rows * slices);
  const TopkLds<R> L;
  const S* xs = reinterpret_cast<const S*>(x);
  S* vs = reinterpret_cast<S*>(vo);
  const u32 t = threadIdx.x;
  u32 turn = 0;  // block_scan1's set
  for (u32 u = blockIdx.x; u < units; u += gridDim.x) {
    const u32 row = u / slices, s = u - row * slices;
    const u64 first = (u64)s * slen;
    const u32 n = (u32)(cols - first < slen ? cols - first : slen), kk = k < n ? k : n;
    const S* xr = xs + row * ld + first;
    const u32* ir = ii ? ii + row * ld + first : ii;
    const bool vec = aligned16(xr);
    TopkState<R> st{0u, 0u, 0u, false, (R)0};
    Chunk<S, ITEMS> c;
    for (u32 r0 = 0; r0 < n; r0 += ROUND) {
      const u32 nr = n - r0 < ROUND ? n - r0 : ROUND, p0 = r0 + t * (u32)ITEMS;
      const u32 nv = nr > t * (u32)ITEMS ? (nr - t * (u32)ITEMS < (u32)ITEMS ? nr - t * (u32)ITEMS : (u32)ITEMS) : 0u;
      c.load(xr + (nv ? p0 : 0u), nv, vec);
      // the first round's bound: the kk-th best of the threads' best keys (when kk threads
      // hold elements, and not every element is wanted)
      R lim = K::MASK;
      const u32 holders = (nr + (u32)ITEMS - 1u) / (u32)ITEMS;
      const bool first_bound = r0 == 0 && holders >= kk && kk < nr;
      if (first_bound) {
        R best = K::MASK;
#pragma unroll
        for (int j = 0; j < ITEMS; j++) {
          const R key = K::key(c.template raw<R>(j)) ^ flip;
          if ((u32)j < nv && key < best) best = key;
        }
        R pre, msk;
        u32 rem;
        radix_find<K>(L, kk, [&](auto visit) { if (nv) visit(best); }, pre, msk, rem);
        lim = pre | (K::MASK & ~msk);
      }
      // the round's candidates (valid, within the first round's bound, below thr) appended in
      // position order; where they overflow the area, the first that fit, a select (which
      // tightens thr), and again with the rest
      u32 left = 0;
#pragma unroll
      for (int j = 0; j < ITEMS; j++) {
        const R key = K::key(c.template raw<R>(j)) ^ flip;
        left |= ((u32)j < nv && key <= lim ? 1u : 0u) << j;
      }
      for (;;) {
        u32 cand = 0;
#pragma unroll
        for (int j = 0; j < ITEMS; j++) {
          const R key = K::key(c.template raw<R>(j)) ^ flip;
          cand |= ((left >> j) & 1u) != 0 && (!st.bounded || key < st.thr) ? 1u << j : 0u;
        }
        u32 C;
        const u32 off = block_scan1((u32)__popc(cand), L.wtot1, turn, C);
        const u32 space = TOPK_CAP - st.ca;
        if (cand) {
          // (the area is read after a barrier; the thread's index pointer and first index are
          // computed once: per-item ones would take a register each)
          u32 o = off;
          const u32* irt = ir ? ir + p0 : ir;
          const u32 it0 = (u32)(first + p0);
#pragma unroll
          for (int j = 0; j < ITEMS; j++) {
            if ((cand >> j) & 1u) {
              if (o < space) {
                L.akey[st.ca + o] = c.template raw<R>(j);
                L.aidx[st.ca + o] = irt ? irt[j] : it0 + (u32)j;
                left &= ~(1u << j);
              }
              o++;
            }
          }
        }
        if (C <= space) {
          st.ca += C;
          break;
        }
        st.ca = TOPK_CAP;
        topk_keep<K>(L, st, kk, flip);
      }
      if (first_bound) st.bound(lim);
    }
    if (st.ca > 0) topk_keep<K>(L, st, kk, flip);
    // the kk kept, each at its rank among them
    const R* kq = L.keys(st.cur);
    const u32* iq = L.idxs(st.cur);
    for (u32 j = t; j < kk; j += RADIX) {
      const R kj = K::key(kq[j]) ^ flip;
      const u32 ij = iq[j];
      u32 r = 0;
      for (u32 i = 0; i < kk; i++) {
        const R ki = K::key(kq[i]) ^ flip;
        r += (ki < kj || (ki == kj && iq[i] < ij)) ? 1u : 0u;
      }
      const u64 o = row * ostride + (u64)s * k + r;
      vs[o] = (S)kq[j];
      io[o] = ij;
    }
    __syncthreads();  // the next unit's records overwrite the kept set read above
  }
}

// MIN blocks a multiprocessor on NVIDIA (radix.h): 4, so a slice of every block the host plans
// (4 a multiprocessor) is resident at once
#define TOPK(DT, T) \
  RT_RADIX_KERNEL(4) void topk_##DT(T* vo, u32* io, const T* x, const u32* ii, i64 voOff, i64 ioOff, i64 xOff, i64 iiOff, \
      u64 rows, u64 cols, u64 ld, u64 slen, u64 ostride, u32 k, u32 largest) { RT_GRID_DEP(); \
    topk_rows(vo + voOff, io + ioOff, x + xOff, ii ? ii + iiOff : ii, rows, cols, ld, slen, ostride, k, largest); }

TOPK(f32, float) TOPK(f64, double) TOPK(f16, f16) TOPK(bf16, bf16)
TOPK(u8, u8) TOPK(u32, u32) TOPK(i64, i64)
