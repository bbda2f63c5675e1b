// row-groups.h: rows handed out to groups of threads, and the batched copy of one row; shared
// by the row copies of copy.hip (copy_rows) and index-rows.hip (indexSelect, embedding, gather).
#pragma once
#include "compat.h"

// Rows go to groups of `want` threads (a power of two dividing the block; anything else means
// the whole block), blockDim.x / size rows per block per step, grid-stride: any grid is correct.
// A group never synchronizes, so groups smaller than a wave are fine (short rows).
struct Groups {
  u32 lane, size;
  u64 first, step;
  RT_DEVICE explicit Groups(u32 want) {
    const u32 bd = blockDim.x;
    size = (want >= 1u && want <= bd && bd % want == 0u && (want & (want - 1u)) == 0u) ? want : bd;
    const u32 per = bd / size;
    lane = threadIdx.x % size;
    first = (u64)blockIdx.x * per + threadIdx.x / size;
    step = (u64)gridDim.x * per;
  }
};

// dst[k] = src[k] for k = l, l + G, ... < len, four loads in flight before the stores (enough
// bytes per thread to cover memory latency). Four named values, not an array: clang keeps an
// array of 16-byte elements in scratch memory on gfx942 (dead stores, but stores). The two
// never overlap (distinct tensors, or the same elements of one: a no-op), so __restrict__
// holds and lets nvcc read through the read-only path.
template <class E>
RT_DEVICE void copy_row(E* __restrict__ dst, const E* __restrict__ src, u32 len, u32 l, u32 G) {
  u32 k = l;
  // len < 2^31 and G <= RT_BLOCK_MAX, so k + 3 * G cannot wrap
  for (; k + 3 * G < len; k += 4 * G) {
    const E a = src[k], b = src[k + G], c = src[k + 2 * G], d = src[k + 3 * G];
    dst[k] = a;
    dst[k + G] = b;
    dst[k + 2 * G] = c;
    dst[k + 3 * G] = d;
  }
  for (; k < len; k += G) dst[k] = src[k];
}
