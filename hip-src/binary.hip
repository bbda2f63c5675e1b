// binary.hip: arithmetic, comparisons and where, on f32 f64 f16 bf16 u8 u32 i64, with
// broadcasting through the strided forms (a broadcast dim has stride 0).
//
// Kernels (DT any dtype, T its storage type):
//   binary_<op>_<DT>(T* y, const T* a, const T* b, i64 yOff, i64 aOff, i64 bOff, u64 n)
//   binary_<op>_<DT>_strided(T* y, const T* a, const T* b, Geom g)   operands y, a, b
//       op in add sub mul div maximum minimum.
//   cmp_<op>_<DT>(u8* y, const T* a, const T* b, i64 yOff, i64 aOff, i64 bOff, u64 n)
//   cmp_<op>_<DT>_strided(u8* y, const T* a, const T* b, Geom g)      operands y, a, b
//       op in eq ne lt le gt ge; y is 1 or 0. NaN compares unequal to everything.
//   where_u8_<DT>(T* y, const u8* c, const T* a, const T* b, i64 yOff, i64 cOff, i64 aOff, i64 bOff, u64 n)
//   where_u8_<DT>_strided(T* y, const u8* c, const T* a, const T* b, Geom g)  operands y, c, a, b
//       y = c != 0 ? a : b (elements copied bit for bit).
// Contiguous forms take 16-byte vectors when all pointers are aligned (where is scalar: its
// condition is narrower than the data). Offsets and n are in elements.
// Semantics: f16/bf16 compute in f32 and round to nearest even. Integers wrap (u8 mod 2^8,
// u32 mod 2^32, i64 two's complement); integer div truncates toward zero and x / 0 = 0 (and
// i64 min / -1 wraps to min). maximum/minimum propagate NaN.
#include "elementwise.h"

struct OpAdd {
  template <class C> RT_DEVICE C operator()(C a, C b) const { return a + b; }
  RT_DEVICE i64 operator()(i64 a, i64 b) const { return (i64)((u64)a + (u64)b); }
};
struct OpSub {
  template <class C> RT_DEVICE C operator()(C a, C b) const { return a - b; }
  RT_DEVICE i64 operator()(i64 a, i64 b) const { return (i64)((u64)a - (u64)b); }
};
struct OpMul {
  template <class C> RT_DEVICE C operator()(C a, C b) const { return a * b; }
  RT_DEVICE i64 operator()(i64 a, i64 b) const { return (i64)((u64)a * (u64)b); }
};
struct OpDiv {
  RT_DEVICE float operator()(float a, float b) const { return a / b; }
  RT_DEVICE double operator()(double a, double b) const { return a / b; }
  RT_DEVICE u32 operator()(u32 a, u32 b) const { return b ? a / b : 0u; }
  RT_DEVICE i64 operator()(i64 a, i64 b) const {
    if (b == 0) return 0;
    if (b == -1) return (i64)(0 - (u64)a);
    return a / b;
  }
};
struct OpMaximum {
  template <class C> RT_DEVICE C operator()(C a, C b) const { return a > b ? a : b; }
  RT_DEVICE float operator()(float a, float b) const { return (a != a || b != b) ? a + b : (a > b ? a : b); }
  RT_DEVICE double operator()(double a, double b) const { return (a != a || b != b) ? a + b : (a > b ? a : b); }
};
struct OpMinimum {
  template <class C> RT_DEVICE C operator()(C a, C b) const { return a < b ? a : b; }
  RT_DEVICE float operator()(float a, float b) const { return (a != a || b != b) ? a + b : (a < b ? a : b); }
  RT_DEVICE double operator()(double a, double b) const { return (a != a || b != b) ? a + b : (a < b ? a : b); }
};
struct CmpEq { template <class C> RT_DEVICE bool operator()(C a, C b) const { return a == b; } };
struct CmpNe { template <class C> RT_DEVICE bool operator()(C a, C b) const { return a != b; } };
struct CmpLt { template <class C> RT_DEVICE bool operator()(C a, C b) const { return a < b; } };
struct CmpLe { template <class C> RT_DEVICE bool operator()(C a, C b) const { return a <= b; } };
struct CmpGt { template <class C> RT_DEVICE bool operator()(C a, C b) const { return a > b; } };
struct CmpGe { template <class C> RT_DEVICE bool operator()(C a, C b) const { return a >= b; } };

// Arith returns the compute value; elementwise.h rounds it to T (f16/bf16 in pairs within a
// vector, convert.h).
template <class T, class F> struct Arith {
  F f;
  RT_DEVICE typename Elem<T>::C operator()(T a, T b) const { return f(load_c(a), load_c(b)); }
};
template <class T, class F> struct Compare {
  F f;
  RT_DEVICE u8 operator()(T a, T b) const { return f(load_c(a), load_c(b)) ? 1 : 0; }
};
struct Select {
  template <class T> RT_DEVICE T operator()(u8 c, T a, T b) const { return c ? a : b; }
};

#define BINARY(NAME, OP, DT, T) \
  RT_KERNEL void binary_##NAME##_##DT(T* y, const T* a, const T* b, i64 yOff, i64 aOff, i64 bOff, u64 n) { \
    map2_contig(y + yOff, a + aOff, b + bOff, n, Arith<T, OP>{}); } \
  RT_KERNEL void binary_##NAME##_##DT##_strided(T* y, const T* a, const T* b, Geom g) { \
    map2_strided(y, a, b, g, Arith<T, OP>{}); }
#define CMP(NAME, OP, DT, T) \
  RT_KERNEL void cmp_##NAME##_##DT(u8* y, const T* a, const T* b, i64 yOff, i64 aOff, i64 bOff, u64 n) { \
    map2_contig(y + yOff, a + aOff, b + bOff, n, Compare<T, OP>{}); } \
  RT_KERNEL void cmp_##NAME##_##DT##_strided(u8* y, const T* a, const T* b, Geom g) { \
    map2_strided(y, a, b, g, Compare<T, OP>{}); }
#define WHERE(DT, T) \
  RT_KERNEL void where_u8_##DT(T* y, const u8* c, const T* a, const T* b, i64 yOff, i64 cOff, i64 aOff, i64 bOff, u64 n) { \
    map3_contig(y + yOff, c + cOff, a + aOff, b + bOff, n, Select{}); } \
  RT_KERNEL void where_u8_##DT##_strided(T* y, const u8* c, const T* a, const T* b, Geom g) { \
    map3_strided(y, c, a, b, g, Select{}); }

#define FAMILY(DT, T) \
  BINARY(add, OpAdd, DT, T) BINARY(sub, OpSub, DT, T) BINARY(mul, OpMul, DT, T) \
  BINARY(div, OpDiv, DT, T) BINARY(maximum, OpMaximum, DT, T) BINARY(minimum, OpMinimum, DT, T) \
  CMP(eq, CmpEq, DT, T) CMP(ne, CmpNe, DT, T) CMP(lt, CmpLt, DT, T) \
  CMP(le, CmpLe, DT, T) CMP(gt, CmpGt, DT, T) CMP(ge, CmpGe, DT, T) \
  WHERE(DT, T)

FAMILY(f32, float) FAMILY(f64, double) FAMILY(f16, f16) FAMILY(bf16, bf16)
FAMILY(u8, u8) FAMILY(u32, u32) FAMILY(i64, i64)
