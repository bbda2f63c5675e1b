// rope.hip: rotary position embeddings, candle's three forms. Each thread rotates one pair
// (x[a], x[c]) by the angle of its position t and frequency i:
//   y[a] = x[a] cos - x[c] sin,  y[c] = x[c] cos + x[a] sin,   cos/sin [T, d/2] at (t, i).
//   halves       x [b, h, T, d]: (a, c) = (i, i + d/2) within each row of d
//   interleaved  x [b, h, T, d]: (a, c) = (2i, 2i + 1)
//   thd          x [b, T, h, d]: the halves pairs, position from dim 1
//
// Kernels (LAYOUT in halves interleaved thd; DT in f32 f64 f16 bf16; half types in f32):
//   rope_<LAYOUT>_<DT>(T* y, const T* x, const T* cos, const T* sin, i64 yOff, i64 xOff,
//                      i64 cOff, i64 sOff, u64 pairs, u64 s1, u64 s2, u64 half, i64 xs0,
//                      i64 xs1, i64 xs2)
// x is [b, s1, s2, 2*half] (s1 = h, s2 = T for halves and interleaved; s1 = T, s2 = h for thd)
// with strides xs0, xs1, xs2 and a unit-stride last dim (a head view of a fused projection
// reads in place, no copy first); y, cos and sin contiguous from their offsets; pairs =
// b * s1 * s2 * half.
#include "compat.h"

enum RopeLayout { ROPE_HALVES, ROPE_INTERLEAVED, ROPE_THD };

template <int L, class T>
RT_DEVICE void rope_pairs(T* y, const T* x, const T* cs, const T* sn, u64 pairs, u64 s1, u64 s2, u64 half, i64 xs0, i64 xs1,
                          i64 xs2) {
  typedef Elem<T> E;
  typedef typename E::C C;
  grid_loop(pairs, [&](auto p) {
    typedef decltype(p) I;
    const I hf = (I)half, row = p / hf, i = p - row * hf;
    const I i2 = row % (I)s2, i01 = row / (I)s2, i1 = i01 % (I)s1, i0 = i01 / (I)s1;
    const I t = L == ROPE_THD ? i1 : i2;
    const I a = L == ROPE_INTERLEAVED ? row * 2 * hf + 2 * i : row * 2 * hf + i;
    const I c = L == ROPE_INTERLEAVED ? a + 1 : a + hf;
    // x's element of a (and c): the same place in x's row
    const i64 xr = (i64)i0 * xs0 + (i64)i1 * xs1 + (i64)i2 * xs2 - (i64)row * 2 * (i64)hf;
    const C co = E::load(cs[t * hf + i]), si = E::load(sn[t * hf + i]);
    const C xa = E::load(x[xr + (i64)a]), xc = E::load(x[xr + (i64)c]);
    y[a] = E::store(xa * co - xc * si);
    y[c] = E::store(xc * co + xa * si);
  });
}

#define ROPE_ONE(NAME, L, DT, T) \
  RT_KERNEL void rope_##NAME##_##DT(T* y, const T* x, const T* cs, const T* sn, i64 yOff, i64 xOff, \
      i64 cOff, i64 sOff, u64 pairs, u64 s1, u64 s2, u64 half, i64 xs0, i64 xs1, i64 xs2) { RT_GRID_DEP(); \
    rope_pairs<L>(y + yOff, x + xOff, cs + cOff, sn + sOff, pairs, s1, s2, half, xs0, xs1, xs2); }
#define ROPE_DT(DT, T) ROPE_ONE(halves, ROPE_HALVES, DT, T) ROPE_ONE(interleaved, ROPE_INTERLEAVED, DT, T) \
  ROPE_ONE(thd, ROPE_THD, DT, T)

ROPE_DT(f32, float) ROPE_DT(f64, double) ROPE_DT(f16, f16) ROPE_DT(bf16, bf16)
