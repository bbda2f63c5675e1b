// convert.h: cvt<To>(from) between every pair of storage types with the rules of src/dtype.ts
// (roundTo and the f16/bf16 encoders): floats round to nearest even, straight from the source
// value (no double rounding); float -> int truncates toward zero and wraps modulo 2^bits, with
// NaN and +-inf -> 0; int -> float rounds once to a double (exact for u8/u32, nearest even for
// i64, as Number(bigint) does) and then to the target; int -> int keeps the low bits, as the
// CPU reference's BigInt.asUintN does (src/ops/cpu/cast.ts).
#pragma once
#include "compat.h"

template <class To> struct Conv;
template <> struct Conv<float> {
  static RT_DEVICE float fromFloat(float f) { return f; }
  static RT_DEVICE float fromDouble(double d) { return (float)d; }
  static RT_DEVICE float fromInt(u64, double dv) { return (float)dv; }
};
template <> struct Conv<double> {
  static RT_DEVICE double fromFloat(float f) { return (double)f; }
  static RT_DEVICE double fromDouble(double d) { return d; }
  static RT_DEVICE double fromInt(u64, double dv) { return dv; }
};
template <> struct Conv<f16> {
  static RT_DEVICE f16 fromFloat(float f) { return f32_to_f16(f); }
  static RT_DEVICE f16 fromDouble(double d) { return f64_to_f16(d); }
  static RT_DEVICE f16 fromInt(u64, double dv) { return f64_to_f16(dv); }
};
template <> struct Conv<bf16> {
  static RT_DEVICE bf16 fromFloat(float f) { return f32_to_bf16(f); }
  static RT_DEVICE bf16 fromDouble(double d) { return f64_to_bf16(d); }
  static RT_DEVICE bf16 fromInt(u64, double dv) { return f64_to_bf16(dv); }
};
template <> struct Conv<u8> {
  static RT_DEVICE u8 fromFloat(float f) { return (u8)trunc_wrap_u64((double)f); }
  static RT_DEVICE u8 fromDouble(double d) { return (u8)trunc_wrap_u64(d); }
  static RT_DEVICE u8 fromInt(u64 b, double) { return (u8)b; }
};
template <> struct Conv<u32> {
  static RT_DEVICE u32 fromFloat(float f) { return (u32)trunc_wrap_u64((double)f); }
  static RT_DEVICE u32 fromDouble(double d) { return (u32)trunc_wrap_u64(d); }
  static RT_DEVICE u32 fromInt(u64 b, double) { return (u32)b; }
};
template <> struct Conv<i64> {
  static RT_DEVICE i64 fromFloat(float f) { return (i64)trunc_wrap_u64((double)f); }
  static RT_DEVICE i64 fromDouble(double d) { return (i64)trunc_wrap_u64(d); }
  static RT_DEVICE i64 fromInt(u64 b, double) { return (i64)b; }
};

template <class To> RT_DEVICE To cvt(float x) { return Conv<To>::fromFloat(x); }
template <class To> RT_DEVICE To cvt(f16 x) { return Conv<To>::fromFloat(f16_to_f32(x)); }
template <class To> RT_DEVICE To cvt(bf16 x) { return Conv<To>::fromFloat(bf16_to_f32(x)); }
template <class To> RT_DEVICE To cvt(double x) { return Conv<To>::fromDouble(x); }
template <class To> RT_DEVICE To cvt(u8 x) { return Conv<To>::fromInt(x, (double)x); }
template <class To> RT_DEVICE To cvt(u32 x) { return Conv<To>::fromInt(x, (double)x); }
template <class To> RT_DEVICE To cvt(i64 x) { return Conv<To>::fromInt((u64)x, (double)x); }

// ---- pairs of f32 rounded to f16/bf16 ---------------------------------------------------------
// round_pair<T>(lo, hi): the two roundings of f32_to_f16 / f32_to_bf16 (compat.h) as one word,
// lo in the low half, as a vector store writes them. On CUDA one cvt.rn.{f16,bf16}x2.f32
// (sm_80+, the PTX's target) rounds both: IEEE round to nearest even with subnormals and
// overflow to inf, the software rule exactly, for a third of its instructions; only NaN
// differs (the hardware's NaN pattern is not dtype.ts's), so a pair holding one is redone in
// software, a branch that is almost never taken.
template <class T> RT_DEVICE u32 round_pair(float lo, float hi);
template <> RT_DEVICE u32 round_pair<bf16>(float lo, float hi) {
#if RT_CUDA
  u32 w;
  asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(w) : "f"(hi), "f"(lo));
  if (__builtin_expect(lo != lo || hi != hi, 0)) w = (u32)f32_to_bf16(lo).bits | ((u32)f32_to_bf16(hi).bits << 16);
  return w;
#else
  return (u32)f32_to_bf16(lo).bits | ((u32)f32_to_bf16(hi).bits << 16);
#endif
}
template <> RT_DEVICE u32 round_pair<f16>(float lo, float hi) {
#if RT_CUDA
  u32 w;
  asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(w) : "f"(hi), "f"(lo));
  if (__builtin_expect(lo != lo || hi != hi, 0)) w = (u32)f32_to_f16(lo).bits | ((u32)f32_to_f16(hi).bits << 16);
  return w;
#else
  return (u32)f32_to_f16(lo).bits | ((u32)f32_to_f16(hi).bits << 16);
#endif
}

// ---- loads into the compute type -----------------------------------------------------------------
// Elem<T>::load for arithmetic whose NaN results are canonicalized on store (unary, binary,
// compares, the f16/bf16 targets of cast): on CUDA f16 -> f32 is one exact hardware cvt
// instead of compat.h's branches; it may keep a different NaN payload, which only the NaN
// pattern of an f32/f64 result could show, and those casts keep Elem<f16>::load.
template <class T> RT_DEVICE typename Elem<T>::C load_c(T x) { return Elem<T>::load(x); }
#if RT_CUDA
template <> RT_DEVICE float load_c<f16>(f16 x) { return f16_widen_hw(x.bits); }
#endif

// ---- casts as elementwise results ----------------------------------------------------------------
// cast_val<To>(x) is cvt<To>(x), except that an f16/bf16 target from f32/f16/bf16 gets the f32
// value still to be rounded, which elementwise.h rounds (in pairs where a vector allows it)
// with the same rule as Conv<To>::fromFloat.
template <class To> struct CastVal {
  template <class From> static RT_DEVICE To of(From x) { return cvt<To>(x); }
};
template <class To> struct CastVal16 {
  static RT_DEVICE float of(float x) { return x; }
  static RT_DEVICE float of(f16 x) { return load_c(x); }
  static RT_DEVICE float of(bf16 x) { return bf16_to_f32(x); }
  template <class From> static RT_DEVICE To of(From x) { return cvt<To>(x); }
};
template <> struct CastVal<f16> : CastVal16<f16> {};
template <> struct CastVal<bf16> : CastVal16<bf16> {};
template <class To, class From> RT_DEVICE auto cast_val(From x) { return CastVal<To>::of(x); }
