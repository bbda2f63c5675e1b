// elementwise-emu.cpp: runs binary.hip (add, sub, mul, div, maximum, minimum; the comparisons;
// where), cast.hip (every pair of the seven dtypes) and unary.hip (every op, f32 f64 f16 bf16)
// on the host through their HIP path
// (hip-host/hip/hip_runtime.h) at wave sizes 64 and 32, and prints inputs and outputs in hex for
// test/cpu/elementwise-emu.test.ts to hold bit for bit against the CPU reference. Each kernel
// runs contiguous with aligned pointers (the 16-byte path), contiguous one element in (the
// element path) and strided (a transposed operand, a broadcast one). Outputs start poisoned and
// the bytes around the written range must stay so. Exits 1 when a kernel writes outside.
//   g++ -std=c++20 -O1 -D__HIP__ -Itest/emu/hip-host test/emu/elementwise-emu.cpp && ./a.out
#include "../../hip-src/binary.hip"
#include "../../hip-src/cast.hip"
#include "../../hip-src/unary.hip"
#include <cstdio>
#include <string>

#include "emu-rng.h"

static int failures = 0;
constexpr u64 N = 37;               // contiguous length: vectors and a tail (inputs hold N + 1)
constexpr unsigned R = 5, C = 7;    // the strided problem [R, C]

template <class T> static std::string hex(const T* p, size_t n) {
  std::string s;
  char two[3];
  const unsigned char* b = (const unsigned char*)p;
  for (size_t i = 0; i < n * sizeof(T); i++) {
    std::snprintf(two, sizeof two, "%02x", b[i]);
    s += two;
  }
  return s;
}

template <class T> struct Io;
#define EMU_IO(T, NAME, PUT) \
  template <> struct Io<T> { static constexpr const char* name = NAME; static T put(double v) { return PUT; } };
EMU_IO(float, "f32", (float)v)
EMU_IO(double, "f64", v)
EMU_IO(f16, "f16", f64_to_f16(v))
EMU_IO(bf16, "bf16", f64_to_bf16(v))
EMU_IO(u8, "u8", (u8)(int64_t)v)
EMU_IO(u32, "u32", (u32)(int64_t)v)
EMU_IO(i64, "i64", (i64)v)

// values every op meets: specials for floats, wrap and sign edges for integers, ties of each
template <class T> static std::vector<T> values(Rng& rng, size_t n) {
  static const double special[] = {0.0, -0.0, 1.0, -1.0, 0.5, 3.0, -7.25, 65504.0, 1e-6, 1e30, -1e30, INFINITY, -INFINITY, NAN, 255.0, 256.0, 1e9};
  static const double ints[] = {0, 1, -1, 2, 3, 7, 127, 128, 255, 256, 65535, 4294967295.0, -2147483648.0, 9007199254740991.0, -9007199254740991.0};
  const bool isf = std::is_floating_point_v<T> || std::is_same_v<T, f16> || std::is_same_v<T, bf16>;
  std::vector<T> x(n);
  for (size_t i = 0; i < n; i++) {
    double v;
    if (isf) v = i % 3 == 0 ? special[rng.next() % 17] : rng.uni(-100, 100);
    else v = i % 3 == 0 ? ints[rng.next() % 15] : std::floor(rng.uni(-300, 300));
    if (std::is_same_v<T, u8> || std::is_same_v<T, u32>) v = std::fabs(v);
    x[i] = Io<T>::put(v);
  }
  return x;
}

// y over n + 2 elements: y[0] and y[n + 1] must keep the poison
template <class Y> static bool guarded(const std::vector<Y>& y, size_t n, const std::string& what) {
  std::vector<unsigned char> poison(sizeof(Y), 0xa5);
  const bool ok = std::memcmp(&y[0], poison.data(), sizeof(Y)) == 0 && std::memcmp(&y[n + 1], poison.data(), sizeof(Y)) == 0;
  if (!ok) {
    std::printf("MISMATCH %s: wrote outside the output\n", what.c_str());
    failures++;
  }
  return ok;
}

