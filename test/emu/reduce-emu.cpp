// reduce-emu.cpp: runs reduce.hip's kernels (reduce_<op>_<dt>_rows, _strided, _final, _rows32)
// and colreduce.hip's (reduce_<op>_<dt>_cols, folded by _final when segmented) on the host through their HIP path (hip-host/hip/hip_runtime.h: a block's threads as fibers,
// the wave and block reductions as real shuffles and barriers) at wave sizes 64 and 32, against
// references written here from the ops' definitions (reduce.hip's header: min/max propagate
// NaN, argmin/argmax take NaN as the extreme and the first index among equals, integer sums
// wrap, half types sum in f32). Cases: every mode (a thread, a wave, a block a task), one
// segment and several (the _final fold, in every mode), runs shorter than a wave, grids
// smaller than the tasks, a transposed view through the Geom, ties, NaN; for the column kernels
// 16-byte and element loads, a short last vector, tx from 2 to 32, segments. Outputs start
// poisoned.
// Prints one line per dtype and wave; exits 1 on a mismatch.
//   g++ -std=c++20 -O1 -D__HIP__ -Itest/emu/hip-host test/emu/reduce-emu.cpp && ./a.out
#include "../../hip-src/reduce.hip"
#include "../../hip-src/colreduce.hip"
#include <cstdio>
#include <string>

#include "emu-rng.h"

static int failures = 0, checks = 0;

enum Op { SUM, MEAN, MIN, MAX, ARGMIN, ARGMAX };
static const char* OP_NAME[] = {"sum", "mean", "min", "max", "argmin", "argmax"};

template <class T> struct Io;
template <> struct Io<float> {
  static constexpr const char* name = "f32";
  static float put(double v) { return (float)v; }
  static double get(float v) { return v; }
  static constexpr double eps = 1.0 / (1 << 23);
};
template <> struct Io<f16> {
  static constexpr const char* name = "f16";
  static f16 put(double v) { return f64_to_f16(v); }
  static double get(f16 v) { return f16_to_f32(v); }
  static constexpr double eps = 1.0 / 1024;
};
template <> struct Io<bf16> {
  static constexpr const char* name = "bf16";
  static bf16 put(double v) { return f64_to_bf16(v); }
  static double get(bf16 v) { return bf16_to_f32(v); }
  static constexpr double eps = 1.0 / 128;
};
template <> struct Io<i64> {
  static constexpr const char* name = "i64";
  static i64 put(double v) { return (i64)v; }
  static double get(i64 v) { return (double)v; }
  static constexpr double eps = 0;
};

// the entry points of one (op, dtype)
template <int OP, class T> struct K;
#define EMU_K(OPI, OP, DT, T)                                                                        \
  template <> struct K<OPI, T> {                                                                     \
    static constexpr auto rows = &reduce_##OP##_##DT##_rows, strided = &reduce_##OP##_##DT##_strided; \
    static constexpr auto fin = &reduce_##OP##_##DT##_final;                                         \
  };
#define EMU_K_DT(DT, T)                                                                               \
  EMU_K(SUM, sum, DT, T) EMU_K(MIN, min, DT, T) EMU_K(MAX, max, DT, T) EMU_K(ARGMIN, argmin, DT, T) \
  EMU_K(ARGMAX, argmax, DT, T)
