// compat.h: the one header every kernel source includes. It lets the same file compile as HIP
// (clang -x hip, raw code objects per gfx arch) and as CUDA (nvcc -ptx), and holds what all
// kernel families share: storage types for f16/bf16, exact conversions, the strided geometry
// record, and thread indexing helpers.
//
// Conventions every kernel follows (ops/gpu code and src/runtime/kernel-sigs.ts rely on them):
//  - names are extern "C" (no mangling), `<family>_<op>_<dtype>[_strided]`.
//  - pointers come first, then element offsets (int64, in elements, added to the pointer in the
//    kernel, so the host never does pointer arithmetic), then counts, then scalar parameters.
//  - every kernel loops grid-stride, so any grid size is correct; the host may cap the grid.
//  - tensors over 2^31 elements work: contiguous loops index in 64 bits; strided loops index
//    in 32 bits when the element count fits and in 64 bits otherwise (a uniform branch).
//  - f16 and bf16 are stored as raw 16-bit patterns; arithmetic runs in f32 and results are
//    rounded to nearest even on store. The conversions are written in software so both vendors
//    give bit-identical results and match src/dtype.ts (NaN -> 0x7e00 / 0x7fc0).
#pragma once

#if defined(__HIP__) || defined(__HIPCC__)
#include <hip/hip_runtime.h>
#define RT_HIP 1
#else
// nvcc includes the CUDA runtime declarations (threadIdx, math functions) by itself
#define RT_CUDA 1
#endif

typedef unsigned char u8;
typedef unsigned short u16;
typedef unsigned int u32;
typedef unsigned long long u64;
typedef int i32;
typedef long long i64;

#define RT_DEVICE __device__ __forceinline__
// 256 threads: a multiple of every wave size (32, 64); kernels.ts never launches more
#define RT_BLOCK_MAX 256
#define RT_KERNEL extern "C" __global__ __launch_bounds__(RT_BLOCK_MAX)
// The first statement of every kernel. NVIDIA sm_90+ (programmatic dependent launch): a kernel
// may be set up while the kernel queued before it on the stream still runs, so it waits for
// that one (and its memory) before touching global memory. The PTX is built for compute_80,
// which has no such instruction: this marker is what src/runtime/ptx-grid-dep.ts turns into
// griddepcontrol.wait on sm_90 and later, and a kernel whose marker comes before its first
// global access launches that way. AMD: nothing.
#if defined(__CUDACC__) && !defined(__HIP__)
#define RT_GRID_DEP() asm volatile("// rt-grid-dep" ::: "memory")
#else
#define RT_GRID_DEP() ((void)0)
#endif

// ---- storage types ----------------------------------------------------------------------
// Distinct structs (not bare u16) so templates can tell f16 from bf16 from an integer.
struct f16 { u16 bits; };
struct bf16 { u16 bits; };

RT_DEVICE u32 f32_bits(float x) { return __float_as_uint(x); }
RT_DEVICE float bits_f32(u32 x) { return __uint_as_float(x); }
RT_DEVICE u64 f64_bits(double x) { return (u64)__double_as_longlong(x); }

RT_DEVICE float f16_to_f32(f16 h) {
  const u32 s = (u32)(h.bits & 0x8000u) << 16, e = (h.bits >> 10) & 0x1fu, m = h.bits & 0x3ffu;
  if (e == 0x1f) return bits_f32(s | 0x7f800000u | (m << 13));
  if (e == 0) {
    // subnormal: m * 2^-24 is exact in f32
    const float v = (float)m * 5.9604644775390625e-8f;
    return s ? -v : v;
  }
  return bits_f32(s | ((e + 112u) << 23) | (m << 13));
}

RT_DEVICE f16 f32_to_f16(float f) {
  const u32 x = f32_bits(f), sign = (x >> 16) & 0x8000u, ax = x & 0x7fffffffu;
  if (ax > 0x7f800000u) return f16{ (u16)0x7e00u };           // NaN, canonical like dtype.ts
  if (ax >= 0x477ff000u) return f16{ (u16)(sign | 0x7c00u) };  // >= 65520 rounds to inf
  if (ax >= 0x38800000u) {                                   // normal f16 (>= 2^-14)
    u32 r = ax - 0x38000000u;                                // rebias 127 -> 15
    r += 0xfffu + ((r >> 13) & 1u);
    return f16{ (u16)(sign | (r >> 13)) };
  }
  // subnormal or zero: scaling by 2^24 is exact, rintf rounds half to even
  const u32 m = (u32)rintf(fabsf(f) * 16777216.0f);
  return f16{ (u16)(sign | m) };
}

