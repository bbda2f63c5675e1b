// rowreg-emu.cpp: runs the register row kernels of softmax.hip, norm.hip and reduce-rows.hip
// (hip-src/rowreg.h: the _v<V> kernels and the split _part/_fin pairs), and scan.hip's
// cumsum, on the host, compiled through their HIP
// path (hip-host/hip/hip_runtime.h: a block's threads as fibers, real barriers and shuffles),
// at wave sizes 64 and 32, against double-precision references. No AMD GPU is at hand, so this
// is the only run the AMD code gets; it also checks the group, row and chunk arithmetic both
// vendors share. Covered: every V over rows that fill a group, leave lanes without a vector,
// or share a wave between rows; grids smaller than the work (the grid-stride loops); split
// rows with a short last chunk; NaN and infinities (NaN where the reference has it, with
// dtype.ts's bit pattern for the 16-bit types). Prints one line per family; exits 1 on a
// mismatch.
//   g++ -std=c++20 -O1 -D__HIP__ -Itest/emu/hip-host test/emu/rowreg-emu.cpp -o rowreg-emu && ./rowreg-emu
#include "../../hip-src/softmax.hip"
#include "../../hip-src/norm.hip"
#include "../../hip-src/reduce-rows.hip"
#include "../../hip-src/scan.hip"
#include <cstdio>
#include <functional>
#include <string>

#include "emu-rng.h"

static int failures = 0, checks = 0;


// storage <-> double, with the library's own conversions (compat.h)
template <class T> struct Io;
template <> struct Io<float> {
  static constexpr const char* name = "f32";
  static constexpr double tol = 1e-5;
  static float put(double v) { return (float)v; }
  static double get(float v) { return v; }
  static uint32_t bits(float v) { return __float_as_uint(v); }
};
template <> struct Io<f16> {
  static constexpr const char* name = "f16";
  static constexpr double tol = 4e-3;
  static f16 put(double v) { return f64_to_f16(v); }
  static double get(f16 v) { return f16_to_f32(v); }
  static uint32_t bits(f16 v) { return v.bits; }
};
template <> struct Io<bf16> {
  static constexpr const char* name = "bf16";
  static constexpr double tol = 1e-2;
  static bf16 put(double v) { return f64_to_bf16(v); }
  static double get(bf16 v) { return bf16_to_f32(v); }
  static uint32_t bits(bf16 v) { return v.bits; }
};

// the result against the reference: NaN exactly where it has NaN (16-bit types: dtype.ts's
// pattern, which is what put(NaN) gives), infinities equal, the rest within tol by norm
template <class T>
static void compare(const std::string& what, const std::vector<T>& got, const std::vector<double>& want) {
  checks++;
  double num = 0, den = 0;
  for (size_t i = 0; i < want.size(); i++) {
    const double g = Io<T>::get(got[i]), w = want[i];
    if (std::isnan(w) || std::isnan(g)) {
      const bool ok = std::isnan(w) && std::isnan(g) && (sizeof(T) == 4 || Io<T>::bits(got[i]) == Io<T>::bits(Io<T>::put(NAN)));
      if (!ok) { std::printf("FAIL %s: element %zu is %g (bits 0x%x), expected %g\n", what.c_str(), i, g, Io<T>::bits(got[i]), w); failures++; return; }
      continue;
    }
    if (std::isinf(w) || std::isinf(g)) {
      if (g != w) { std::printf("FAIL %s: element %zu is %g, expected %g\n", what.c_str(), i, g, w); failures++; return; }
      continue;
    }
    num += (g - w) * (g - w);
    den += w * w;
  }
  const double err = den > 0 ? std::sqrt(num / den) : std::sqrt(num);
  if (!(err <= Io<T>::tol)) { std::printf("FAIL %s: relative error %.3g > %g\n", what.c_str(), err, Io<T>::tol); failures++; }
}

