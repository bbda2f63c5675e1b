// radix.h: what the radix sort (sort.hip) and the top-k selection (topk.hip) share: each dtype's
// order-preserving unsigned key at its own width, the wave's ballot and shuffles on both vendors,
// a block-wide exclusive scan, and the stable rank of a tile's 8-bit digits.
//
// Blocks of these kernels are RADIX = 256 threads, one per digit value, so per-digit work (the
// counters of one digit, its offset) is one thread's. A tile is ITEMS positions a thread (a
// template parameter, so the items live in registers), laid out so that position order is
// (wave, item, lane) order: wave w holds positions [w * ITEMS * ws, (w + 1) * ITEMS * ws) and its
// item `it` sits at w * ITEMS * ws + it * ws + lane. A wave walks its items in order and a
// ballot orders its lanes, which is what makes the ranks stable without comparing positions.
#pragma once
#include "compat.h"

#define RADIX_BITS 8
#define RADIX 256
// A radix kernel: blocks of RADIX threads. On NVIDIA at least MIN of them a multiprocessor,
// which caps registers at 65536 / (MIN * 256); the item arrays of 16-item tiles otherwise take
// enough registers to leave room for two blocks only (sm_90, ptxas -v: 127 registers for
// radix_rows16_f32, 80 with MIN 3 and no spills). AMD keeps the plain bound.
#if RT_CUDA
#define RT_RADIX_KERNEL(MIN) extern "C" __global__ __launch_bounds__(RADIX, MIN)
#else
#define RT_RADIX_KERNEL(MIN) RT_KERNEL
#endif
// LDS words of the wave totals of block_scan: more than any block has waves (256 / 32)
#define RADIX_WAVES_MAX 32

// ---- keys ---------------------------------------------------------------------------------
// Records carry an element's raw bits R (u32, or u64 for 64-bit dtypes), so sorted values come
// back bit for bit (-0, NaN payloads); S is the storage word. key() maps the bits to an unsigned
// key whose order is the sort order: NaN above +inf (all ones), -0 equal to +0, i64 signed.
// BITS is the key's own width (8 u8, 16 f16/bf16, 32 u32/f32, 64 i64/f64): 16-bit floats take
// two 8-bit digit passes, not the four of their f32 value. MASK: the key's bits, all ones.
template <class T> struct RKey;
template <> struct RKey<u8> {
  typedef u8 S; typedef u32 R; static constexpr int BITS = 8; static constexpr R MASK = 0xffu;
  static RT_DEVICE R key(R b) { return b; }
};
template <> struct RKey<u32> {
  typedef u32 S; typedef u32 R; static constexpr int BITS = 32; static constexpr R MASK = 0xffffffffu;
  static RT_DEVICE R key(R b) { return b; }
};
template <> struct RKey<i64> {
  typedef u64 S; typedef u64 R; static constexpr int BITS = 64; static constexpr R MASK = ~0ull;
  static RT_DEVICE R key(R b) { return b ^ 0x8000000000000000ull; }
};
template <> struct RKey<float> {
  typedef u32 S; typedef u32 R; static constexpr int BITS = 32; static constexpr R MASK = 0xffffffffu;
  static RT_DEVICE R key(R b) {
    if ((b & 0x7fffffffu) > 0x7f800000u) return MASK;
    if (b == 0x80000000u) b = 0;
    return (b & 0x80000000u) ? ~b : (b | 0x80000000u);
  }
};
template <> struct RKey<double> {
  typedef u64 S; typedef u64 R; static constexpr int BITS = 64; static constexpr R MASK = ~0ull;
  static RT_DEVICE R key(R b) {
    if ((b & 0x7fffffffffffffffull) > 0x7ff0000000000000ull) return MASK;
    if (b == 0x8000000000000000ull) b = 0;
    return (b >> 63) ? ~b : (b | 0x8000000000000000ull);
  }
};
// f16 and bf16: the same map on 16 bits; INF is the bit pattern of +inf (larger magnitudes are
// NaN), QNAN a NaN. The order of the 16-bit values is the order of their exact f32 values.
template <u32 INF, u32 QNAN> struct RKey16 {
  typedef u16 S; typedef u32 R; static constexpr int BITS = 16; static constexpr R MASK = 0xffffu;
  static RT_DEVICE R key(R b) {
    if ((b & 0x7fffu) > INF) return MASK;
    if (b == 0x8000u) b = 0;
    return (b & 0x8000u) ? (~b & 0xffffu) : (b | 0x8000u);
  }
};
template <> struct RKey<f16> : RKey16<0x7c00u, 0x7e00u> {};
template <> struct RKey<bf16> : RKey16<0x7f80u, 0x7fc0u> {};

template <class R> RT_DEVICE u32 digit_of(R key, u32 shift) { return (u32)(key >> shift) & (RADIX - 1u); }