// Straight from the double: rounding through f32 first could round twice.
RT_DEVICE f16 f64_to_f16(double d) {
  const u64 x = f64_bits(d), ax = x & 0x7fffffffffffffffull;
  const u32 sign = (u32)(x >> 48) & 0x8000u;
  if (ax > 0x7ff0000000000000ull) return f16{ (u16)0x7e00u };
  if (ax >= 0x40effe0000000000ull) return f16{ (u16)(sign | 0x7c00u) };  // >= 65520
  if (ax >= 0x3f10000000000000ull) {                                      // >= 2^-14
    u64 r = ax - ((u64)(1023 - 15) << 52);
    r += ((1ull << 41) - 1) + ((r >> 42) & 1ull);
    return f16{ (u16)(sign | (u32)(r >> 42)) };
  }
  const u32 m = (u32)rint(fabs(d) * 16777216.0);
  return f16{ (u16)(sign | m) };
}

RT_DEVICE float bf16_to_f32(bf16 h) { return bits_f32((u32)h.bits << 16); }

RT_DEVICE bf16 f32_to_bf16(float f) {
  const u32 x = f32_bits(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return bf16{ (u16)0x7fc0u };
  return bf16{ (u16)((x + 0x7fffu + ((x >> 16) & 1u)) >> 16) };
}

// Same algorithm as numberToBf16Bits in src/dtype.ts: to f32 with round-to-odd (so the second
// rounding is exact), then to bf16 with round to nearest even.
RT_DEVICE bf16 f64_to_bf16(double d) {
  if (d != d) return bf16{ (u16)0x7fc0u };
  const float back = (float)d;
  u32 b = f32_bits(back);
  if ((double)back != d && isfinite(back) && (b & 1u) == 0) b += (fabs((double)back) < fabs(d)) ? 1u : 0xffffffffu;
  if ((b & 0x7f800000u) == 0x7f800000u) return bf16{ (u16)(b >> 16) };
  return bf16{ (u16)((b + 0x7fffu + ((b >> 16) & 1u)) >> 16) };
}

// trunc(d) mod 2^64 for any finite double, 0 for NaN and +-inf: the float -> int rule of
// roundTo() in src/dtype.ts (truncate toward zero, then wrap). A plain (i64) cast is undefined
// out of range and saturates on both GPUs, so the wrap is done on the bits.
RT_DEVICE u64 trunc_wrap_u64(double d) {
  const u64 x = f64_bits(d);
  const int e = (int)((x >> 52) & 0x7ff);
  if (e == 0x7ff || e < 1023) return 0;                     // NaN, inf, |d| < 1
  const u64 m = (x & 0x000fffffffffffffull) | 0x0010000000000000ull;
  const int s = e - 1075;                                   // d = m * 2^s
  u64 t;
  if (s >= 64) t = 0;
  else if (s >= 0) t = m << s;
  else t = m >> (-s);
  return (x >> 63) ? (0 - t) : t;
}

// ---- element traits: how each storage type loads into and stores from its compute type ----
template <class T> struct Elem;
template <> struct Elem<float> {
  typedef float C;
  static RT_DEVICE C load(float x) { return x; }
  static RT_DEVICE float store(C x) { return x; }
};
template <> struct Elem<double> {
  typedef double C;
  static RT_DEVICE C load(double x) { return x; }
  static RT_DEVICE double store(C x) { return x; }
};
template <> struct Elem<f16> {
  typedef float C;
  static RT_DEVICE C load(f16 x) { return f16_to_f32(x); }
  static RT_DEVICE f16 store(C x) { return f32_to_f16(x); }
};
// f16 bits to f32 in one exact hardware instruction on both vendors (subnormals included), where
// f16_to_f32 above branches on the exponent and holds its constants in registers. A NaN's payload
// may differ from f16_to_f32's, which is why Elem<f16>::load keeps the software form: an
// f16 -> f32 cast shows the payload; kernels whose results cannot (sums, f16 stores, which
// canonicalize) call this.
RT_DEVICE float f16_widen_hw(u16 b) {
#if RT_CUDA
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(b));
  return f;
#else
  return (float)__builtin_bit_cast(_Float16, b);
#endif
}
template <> struct Elem<bf16> {
  typedef float C;
  static RT_DEVICE C load(bf16 x) { return bf16_to_f32(x); }
  static RT_DEVICE bf16 store(C x) { return f32_to_bf16(x); }
};
template <> struct Elem<u8> {
  typedef u32 C;
  static RT_DEVICE C load(u8 x) { return x; }
  static RT_DEVICE u8 store(C x) { return (u8)x; }
};
template <> struct Elem<u32> {
  typedef u32 C;
  static RT_DEVICE C load(u32 x) { return x; }
  static RT_DEVICE u32 store(C x) { return x; }
};
template <> struct Elem<i64> {
  typedef i64 C;
  static RT_DEVICE C load(i64 x) { return x; }
  static RT_DEVICE i64 store(C x) { return x; }
};

