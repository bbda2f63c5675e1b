// upsample.hip: resampling of x [n, c, h, w] (any strides) to a new contiguous
// y [n, c, outH, outW], PyTorch's 'nearest' and 'bilinear' (F.interpolate with a size).
//
// Kernels:
//   upsample_nearest_<W>(E* y, const E* x, i64 xOff, u64 total, u64 c, u64 h, u64 w, u64 outH, u64 outW,
//                        i64 sN, i64 sC, i64 sH, i64 sW, float scaleH, float scaleW)
//       W b2 b4 b8 (the float dtypes by width): a pure move, bits unchanged. The source index
//       is PyTorch's: min(floor((float)dst * scale), in - 1) with scale = (float)(in / out)
//       computed by the host (src/ops/cpu/upsample.ts nearestIndex: the same f32 steps).
//   upsample_nearest_rows_<W>(E* y, const E* x, i64 xOff, u64 rows, u64 c, u64 h, u64 outH,
//                             u64 vw, i64 sN, i64 sC, i64 sH, float scaleH, u32 dup)
//       The same op where every output row is whole 16-byte vectors of its source row: dup 1
//       when outW = w (columns map to themselves), dup 2 when outW = 2w with scaleW exactly
//       0.5 and outW < 2^24 (column j reads floor(j * 0.5) = j >> 1, exactly PyTorch's index:
//       (float)j is exact there), so a 16-byte vector of the source row becomes `dup` vectors
//       of the output, each element repeated. Rows map by nearest_src, as above. rows = n * c *
//       outH; vw = the vectors of an input row (w / (16 / W)); x + xOff and sN, sC, sH are
//       whole vectors and W is unit-stride. Each thread moves RT_UP_U vectors, loading all
//       before it stores any.
//   upsample_bilinear_<DT>(T* y, const T* x, i64 xOff, u64 total, u64 c, u64 h, u64 w, u64 outH, u64 outW,
//                          i64 sN, i64 sC, i64 sH, i64 sW, C scaleH, C scaleW, u32 alignCorners)
//       DT f32 f64 f16 bf16; C is f64 for f64, f32 otherwise (half types load into f32 and
//       round once on store). scale = (in - 1) / (out - 1) (0 when out = 1) with alignCorners,
//       else in / out with half-pixel centres clamped at 0, as linearTaps in the CPU reference.
//   upsample_bilinear_rows_<DT>(T* y, const T* x, i64 xOff, u64 vecs, u64 c, u64 h, u64 w,
//                               u64 outH, u64 outW, i64 sN, i64 sC, i64 sH, C scaleH, C scaleW,
//                               u32 alignCorners)
//       The same op a 16-byte output vector a thread (vecs of them): outW a multiple of
//       16 / sizeof(T), y 16-byte aligned, x's columns unit-stride, w < 2^31.
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

// ---- nearest, a row of whole vectors at a time ------------------------------------------------
#define RT_UP_U 2

// the four words of a 16-byte vector with each element repeated: two vectors (the first half's
// elements, then the second's)
template <int W> RT_DEVICE void dup_vec(const uint4& v, uint4& a, uint4& b);
template <> RT_DEVICE void dup_vec<2>(const uint4& v, uint4& a, uint4& b) {
  auto d = [](u32 w, u32& lo, u32& hi) { lo = (w & 0xffffu) * 0x10001u; hi = (w >> 16) * 0x10001u; };
  d(v.x, a.x, a.y); d(v.y, a.z, a.w); d(v.z, b.x, b.y); d(v.w, b.z, b.w);
}
template <> RT_DEVICE void dup_vec<4>(const uint4& v, uint4& a, uint4& b) {
  a = make_uint4(v.x, v.x, v.y, v.y); b = make_uint4(v.z, v.z, v.w, v.w);
}
template <> RT_DEVICE void dup_vec<8>(const uint4& v, uint4& a, uint4& b) {
  a = make_uint4(v.x, v.y, v.x, v.y); b = make_uint4(v.z, v.w, v.z, v.w);
}

// source vector of output vector slot i (of rows * vw): its output row, and where it is in x
template <class I>
RT_DEVICE i64 nearest_row_src(I i, u64 c, u64 h, u64 outH, u64 vw, i64 sN, i64 sC, i64 sH, float scaleH, int per) {
  const I j = i % (I)vw, orow = i / (I)vw;
  const I oy = orow % (I)outH, p = orow / (I)outH;
  const I ni = p / (I)c;
  return (i64)ni * sN + (i64)(p - ni * (I)c) * sC + nearest_src(oy, scaleH, h) * sH + (i64)j * per;
}

template <int W>
RT_DEVICE void nearest_rows(uint4* y, const u8* x, u64 rows, u64 c, u64 h, u64 outH, u64 vw,
    i64 sN, i64 sC, i64 sH, float scaleH, u32 dup) {
  constexpr int per = 16 / W;
  const u64 total = rows * vw, tile = (u64)blockDim.x * RT_UP_U;
  const bool narrow = total <= 0xffffffffull;
  for (u64 t0 = (u64)blockIdx.x * tile; t0 < total; t0 += (u64)gridDim.x * tile) {
    uint4 v[RT_UP_U];
    u64 at[RT_UP_U];
#pragma unroll
    for (int u = 0; u < RT_UP_U; u++) {
      at[u] = t0 + threadIdx.x + (u64)u * blockDim.x;
      const u64 i = at[u] < total ? at[u] : 0;
      const i64 e = narrow ? nearest_row_src((u32)i, c, h, outH, vw, sN, sC, sH, scaleH, per)
                           : nearest_row_src(i, c, h, outH, vw, sN, sC, sH, scaleH, per);
      v[u] = *reinterpret_cast<const uint4*>(x + e * W);
    }
#pragma unroll
    for (int u = 0; u < RT_UP_U; u++) {
      if (at[u] >= total) continue;
      if (dup == 2u) {
        uint4 a, b;
        dup_vec<W>(v[u], a, b);
        y[2 * at[u]] = a;
        y[2 * at[u] + 1] = b;
      } else {
        y[at[u]] = v[u];
      }
    }
  }
}