// the geometry of the strided runs: y [R, C] contiguous (after one poisoned element), a
// transposed (element (i, j) at j R + i), b one row broadcast over i (stride 0)
static Geom geom(int operands) {
  Geom g{};
  g.numel = R * C;
  g.rank = 2;
  g.shape[0] = R;
  g.shape[1] = C;
  g.offset[0] = 1;
  g.strides[0][0] = C;
  g.strides[0][1] = 1;
  for (int k = 1; k < operands; k++) {
    const bool cond = operands == 4 && k == 1;  // where's condition: contiguous like y
    const bool first = operands == 4 ? k == 2 : k == 1;
    g.strides[k][0] = cond ? C : first ? 1 : 0;
    g.strides[k][1] = cond ? 1 : first ? R : 1;
  }
  return g;
}

template <class T, class Y, class Contig, class Strided>
static void run2(const char* name, int wave, const std::vector<T>& a, const std::vector<T>& b, Contig contig, Strided strided) {
  for (int off : {0, 1}) {
    std::vector<Y> y(N + 2);
    std::memset((void*)y.data(), 0xa5, y.size() * sizeof(Y));
    // off 0: every pointer at element 1 of its array... y at 1, a and b at 0 or 1
    emu::launch(2, 64, wave, [&] { contig(y.data(), a.data(), b.data(), 1, off, off); });
    const std::string what = std::string(name) + (off ? " contig+1 " : " contig ") + std::to_string(wave);
    if (guarded(y, N, what)) std::printf("data %s %s\n", what.c_str(), hex(&y[1], N).c_str());
  }
  std::vector<Y> y(R * C + 2);
  std::memset((void*)y.data(), 0xa5, y.size() * sizeof(Y));
  const Geom g = geom(3);
  emu::launch(1, 64, wave, [&] { strided(y.data(), a.data(), b.data(), g); });
  const std::string what = std::string(name) + " strided " + std::to_string(wave);
  if (guarded(y, R * C, what)) std::printf("data %s %s\n", what.c_str(), hex(&y[1], R * C).c_str());
}