// ---- geometry of strided operands ----------------------------------------------------------
#define RT_MAX_RANK 8
#define RT_MAX_OPERANDS 4
// Passed by value (368 bytes). Operand 0 is the output, then the inputs in parameter order.
// Strides and offsets are in elements (strides may be 0 for broadcast dims, or negative).
// Packed on the host by packGeom() in src/runtime/kernel-sigs.ts; keep the two in step.
struct Geom {
  i64 numel;                                // offset 0
  i32 rank;                                 // offset 8 (0 for a scalar)
  i32 pad_;                                 // offset 12
  i64 shape[RT_MAX_RANK];                   // offset 16
  i64 offset[RT_MAX_OPERANDS];              // offset 80
  i64 strides[RT_MAX_OPERANDS][RT_MAX_RANK];  // offset 112, 368 in all
};

// Storage offsets (in elements) of logical element `i` for the first `K` operands.
template <int K, class I>
RT_DEVICE void geom_offsets(const Geom& g, I i, i64 (&off)[K]) {
#pragma unroll
  for (int k = 0; k < K; k++) off[k] = g.offset[k];
  for (int d = g.rank - 1; d >= 0; d--) {
    const I n = (I)g.shape[d];
    const I c = i % n;
    i /= n;
#pragma unroll
    for (int k = 0; k < K; k++) off[k] += (i64)c * g.strides[k][d];
  }
}

// ---- thread indexing -----------------------------------------------------------------------
RT_DEVICE u64 global_thread() { return (u64)blockIdx.x * blockDim.x + threadIdx.x; }
RT_DEVICE u64 grid_threads() { return (u64)gridDim.x * blockDim.x; }

// 16-byte vector of storage elements: one global_load_dwordx4 / ld.global.v4 per thread.
template <class T> struct alignas(16) Vec16 {
  static constexpr int N = 16 / sizeof(T);
  T v[N];
};

RT_DEVICE bool aligned16(const void* p) { return ((u64)p & 15u) == 0; }

// Runs body(i) for every i in [0, n) across the grid with a 64-bit index: contiguous loops only
// add and compare, so one 64-bit form serves every size and keeps the code small.
template <class F>
RT_DEVICE void grid_loop64(u64 n, F body) {
  const u64 stride = grid_threads();
  for (u64 i = global_thread(); i < n; i += stride) body(i);
}

// Runs body(i) for every i in [0, n) across the grid, with a 32-bit index where n allows: for
// strided loops, whose index divisions are much cheaper in 32 bits.
template <class F>
RT_DEVICE void grid_loop(u64 n, F body) {
  if (n <= 0x7fffffffull) {
    const u32 stride = (u32)grid_threads();
    for (u32 i = (u32)global_thread(); i < (u32)n; i += stride) body(i);
  } else {
    const u64 stride = grid_threads();
    for (u64 i = global_thread(); i < n; i += stride) body(i);
  }
}