#define NEAREST(W, E) \
  RT_KERNEL void upsample_nearest_##W(E* y, const E* x, i64 xOff, u64 total, u64 c, u64 h, u64 w, u64 outH, u64 outW, \
      i64 sN, i64 sC, i64 sH, i64 sW, float scaleH, float scaleW) { \
    nearest_impl(y, x + xOff, total, c, h, w, outH, outW, sN, sC, sH, sW, scaleH, scaleW); }

NEAREST(b2, u16)
NEAREST(b4, u32)
NEAREST(b8, u64)

#define NEAREST_ROWS(W, B) \
  RT_KERNEL void upsample_nearest_rows_##W(uint4* y, const u8* x, i64 xOff, u64 rows, u64 c, u64 h, u64 outH, u64 vw, \
      i64 sN, i64 sC, i64 sH, float scaleH, u32 dup) { \
    nearest_rows<B>(y, x + xOff * B, rows, c, h, outH, vw, sN, sC, sH, scaleH, dup); }

NEAREST_ROWS(b2, 2)
NEAREST_ROWS(b4, 4)
NEAREST_ROWS(b8, 8)

// The same op a 16-byte output vector a thread, for outputs whose rows are whole vectors and
// inputs whose columns are unit-stride (w < 2^31): the plane, row and row taps are worked out
// once a vector, not once an element, the column taps in 32 bits (linear_tap's arithmetic:
// the same cells and weights), and the vector goes out in one store.
template <class T>
RT_DEVICE void bilinear_rows(T* y, const T* x, u64 vecs, u64 c, u64 h, u64 w, u64 outH, u64 outW,
    i64 sN, i64 sC, i64 sH, typename Elem<T>::C scaleH, typename Elem<T>::C scaleW, bool alignCorners) {
  typedef typename Elem<T>::C C;
  constexpr int N = Vec16<T>::N;
  const u64 vw = outW / N;
  const u32 last = (u32)w - 1u;
  grid_loop(vecs, [&](auto i) {
    typedef decltype(i) I;
    // vector i is vector jv of output row i / vw; split_out finds that row's plane and oy
    I oy, jv;
    i64 plane;
    split_out(i, c, outH, vw, sN, sC, oy, jv, plane);
    i64 iy0, iy1;
    C ly;
    linear_tap<C>(oy, scaleH, h, alignCorners, iy0, iy1, ly);
    const T* r0 = x + plane + iy0 * sH;
    const T* r1 = x + plane + iy1 * sH;
    const C ky = (C)1 - ly;
    const u32 ox0 = (u32)jv * N;
    Vec16<T> o;
#pragma unroll
    for (int e = 0; e < N; e++) {
      C src = alignCorners ? scaleW * (C)(ox0 + e) : scaleW * ((C)(ox0 + e) + (C)0.5) - (C)0.5;
      if (src < (C)0) src = (C)0;
      const u32 f = (u32)floor_c(src), ix0 = f < last ? f : last, ix1 = ix0 < last ? ix0 + 1u : ix0;
      const C lx = src - (C)ix0, kx = (C)1 - lx;
      const C a = Elem<T>::load(r0[ix0]), b = Elem<T>::load(r0[ix1]);
      const C d = Elem<T>::load(r1[ix0]), f1 = Elem<T>::load(r1[ix1]);
      o.v[e] = Elem<T>::store(ky * (kx * a + lx * b) + ly * (kx * d + lx * f1));
    }
    reinterpret_cast<Vec16<T>*>(y)[i] = o;
  });
}

#define BILINEAR(DT, T, C) \
  RT_KERNEL void upsample_bilinear_##DT(T* y, const T* x, i64 xOff, u64 total, u64 c, u64 h, u64 w, u64 outH, u64 outW, \
      i64 sN, i64 sC, i64 sH, i64 sW, C scaleH, C scaleW, u32 alignCorners) { \
    bilinear_impl(y, x + xOff, total, c, h, w, outH, outW, sN, sC, sH, sW, scaleH, scaleW, alignCorners != 0u); }

BILINEAR(f32, float, float)
BILINEAR(f64, double, double)
BILINEAR(f16, f16, float)
BILINEAR(bf16, bf16, float)

#define BILINEAR_ROWS(DT, T, C) \
  RT_KERNEL void upsample_bilinear_rows_##DT(T* y, const T* x, i64 xOff, u64 vecs, u64 c, u64 h, u64 w, u64 outH, u64 outW, \
      i64 sN, i64 sC, i64 sH, C scaleH, C scaleW, u32 alignCorners) { \
    bilinear_rows(y, x + xOff, vecs, c, h, w, outH, outW, sN, sC, sH, scaleH, scaleW, alignCorners != 0u); }

BILINEAR_ROWS(f32, float, float)
BILINEAR_ROWS(f64, double, double)
BILINEAR_ROWS(f16, f16, float)
BILINEAR_ROWS(bf16, bf16, float)
