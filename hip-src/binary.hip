// binary.hip: arithmetic, comparisons and where, on f32 f64 f16 bf16 u8 u32 i64, with
// broadcasting through the strided forms (a broadcast dim has stride 0).
//
// Kernels (DT any dtype, T its storage type):
//   binary_<op>_<DT>(T* y, const T* a, const T* b, i64 yOff, i64 aOff, i64 bOff, u64 n)
//   binary_<op>_<DT>_strided(T* y, const T* a, const T* b, Geom g)   operands y, a, b
//   binary_<op>_<DT>_rows(T* y, const T* a, const T* b, i64 yOff, i64 aOff, i64 bOff, u32 nv,
//                         u32 vpr, u32 r0, i64 aS1, i64 aS0, u32 aInner, i64 bS1, i64 bS0,
//                         u32 bInner)                                  DT in f32 f64 f16 bf16
//       broadcast rows (map2_rows below, an input's strides and inner flag a RowsIn):
//       y contiguous [nv / (vpr * r0), r0, vpr 16-byte vectors]; every pointer plus offset,
//       and the rows of an input with inner = 1, 16-byte aligned. Any grid.
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

// ---- broadcast rows ----------------------------------------------------------------------------
// The output, contiguous, seen as [R1, R0, C]; an input either runs along C (inner = 1: 16-byte
// vectors, its rows starting at 16-byte boundaries) or is one value per row (inner = 0: a bias
// column, a per-row scale), its row (r1, r0) at r1 * s1 + r0 * s0 elements. This is broadcasting
// as models use it (x + bias, x * weight, scores + mask over heads): vector accesses and two
// 32-bit divisions per vector instead of the strided form's division per dim per element.
struct RowsIn { i64 s1, s0; u32 inner; };

template <class T, int N> RT_DEVICE Pack<T, N> rows_load(const T* p, const RowsIn& in, u32 r1, u32 r0, u32 c) {
  const T* q = p + (i64)r1 * in.s1 + (i64)r0 * in.s0;
  if (in.inner) return load_ro(reinterpret_cast<const Pack<T, N>*>(q) + c);
  Pack<T, N> v;
  const T e = q[0];
#pragma unroll
  for (int k = 0; k < N; k++) v.v[k] = e;
  return v;
}

// y[i] = f(a, b) over nv vectors of N = 16 / sizeof(T) elements, vpr a row, R0 rows an r1
template <class T, class F>
RT_DEVICE void map2_rows(T* y, const T* a, const T* b, u32 nv, u32 vpr, u32 R0, const RowsIn& ia, const RowsIn& ib, F f) {
  constexpr int N = 16 / (int)sizeof(T);
  typedef Pack<T, N> P;
  typedef decltype(f(a[0], b[0])) R;
  struct In { P a, b; };
  tile_loop<RT_UNROLL>(nv, [&](u64 i) {
    const u32 r = (u32)i / vpr, c = (u32)i - r * vpr, r1 = r / R0, r0 = r - r1 * R0;
    In v;
    v.a = rows_load<T, N>(a, ia, r1, r0, c);
    v.b = rows_load<T, N>(b, ib, r1, r0, c);
    return v;
  }, [&](u64 i, const In& v) {
    R r[N];
#pragma unroll
    for (int k = 0; k < N; k++) r[k] = f(v.a.v[k], v.b.v[k]);
    store_pack<T, N>(y, i, r);
  });
}

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
  RT_KERNEL void binary_##NAME##_##DT(T* y, const T* a, const T* b, i64 yOff, i64 aOff, i64 bOff, u64 n) { RT_GRID_DEP(); \
    map2_contig(y + yOff, a + aOff, b + bOff, n, Arith<T, OP>{}); } \
  RT_KERNEL void binary_##NAME##_##DT##_strided(T* y, const T* a, const T* b, Geom g) { RT_GRID_DEP(); \
    map2_strided(y, a, b, g, Arith<T, OP>{}); }
#define BINARY_ROWS(NAME, OP, DT, T) \
  RT_KERNEL void binary_##NAME##_##DT##_rows(T* y, const T* a, const T* b, i64 yOff, i64 aOff, i64 bOff, u32 nv, u32 vpr, u32 r0, \
      i64 aS1, i64 aS0, u32 aInner, i64 bS1, i64 bS0, u32 bInner) { RT_GRID_DEP(); \
    map2_rows(y + yOff, a + aOff, b + bOff, nv, vpr, r0, RowsIn{ aS1, aS0, aInner }, RowsIn{ bS1, bS0, bInner }, Arith<T, OP>{}); }
#define CMP(NAME, OP, DT, T) \
  RT_KERNEL void cmp_##NAME##_##DT(u8* y, const T* a, const T* b, i64 yOff, i64 aOff, i64 bOff, u64 n) { RT_GRID_DEP(); \
    map2_contig(y + yOff, a + aOff, b + bOff, n, Compare<T, OP>{}); } \
  RT_KERNEL void cmp_##NAME##_##DT##_strided(u8* y, const T* a, const T* b, Geom g) { RT_GRID_DEP(); \
    map2_strided(y, a, b, g, Compare<T, OP>{}); }
#define WHERE(DT, T) \
  RT_KERNEL void where_u8_##DT(T* y, const u8* c, const T* a, const T* b, i64 yOff, i64 cOff, i64 aOff, i64 bOff, u64 n) { RT_GRID_DEP(); \
    map3_contig(y + yOff, c + cOff, a + aOff, b + bOff, n, Select{}); } \
  RT_KERNEL void where_u8_##DT##_strided(T* y, const u8* c, const T* a, const T* b, Geom g) { RT_GRID_DEP(); \
    map3_strided(y, c, a, b, g, Select{}); }

#define FAMILY(DT, T) \
  BINARY(add, OpAdd, DT, T) BINARY(sub, OpSub, DT, T) BINARY(mul, OpMul, DT, T) \
  BINARY(div, OpDiv, DT, T) BINARY(maximum, OpMaximum, DT, T) BINARY(minimum, OpMinimum, DT, T) \
  CMP(eq, CmpEq, DT, T) CMP(ne, CmpNe, DT, T) CMP(lt, CmpLt, DT, T) \
  CMP(le, CmpLe, DT, T) CMP(gt, CmpGt, DT, T) CMP(ge, CmpGe, DT, T) \
  WHERE(DT, T)

#define ROWS_FAMILY(DT, T) \
  BINARY_ROWS(add, OpAdd, DT, T) BINARY_ROWS(sub, OpSub, DT, T) BINARY_ROWS(mul, OpMul, DT, T) \
  BINARY_ROWS(div, OpDiv, DT, T) BINARY_ROWS(maximum, OpMaximum, DT, T) BINARY_ROWS(minimum, OpMinimum, DT, T)

FAMILY(f32, float) FAMILY(f64, double) FAMILY(f16, f16) FAMILY(bf16, bf16)
ROWS_FAMILY(f32, float) ROWS_FAMILY(f64, double) ROWS_FAMILY(f16, f16) ROWS_FAMILY(bf16, bf16)
FAMILY(u8, u8) FAMILY(u32, u32) FAMILY(i64, i64)
