// unary.hip: y = f(x) for every op in UNARY_OPS and PARAM_UNARY_OPS (src/ops/types.ts), on
// f32 f64 f16 bf16. f16/bf16 compute in f32; f64 in f64.
//
// Kernels (DT in f32 f64 f16 bf16; T its storage type; C = double for f64, float otherwise):
//   unary_<op>_<DT>(T* y, const T* x, i64 yOff, i64 xOff, u64 n)
//       y and x contiguous from their offsets (elements); 16-byte vectors (UnaryUnroll a
//       thread) when aligned.
//   unary_<op>_<DT>_strided(T* y, const T* x, Geom g)
//       g: operand 0 = y, operand 1 = x (compat.h, packGeom in src/runtime/kernel-sigs.ts).
//   unary_<pop>_<DT>(T* y, const T* x, i64 yOff, i64 xOff, u64 n, C a, C b)
//   unary_<pop>_<DT>_strided(T* y, const T* x, Geom g, C a, C b)
//       pop in affine (x*a + b), powf (x^a), elu (alpha a), clamp ([a, b]), leakyRelu (slope a);
//       b is ignored where the op has one parameter.
// Semantics: gelu is the tanh form (computed as x * sigmoid(2u), see Op_gelu), geluErf the erf
// form; round is half to even; sign(0) = 0
// (sign keeps -0 and NaN); relu and clamp propagate NaN; recip(0) = inf.
//
// Build: LLVM's machine-level LICM hoists every f64 polynomial constant of erf/geluErf out of
// the grid-stride loop into SGPRs, which spills SGPRs on RDNA (106 of them); with it off
// those kernels use 26. The constants are rematerialized by scalar moves, which cost nothing
// next to the loads. scripts/build-kernels.ts reads the line below.
// amd-flags: -mllvm -disable-machine-licm
#include "elementwise.h"

// Vectors per thread in the contiguous kernels (unaryUnroll in src/ops/gpu/elementwise.ts):
// RT_UNROLL, as in the other families (elementwise.h: 2 on NVIDIA, 4 on AMD); 1 for f64, whose
// pow and erf bodies would otherwise spill SGPRs on gfx942; 2 at most for sin and cos, whose
// large-argument reductions spill at 4 (ptxas, bf16); 4 for f16/bf16 gelu, the one measured op
// with more work than bytes: on an H200 (one call, alternating) bf16 gelu took 266.0 us at 4
// against 277.4 / 277.6 at 2 (2^28 elements), where bf16 exp took 259.7 against 256.5 / 258.8.
struct Op_sin;
struct Op_cos;
struct Op_gelu;
template <class T, class Op> struct UnaryUnroll { static constexpr int value = sizeof(T) == 8 ? 1 : RT_UNROLL; };
template <class T> struct UnaryUnroll<T, Op_gelu> { static constexpr int value = sizeof(T) == 8 ? 1 : sizeof(T) == 2 ? 4 : RT_UNROLL; };
template <class T> struct UnaryUnroll<T, Op_sin> { static constexpr int value = sizeof(T) == 8 ? 1 : (RT_UNROLL < 2 ? RT_UNROLL : 2); };
template <class T> struct UnaryUnroll<T, Op_cos> { static constexpr int value = sizeof(T) == 8 ? 1 : (RT_UNROLL < 2 ? RT_UNROLL : 2); };

// The functors return the compute value: elementwise.h rounds f16/bf16 results, in pairs
// within a vector (convert.h).
template <class T, class F>
RT_DEVICE void unary_contig(T* y, const T* x, u64 n, F op) {
  map1_contig<UnaryUnroll<T, F>::value>(y, x, n, [&](T v) { return op(load_c(v)); });
}
template <class T, class F>
RT_DEVICE void unary_strided(T* y, const T* x, const Geom& g, F op) {
  map1_strided(y, x, g, [&](T v) { return op(load_c(v)); });
}

// x / y where y >= 1 and 2 ulp is plenty: a hardware reciprocal and a multiply instead of the
// IEEE division sequence (y = inf gives x * 0, as x / inf would for finite x).
RT_DEVICE float div_approx(float x, float y) {
#if RT_HIP
  return x * __builtin_amdgcn_rcpf(y);
#else
  return __fdividef(x, y);
#endif
}

