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
//   upsample_nearest_x2_<W>(uint4* y, const u8* x, i64 xOff, u32 tasks, u64 c, u64 h, u64 w,
//                           u64 strips, i64 sN, i64 sC, i64 sH)
//       Exactly 2x (outH = 2h, outW = 2w, both below 2^23, where PyTorch's f32 index is
//       exactly dst >> 1), x's rows whole 16-byte vectors as for upsample_nearest_rows. A task
//       is output column vector o of a plane and a strip of RT_UP2_ROWS input rows: it loads
//       the strip's vectors o >> 1 (all before any store) and writes half o & 1 of each, its
//       elements repeated, to the two output rows the input row feeds. tasks = n * c * strips *
//       2w / (16 / W) < 2^31 (32-bit task arithmetic), strips = ceil(h / RT_UP2_ROWS); a warp's stores are
//       contiguous.
//   upsample_bilinear_x2_<DT>(T* y, const T* x, i64 xOff, u32 tasks, u64 c, u64 h, u64 w,
//                             u64 strips, i64 sN, i64 sC, i64 sH)
//       DT f32 f16 bf16. Bilinear without alignCorners at exactly 2x (scale 0.5, outH and outW
//       below 2^23), x's rows whole 16-byte vectors as above: the same tasks; a task loads the
//       RT_UP2_ROWS + 2 input rows its strip's output rows read (the strip and one either side,
//       clamped), each as its vector and the one element beside it, interpolates each row
//       along the columns once, and blends those into its 2 * RT_UP2_ROWS output vectors.
//       The cells, weights and blend are the element kernel's, bit for bit (bilinear_x2).
// total = n * c * outH * outW; strides and xOff in elements; y is written at 0 .. total - 1.
#include "compat.h"
#include "rowreg.h"

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

// k0 * v0 + k1 * v1 as one product and one fused multiply-add, written out: left to
// contraction, the compiler may fuse either product, and not the same one in every kernel, and
// the paths below would no longer agree bit for bit. Every blend of every bilinear kernel is
// this, in this order: along the columns (kx, lx) in each source row, then across the rows.
RT_DEVICE float lerp_c(float k0, float v0, float k1, float v1) { return fmaf(k1, v1, k0 * v0); }
RT_DEVICE double lerp_c(double k0, double v0, double k1, double v1) { return fma(k1, v1, k0 * v0); }

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
    y[i] = Elem<T>::store(lerp_c(ky, lerp_c(kx, a, lx, b), ly, lerp_c(kx, d, lx, e)));
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
      i64 sN, i64 sC, i64 sH, i64 sW, float scaleH, float scaleW) { RT_GRID_DEP(); \
    nearest_impl(y, x + xOff, total, c, h, w, outH, outW, sN, sC, sH, sW, scaleH, scaleW); }

NEAREST(b2, u16)
NEAREST(b4, u32)
NEAREST(b8, u64)

#define NEAREST_ROWS(W, B) \
  RT_KERNEL void upsample_nearest_rows_##W(uint4* y, const u8* x, i64 xOff, u64 rows, u64 c, u64 h, u64 outH, u64 vw, \
      i64 sN, i64 sC, i64 sH, float scaleH, u32 dup) { RT_GRID_DEP(); \
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
      o.v[e] = Elem<T>::store(lerp_c(ky, lerp_c(kx, a, lx, b), ly, lerp_c(kx, d, lx, f1)));
    }
    reinterpret_cast<Vec16<T>*>(y)[i] = o;
  });
}

#define BILINEAR(DT, T, C) \
  RT_KERNEL void upsample_bilinear_##DT(T* y, const T* x, i64 xOff, u64 total, u64 c, u64 h, u64 w, u64 outH, u64 outW, \
      i64 sN, i64 sC, i64 sH, i64 sW, C scaleH, C scaleW, u32 alignCorners) { RT_GRID_DEP(); \
    bilinear_impl(y, x + xOff, total, c, h, w, outH, outW, sN, sC, sH, sW, scaleH, scaleW, alignCorners != 0u); }

BILINEAR(f32, float, float)
BILINEAR(f64, double, double)
BILINEAR(f16, f16, float)
BILINEAR(bf16, bf16, float)

#define BILINEAR_ROWS(DT, T, C) \
  RT_KERNEL void upsample_bilinear_rows_##DT(T* y, const T* x, i64 xOff, u64 vecs, u64 c, u64 h, u64 w, u64 outH, u64 outW, \
      i64 sN, i64 sC, i64 sH, C scaleH, C scaleW, u32 alignCorners) { RT_GRID_DEP(); \
    bilinear_rows(y, x + xOff, vecs, c, h, w, outH, outW, sN, sC, sH, scaleH, scaleW, alignCorners != 0u); }