// ---- the wave ---------------------------------------------------------------------------------
// Lane masks are the vendor's own width: u64 on AMD (the upper half zero on 32-lane waves), u32
// on NVIDIA, where 64-bit mask arithmetic would double every mask instruction. Every lane of the
// wave must reach each call (CUDA's full-mask *_sync forms).
#if RT_HIP
typedef u64 LaneMask;
RT_DEVICE u32 popc_mask(u64 m) { return (u32)__popcll(m); }
RT_DEVICE u64 wave_ballot(bool p) { return (u64)__ballot((int)p); }
RT_DEVICE u32 wave_shfl_up(u32 v, u32 d) { return __shfl_up(v, d, warpSize); }
#else
typedef u32 LaneMask;
RT_DEVICE u32 popc_mask(u32 m) { return (u32)__popc(m); }
RT_DEVICE u32 wave_ballot(bool p) { return __ballot_sync(0xffffffffu, p); }
RT_DEVICE u32 wave_shfl_up(u32 v, u32 d) { return __shfl_up_sync(0xffffffffu, v, d); }
#endif

// Orders this wave's shared-memory accesses before the barrier against its accesses after it
// (lanes of one wave talking through LDS). AMD waves run in lockstep and their LDS accesses in
// order: the fences keep the compiler from moving accesses across. CUDA's __syncwarp (and the
// host emulator's) is the real thing.
RT_DEVICE void wave_sync() {
#if defined(__HIP_DEVICE_COMPILE__)
  __builtin_amdgcn_fence(__ATOMIC_RELEASE, "wavefront");
  __builtin_amdgcn_wave_barrier();
  __builtin_amdgcn_fence(__ATOMIC_ACQUIRE, "wavefront");
#else
  __syncwarp();
#endif
}

RT_DEVICE u32 lane_id() { return threadIdx.x & ((u32)warpSize - 1u); }
RT_DEVICE u32 wave_id() { return threadIdx.x / (u32)warpSize; }
// blocks of the radix kernels are always RADIX threads (the host launches them so): a constant
// the compiler folds, where blockDim.x would be a load and a division
RT_DEVICE u32 waves() { return (u32)RADIX / (u32)warpSize; }
RT_DEVICE LaneMask lane_bit() { return (LaneMask)1 << lane_id(); }

// v, with its value hidden from the compiler (an empty asm), so that comparisons against it
// are made where written and not hoisted out of the callers' loops: on 64-lane waves every
// hoisted comparison is a pair of scalar registers held across the loop, and a dozen of them
// make the radix kernels spill.
// (NVIDIA keeps masks in predicate registers: nothing to hide there.)
RT_DEVICE u32 opaque(u32 v) {
#if defined(__HIP_DEVICE_COMPILE__)
  asm volatile("" : "+v"(v));
#endif
  return v;
}

// inclusive prefix sum over the wave's lanes (the lane masks made here, not hoisted: opaque)
RT_DEVICE u32 wave_scan(u32 v) {
  const u32 lane = opaque(lane_id());
  for (u32 d = 1; d < (u32)warpSize; d <<= 1) {
    const u32 o = wave_shfl_up(v, d);
    if (lane >= d) v += o;
  }
  return v;
}

// ---- the block ------------------------------------------------------------------------------
// Exclusive prefix sum of one value a thread, in thread order; `all` gets the block's total.
// wtot: RADIX_WAVES_MAX words of LDS. Every thread must call it; it ends with a barrier, so
// wtot is free again on return.
RT_DEVICE u32 block_scan(u32 v, u32* wtot, u32& all) {
  const u32 inc = wave_scan(v), w = wave_id();
  if (lane_id() == (u32)warpSize - 1u) wtot[w] = inc;
  __syncthreads();
  u32 before = 0, sum = 0;
  for (u32 i = 0; i < waves(); i++) {
    const u32 t = wtot[i];
    before += i < w ? t : 0u;
    sum += t;
  }
  all = sum;
  __syncthreads();
  return before + inc - v;
}

// All ones if p < n, else zero (p, n < 2^31). The compiler turns it back into a comparison, and
// hoists loop-invariant comparisons out of their loops, where on 64-lane waves each holds a pair
// of scalar registers (sixteen items' worth made the radix kernels spill): callers pass an n
// made opaque() inside the loop.
RT_DEVICE u32 before(u32 p, u32 n) { return 0u - ((p - n) >> 31); }
template <class R> RT_DEVICE R before_r(u32 p, u32 n) { return (R)0 - (R)((p - n) >> 31); }

// position of item `it` of this thread in a tile of ITEMS a thread
template <int ITEMS> RT_DEVICE u32 tile_pos(int it) {
  const u32 ws = (u32)warpSize;
  return wave_id() * (u32)ITEMS * ws + (u32)it * ws + lane_id();
}