EMU_K_DT(f32, float)
EMU_K_DT(f16, f16)
EMU_K_DT(bf16, bf16)
EMU_K_DT(i64, i64)
EMU_K(MEAN, mean, f32, float)
EMU_K(MEAN, mean, f16, f16)
EMU_K(MEAN, mean, bf16, bf16)
template <int OP, class T> struct KC;
#define EMU_KC(OPI, OP, DT, T) \
  template <> struct KC<OPI, T> { static constexpr auto cols = &reduce_##OP##_##DT##_cols; };
#define EMU_KC_DT(DT, T) EMU_KC(SUM, sum, DT, T) EMU_KC(MIN, min, DT, T) EMU_KC(MAX, max, DT, T) EMU_KC(ARGMIN, argmin, DT, T) EMU_KC(ARGMAX, argmax, DT, T)
EMU_KC_DT(f32, float)
EMU_KC_DT(f16, f16)
EMU_KC_DT(bf16, bf16)
EMU_KC_DT(i64, i64)
EMU_KC(MEAN, mean, f32, float)
EMU_KC(MEAN, mean, f16, f16)
EMU_KC(MEAN, mean, bf16, bf16)
template <int OP, class T> struct K32;
#define EMU_K32(OPI, OP, DT, T) \
  template <> struct K32<OPI, T> { static constexpr auto rows32 = &reduce_##OP##_##DT##_rows32; };
#define EMU_K32_DT(DT, T) EMU_K32(SUM, sum, DT, T) EMU_K32(MEAN, mean, DT, T) EMU_K32(MIN, min, DT, T) EMU_K32(MAX, max, DT, T)
EMU_K32_DT(f32, float)
EMU_K32_DT(f16, f16)
EMU_K32_DT(bf16, bf16)

// the reference of one run of values: a value (sum, mean, min, max) or an index (arg ops), and
// the scale of the sum's terms
struct Want {
  double v;
  double scale;
};
template <class T> static Want reference(int op, const std::vector<double>& xs) {
  const size_t n = xs.size();
  if (op == SUM || op == MEAN) {
    if (std::is_same_v<T, i64>) {
      uint64_t s = 0;
      for (double x : xs) s += (uint64_t)(i64)x;
      return {(double)(i64)s, 0};
    }
    double s = 0, sc = 0;
    for (double x : xs) { s += x; sc += std::fabs(x); }
    return op == SUM ? Want{s, sc} : Want{s / (double)n, sc / (double)n};
  }
  if (op == MIN || op == MAX) {
    double m = op == MAX ? -INFINITY : INFINITY;
    for (double x : xs) {
      if (x != x) return {NAN, 0};
      m = op == MAX ? std::max(m, x) : std::min(m, x);
    }
    return {m, 0};
  }
  size_t best = 0;
  for (size_t i = 1; i < n; i++) {
    const double a = xs[best], b = xs[i];
    if (a != a) break;  // the first NaN is the extreme
    if (b != b || (op == ARGMAX ? b > a : b < a)) best = i;
  }
  return {(double)best, 0};
}

// an output as a number: an index (arg ops) or the value
template <class Y, class T> static double shown(Y got) {
  if constexpr (std::is_same_v<Y, u32> && !std::is_same_v<T, u32>) return (double)got;
  else return Io<T>::get(got);
}
template <class Y, class T> static bool matches(int op, Y got, Want want) {
  const double g = shown<Y, T>(got);
  if (op == ARGMIN || op == ARGMAX) return g == want.v;
  if (want.v != want.v) return g != g;
  if (op == MIN || op == MAX || std::is_same_v<T, i64>) return g == want.v;
  return std::fabs(g - want.v) <= Io<T>::eps * std::fabs(want.v) + 1e-5 * want.scale;
}

// x [outer, inner] drawn from a small set (ties), with NaNs in some rows (floats)
template <class T> static std::vector<T> draw(Rng& rng, size_t n, bool nans) {
  std::vector<T> x(n);
  for (size_t i = 0; i < n; i++) {
    double v = std::is_same_v<T, i64> ? (double)((i64)(rng.uni(0, 1) * 2e6) - 1000000) * 1000003 : std::round(rng.uni(-20, 20)) / 4;
    if (nans && !std::is_same_v<T, i64> && rng.uni(0, 1) < 0.01) v = NAN;
    x[i] = Io<T>::put(v);
  }
  return x;
}

template <int OP, class T> static void case_rows(int wave, u64 outer, u64 inner, u64 segLen, u32 mode, unsigned grid, unsigned block, bool strided, Rng& rng) {
  typedef K<OP, T> KK;
  using Out = std::conditional_t<OP == ARGMIN || OP == ARGMAX, u32, T>;
  using A = std::conditional_t<std::is_same_v<T, i64>, std::conditional_t<OP == SUM, u64, i64>, std::conditional_t<std::is_same_v<T, double>, double, float>>;
  const std::vector<T> xs = draw<T>(rng, outer * inner + 3, true);
  const u64 segs = segLen == 0 || segLen >= inner ? 1 : (inner + segLen - 1) / segLen;
  std::vector<Out> y(outer);
  std::memset((void*)y.data(), 0xa5, outer * sizeof(Out));
  std::vector<A> pv(segs * outer);
  std::vector<u32> pi(segs * outer);
  // strided: x[o, r] at 3 + o + r * outer (a transposed view)
  Geom g{};
  g.numel = (i64)(outer * inner);
  g.rank = 2;
  g.shape[0] = (i64)outer;
  g.shape[1] = (i64)inner;
  g.offset[0] = 3;
  g.strides[0][0] = 1;
  g.strides[0][1] = (i64)outer;
  emu::launch(grid, block, wave, [&] {
    if (strided) KK::strided(y.data(), pv.data(), pi.data(), xs.data(), 0, g, outer, inner, segLen, mode);
    else KK::rows(y.data(), pv.data(), pi.data(), xs.data(), 0, 3, outer, inner, segLen, mode);
  });
  if (segs > 1)
    emu::launch(grid, block, wave, [&] { KK::fin(y.data(), pv.data(), pi.data(), 0, outer, segs, inner, mode); });
  int bad = 0;
  for (u64 o = 0; o < outer; o++) {
    std::vector<double> run(inner);
    for (u64 r = 0; r < inner; r++) run[r] = Io<T>::get(xs[strided ? 3 + o + r * outer : 3 + o * inner + r]);
    const Want w = reference<T>(OP, run);
    checks++;
    if (!matches<Out, T>(OP, y[o], w) && bad++ < 3)
      std::printf("MISMATCH %s_%s_%s wave %d outer %llu inner %llu segLen %llu mode %u grid %u block %u: y[%llu] = %.8g, want %.8g\n", OP_NAME[OP],
          Io<T>::name, strided ? "strided" : "rows", wave, (unsigned long long)outer, (unsigned long long)inner, (unsigned long long)segLen, mode, grid, block,
          (unsigned long long)o, shown<Out, T>(y[o]), w.v);
  }
  if (bad) failures++;
}

// colreduce.hip: x[b, r, c] at 2 + b * xBatch + r * xRow + c, reduced over r; with several
// segments reduce.hip's _final folds them (outer = batch * cols, one thread a task)
template <int OP, class T> static void case_cols(int wave, u32 batch, u64 rows, u64 cols, i64 xRow, i64 xBatch, u64 segLen, u32 tx, bool vec, unsigned grid, Rng& rng) {
  using Out = std::conditional_t<OP == ARGMIN || OP == ARGMAX, u32, T>;
  using A = std::conditional_t<std::is_same_v<T, i64>, std::conditional_t<OP == SUM, u64, i64>, float>;
  constexpr int V = ColsV<T, OP == ARGMIN || OP == ARGMAX ? 4 : 8>::N;
  const i64 xOff = vec ? 0 : 2;
  const std::vector<T> xs = draw<T>(rng, (size_t)(xOff + (i64)(batch - 1) * xBatch + (i64)rows * xRow), true);
  const u64 outer = (u64)batch * cols;
  const u32 segs = (u32)((rows + segLen - 1) / segLen), tiles = (u32)((cols + (u64)tx * V - 1) / ((u64)tx * V));
  std::vector<Out> y(outer);
  std::memset((void*)y.data(), 0xa5, outer * sizeof(Out));
  std::vector<A> pv(segs * outer);
  std::vector<u32> pi(segs * outer);
  emu::launch(grid, 256, wave, [&] {
    KC<OP, T>::cols(y.data(), pv.data(), pi.data(), xs.data(), 0, xOff, rows, cols, xBatch, xRow, segLen, batch, segs, tiles, tx, vec ? 1 : 0);
  });
  if (segs > 1) emu::launch(grid, 256, wave, [&] { K<OP, T>::fin(y.data(), pv.data(), pi.data(), 0, outer, segs, rows, 0); });
  int bad = 0;
  for (u32 b = 0; b < batch; b++)
    for (u64 c = 0; c < cols; c++) {
      std::vector<double> run(rows);
      for (u64 r = 0; r < rows; r++) run[r] = Io<T>::get(xs[xOff + b * xBatch + (i64)r * xRow + (i64)c]);
      const Want w = reference<T>(OP, run);
      checks++;
      const u64 o = (u64)b * cols + c;
      if (!matches<Out, T>(OP, y[o], w) && bad++ < 3)
        std::printf("MISMATCH %s_%s_cols wave %d batch %u rows %llu cols %llu segLen %llu tx %u vec %d: y[%llu] = %.8g, want %.8g\n", OP_NAME[OP], Io<T>::name, wave,
            batch, (unsigned long long)rows, (unsigned long long)cols, (unsigned long long)segLen, tx, (int)vec, (unsigned long long)o, shown<Out, T>(y[o]), w.v);
    }
  if (bad) failures++;
}

template <int OP, class T> static void col_cases(int wave, Rng& rng) {
  constexpr int V = ColsV<T, OP == ARGMIN || OP == ARGMAX ? 4 : 8>::N;
  case_cols<OP, T>(wave, 2, 70, 5 * V, 6 * V, 80 * 6 * V, 70, 4, true, 3, rng);   // vectors, one segment
  case_cols<OP, T>(wave, 1, 300, 3 * V + 3, 4 * V, 0, 64, 2, true, 2, rng);       // a short last vector; segments
  case_cols<OP, T>(wave, 3, 9, 13, 17, 9 * 17 + 1, 9, 32, false, 4, rng);         // element loads, few rows, wide tx
}

template <int OP, class T> static void case_rows32(int wave, u32 rows, u32 inner, unsigned grid, Rng& rng) {
  const std::vector<T> xs = draw<T>(rng, (size_t)rows * inner + 5, true);
  std::vector<T> y(rows);
  std::memset((void*)y.data(), 0xa5, rows * sizeof(T));
  emu::launch(grid, 256, wave, [&] { K32<OP, T>::rows32(y.data(), xs.data(), 0, 5, rows, inner); });
  int bad = 0;
  for (u32 o = 0; o < rows; o++) {
    std::vector<double> run(inner);
    for (u32 r = 0; r < inner; r++) run[r] = Io<T>::get(xs[5 + (size_t)o * inner + r]);
    const Want w = reference<T>(OP, run);
    checks++;
    if (!matches<T, T>(OP, y[o], w) && bad++ < 3)
      std::printf("MISMATCH %s_%s_rows32 wave %d rows %u inner %u grid %u: y[%u] = %.8g, want %.8g\n", OP_NAME[OP], Io<T>::name, wave, rows, inner, grid, o,
          Io<T>::get(y[o]), w.v);
  }
  if (bad) failures++;
}

// the transposed view (Geom) runs the same driver: two of the shapes take it
template <int OP, class T> static void op_cases(int wave, Rng& rng) {
  case_rows<OP, T>(wave, 37, 5, 0, 0, 1, 64, false, rng);       // a thread a task
  case_rows<OP, T>(wave, 9, 300, 0, 1, 1, 128, true, rng);      // a wave a task, tasks past the grid
  case_rows<OP, T>(wave, 3, 20, 0, 1, 1, 128, false, rng);      // runs shorter than a wave
  case_rows<OP, T>(wave, 3, 700, 0, 2, 2, 256, false, rng);     // a block a task
  case_rows<OP, T>(wave, 5, 500, 130, 0, 1, 64, false, rng);    // segments, folded per thread
  case_rows<OP, T>(wave, 4, 777, 100, 1, 1, 128, true, rng);    // segments, folded per wave
  case_rows<OP, T>(wave, 2, 2000, 600, 2, 1, 256, false, rng);  // segments, folded per block
}

template <class T> static void dtype(int wave) {
  const int before = failures;
  Rng rng{0xabcdef + (uint64_t)wave};
  op_cases<SUM, T>(wave, rng);
  op_cases<MIN, T>(wave, rng);
  op_cases<MAX, T>(wave, rng);
  op_cases<ARGMIN, T>(wave, rng);
  op_cases<ARGMAX, T>(wave, rng);
  col_cases<SUM, T>(wave, rng);
  col_cases<MIN, T>(wave, rng);
  col_cases<MAX, T>(wave, rng);
  col_cases<ARGMIN, T>(wave, rng);
  col_cases<ARGMAX, T>(wave, rng);
  if constexpr (!std::is_same_v<T, i64>) {
    op_cases<MEAN, T>(wave, rng);
    col_cases<MEAN, T>(wave, rng);
    for (u32 inner : {1u, 31u, 1000u}) {
      case_rows32<SUM, T>(wave, 11, inner, 1, rng);
      case_rows32<MEAN, T>(wave, 11, inner, 1, rng);
      case_rows32<MIN, T>(wave, 11, inner, 1, rng);
      case_rows32<MAX, T>(wave, 11, inner, 1, rng);
    }
  }
  if (failures == before) std::printf("ok %s wave %d\n", Io<T>::name, wave);
}

int main() {
  for (int wave : {64, 32}) {
    dtype<float>(wave);
    dtype<f16>(wave);
    dtype<bf16>(wave);
    dtype<i64>(wave);
  }
  if (failures) {
    std::printf("%d mismatching cases of %d outputs\n", failures, checks);
    return 1;
  }
  std::printf("ok: 0 mismatches (%d outputs)\n", checks);
  return 0;
}
