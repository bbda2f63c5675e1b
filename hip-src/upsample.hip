// upsample.hip: resampling of x [n, c, h, w] (any strides) to a new contiguous
// y [n, c, outH, outW], PyTorch's 'nearest' and 'bilinear' (F.interpolate with a size).
//
// Kernels:
//   upsample_nearest_<W>(E* y, const E* x, i64 xOff, u64 total, u64 c, u64 h, u64 w, u64 outH, u64 outW,
//                        i64 sN, i64 sC, i64 sH, i64 sW, float scaleH, float scaleW)
//       W b2 b4 b8 (the float dtypes by width): a pure move, bits unchanged. The source index
//       is PyTorch's: min(floor((float)dst * scale), in - 1) with scale = (float)(in / out)
//       computed by the host (src/ops/cpu/upsample.ts nearestIndex: the same f32 steps).
//   upsample_bilinear_<DT>(T* y, const T* x, i64 xOff, u64 total, u64 c, u64 h, u64 w, u64 outH, u64 outW,
//                          i64 sN, i64 sC, i64 sH, i64 sW, C scaleH, C scaleW, u32 alignCorners)
//       DT f32 f64 f16 bf16; C is f64 for f64, f32 otherwise (half types load into f32 and
//       round once on store). scale = (in - 1) / (out - 1) (0 when out = 1) with alignCorners,
//       else in / out with half-pixel centres clamped at 0, as linearTaps in the CPU reference.
// total = n * c * outH * outW; strides and xOff in elements; y is written at 0 .. total - 1.
#include "compat.h"

// (plane, row, col) of output element i and the storage offset of its plane in x
template <class I>
RT_DEVICE void split_out(I i, u64 c, u64 outH, u64 outW, i64 sN, i64 sC, I& oy, I& ox, i64& plane) {
  ox = i % (I)outW;
  const I t = i / (I)outW;
  oy = t % (I)outH;
  const I p = t / (I)outH;
  const I ni = p / (I)c;
  plane = (i64)ni * sN + (i64)(p - ni * (I)c) * sC;
}

RT_DEVICE i64 nearest_src(u64 dst, float scale, u64 in) {
  const u64 s = (u64)floorf((float)dst * scale);
  return (i64)(s < in ? s : in - 1);
}

template <class E>
RT_DEVICE void nearest_impl(E* y, const E* x, u64 total, u64 c, u64 h, u64 w, u64 outH, u64 outW,
    i64 sN, i64 sC, i64 sH, i64 sW, float scaleH, float scaleW) {
  grid_loop(total, [&](auto i) {
    decltype(i) oy, ox;
    i64 plane;
    split_out(i, c, outH, outW, sN, sC, oy, ox, plane);
    y[i] = x[plane + nearest_src(oy, scaleH, h) * sH + nearest_src(ox, scaleW, w) * sW];
  });
}

RT_DEVICE float floor_c(float v) { return floorf(v); }
RT_DEVICE double floor_c(double v) { return floor(v); }

// one axis of the bilinear taps: the two source cells and the weight of the second
template <class C>
RT_DEVICE void linear_tap(u64 dst, C scale, u64 in, bool alignCorners, i64& i0, i64& i1, C& l1) {
  C src = alignCorners ? scale * (C)dst : scale * ((C)dst + (C)0.5) - (C)0.5;
  if (src < (C)0) src = (C)0;
  const i64 last = (i64)in - 1;
  const i64 f = (i64)floor_c(src);
  i0 = f < last ? f : last;
  i1 = i0 < last ? i0 + 1 : i0;
  l1 = src - (C)i0;
}

template <class T>
RT_DEVICE void bilinear_impl(T* y, const T* x, u64 total, u64 c, u64 h, u64 w, u64 outH, u64 outW,
    i64 sN, i64 sC, i64 sH, i64 sW, typename Elem<T>::C scaleH, typename Elem<T>::C scaleW, bool alignCorners) {
  typedef typename Elem<T>::C C;
  grid_loop(total, [&](auto i) {
    decltype(i) oy, ox;
    i64 plane;
    split_out(i, c, outH, outW, sN, sC, oy, ox, plane);
    i64 iy0, iy1, ix0, ix1;
    C ly, lx;
    linear_tap<C>(oy, scaleH, h, alignCorners, iy0, iy1, ly);
    linear_tap<C>(ox, scaleW, w, alignCorners, ix0, ix1, lx);
    const T* r0 = x + plane + iy0 * sH;
    const T* r1 = x + plane + iy1 * sH;
    const C a = Elem<T>::load(r0[ix0 * sW]), b = Elem<T>::load(r0[ix1 * sW]);
    const C d = Elem<T>::load(r1[ix0 * sW]), e = Elem<T>::load(r1[ix1 * sW]);
    const C kx = (C)1 - lx, ky = (C)1 - ly;
    y[i] = Elem<T>::store(ky * (kx * a + lx * b) + ly * (kx * d + lx * e));
  });
}

#define NEAREST(W, E) \
  RT_KERNEL void upsample_nearest_##W(E* y, const E* x, i64 xOff, u64 total, u64 c, u64 h, u64 w, u64 outH, u64 outW, \
      i64 sN, i64 sC, i64 sH, i64 sW, float scaleH, float scaleW) { \
    nearest_impl(y, x + xOff, total, c, h, w, outH, outW, sN, sC, sH, sW, scaleH, scaleW); }

NEAREST(b2, u16)
NEAREST(b4, u32)
NEAREST(b8, u64)

#define BILINEAR(DT, T, C) \
  RT_KERNEL void upsample_bilinear_##DT(T* y, const T* x, i64 xOff, u64 total, u64 c, u64 h, u64 w, u64 outH, u64 outW, \
      i64 sN, i64 sC, i64 sH, i64 sW, C scaleH, C scaleW, u32 alignCorners) { \
    bilinear_impl(y, x + xOff, total, c, h, w, outH, outW, sN, sC, sH, sW, scaleH, scaleW, alignCorners != 0u); }

BILINEAR(f32, float, float)
BILINEAR(f64, double, double)
BILINEAR(f16, f16, float)
BILINEAR(bf16, bf16, float)
