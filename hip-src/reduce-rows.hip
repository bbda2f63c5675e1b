// reduce-rows.hip: sum, mean, max and min over the last dim of contiguous rows held in
// registers (rowreg.h): a group of G threads takes a row, each thread issues all its V 16-byte
// loads at once and folds them, so a row costs one round trip to memory and the rows a block
// holds stream through in order. For f32/f16/bf16 rows of whole 16-byte vectors at 16-byte
// boundaries that fit G * V vectors; reduce.hip takes every other reduction.
//
// Kernels (OP in sum mean max min; DT in f32 f16 bf16; T storage):
//   reduce_<OP>_<DT>_v<V>(T* y, const T* x, i64 yOff, i64 xOff, u32 rows, u32 cols, u32 group)
//       y[r] = OP of x[r * cols, (r + 1) * cols); V in 1 2 4 8 16; cols a multiple of
//       16 / sizeof(T), at most group * V vectors, x + xOff 16-byte aligned; group as rowreg.h.
// Semantics as reduce.hip: sums in f32, max and min propagate NaN; any grid is correct.
#include "rowreg.h"

enum FoldOp { FOLD_SUM, FOLD_MEAN, FOLD_MAX, FOLD_MIN };

template <int OP, class T, int V>
RT_DEVICE void reduce_reg(T* __restrict__ y, const T* __restrict__ x, u32 rows, u32 cols, u32 want) {
  constexpr bool EXT = OP == FOLD_MAX || OP == FOLD_MIN;
  __shared__ float shm[RT_REG_SLOTS];
  RegSlots<float> slots(shm);
  const RegGroup g(want);
  const u32 nv = cols / RegVec<T>::N;
  // the fill of a missing vector: the op's identity
  // (a statement per case: a conditional between the three objects is a stack temporary to
  // clang, and the missing-vector loads turn into flat loads through a pointer to it)
  uint4 fill = splat4(0u);
  if (OP == FOLD_MAX) fill = RegVec<T>::neg_inf();
  if (OP == FOLD_MIN) fill = RegVec<T>::pos_inf();
  reg_rows(g, rows, [&](u32 r, bool live) {
    uint4 a[V];
    reg_load(a, reg_span(x + (u64)r * cols, g.lane, g.size, live ? nv : 0u), fill);
    // one accumulator per vector, folded as a tree: no chain through the loads
    float f[V];
#pragma unroll
    for (int c = 0; c < V; c++) f[c] = EXT ? vec_ext<OP == FOLD_MAX, T>(a[c]) : vec_sum<T>(a[c]);
#pragma unroll
    for (int w = V / 2; w > 0; w /= 2) {
#pragma unroll
      for (int c = 0; c < w; c++) f[c] = OP == FOLD_MAX ? max_nan(f[2 * c], f[2 * c + 1]) : OP == FOLD_MIN ? min_nan(f[2 * c], f[2 * c + 1]) : f[2 * c] + f[2 * c + 1];
    }
    float v;
    if (OP == FOLD_MAX) v = reg_all(f[0], MaxOp<float>(), g.size, slots);
    else if (OP == FOLD_MIN) v = reg_all(f[0], MinOp<float>(), g.size, slots);
    else v = reg_all(f[0], SumOp<float>(), g.size, slots);
    if (OP == FOLD_MEAN) v = v / (float)cols;
    // every lane rounds (the same value): under the lane test the division's slow path spills
    const T o = Elem<T>::store(v);
    if (live && g.lane == 0u) y[r] = o;
  });
}

#define REDUCE_REG(OP, NAME, DT, T, V) \
  RT_ROW_KERNEL(RT_FOLD_MIN(V)) void reduce_##NAME##_##DT##_v##V(T* y, const T* x, i64 yOff, i64 xOff, u32 rows, u32 cols, u32 group) { RT_GRID_DEP(); \
    reduce_reg<OP, T, V>(y + yOff, x + xOff, rows, cols, group); }
#define REDUCE_REG_V(OP, NAME, DT, T) \
  REDUCE_REG(OP, NAME, DT, T, 1) REDUCE_REG(OP, NAME, DT, T, 2) REDUCE_REG(OP, NAME, DT, T, 4) \
  REDUCE_REG(OP, NAME, DT, T, 8) REDUCE_REG(OP, NAME, DT, T, 16)
#define REDUCE_REG_DT(DT, T) \
  REDUCE_REG_V(FOLD_SUM, sum, DT, T) REDUCE_REG_V(FOLD_MEAN, mean, DT, T) \
  REDUCE_REG_V(FOLD_MAX, max, DT, T) REDUCE_REG_V(FOLD_MIN, min, DT, T)

REDUCE_REG_DT(f32, float) REDUCE_REG_DT(f16, f16) REDUCE_REG_DT(bf16, bf16)
