// reduce-ops.h: what a reduction op is, for the kernels of reduce.hip (runs along rows) and
// colreduce.hip (runs down columns): per-op state, identity, combine, finish, and how partial
// results park in the workspace between a split pass and the _final fold; plus widen(), the
// fastest exact storage-to-compute conversion per vendor.
#pragma once
#include "rowreduce.h"

// ---- per-op state, combine, identity, finish ----------------------------------------------
template <class A> struct ArgState { A v; u32 i; };

// Sums: floats in float/double; integers in unsigned arithmetic so overflow wraps (defined).
template <class T> struct SumAcc { typedef typename Elem<T>::C A; };
template <> struct SumAcc<i64> { typedef u64 A; };

template <class T, class A> struct SumR {
  typedef A S; typedef T Out;
  static RT_DEVICE S init() { return S(0); }
  static RT_DEVICE S elem(typename Elem<T>::C v, u64) { return (S)v; }
  static RT_DEVICE S combine(S a, S b) { return a + b; }
  static RT_DEVICE S shfl(S v, int m) { return shfl_xor(v, m); }
  static RT_DEVICE Out finish(S s, u64) { return Elem<T>::store((typename Elem<T>::C)s); }
  static RT_DEVICE void park(S s, A* pv, u32*, u64 at) { pv[at] = s; }
  static RT_DEVICE S fetch(const A* pv, const u32*, u64 at) { return pv[at]; }
};
template <class T, class A> struct MeanR : SumR<T, A> {
  static RT_DEVICE T finish(A s, u64 count) { return Elem<T>::store(s / (A)count); }
};
template <class T, bool MAX> struct ExtR {
  typedef typename Elem<T>::C A;
  typedef A S; typedef T Out;
  static RT_DEVICE S init() { return MAX ? lowest<A>() : highest<A>(); }
  static RT_DEVICE S elem(A v, u64) { return v; }
  static RT_DEVICE S combine(S a, S b) { return MAX ? MaxOp<A>()(a, b) : MinOp<A>()(a, b); }
  static RT_DEVICE S shfl(S v, int m) { return shfl_xor(v, m); }
  static RT_DEVICE Out finish(S s, u64) { return Elem<T>::store(s); }
  static RT_DEVICE void park(S s, A* pv, u32*, u64 at) { pv[at] = s; }
  static RT_DEVICE S fetch(const A* pv, const u32*, u64 at) { return pv[at]; }
};
template <class T, bool MAX> struct ArgR {
  typedef typename Elem<T>::C A;
  typedef ArgState<A> S; typedef u32 Out;
  // index 0xffffffff loses every tie, so the identity never wins over a real element
  static RT_DEVICE S init() { return S{ MAX ? lowest<A>() : highest<A>(), 0xffffffffu }; }
  static RT_DEVICE S elem(A v, u64 k) { return S{ v, (u32)k }; }
  static RT_DEVICE S combine(S a, S b) {
    const bool an = a.v != a.v, bn = b.v != b.v;
    bool takeB;
    if (an != bn) takeB = bn;                        // NaN is the extreme
    else if (!an && a.v != b.v) takeB = MAX ? b.v > a.v : b.v < a.v;
    else takeB = b.i < a.i;                          // equal: the first index wins
    return takeB ? b : a;
  }
  static RT_DEVICE S shfl(S s, int m) { return S{ shfl_xor(s.v, m), shfl_xor(s.i, m) }; }
  static RT_DEVICE Out finish(S s, u64) { return s.i; }
  static RT_DEVICE void park(S s, A* pv, u32* pi, u64 at) { pv[at] = s.v; pi[at] = s.i; }
  static RT_DEVICE S fetch(const A* pv, const u32* pi, u64 at) { return S{ pv[at], pi[at] }; }
};

template <class R> struct ROp {
  RT_DEVICE typename R::S operator()(typename R::S a, typename R::S b) const { return R::combine(a, b); }
  RT_DEVICE typename R::S shfl(typename R::S v, int m) const { return R::shfl(v, m); }
};

// Storage to compute type. On NVIDIA f16 widens exactly in one instruction (subnormals
// included) instead of compat.h's software conversion, which costs a branch and registers per
// element; NaN payloads may differ, which no result shows (stores canonicalize half NaNs and
// argmin/argmax return indices).
template <class T> RT_DEVICE typename Elem<T>::C widen(T x) { return Elem<T>::load(x); }
#if RT_CUDA
template <> RT_DEVICE float widen<f16>(f16 x) { return f16_widen_hw(x.bits); }
#endif
