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
  static RT_DEVICE R pad(bool desc) { return desc ? 0u : MASK; }
};
template <> struct RKey<u32> {
  typedef u32 S; typedef u32 R; static constexpr int BITS = 32; static constexpr R MASK = 0xffffffffu;
  static RT_DEVICE R key(R b) { return b; }
  static RT_DEVICE R pad(bool desc) { return desc ? 0u : MASK; }
};
template <> struct RKey<i64> {
  typedef u64 S; typedef u64 R; static constexpr int BITS = 64; static constexpr R MASK = ~0ull;
  static RT_DEVICE R key(R b) { return b ^ 0x8000000000000000ull; }
  static RT_DEVICE R pad(bool desc) { return desc ? 0x8000000000000000ull : 0x7fffffffffffffffull; }
};
template <> struct RKey<float> {
  typedef u32 S; typedef u32 R; static constexpr int BITS = 32; static constexpr R MASK = 0xffffffffu;
  static RT_DEVICE R pad(bool desc) { return desc ? 0xff800000u : 0x7fc00000u; }
  static RT_DEVICE R key(R b) {
    if ((b & 0x7fffffffu) > 0x7f800000u) return MASK;
    if (b == 0x80000000u) b = 0;
    return (b & 0x80000000u) ? ~b : (b | 0x80000000u);
  }
};
template <> struct RKey<double> {
  typedef u64 S; typedef u64 R; static constexpr int BITS = 64; static constexpr R MASK = ~0ull;
  static RT_DEVICE R pad(bool desc) { return desc ? 0xfff0000000000000ull : 0x7ff8000000000000ull; }
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
  static RT_DEVICE R pad(bool desc) { return desc ? (0x8000u | INF) : QNAN; }
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
// Lane masks are u64 on both vendors (the upper half zero on 32-lane waves). Every lane of the
// wave must reach each call (CUDA's full-mask *_sync forms).
RT_DEVICE u32 lane_id() { return threadIdx.x & ((u32)warpSize - 1u); }
RT_DEVICE u32 wave_id() { return threadIdx.x / (u32)warpSize; }
// blocks of the radix kernels are always RADIX threads (the host launches them so): a constant
// the compiler folds, where blockDim.x would be a load and a division
RT_DEVICE u32 waves() { return (u32)RADIX / (u32)warpSize; }
RT_DEVICE u64 lanes_below() { return (1ull << lane_id()) - 1ull; }
RT_DEVICE u32 popc64(u64 m) { return (u32)__popcll(m); }
RT_DEVICE u32 top_lane(u64 m) { return 63u - (u32)__clzll((long long)m); }

#if RT_HIP
RT_DEVICE u64 wave_ballot(bool p) { return (u64)__ballot((int)p); }
RT_DEVICE u32 wave_shfl(u32 v, int src) { return __shfl(v, src, warpSize); }
RT_DEVICE u32 wave_shfl_up(u32 v, u32 d) { return __shfl_up(v, d, warpSize); }
#else
RT_DEVICE u64 wave_ballot(bool p) { return (u64)__ballot_sync(0xffffffffu, p); }
RT_DEVICE u32 wave_shfl(u32 v, int src) { return __shfl_sync(0xffffffffu, v, src); }
RT_DEVICE u32 wave_shfl_up(u32 v, u32 d) { return __shfl_up_sync(0xffffffffu, v, d); }
#endif

// inclusive prefix sum over the wave's lanes. The lane number passes through an empty asm so
// the compiler cannot hoist the six lane masks out of the callers' loops: on 64-lane waves they
// are twelve scalar registers held for the whole kernel, enough to make topk spill.
RT_DEVICE u32 wave_scan(u32 v) {
  u32 lane = lane_id();
#if defined(__HIP_DEVICE_COMPILE__)
  asm volatile("" : "+v"(lane));
#elif defined(__CUDA_ARCH__)
  asm volatile("" : "+r"(lane));
#endif
  for (u32 d = 1; d < (u32)warpSize; d <<= 1) {
    const u32 o = wave_shfl_up(v, d);
    if (lane >= d) v += o;
  }
  return v;
}

// The live lanes whose 8-bit digit equals this lane's: one ballot a bit, keeping the lanes
// that agree with this one (written with a mask, not a select: fewer instructions on AMD).
RT_DEVICE u64 match_digit(u32 d, u64 live) {
  u64 m = live;
#pragma unroll
  for (int b = 0; b < RADIX_BITS; b++) {
    const u32 bit = (d >> b) & 1u;
    const u64 bal = wave_ballot(bit != 0);
    m &= ~(bal ^ (0ull - (u64)bit));
  }
  return m;
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

// position of item `it` of this thread in a tile of ITEMS a thread
template <int ITEMS> RT_DEVICE u32 tile_pos(int it) {
  const u32 ws = (u32)warpSize;
  return wave_id() * (u32)ITEMS * ws + (u32)it * ws + lane_id();
}

// LDS of rank_digits: hw [waves][RADIX] counters, start [RADIX], wtot [RADIX_WAVES_MAX]
struct RankLds { u32* hw; u32* start; u32* wtot; };

// Stable rank by digit of a whole tile. In: dr[it] = the digit of item it. Out: dr[it] = its
// rank among the wave's items of that digit << 8 | the digit; the item's place once the tile is
// ordered by digit (ties in position order) is rank_place(). Each wave matches its lanes'
// digits by ballots; the leader of each group of equal digits adds the group's size to the
// wave's counter of that digit and hands the old count to the group. The counters, scanned
// digit by digit and wave by wave, give each wave's first place per digit: hw[w][d] becomes the
// count of digit d in the waves before w, start[d] the first place of digit d in the tile.
template <int ITEMS>
RT_DEVICE void rank_digits(u32 (&dr)[ITEMS], const RankLds& L) {
  const u32 nw = waves(), lane = lane_id();
  for (u32 i = threadIdx.x; i < nw * RADIX; i += RADIX) L.hw[i] = 0;
  __syncthreads();
  u32* mine = L.hw + wave_id() * RADIX;
  const u64 below = lanes_below(), all_lanes = wave_ballot(true);
#pragma unroll
  for (int it = 0; it < ITEMS; it++) {
    const u32 d = dr[it];
    const u64 peers = match_digit(d, all_lanes);
    const u32 leader = top_lane(peers);
    u32 base = 0;
    if (lane == leader) base = atomicAdd(&mine[d], popc64(peers));
    base = wave_shfl(base, (int)leader);
    dr[it] = (base + popc64(peers & below)) << RADIX_BITS | d;
  }
  __syncthreads();
  // thread d: each wave's count of digit d becomes the count of the waves before it
  const u32 d = threadIdx.x;
  u32 run = 0;
  for (u32 v = 0; v < nw; v++) {
    const u32 c = L.hw[v * RADIX + d];
    L.hw[v * RADIX + d] = run;
    run += c;
  }
  u32 total;
  L.start[d] = block_scan(run, L.wtot, total);
  __syncthreads();
}

// the place in the tile of an item ranked by rank_digits
RT_DEVICE u32 rank_place(u32 dr, const RankLds& L) {
  const u32 d = dr & (RADIX - 1u);
  return L.start[d] + L.hw[wave_id() * RADIX + d] + (dr >> RADIX_BITS);
}