BILINEAR_ROWS(f32, float, float)
BILINEAR_ROWS(f64, double, double)
BILINEAR_ROWS(f16, f16, float)
BILINEAR_ROWS(bf16, bf16, float)

// ---- exactly 2x: a thread per output column vector and a strip of input rows --------------------
// Input rows a task covers: its loads all issue before any is used (the nearest kernel's 4
// vectors, the bilinear kernel's 6 vectors and 6 elements), and the bilinear kernel reads its
// strip's two neighbouring rows again for every 4 rows, not for every 1. src/ops/gpu/upsample.ts
// mirrors it (X2_ROWS).
#define RT_UP2_ROWS 4

// Task t of planes * strips * V (V output vectors a row, the column fastest, so a warp's
// stores are contiguous): its output vector o, first input row r0, plane p, and the plane's
// offset in x. Three 32-bit divisions a task (the host keeps tasks below 2^31: 2^37 and more
// output elements go to the other kernels) for 8 output vectors.
RT_DEVICE void x2_task(u32 t, u32 c, u32 strips, u32 V, i64 sN, i64 sC, u32& o, u32& r0, u32& p, i64& plane) {
  o = t % V;
  const u32 g = t / V;
  r0 = (g % strips) * (u32)RT_UP2_ROWS;
  p = g / strips;
  const u32 ni = p / c;
  plane = (i64)ni * sN + (i64)(p - ni * c) * sC;
}

// body(t) for every task t < tasks (< 2^31, so t + the grid never wraps)
template <class F>
RT_DEVICE void x2_loop(u32 tasks, F body) {
  const u32 stride = (u32)grid_threads();
  for (u32 t = (u32)global_thread(); t < tasks; t += stride) body(t);
}

// A strip's rows: all RT_UP2_ROWS (WHOLE), or those below h (the last strip of a plane whose h
// is no multiple of it). The whole strips, nearly all, have no test between their loads and
// their stores: a load whose value is used only past a branch is sunk below it by the compiler,
// and the strip's loads would then go out in two round trips, not one.
template <bool WHOLE> RT_DEVICE bool x2_row(u32 r, u64 h) { return WHOLE || r < (u32)h; }

template <int W, bool WHOLE>
RT_DEVICE void nearest_x2_strip(uint4* y, const u8* x, u64 h, u64 V, i64 sH, u32 o, u32 r0, u32 p, i64 plane) {
  // rows past h load the strip's first row instead and store nothing
  const u8* src = x + (plane + (i64)r0 * sH) * W + (u64)(o >> 1) * 16u;
  uint4 v[RT_UP2_ROWS];
#pragma unroll
  for (int s = 0; s < RT_UP2_ROWS; s++) v[s] = *reinterpret_cast<const uint4*>(src + (x2_row<WHOLE>(r0 + (u32)s, h) ? (i64)s * sH * W : 0));
  const bool hi = (o & 1u) != 0u;
  uint4* out = y + ((u64)p * (2 * h) + 2 * (u64)r0) * V + (u64)o;
#pragma unroll
  for (int s = 0; s < RT_UP2_ROWS; s++) {
    if (!x2_row<WHOLE>(r0 + (u32)s, h)) break;
    uint4 a, b;
    dup_vec<W>(v[s], a, b);
    const uint4 q = hi ? b : a;
    out[(u64)(2 * s) * V] = q;
    out[(u64)(2 * s + 1) * V] = q;
  }
}

template <int W>
RT_DEVICE void nearest_x2(uint4* y, const u8* x, u32 tasks, u64 c, u64 h, u64 w, u64 strips, i64 sN, i64 sC, i64 sH) {
  const u64 V = 2 * (w / (u64)(16 / W));
  x2_loop(tasks, [&](u32 t) {
    u32 o, r0, p;
    i64 plane;
    x2_task(t, (u32)c, (u32)strips, (u32)V, sN, sC, o, r0, p, plane);
    if (r0 + RT_UP2_ROWS <= (u32)h) nearest_x2_strip<W, true>(y, x, h, V, sH, o, r0, p, plane);
    else nearest_x2_strip<W, false>(y, x, h, V, sH, o, r0, p, plane);
  });
}

// one element of x in f32, as RegVec<T>::unpack widens a vector's
RT_DEVICE float elem_f32(float v) { return v; }
RT_DEVICE float elem_f32(bf16 v) { return bits_f32((u32)v.bits << 16); }
RT_DEVICE float elem_f32(f16 v) { return f16_widen_hw(v.bits); }