template <class T> struct Bin;
#define EMU_BIN(DT, T)                                                                                                           \
  template <> struct Bin<T> {                                                                                                    \
    static constexpr decltype(&binary_add_##DT) c[6] = {&binary_add_##DT, &binary_sub_##DT, &binary_mul_##DT, &binary_div_##DT, \
        &binary_maximum_##DT, &binary_minimum_##DT};                                                                             \
    static constexpr decltype(&binary_add_##DT##_strided) s[6] = {&binary_add_##DT##_strided, &binary_sub_##DT##_strided,         \
        &binary_mul_##DT##_strided, &binary_div_##DT##_strided, &binary_maximum_##DT##_strided, &binary_minimum_##DT##_strided}; \
    static constexpr decltype(&cmp_eq_##DT) cc[6] = {&cmp_eq_##DT, &cmp_ne_##DT, &cmp_lt_##DT, &cmp_le_##DT, &cmp_gt_##DT, &cmp_ge_##DT}; \
    static constexpr decltype(&cmp_eq_##DT##_strided) cs[6] = {&cmp_eq_##DT##_strided, &cmp_ne_##DT##_strided,                  \
        &cmp_lt_##DT##_strided, &cmp_le_##DT##_strided, &cmp_gt_##DT##_strided, &cmp_ge_##DT##_strided};                         \
    static constexpr auto w = &where_u8_##DT;                                                                                    \
    static constexpr auto ws = &where_u8_##DT##_strided;                                                                         \
  };
EMU_BIN(f32, float)
EMU_BIN(f64, double)
EMU_BIN(f16, f16)
EMU_BIN(bf16, bf16)
EMU_BIN(u8, u8)
EMU_BIN(u32, u32)
EMU_BIN(i64, i64)

template <class T> static void binary_all(int wave) {
  static const char* OPS[] = {"add", "sub", "mul", "div", "maximum", "minimum"};
  static const char* CMPS[] = {"eq", "ne", "lt", "le", "gt", "ge"};
  Rng rng{0xb1a + (uint64_t)sizeof(T) * 31};
  // a and b share their values often, so equalities and ties show
  std::vector<T> a = values<T>(rng, N + 1), b = values<T>(rng, N + 1);
  for (size_t i = 0; i < a.size(); i += 4) b[i] = a[i];
  std::vector<u8> cond(N + 1);
  for (auto& c : cond) c = (u8)(rng.next() % 3);
  if (wave == 64) std::printf("in %s a %s\nin %s b %s\nin %s c %s\n", Io<T>::name, hex(a.data(), a.size()).c_str(), Io<T>::name, hex(b.data(), b.size()).c_str(),
      Io<T>::name, hex(cond.data(), cond.size()).c_str());
  for (int op = 0; op < 6; op++) {
    run2<T, T>((std::string("binary_") + OPS[op] + "_" + Io<T>::name).c_str(), wave, a, b,
        [&](T* y, const T* x, const T* z, i64 yo, i64 xo, i64 zo) { Bin<T>::c[op](y, x, z, yo, xo, zo, N); },
        [&](T* y, const T* x, const T* z, const Geom& g) { Bin<T>::s[op](y, x, z, g); });
    run2<T, u8>((std::string("cmp_") + CMPS[op] + "_" + Io<T>::name).c_str(), wave, a, b,
        [&](u8* y, const T* x, const T* z, i64 yo, i64 xo, i64 zo) { Bin<T>::cc[op](y, x, z, yo, xo, zo, N); },
        [&](u8* y, const T* x, const T* z, const Geom& g) { Bin<T>::cs[op](y, x, z, g); });
  }
  // where: y = c ? a : b
  for (int off : {0, 1}) {
    std::vector<T> y(N + 2);
    std::memset((void*)y.data(), 0xa5, y.size() * sizeof(T));
    emu::launch(2, 64, wave, [&] { Bin<T>::w(y.data(), cond.data(), a.data(), b.data(), 1, off, off, off, N); });
    const std::string what = std::string("where_u8_") + Io<T>::name + (off ? " contig+1 " : " contig ") + std::to_string(wave);
    if (guarded(y, N, what)) std::printf("data %s %s\n", what.c_str(), hex(&y[1], N).c_str());
  }
  std::vector<T> y(R * C + 2);
  std::memset((void*)y.data(), 0xa5, y.size() * sizeof(T));
  const Geom g = geom(4);
  emu::launch(1, 64, wave, [&] { Bin<T>::ws(y.data(), cond.data(), a.data(), b.data(), g); });
  const std::string what = std::string("where_u8_") + Io<T>::name + " strided " + std::to_string(wave);
  if (guarded(y, R * C, what)) std::printf("data %s %s\n", what.c_str(), hex(&y[1], R * C).c_str());
}

// casts: x's values printed once per source dtype; y by contiguous (aligned and one in) and
// strided (x transposed) runs
template <class F, class T, class K, class KS> static void cast_one(const char* name, int wave, const std::vector<F>& x, K k, KS ks) {
  for (int off : {0, 1}) {
    std::vector<T> y(N + 2);
    std::memset((void*)y.data(), 0xa5, y.size() * sizeof(T));
    emu::launch(2, 64, wave, [&] { k(y.data(), x.data(), 1, off, N); });
    const std::string what = std::string(name) + (off ? " contig+1 " : " contig ") + std::to_string(wave);
    if (guarded(y, N, what)) std::printf("data %s %s\n", what.c_str(), hex(&y[1], N).c_str());
  }
  std::vector<T> y(R * C + 2);
  std::memset((void*)y.data(), 0xa5, y.size() * sizeof(T));
  const Geom g = geom(2);
  emu::launch(1, 64, wave, [&] { ks(y.data(), x.data(), g); });
  const std::string what = std::string(name) + " strided " + std::to_string(wave);
  if (guarded(y, R * C, what)) std::printf("data %s %s\n", what.c_str(), hex(&y[1], R * C).c_str());
}

#define CAST_RUN(FN, FT, TN, TT) cast_one<FT, TT>("cast_" #FN "_" #TN, wave, x_##FN, &cast_##FN##_##TN, &cast_##FN##_##TN##_strided);

static void casts(int wave) {
  Rng rng{0xca57};
#define CAST_IN(FN, FT)                                      \
  const std::vector<FT> x_##FN = values<FT>(rng, N + 1); \
  if (wave == 64) std::printf("in %s x %s\n", #FN, hex(x_##FN.data(), x_##FN.size()).c_str());
  CAST_IN(f32, float)
  CAST_IN(f64, double)
  CAST_IN(f16, f16)
  CAST_IN(bf16, bf16)
  CAST_IN(u8, u8)
  CAST_IN(u32, u32)
  CAST_IN(i64, i64)
  CAST_RUN(f32, float, f64, double) CAST_RUN(f32, float, f16, f16) CAST_RUN(f32, float, bf16, bf16)
  CAST_RUN(f32, float, u8, u8) CAST_RUN(f32, float, u32, u32) CAST_RUN(f32, float, i64, i64)
  CAST_RUN(f64, double, f32, float) CAST_RUN(f64, double, f16, f16) CAST_RUN(f64, double, bf16, bf16)
  CAST_RUN(f64, double, u8, u8) CAST_RUN(f64, double, u32, u32) CAST_RUN(f64, double, i64, i64)
  CAST_RUN(f16, f16, f32, float) CAST_RUN(f16, f16, f64, double) CAST_RUN(f16, f16, bf16, bf16)
  CAST_RUN(f16, f16, u8, u8) CAST_RUN(f16, f16, u32, u32) CAST_RUN(f16, f16, i64, i64)
  CAST_RUN(bf16, bf16, f32, float) CAST_RUN(bf16, bf16, f64, double) CAST_RUN(bf16, bf16, f16, f16)
  CAST_RUN(bf16, bf16, u8, u8) CAST_RUN(bf16, bf16, u32, u32) CAST_RUN(bf16, bf16, i64, i64)
  CAST_RUN(u8, u8, f32, float) CAST_RUN(u8, u8, f64, double) CAST_RUN(u8, u8, f16, f16)
  CAST_RUN(u8, u8, bf16, bf16) CAST_RUN(u8, u8, u32, u32) CAST_RUN(u8, u8, i64, i64)
  CAST_RUN(u32, u32, f32, float) CAST_RUN(u32, u32, f64, double) CAST_RUN(u32, u32, f16, f16)
  CAST_RUN(u32, u32, bf16, bf16) CAST_RUN(u32, u32, u8, u8) CAST_RUN(u32, u32, i64, i64)
  CAST_RUN(i64, i64, f32, float) CAST_RUN(i64, i64, f64, double) CAST_RUN(i64, i64, f16, f16)
  CAST_RUN(i64, i64, bf16, bf16) CAST_RUN(i64, i64, u8, u8) CAST_RUN(i64, i64, u32, u32)
}

// unary: one input per float dtype, every op (the parameterised ones with fixed parameters,
// which test/cpu/elementwise-emu.test.ts repeats)
template <class T> struct Un;
#define EMU_UN_OPS(X) X(exp) X(log) X(sin) X(cos) X(tanh) X(neg) X(recip) X(sqr) X(sqrt) X(gelu) X(geluErf) X(erf) X(relu) X(silu) \
  X(abs) X(ceil) X(floor) X(round) X(sign) X(sigmoid)
#define EMU_PARAM_OPS(X) X(affine, 1.5, -0.25) X(powf, 2.5, 0) X(elu, 0.7, 0) X(clamp, -1.5, 2.25) X(leakyRelu, 0.05, 0)
#define EMU_UN_RUN(NAME)                                                                                                 \
  un_one<T>("unary_" #NAME, wave, x, [](T* y, const T* v, i64 yo, i64 xo, u64 n) { Un<T>::NAME(y, v, yo, xo, n); }, \
      [](T* y, const T* v, const Geom& g) { Un<T>::NAME##_s(y, v, g); });
#define EMU_PARAM_RUN(NAME, A, B)                                                                                                     \
  un_one<T>("unary_" #NAME, wave, x, [](T* y, const T* v, i64 yo, i64 xo, u64 n) { Un<T>::NAME(y, v, yo, xo, n, (C)(A), (C)(B)); }, \
      [](T* y, const T* v, const Geom& g) { Un<T>::NAME##_s(y, v, g, (C)(A), (C)(B)); });
#define EMU_UN_STRUCT(DT, T)                                                                                       \
  template <> struct Un<T> {                                                                                       \
    EMU_UN_OPS(EMU_UN_P_##DT) EMU_PARAM_OPS(EMU_PP_##DT)                                                           \
  };
#define EMU_UN_P_f32(N) static constexpr auto N = &unary_##N##_f32; static constexpr auto N##_s = &unary_##N##_f32_strided;
#define EMU_UN_P_f64(N) static constexpr auto N = &unary_##N##_f64; static constexpr auto N##_s = &unary_##N##_f64_strided;
#define EMU_UN_P_f16(N) static constexpr auto N = &unary_##N##_f16; static constexpr auto N##_s = &unary_##N##_f16_strided;
#define EMU_UN_P_bf16(N) static constexpr auto N = &unary_##N##_bf16; static constexpr auto N##_s = &unary_##N##_bf16_strided;
#define EMU_PP_f32(N, A, B) EMU_UN_P_f32(N)
#define EMU_PP_f64(N, A, B) EMU_UN_P_f64(N)
#define EMU_PP_f16(N, A, B) EMU_UN_P_f16(N)
#define EMU_PP_bf16(N, A, B) EMU_UN_P_bf16(N)
EMU_UN_STRUCT(f32, float)
EMU_UN_STRUCT(f64, double)
EMU_UN_STRUCT(f16, f16)
EMU_UN_STRUCT(bf16, bf16)

template <class T, class K, class KS> static void un_one(const char* name, int wave, const std::vector<T>& x, K k, KS ks) {
  const std::string full = std::string(name) + "_" + Io<T>::name;
  cast_one<T, T>(full.c_str(), wave, x, k, ks);
}

template <class T> static void unary_all(int wave) {
  typedef typename Elem<T>::C C;
  Rng rng{0x0de + (uint64_t)sizeof(T)};
  std::vector<T> x = values<T>(rng, N + 1);
  // smaller arguments too, where exp, tanh and erf are not saturated
  for (size_t i = 1; i < x.size(); i += 3) x[i] = Io<T>::put(rng.uni(-4, 4));
  if (wave == 64) std::printf("in %s u %s\n", Io<T>::name, hex(x.data(), x.size()).c_str());
  EMU_UN_OPS(EMU_UN_RUN)
  EMU_PARAM_OPS(EMU_PARAM_RUN)
}

int main() {
  for (int wave : {64, 32}) {
    binary_all<float>(wave);
    binary_all<double>(wave);
    binary_all<f16>(wave);
    binary_all<bf16>(wave);
    binary_all<u8>(wave);
    binary_all<u32>(wave);
    binary_all<i64>(wave);
    casts(wave);
    unary_all<float>(wave);
    unary_all<double>(wave);
    unary_all<f16>(wave);
    unary_all<bf16>(wave);
  }
  if (failures) {
    std::printf("%d kernels wrote outside their output\n", failures);
    return 1;
  }
  std::printf("ok: 0 mismatches\n");
  return 0;
}
