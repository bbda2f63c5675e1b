// atomic-add.h: acc[i] += v with device atomics, per accumulator type, for the adding scatters
// (indexing.hip's scatter_add, index-rows.hip's index_add_rows). Integers wrap; f16/bf16 sources
// add into an f32 accumulator (AddVal), which the host rounds once at the end.
#pragma once
#include "compat.h"

RT_DEVICE void atomic_add(float* p, float v) { atomicAdd(p, v); }
RT_DEVICE void atomic_add(double* p, double v) { atomicAdd(p, v); }
RT_DEVICE void atomic_add(u32* p, u32 v) { atomicAdd(p, v); }
RT_DEVICE void atomic_add(i64* p, i64 v) {
  atomicAdd(reinterpret_cast<unsigned long long*>(p), (unsigned long long)v);
}
RT_DEVICE void atomic_add(u8* p, u32 v) {
  u32* w = reinterpret_cast<u32*>((u64)p & ~(u64)3);
  const u32 sh = ((u32)(u64)p & 3u) * 8u, mask = 0xffu << sh;
  u32 old = *w, seen;
  do {
    seen = old;
    const u32 sum = (((seen & mask) >> sh) + v) & 0xffu;
    old = atomicCAS(w, seen, (seen & ~mask) | (sum << sh));
  } while (old != seen);
}

// the value src contributes, in the accumulator's type
template <class T> struct AddVal { typedef T A; static RT_DEVICE T get(T v) { return v; } };
template <> struct AddVal<f16> { typedef float A; static RT_DEVICE float get(f16 v) { return f16_to_f32(v); } };
template <> struct AddVal<bf16> { typedef float A; static RT_DEVICE float get(bf16 v) { return bf16_to_f32(v); } };
template <> struct AddVal<u8> { typedef u8 A; static RT_DEVICE u32 get(u8 v) { return v; } };