// Output vector o covers output columns oN .. oN + N - 1, which read input columns k - 1 .. k + 1
// around k = ox >> 1: half o & 1 of input vector j = o >> 1 and one element beside it (left of
// the vector for the first half, right of it for the second; clamped, as linear_tap's cells
// are). win[] is those N/2 + 2 columns in order. Output column ox = 2k reads (k - 1, k) with
// weight 0.75 on k, except ox = 0: (0, 1) with weight 0 (src clamps to 0); ox = 2k + 1 reads
// (k, k + 1) with weight 0.25, k + 1 clamped to w - 1, which the clamped element beside the
// last vector already is. lx[e], kx[e]: the weights of output column oN + e.
template <class T>
RT_DEVICE void x2_columns(const uint4& v, float side, bool hi, bool first, const float (&lx)[RegVec<T>::N],
    const float (&kx)[RegVec<T>::N], float (&hrow)[RegVec<T>::N]) {
  constexpr int N = RegVec<T>::N, H2 = N / 2;
  float f[N];
  RegVec<T>::unpack(v, f);
  float win[H2 + 2];
#pragma unroll
  for (int i = 0; i < H2 + 2; i++) win[i] = hi ? (i == H2 + 1 ? side : f[H2 - 1 + i]) : (i == 0 ? side : f[i - 1]);
#pragma unroll
  for (int e = 0; e < N; e++) {
    const int m = e >> 1;
    const float a = (e & 1) ? win[m + 1] : win[m];
    const float b = (e & 1) ? win[m + 2] : (e == 0 && first ? win[2] : win[m + 1]);
    hrow[e] = lerp_c(kx[e], a, lx[e], b);
  }
}

// A vector of results rounded to T, RegVec<T>::pack<true>'s bits. On NVIDIA the 16-bit types
// round in hardware, a pair an instruction, exact but for NaN's pattern; pack<true> tests each
// pair for NaN, and one test of the whole vector (a NaN only where an input has one, nearly
// never) costs less: four setp.nan, each of two values (nvcc makes eight of f != f, and joins
// them in three more).
#if RT_CUDA
RT_DEVICE bool any_nan8(const float (&f)[8]) {
  u32 r;
  asm("{ .reg .pred p;\n\t"
      "setp.nan.f32 p, %1, %2;\n\t"
      "setp.nan.or.f32 p, %3, %4, p;\n\t"
      "setp.nan.or.f32 p, %5, %6, p;\n\t"
      "setp.nan.or.f32 p, %7, %8, p;\n\t"
      "selp.u32 %0, 1, 0, p; }"
      : "=r"(r) : "f"(f[0]), "f"(f[1]), "f"(f[2]), "f"(f[3]), "f"(f[4]), "f"(f[5]), "f"(f[6]), "f"(f[7]));
  return r != 0u;
}
#endif
template <class T> RT_DEVICE uint4 x2_pack(const float (&f)[RegVec<T>::N]) {
#if RT_CUDA
  if constexpr (RegVec<T>::N == 8) {
    if (__builtin_expect(!any_nan8(f), 1)) return RegVec<T>::template pack<false>(f);
  }
#endif
  return RegVec<T>::template pack<true>(f);
}