// gelu, tanh form: 0.5x(1 + tanh(u)) = x / (1 + exp(-2u)) with u = sqrt(2/pi)(x + 0.044715x^3),
// so -2u = x(K1 + K2 x^2). One exp and a reciprocal cost less than tanh plus the products,
// and the form does not cancel where tanh(u) is near -1. x = -inf gives NaN, as the tanh form.
struct Op_gelu {
  RT_DEVICE float operator()(float x) const {
    return div_approx(x, 1.0f + expf(x * (-1.5957691216057308f + -0.07135481627260025f * (x * x))));
  }
  RT_DEVICE double operator()(double x) const {
    return x / (1.0 + exp(x * (-1.5957691216057308 + -0.07135481627260025 * (x * x))));
  }
};

#define UNARY_OP(NAME, EXPR) \
  struct Op_##NAME { template <class C> RT_DEVICE C operator()(C x) const { return EXPR; } };
#define PARAM_OP(NAME, EXPR) \
  template <class C> struct Op_##NAME { C a, b; RT_DEVICE C operator()(C x) const { return EXPR; } };

UNARY_OP(exp, exp(x))
UNARY_OP(log, log(x))
UNARY_OP(sin, sin(x))
UNARY_OP(cos, cos(x))
UNARY_OP(tanh, tanh(x))
UNARY_OP(neg, -x)
UNARY_OP(recip, C(1) / x)
UNARY_OP(sqr, x * x)
UNARY_OP(sqrt, sqrt(x))
UNARY_OP(geluErf, C(0.5) * x * (C(1) + erf(x * C(0.7071067811865476))))
UNARY_OP(erf, erf(x))
UNARY_OP(relu, x < C(0) ? C(0) : x)
UNARY_OP(silu, x / (C(1) + exp(-x)))
UNARY_OP(abs, fabs(x))
UNARY_OP(ceil, ceil(x))
UNARY_OP(floor, floor(x))
UNARY_OP(round, rint(x))
UNARY_OP(sign, x > C(0) ? C(1) : (x < C(0) ? C(-1) : x))
UNARY_OP(sigmoid, C(1) / (C(1) + exp(-x)))

PARAM_OP(affine, x * a + b)
PARAM_OP(powf, pow(x, a))
PARAM_OP(elu, x > C(0) ? x : a * (exp(x) - C(1)))
PARAM_OP(clamp, x < a ? a : (x > b ? b : x))
PARAM_OP(leakyRelu, x > C(0) ? x : a * x)

#define UNARY_DT(NAME, DT, T) \
  RT_KERNEL void unary_##NAME##_##DT(T* y, const T* x, i64 yOff, i64 xOff, u64 n) { RT_GRID_DEP(); \
    unary_contig(y + yOff, x + xOff, n, Op_##NAME()); } \
  RT_KERNEL void unary_##NAME##_##DT##_strided(T* y, const T* x, Geom g) { RT_GRID_DEP(); \
    unary_strided(y, x, g, Op_##NAME()); }
#define PARAM_DT(NAME, DT, T, C) \
  RT_KERNEL void unary_##NAME##_##DT(T* y, const T* x, i64 yOff, i64 xOff, u64 n, C a, C b) { RT_GRID_DEP(); \
    unary_contig(y + yOff, x + xOff, n, Op_##NAME<C>{a, b}); } \
  RT_KERNEL void unary_##NAME##_##DT##_strided(T* y, const T* x, Geom g, C a, C b) { RT_GRID_DEP(); \
    unary_strided(y, x, g, Op_##NAME<C>{a, b}); }

#define UNARY_ALL(NAME) UNARY_DT(NAME, f32, float) UNARY_DT(NAME, f64, double) \
  UNARY_DT(NAME, f16, f16) UNARY_DT(NAME, bf16, bf16)
#define PARAM_ALL(NAME) PARAM_DT(NAME, f32, float, float) PARAM_DT(NAME, f64, double, double) \
  PARAM_DT(NAME, f16, f16, float) PARAM_DT(NAME, bf16, bf16, float)

UNARY_ALL(exp) UNARY_ALL(log) UNARY_ALL(sin) UNARY_ALL(cos) UNARY_ALL(tanh)
UNARY_ALL(neg) UNARY_ALL(recip) UNARY_ALL(sqr) UNARY_ALL(sqrt) UNARY_ALL(gelu)
UNARY_ALL(geluErf) UNARY_ALL(erf) UNARY_ALL(relu) UNARY_ALL(silu) UNARY_ALL(abs)
UNARY_ALL(ceil) UNARY_ALL(floor) UNARY_ALL(round) UNARY_ALL(sign) UNARY_ALL(sigmoid)
PARAM_ALL(affine) PARAM_ALL(powf) PARAM_ALL(elu) PARAM_ALL(clamp) PARAM_ALL(leakyRelu)
