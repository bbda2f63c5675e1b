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
