// cast.hip: y = x converted between any two different dtypes of f32 f64 f16 bf16 u8 u32 i64,
// with the rules in convert.h (those of roundTo in src/dtype.ts).
//
// Kernels (FROM != TO; TY, TX their storage types):
//   cast_<FROM>_<TO>(TY* y, const TX* x, i64 yOff, i64 xOff, u64 n)
//       contiguous from the offsets (elements); 16-byte vectors of the wider type (and as many
//       elements of the narrower) when the pointers are aligned.
//   cast_<FROM>_<TO>_strided(TY* y, const TX* x, Geom g)     operand 0 = y, 1 = x
// A same-dtype cast is a copy: use copy.hip or a device-to-device memcpy.
#include "elementwise.h"
#include "convert.h"

#define CAST(FN, FT, TN, TT) \
  RT_KERNEL void cast_##FN##_##TN(TT* y, const FT* x, i64 yOff, i64 xOff, u64 n) { RT_GRID_DEP(); \
    map1_contig(y + yOff, x + xOff, n, [](FT v) { return cast_val<TT>(v); }); } \
  RT_KERNEL void cast_##FN##_##TN##_strided(TT* y, const FT* x, Geom g) { RT_GRID_DEP(); \
    map1_strided(y, x, g, [](FT v) { return cast_val<TT>(v); }); }

CAST(f32, float, f64, double) CAST(f32, float, f16, f16) CAST(f32, float, bf16, bf16)
CAST(f32, float, u8, u8) CAST(f32, float, u32, u32) CAST(f32, float, i64, i64)
CAST(f64, double, f32, float) CAST(f64, double, f16, f16) CAST(f64, double, bf16, bf16)
CAST(f64, double, u8, u8) CAST(f64, double, u32, u32) CAST(f64, double, i64, i64)
CAST(f16, f16, f32, float) CAST(f16, f16, f64, double) CAST(f16, f16, bf16, bf16)
CAST(f16, f16, u8, u8) CAST(f16, f16, u32, u32) CAST(f16, f16, i64, i64)
CAST(bf16, bf16, f32, float) CAST(bf16, bf16, f64, double) CAST(bf16, bf16, f16, f16)
CAST(bf16, bf16, u8, u8) CAST(bf16, bf16, u32, u32) CAST(bf16, bf16, i64, i64)
CAST(u8, u8, f32, float) CAST(u8, u8, f64, double) CAST(u8, u8, f16, f16)
CAST(u8, u8, bf16, bf16) CAST(u8, u8, u32, u32) CAST(u8, u8, i64, i64)
CAST(u32, u32, f32, float) CAST(u32, u32, f64, double) CAST(u32, u32, f16, f16)
CAST(u32, u32, bf16, bf16) CAST(u32, u32, u8, u8) CAST(u32, u32, i64, i64)
CAST(i64, i64, f32, float) CAST(i64, i64, f64, double) CAST(i64, i64, f16, f16)
CAST(i64, i64, bf16, bf16) CAST(i64, i64, u8, u8) CAST(i64, i64, u32, u32)
