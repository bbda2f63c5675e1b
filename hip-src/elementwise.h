// elementwise.h: the loops every elementwise family shares (unary, binary, compare, where,
// cast). A family supplies a functor over compute values; these loops handle offsets, the
// 16-byte vector path for contiguous aligned data, scalar tails, and the strided path.
#pragma once
#include "compat.h"

// y[i] = f(x[i]) over n contiguous elements. The vector path needs every pointer 16-byte
// aligned and both types the same width; otherwise each thread takes one element at a time.
template <class TY, class TX, class F>
RT_DEVICE void map1_contig(TY* y, const TX* x, u64 n, F f) {
  if (sizeof(TY) == sizeof(TX) && aligned16(y) && aligned16(x)) {
    constexpr int N = Vec16<TX>::N;
    const u64 nv = n / N;
    typedef Vec16<TX> VX;
    typedef Vec16<TY> VY;
    grid_loop64(nv, [&](auto i) {
      const VX a = reinterpret_cast<const VX*>(x)[i];
      VY r;
#pragma unroll
      for (int k = 0; k < N; k++) r.v[k] = f(a.v[k]);
      reinterpret_cast<VY*>(y)[i] = r;
    });
    const u64 t = nv * N + global_thread();
    if (t < n) y[t] = f(x[t]);
  } else {
    grid_loop64(n, [&](auto i) { y[i] = f(x[i]); });
  }
}

template <class TY, class TA, class TB, class F>
RT_DEVICE void map2_contig(TY* y, const TA* a, const TB* b, u64 n, F f) {
  if (sizeof(TY) == sizeof(TA) && sizeof(TA) == sizeof(TB) && aligned16(y) && aligned16(a) && aligned16(b)) {
    constexpr int N = Vec16<TA>::N;
    const u64 nv = n / N;
    typedef Vec16<TA> VA;
    typedef Vec16<TB> VB;
    typedef Vec16<TY> VY;
    grid_loop64(nv, [&](auto i) {
      const VA va = reinterpret_cast<const VA*>(a)[i];
      const VB vb = reinterpret_cast<const VB*>(b)[i];
      VY r;
#pragma unroll
      for (int k = 0; k < N; k++) r.v[k] = f(va.v[k], vb.v[k]);
      reinterpret_cast<VY*>(y)[i] = r;
    });
    const u64 t = nv * N + global_thread();
    if (t < n) y[t] = f(a[t], b[t]);
  } else {
    grid_loop64(n, [&](auto i) { y[i] = f(a[i], b[i]); });
  }
}

// where: three inputs; the condition is u8, so the vector path would mix widths. A scalar loop
// with 32/64-bit indexing is used; the loads still coalesce.
template <class TY, class TC, class TA, class TB, class F>
RT_DEVICE void map3_contig(TY* y, const TC* c, const TA* a, const TB* b, u64 n, F f) {
  grid_loop64(n, [&](auto i) { y[i] = f(c[i], a[i], b[i]); });
}

// Strided forms: g describes the output (operand 0) and inputs 1..K-1.
template <class TY, class TX, class F>
RT_DEVICE void map1_strided(TY* y, const TX* x, const Geom& g, F f) {
  grid_loop((u64)g.numel, [&](auto i) {
    i64 off[2];
    geom_offsets<2>(g, i, off);
    y[off[0]] = f(x[off[1]]);
  });
}

template <class TY, class TA, class TB, class F>
RT_DEVICE void map2_strided(TY* y, const TA* a, const TB* b, const Geom& g, F f) {
  grid_loop((u64)g.numel, [&](auto i) {
    i64 off[3];
    geom_offsets<3>(g, i, off);
    y[off[0]] = f(a[off[1]], b[off[2]]);
  });
}

template <class TY, class TC, class TA, class TB, class F>
RT_DEVICE void map3_strided(TY* y, const TC* c, const TA* a, const TB* b, const Geom& g, F f) {
  grid_loop((u64)g.numel, [&](auto i) {
    i64 off[4];
    geom_offsets<4>(g, i, off);
    y[off[0]] = f(c[off[1]], a[off[2]], b[off[3]]);
  });
}