// ---- references, in double, over the stored values --------------------------------------------
static std::vector<double> ref_softmax(const std::vector<double>& x, unsigned rows, unsigned cols, bool log) {
  std::vector<double> y(x.size());
  for (unsigned r = 0; r < rows; r++) {
    const double* p = &x[(size_t)r * cols];
    double m = -INFINITY;
    for (unsigned k = 0; k < cols; k++) m = std::isnan(p[k]) || std::isnan(m) ? NAN : std::max(m, p[k]);
    double s = 0;
    for (unsigned k = 0; k < cols; k++) s += std::exp(p[k] - m);
    for (unsigned k = 0; k < cols; k++) y[(size_t)r * cols + k] = log ? (p[k] - m) - std::log(s) : std::exp(p[k] - m) / s;
  }
  return y;
}
static std::vector<double> ref_norm(const std::vector<double>& x, const std::vector<double>& w, const std::vector<double>* b,
    unsigned rows, unsigned cols, double eps, bool rms) {
  std::vector<double> y(x.size());
  for (unsigned r = 0; r < rows; r++) {
    const double* p = &x[(size_t)r * cols];
    double mean = 0, q = 0;
    if (!rms) { for (unsigned k = 0; k < cols; k++) mean += p[k]; mean /= cols; }
    for (unsigned k = 0; k < cols; k++) q += (p[k] - mean) * (p[k] - mean);
    const double inv = 1 / std::sqrt(q / cols + eps);
    for (unsigned k = 0; k < cols; k++) y[(size_t)r * cols + k] = (p[k] - mean) * inv * w[k] + (b ? (*b)[k] : 0.0);
  }
  return y;
}

template <class T> static std::vector<T> store(const std::vector<double>& v) {
  std::vector<T> o(v.size());
  for (size_t i = 0; i < v.size(); i++) o[i] = Io<T>::put(v[i]);
  return o;
}
template <class T> static std::vector<double> load(const std::vector<T>& v) {
  std::vector<double> o(v.size());
  for (size_t i = 0; i < v.size(); i++) o[i] = Io<T>::get(v[i]);
  return o;
}
// an output filled with a value no kernel writes (a NaN of another pattern), as the GPU
// suites poison theirs
template <class T> static std::vector<T> poisoned(size_t n) {
  std::vector<T> o(n);
  std::memset(o.data(), 0xff, n * sizeof(T));
  return o;
}