// LDS of rank_digits: match [waves][RADIX] lane masks (zero between calls: the caller clears
// them once), hw [waves][RADIX] counters (u16: at most 4096 items a tile), start [RADIX], wtot
// [RADIX_WAVES_MAX]
struct RankLds { LaneMask* match; u16* hw; u32* start; u32* wtot; };

// Whether every item of the tile holds digit d0 (the digit at position 0): a pass over that
// digit changes nothing, so the caller skips it (constant rows, narrow ranges, small integers in
// wide types: their high digits). Padding counts too (its digit is 255), which only loses the
// skip for a padded tile whose one digit is another: testing positions against the row's end
// would cost a register or a scalar pair an item. The same answer on every thread. Each wave
// votes into votes[parity][wave] (2 * RADIX_WAVES_MAX words), one barrier, every thread reads
// the votes; `calls` (the caller's count of calls) alternates the parity, so a call never writes
// the votes the previous one may still be reading (a barrier lies between it and the one before).
template <int ITEMS>
RT_DEVICE bool tile_uniform(const u32 (&dr)[ITEMS], u32 d0, u32* votes, u32& calls) {
  u32 mixed = 0;
#pragma unroll
  for (int it = 0; it < ITEMS; it++) mixed |= dr[it] ^ d0;
  u32* v = votes + (calls++ & 1u) * RADIX_WAVES_MAX;
  const bool wave_mixed = wave_ballot(mixed != 0) != 0;
  if (lane_id() == 0) v[wave_id()] = wave_mixed ? 1u : 0u;
  __syncthreads();
  u32 any = 0;
  for (u32 w = 0; w < waves(); w++) any |= v[w];
  return any == 0;
}

// Stable rank by digit of a whole tile. In: dr[it] = the digit of item it. Out: dr[it] = its
// rank among the wave's items of that digit << 8 | the digit; the item's place once the tile is
// ordered by digit (ties in position order) is rank_place(). For each item, every lane ORs its
// bit into the wave's mask of its digit, so each lane reads the lanes that share its digit (CUB's
// "atomic or" match: one LDS atomic in place of eight ballots) and the wave's count of the digit
// so far; then the count grows by the group's size and the mask is cleared. Lanes and items go
// in position order, so the ranks are stable. The counters, scanned digit by digit and wave by
// wave, give each wave's first place per digit: start[d] becomes the first place of digit d in
// the tile, hw[w][d] the first place of wave w's items of digit d.
template <int ITEMS>
RT_DEVICE void rank_digits(u32 (&dr)[ITEMS], const RankLds& L) {
  const u32 nw = waves();
  for (u32 i = threadIdx.x; i < nw * RADIX; i += RADIX) L.hw[i] = 0;
  __syncthreads();
  u16* count = L.hw + wave_id() * RADIX;
  LaneMask* match = L.match + wave_id() * RADIX;
  const LaneMask me = lane_bit(), below = me - 1;
#pragma unroll
  for (int it = 0; it < ITEMS; it++) {
    const u32 d = dr[it];
    atomicOr(&match[d], me);
    wave_sync();
    const LaneMask peers = match[d];
    const u32 base = count[d];
    wave_sync();  // every lane has read before the group's counter and mask change
#if RT_HIP
    // every lane of the group writes the same values: no branch, which on 64-lane waves costs
    // enough scalar registers (exec masks) to spill
    count[d] = (u16)(base + popc_mask(peers));
    match[d] = 0;
#else
    // one lane writes (the highest of the group): no two threads write one word
    if ((peers >> lane_id()) == 1u) {
      count[d] = (u16)(base + popc_mask(peers));
      match[d] = 0;
    }
#endif
    wave_sync();  // counted and cleared before the next item
    dr[it] = (base + popc_mask(peers & below)) << RADIX_BITS | d;
  }
  __syncthreads();
  // thread d: each wave's count of digit d becomes the count of the waves before it
  const u32 d = threadIdx.x;
  u32 run = 0;
  for (u32 v = 0; v < nw; v++) {
    const u32 c = L.hw[v * RADIX + d];
    L.hw[v * RADIX + d] = (u16)run;
    run += c;
  }
  u32 total;
  const u32 start = block_scan(run, L.wtot, total);
  L.start[d] = start;
  // and then the wave's first place of the digit in the tile: one read a record in rank_place
  for (u32 v = 0; v < nw; v++) L.hw[v * RADIX + d] = (u16)(L.hw[v * RADIX + d] + start);
  __syncthreads();
}

// the place in the tile of an item ranked by rank_digits
RT_DEVICE u32 rank_place(u32 dr, const RankLds& L) {
  return L.hw[wave_id() * RADIX + (dr & (RADIX - 1u))] + (dr >> RADIX_BITS);
}