// A task's output rows 2r and 2r + 1 for r in its strip read input rows (r - 1, r) and (r,
// r + 1), clamped (row 0: (0, min(1, h - 1)) with weight 0, as linear_tap has it): each input
// row's column blend (x2_columns) is computed once and used by the two or three output rows
// that read it, which is where the element kernel computes the same value each time. Weights
// come from linear_tap itself; below 2^23 they are exact (0, 0.25, 0.75) and depend only on
// whether the output index is odd, even or 0, so those of the task's first three columns and
// rows are those of all its columns and rows.
template <class T, bool WHOLE>
RT_DEVICE void bilinear_x2_strip(T* y, const T* x, u64 h, u64 w, u64 V, i64 sH, u32 o, u32 r0, u32 p, i64 plane) {
  constexpr int N = RegVec<T>::N, R = RT_UP2_ROWS;
  const bool hi = (o & 1u) != 0u, first = o == 0u;
  const u32 k0 = (o >> 1) * (u32)N;
  const u32 side = hi ? (k0 + (u32)N < (u32)w ? k0 + (u32)N : (u32)w - 1u) : (k0 > 0u ? k0 - 1u : 0u);
  // input rows r0 - 1 .. r0 + R, clamped: R + 2 vectors and elements, all in flight at once
  const u32 lastRow = (u32)h - 1u;
  uint4 v[R + 2];
  T sd[R + 2];
#pragma unroll
  for (int q = 0; q < R + 2; q++) {
    u32 row = r0 + (u32)q;  // one past the row it stands for, so that r0 - 1 is no wrap
    row = row == 0u ? 0u : row - 1u;
    row = row > lastRow ? lastRow : row;
    const T* xr = x + plane + (i64)row * sH;
    v[q] = *reinterpret_cast<const uint4*>(xr + k0);
    sd[q] = xr[side];
  }
  // the weights: of output columns oN, oN + 1 (every odd one after) and oN + 2 (every even one
  // after); of output rows 2r0, 2r0 + 1 (every odd one) and 2r0 + 2 (every even one after)
  float lx[N], kx[N], lyE0, lyO, lyE;
  {
    i64 i0, i1;
    float l0, l1, l2;
    const u64 ox = (u64)o * (u64)N;
    linear_tap<float>(ox, 0.5f, w, false, i0, i1, l0);
    linear_tap<float>(ox + 1, 0.5f, w, false, i0, i1, l1);
    linear_tap<float>(ox + 2, 0.5f, w, false, i0, i1, l2);
#pragma unroll
    for (int e = 0; e < N; e++) { lx[e] = e == 0 ? l0 : (e & 1) ? l1 : l2; kx[e] = 1.0f - lx[e]; }
    const u64 oy = 2 * (u64)r0;
    linear_tap<float>(oy, 0.5f, h, false, i0, i1, lyE0);
    linear_tap<float>(oy + 1, 0.5f, h, false, i0, i1, lyO);
    linear_tap<float>(oy + 2, 0.5f, h, false, i0, i1, lyE);
  }
  float prev[N], cur[N];
  x2_columns<T>(v[0], elem_f32(sd[0]), hi, first, lx, kx, prev);
  x2_columns<T>(v[1], elem_f32(sd[1]), hi, first, lx, kx, cur);
  uint4* out = reinterpret_cast<uint4*>(y) + ((u64)p * (2 * h) + 2 * (u64)r0) * V + (u64)o;
#pragma unroll
  for (int s = 0; s < R; s++) {
    const u32 r = r0 + (u32)s;
    if (!x2_row<WHOLE>(r, h)) break;
    float next[N];
    x2_columns<T>(v[s + 2], elem_f32(sd[s + 2]), hi, first, lx, kx, next);
    const float ly = s == 0 ? lyE0 : lyE, ky = 1.0f - ly, kyO = 1.0f - lyO;
    const bool top = s == 0 && r == 0u;
    float even[N], odd[N];
#pragma unroll
    for (int e = 0; e < N; e++) {
      even[e] = lerp_c(ky, prev[e], ly, top ? next[e] : cur[e]);
      odd[e] = lerp_c(kyO, cur[e], lyO, next[e]);
    }
    out[(u64)(2 * s) * V] = x2_pack<T>(even);
    out[(u64)(2 * s + 1) * V] = x2_pack<T>(odd);
#pragma unroll
    for (int e = 0; e < N; e++) { prev[e] = cur[e]; cur[e] = next[e]; }
  }
}

template <class T>
RT_DEVICE void bilinear_x2(T* y, const T* x, u32 tasks, u64 c, u64 h, u64 w, u64 strips, i64 sN, i64 sC, i64 sH) {
  const u64 V = 2 * (w / (u64)RegVec<T>::N);
  x2_loop(tasks, [&](u32 t) {
    u32 o, r0, p;
    i64 plane;
    x2_task(t, (u32)c, (u32)strips, (u32)V, sN, sC, o, r0, p, plane);
    if (r0 + RT_UP2_ROWS <= (u32)h) bilinear_x2_strip<T, true>(y, x, h, w, V, sH, o, r0, p, plane);
    else bilinear_x2_strip<T, false>(y, x, h, w, V, sH, o, r0, p, plane);
  });
}

#define NEAREST_X2(W, B) \
  RT_KERNEL void upsample_nearest_x2_##W(uint4* y, const u8* x, i64 xOff, u32 tasks, u64 c, u64 h, u64 w, u64 strips, \
      i64 sN, i64 sC, i64 sH) { RT_GRID_DEP(); \
    nearest_x2<B>(y, x + xOff * B, tasks, c, h, w, strips, sN, sC, sH); }

NEAREST_X2(b2, 2)
NEAREST_X2(b4, 4)
NEAREST_X2(b8, 8)

#define BILINEAR_X2(DT, T) \
  RT_KERNEL void upsample_bilinear_x2_##DT(T* y, const T* x, i64 xOff, u32 tasks, u64 c, u64 h, u64 w, u64 strips, \
      i64 sN, i64 sC, i64 sH) { RT_GRID_DEP(); \
    bilinear_x2(y, x + xOff, tasks, c, h, w, strips, sN, sC, sH); }

BILINEAR_X2(f32, float)
BILINEAR_X2(f16, f16)
BILINEAR_X2(bf16, bf16)