// ---- the kernels by name -------------------------------------------------------------------------
// The _v kernels per V (softmax 1 2 4 8, norms 1 2 4), as function pointers per dtype.
#define SM_TABLE(DT, T) \
  template <> struct Kern<T> { \
    static void sm(int v, bool log, T* y, const T* x, unsigned rows, unsigned cols, unsigned g) { \
      switch (v) { \
        case 1: log ? logsoftmax_##DT##_v1(y, x, 0, 0, rows, cols, g) : softmax_##DT##_v1(y, x, 0, 0, rows, cols, g); break; \
        case 2: log ? logsoftmax_##DT##_v2(y, x, 0, 0, rows, cols, g) : softmax_##DT##_v2(y, x, 0, 0, rows, cols, g); break; \
        case 4: log ? logsoftmax_##DT##_v4(y, x, 0, 0, rows, cols, g) : softmax_##DT##_v4(y, x, 0, 0, rows, cols, g); break; \
        default: log ? logsoftmax_##DT##_v8(y, x, 0, 0, rows, cols, g) : softmax_##DT##_v8(y, x, 0, 0, rows, cols, g); break; } } \
    static void ln(int v, T* y, const T* x, const T* w, const T* b, unsigned rows, unsigned cols, float eps, unsigned g) { \
      const unsigned hb = b ? 1u : 0u; \
      switch (v) { \
        case 1: layernorm_##DT##_v1(y, x, w, b, 0, 0, 0, 0, rows, cols, eps, hb, g); break; \
        case 2: layernorm_##DT##_v2(y, x, w, b, 0, 0, 0, 0, rows, cols, eps, hb, g); break; \
        default: layernorm_##DT##_v4(y, x, w, b, 0, 0, 0, 0, rows, cols, eps, hb, g); break; } } \
    static void rms(int v, T* y, const T* x, const T* w, unsigned rows, unsigned cols, float eps, unsigned g) { \
      switch (v) { \
        case 1: rmsnorm_##DT##_v1(y, x, w, 0, 0, 0, rows, cols, eps, g); break; \
        case 2: rmsnorm_##DT##_v2(y, x, w, 0, 0, 0, rows, cols, eps, g); break; \
        default: rmsnorm_##DT##_v4(y, x, w, 0, 0, 0, rows, cols, eps, g); break; } } \
    static void sm_part(float* p, const T* x, unsigned rows, unsigned cols, unsigned cv, unsigned ch) { softmax_part_##DT(p, x, 0, rows, cols, cv, ch); } \
    static void sm_fin(bool log, T* y, const T* x, const float* p, unsigned rows, unsigned cols, unsigned cv, unsigned ch) { \
      log ? logsoftmax_fin_##DT(y, x, p, 0, 0, rows, cols, cv, ch) : softmax_fin_##DT(y, x, p, 0, 0, rows, cols, cv, ch); } \
    static void ln_part(bool rms, float* p, const T* x, unsigned rows, unsigned cols, unsigned cv, unsigned ch) { \
      rms ? rmsnorm_part_##DT(p, x, 0, rows, cols, cv, ch) : layernorm_part_##DT(p, x, 0, rows, cols, cv, ch); } \
    static void ln_fin(T* y, const T* x, const T* w, const T* b, const float* p, unsigned rows, unsigned cols, unsigned cv, unsigned ch, float eps) { \
      layernorm_fin_##DT(y, x, w, b, p, 0, 0, 0, 0, rows, cols, cv, ch, eps, b ? 1u : 0u); } \
    static void rms_fin(T* y, const T* x, const T* w, const float* p, unsigned rows, unsigned cols, unsigned cv, unsigned ch, float eps) { \
      rmsnorm_fin_##DT(y, x, w, p, 0, 0, 0, rows, cols, cv, ch, eps); } \
  };
template <class T> struct Kern;
SM_TABLE(f32, float) SM_TABLE(f16, f16) SM_TABLE(bf16, bf16)

// reduce-rows.hip's kernels: op 0 sum, 1 mean, 2 max, 3 min; V 1 .. 16
#define FOLD_V(OPN, DT, V) case V: reduce_##OPN##_##DT##_v##V(y, x, 0, 0, rows, cols, g); break;
#define FOLD_OP(OPN, DT) switch (v) { FOLD_V(OPN, DT, 1) FOLD_V(OPN, DT, 2) FOLD_V(OPN, DT, 4) FOLD_V(OPN, DT, 8) FOLD_V(OPN, DT, 16) }
#define FOLD_TABLE(DT, T) \
  template <> struct Fold<T> { \
    static void run(int op, int v, T* y, const T* x, unsigned rows, unsigned cols, unsigned g) { \
      if (op == 0) { FOLD_OP(sum, DT) } else if (op == 1) { FOLD_OP(mean, DT) } else if (op == 2) { FOLD_OP(max, DT) } else { FOLD_OP(min, DT) } } \
  };
template <class T> struct Fold;
FOLD_TABLE(f32, float) FOLD_TABLE(f16, f16) FOLD_TABLE(bf16, bf16)

static unsigned next_pow2(unsigned n) { unsigned p = 1; while (p < n) p <<= 1; return p; }

// the host plan of src/backends/gpu/rowreg.ts for V vectors a thread: the group, the block
struct Shape { unsigned group, block; };
static Shape reg_shape(unsigned nv, int v, unsigned ws) {
  const unsigned g = next_pow2((nv + (unsigned)v - 1) / (unsigned)v);
  return { g, g > ws ? g : 2 * ws };
}

enum Op { SOFTMAX, LOGSOFTMAX, LAYERNORM, LAYERNORM_NB, RMSNORM };
static const char* op_name(Op op) {
  switch (op) { case SOFTMAX: return "softmax"; case LOGSOFTMAX: return "logsoftmax"; case LAYERNORM: return "layernorm"; case LAYERNORM_NB: return "layernorm-nobias"; default: return "rmsnorm"; }
}

// One case: x (rows x cols, the values to store), the op on the register kernel with V vectors
// (v > 0) or split into chunks of chunkVecs (v == 0), on `grid` blocks (0: one per task).
template <class T>
static void run_case(Op op, const std::vector<double>& xv, const std::vector<double>& wv, const std::vector<double>& bv,
    unsigned rows, unsigned cols, int v, unsigned chunkVecs, unsigned grid, unsigned ws, const std::string& label) {
  const unsigned nv = cols / RegVec<T>::N;
  const std::vector<T> x = store<T>(xv), w = store<T>(wv), b = store<T>(bv);
  const std::vector<double> xs = load(x), ws_ = load(w), bs = load(b);
  std::vector<T> y = poisoned<T>(x.size());
  const bool sm = op == SOFTMAX || op == LOGSOFTMAX, log = op == LOGSOFTMAX, rms = op == RMSNORM, bias = op == LAYERNORM;
  const float eps = rms ? 1e-6f : 1e-5f;
  const std::vector<double> want = sm ? ref_softmax(xs, rows, cols, log) : ref_norm(xs, ws_, bias ? &bs : nullptr, rows, cols, eps, rms);
  if (v > 0) {
    const Shape s = reg_shape(nv, v, ws);
    if (s.group > 256) return;
    const unsigned per = s.block / s.group, g = grid ? grid : (rows + per - 1) / per;
    emu::launch(g, s.block, ws, [&] {
      if (sm) Kern<T>::sm(v, log, y.data(), x.data(), rows, cols, s.group);
      else if (rms) Kern<T>::rms(v, y.data(), x.data(), w.data(), rows, cols, eps, s.group);
      else Kern<T>::ln(v, y.data(), x.data(), w.data(), bias ? b.data() : nullptr, rows, cols, eps, s.group);
    });
  } else {
    const unsigned chunks = (nv + chunkVecs - 1) / chunkVecs, g = grid ? grid : rows * chunks;
    std::vector<float> part((size_t)rows * chunks * 2, NAN);
    emu::launch(g, 256, ws, [&] {
      if (sm) Kern<T>::sm_part(part.data(), x.data(), rows, cols, chunkVecs, chunks);
      else Kern<T>::ln_part(rms, part.data(), x.data(), rows, cols, chunkVecs, chunks);
    });
    emu::launch(g, 256, ws, [&] {
      if (sm) Kern<T>::sm_fin(log, y.data(), x.data(), part.data(), rows, cols, chunkVecs, chunks);
      else if (rms) Kern<T>::rms_fin(y.data(), x.data(), w.data(), part.data(), rows, cols, chunkVecs, chunks, eps);
      else Kern<T>::ln_fin(y.data(), x.data(), w.data(), bias ? b.data() : nullptr, part.data(), rows, cols, chunkVecs, chunks, eps);
    });
  }
  char what[256];
  std::snprintf(what, sizeof what, "%s %s wave %u %s [%u, %u] %s", op_name(op), Io<T>::name, ws,
    v > 0 ? ("V " + std::to_string(v)).c_str() : ("split " + std::to_string(chunkVecs)).c_str(), rows, cols, label.c_str());
  compare(what, y, want);
}

// the reductions: every V over rows of the lengths above, and rows with NaN and infinities
template <class T>
static void folds(Rng& rng, unsigned ws) {
  static const char* names[] = { "sum", "mean", "max", "min" };
  auto rand = [&](size_t n) { std::vector<double> v(n); for (auto& e : v) e = rng.uni(-3, 3); return v; };
  for (unsigned cols : { 8u, 40u, 264u, 2056u, 2000u }) {
    const unsigned rows = 7, nv = cols / RegVec<T>::N;
    std::vector<double> xv = rand((size_t)rows * cols);
    if (cols == 2000) {
      // row 0 a NaN, row 1 a +inf, row 2 a -inf, row 3 both infinities
      xv[5] = NAN; xv[cols + 7] = INFINITY; xv[2 * cols + 9] = -INFINITY; xv[3 * cols] = INFINITY; xv[3 * cols + 1] = -INFINITY;
    }
    const std::vector<T> x = store<T>(xv);
    const std::vector<double> xs = load(x);
    for (int op = 0; op < 4; op++) {
      std::vector<double> want(rows);
      for (unsigned r = 0; r < rows; r++) {
        double a = op >= 2 ? (op == 2 ? -INFINITY : INFINITY) : 0.0;
        for (unsigned k = 0; k < cols; k++) {
          const double e = xs[(size_t)r * cols + k];
          if (op < 2) a += e;
          else a = std::isnan(a) || std::isnan(e) ? NAN : op == 2 ? std::max(a, e) : std::min(a, e);
        }
        want[r] = op == 1 ? a / cols : a;
      }
      for (int v = 1; v <= 16; v *= 2) {
        const Shape s = reg_shape(nv, v, ws);
        if (s.group > 256) continue;
        for (unsigned grid : { 0u, 2u }) {
          std::vector<T> y = poisoned<T>(rows);
          const unsigned per = s.block / s.group, gr = grid ? grid : (rows + per - 1) / per;
          emu::launch(gr, s.block, ws, [&] { Fold<T>::run(op, v, y.data(), x.data(), rows, cols, s.group); });
          char what[160];
          std::snprintf(what, sizeof what, "%s %s wave %u V %d [%u, %u] grid %u", names[op], Io<T>::name, ws, v, rows, cols, gr);
          compare(what, y, want);
        }
      }
    }
  }
}

// cumsum: rows shorter than a thread's 16, one chunk (block x 16), partial and several chunks,
// rows of whole vectors and not; blocks of 256 and 128 threads, grids of one per row and of 2
template <class T, class A>
static void scans(Rng& rng, unsigned ws) {
  for (unsigned cols : { 5u, 16u, 264u, 4096u, 4100u, 9000u }) {
    const unsigned rows = 3;
    std::vector<double> xv((size_t)rows * cols);
    for (auto& e : xv) e = rng.uni(0, 1);
    const std::vector<T> x = store<T>(xv);
    const std::vector<double> xs = load(x);
    std::vector<double> want(xs.size());
    for (unsigned r = 0; r < rows; r++) {
      double a = 0;
      for (unsigned k = 0; k < cols; k++) { a += xs[(size_t)r * cols + k]; want[(size_t)r * cols + k] = a; }
    }
    for (unsigned block : { 256u, 128u }) {
      for (unsigned grid : { rows, 2u }) {
        std::vector<T> y = poisoned<T>(x.size());
        emu::launch(grid, block, ws, [&] { cumsum_rows<T, A>(y.data(), x.data(), rows, cols); });
        char what[160];
        std::snprintf(what, sizeof what, "cumsum %s wave %u block %u grid %u [%u, %u]", Io<T>::name, ws, block, grid, rows, cols);
        compare(what, y, want);
      }
    }
  }
}

template <class T>
static void family(Rng& rng, unsigned ws) {
  const int before = failures;
  const int c0 = checks;
  auto rand = [&](size_t n, double lo, double hi) { std::vector<double> v(n); for (auto& e : v) e = rng.uni(lo, hi); return v; };
  for (Op op : { SOFTMAX, LOGSOFTMAX, LAYERNORM, LAYERNORM_NB, RMSNORM }) {
    const bool sm = op == SOFTMAX || op == LOGSOFTMAX;
    const double lo = sm ? -6 : op == RMSNORM ? -2 : 1, hi = sm ? 6 : op == RMSNORM ? 2 : 5;
    const int vmax = sm ? 8 : 4;
    // register kernels: rows that fill a group, leave lanes empty, share a wave
    for (unsigned cols : { 8u, 40u, 264u, 2056u }) {
      const unsigned rows = 7;
      const auto x = rand((size_t)rows * cols, lo, hi), w = rand(cols, 0.5, 1.5), b = rand(cols, -1, 1);
      for (int v = 1; v <= vmax; v *= 2) run_case<T>(op, x, w, b, rows, cols, v, 0, v == 2 ? 2 : 0, ws, v == 2 ? "grid 2" : "");
    }
    // split kernels: chunks of 256 vectors (a short last one) and the largest
    for (unsigned cols : { 8u, 5000u, 40000u }) {
      const unsigned rows = 3;
      const auto x = rand((size_t)rows * cols, lo, hi), w = rand(cols, 0.5, 1.5), b = rand(cols, -1, 1);
      if (cols < 40000) run_case<T>(op, x, w, b, rows, cols, 0, 256, cols == 5000 ? 5 : 0, ws, cols == 5000 ? "grid 5" : "");
      run_case<T>(op, x, w, b, rows, cols, 0, 256u * (unsigned)(sm ? RT_SOFTMAX_SPLIT_V : RT_NORM_SPLIT_V), 0, ws, "");
    }
    // NaN and infinities: softmax rows of NaN, -inf entries, all -inf, +inf, a first half of
    // -inf; norm rows plain, with +inf, with NaN, and a weight/bias with NaN, +inf, 0, -inf
    for (unsigned cols : { 2000u, 40000u }) {
      const unsigned rows = sm ? 5 : 3;
      std::vector<double> x((size_t)rows * cols), w(cols), b(cols);
      for (unsigned r = 0; r < rows; r++) {
        for (unsigned i = 0; i < cols; i++) {
          double& e = x[(size_t)r * cols + i];
          if (sm) e = r == 0 ? (i == 1 ? NAN : (i % 7) / 7.0) : r == 1 ? (i == 0 ? -INFINITY : i == 1 ? 1 : (i % 5) / 5.0)
              : r == 2 ? -INFINITY : r == 3 ? (i == 5 ? INFINITY : 0) : (i < cols / 2 ? -INFINITY : (i % 3) / 3.0);
          else e = r == 1 && i == 4 ? INFINITY : r == 2 && i == 6 ? NAN : 1 + (i % 11) / 11.0;
        }
      }
      for (unsigned i = 0; i < cols; i++) {
        w[i] = i == 3 ? NAN : i == 7 ? INFINITY : i == 9 ? 0 : 0.5 + (i % 3) / 3.0;
        b[i] = i == 11 ? -INFINITY : (i % 4) / 4.0 - 0.5;
      }
      const unsigned nv = cols / RegVec<T>::N;
      if (nv <= 256u * (unsigned)vmax) run_case<T>(op, x, w, b, rows, cols, vmax, 0, 0, ws, "specials");
      run_case<T>(op, x, w, b, rows, cols, 0, cols < 40000 ? 256u : 256u * (unsigned)(sm ? RT_SOFTMAX_SPLIT_V : RT_NORM_SPLIT_V), 0, ws, "specials");
    }
  }
  folds<T>(rng, ws);
  scans<T, float>(rng, ws);
  std::printf("%s %-4s wave %u: %d cases, %d failed\n", failures == before ? "ok  " : "FAIL", Io<T>::name, ws, checks - c0, failures - before);
}

int main() {
  Rng rng{ 0x9e3779b97f4a7c15ull };
  for (unsigned ws : { 64u, 32u }) {
    family<float>(rng, ws);
    family<f16>(rng, ws);
    family<bf16>(rng, ws);
  }
  std::printf("%s: %d mismatches in %d cases\n", failures ? "FAIL" : "ok", failures, checks);
  return failures ? 1 : 0;
}
