// rope-bn-emu.cpp: runs rope.hip (rope_<halves|interleaved|thd>_<dt>) and batchnorm.hip
// (batchnorm_<dt>_<pt>) on the host through their HIP path (hip-host/hip/hip_runtime.h) at wave
// sizes 64 and 32, against double-precision references from the ops' definitions (rope.hip's and
// batchnorm.hip's headers). Cases: the three pair layouts; grids smaller than the work (the
// grid-stride loops, 32- and 64-bit paths share the body); batch norm with the 16-byte path and
// the element one (a plane that is not a multiple of a vector, an output misaligned by one
// element), a 2-D grid splitting planes, weight and bias present or absent, per-channel values
// in the data's dtype and in f32. Outputs start poisoned; elements past the output stay so.
// Prints one line per kernel family and wave; exits 1 on a mismatch.
//   g++ -std=c++20 -O1 -D__HIP__ -Itest/emu/hip-host test/emu/rope-bn-emu.cpp && ./a.out
#include "../../hip-src/rope.hip"
#include "../../hip-src/batchnorm.hip"
#include <cstdio>
#include <string>

#include "emu-rng.h"
#include "emu-io.h"

static int failures = 0;

template <class T> struct Io;
template <> struct Io<float> : EmuIo<float> {
  static constexpr double eps = 1.0 / (1 << 22);
};
template <> struct Io<double> : EmuIo<double> {
  static constexpr double eps = 1e-14;
};
template <> struct Io<f16> : EmuIo<f16> {
  static constexpr double eps = 1.0 / 1024;
};
template <> struct Io<bf16> : EmuIo<bf16> {
  static constexpr double eps = 1.0 / 128;
};

// checks y against want over [0, n) and that the poison past n stays
template <class T> static bool compare(const std::vector<T>& y, const std::vector<double>& want, size_t n, double scale, const std::string& what) {
  int bad = 0;
  for (size_t i = 0; i < y.size(); i++) {
    const double g = Io<T>::get(y[i]);
    const bool ok = i < n ? std::fabs(g - want[i]) <= Io<T>::eps * (std::fabs(want[i]) + scale) : g != g;
    if (!ok && bad++ < 3) std::printf("MISMATCH %s: y[%zu] = %.8g, want %.8g\n", what.c_str(), i, g, i < n ? want[i] : NAN);
  }
  return bad == 0;
}

template <class T> struct Rope;
#define EMU_ROPE(DT, T) \
  template <> struct Rope<T> { static constexpr decltype(&rope_halves_##DT) k[3] = {&rope_halves_##DT, &rope_interleaved_##DT, &rope_thd_##DT}; };
EMU_ROPE(f32, float)
EMU_ROPE(f64, double)
EMU_ROPE(f16, f16)
EMU_ROPE(bf16, bf16)

template <class T> static bool rope(int wave, int layout, unsigned grid, Rng& rng) {
  const u64 b = 2, s1 = 3, s2 = 5, half = 6, d = 2 * half, n = b * s1 * s2 * d;
  const u64 T_ = layout == ROPE_THD ? s1 : s2;
  std::vector<T> x(n), cs(T_ * half), sn(T_ * half), y(n + 4, Io<T>::put(NAN));
  for (auto& e : x) e = Io<T>::put(rng.uni(-2, 2));
  for (u64 i = 0; i < T_ * half; i++) {
    cs[i] = Io<T>::put(std::cos(0.37 * (double)i));
    sn[i] = Io<T>::put(std::sin(0.37 * (double)i));
  }
  emu::launch(grid, 256, wave, [&] {
    Rope<T>::k[layout](y.data(), x.data(), cs.data(), sn.data(), 0, 0, 0, 0, n / 2, s1, s2, half, (i64)(s1 * s2 * d), (i64)(s2 * d), (i64)d);
  });
  std::vector<double> want(n);
  for (u64 row = 0; row < n / d; row++)
    for (u64 i = 0; i < half; i++) {
      const u64 t = layout == ROPE_THD ? (row / s2) % s1 : row % s2;
      const u64 a = layout == ROPE_INTERLEAVED ? row * d + 2 * i : row * d + i, c = layout == ROPE_INTERLEAVED ? a + 1 : a + half;
      const double co = Io<T>::get(cs[t * half + i]), si = Io<T>::get(sn[t * half + i]), xa = Io<T>::get(x[a]), xc = Io<T>::get(x[c]);
      want[a] = xa * co - xc * si;
      want[c] = xc * co + xa * si;
    }
  static const char* NAMES[] = {"halves", "interleaved", "thd"};
  const std::string what = std::string("rope_") + NAMES[layout] + "_" + Io<T>::name + " wave " + std::to_string(wave) + " grid " + std::to_string(grid);
  bool ok = compare(y, want, n, 2, what);
  // the same x read through strides: dims 1 and 2 swapped in memory, rows padded to d + 3
  // (a head view of a fused projection), its result the same
  const u64 pd = d + 3;
  std::vector<T> xt(b * s1 * s2 * pd, Io<T>::put(NAN));
  for (u64 i0 = 0; i0 < b; i0++)
    for (u64 i1 = 0; i1 < s1; i1++)
      for (u64 i2 = 0; i2 < s2; i2++)
        for (u64 e = 0; e < d; e++) xt[((i0 * s2 + i2) * s1 + i1) * pd + e] = x[((i0 * s1 + i1) * s2 + i2) * d + e];
  std::fill(y.begin(), y.end(), Io<T>::put(NAN));
  emu::launch(grid, 256, wave, [&] {
    Rope<T>::k[layout](y.data(), xt.data(), cs.data(), sn.data(), 0, 0, 0, 0, n / 2, s1, s2, half, (i64)(s1 * s2 * pd), (i64)pd,
                       (i64)(s1 * pd));
  });
  return compare(y, want, n, 2, what + " strided") && ok;
}

template <class T, class P> struct Bn;
#define EMU_BN(DT, T, PT, P) \
  template <> struct Bn<T, P> { static constexpr auto k = &batchnorm_##DT##_##PT; static constexpr const char* name = "batchnorm_" #DT "_" #PT; };
EMU_BN(f32, float, f32, float)
EMU_BN(f64, double, f64, double)
EMU_BN(f16, f16, f16, f16)
EMU_BN(f16, f16, f32, float)
EMU_BN(bf16, bf16, bf16, bf16)
EMU_BN(bf16, bf16, f32, float)

// yOff 1 misaligns y: the element path even where the plane would take vectors
template <class T, class P> static bool bn(int wave, u64 nimg, u32 c, u64 plane, emu::Dim3 grid, unsigned block, u32 flags, i64 yOff, Rng& rng) {
  const u64 planes = nimg * c, n = planes * plane;
  std::vector<T> x(n), y(n + 8, Io<T>::put(NAN));
  std::vector<P> mean(c), var(c), w(c), bb(c);
  for (auto& e : x) e = Io<T>::put(rng.uni(-3, 3));
  for (u32 i = 0; i < c; i++) {
    mean[i] = Io<P>::put(rng.uni(-1, 1));
    var[i] = Io<P>::put(rng.uni(0.1, 2));
    w[i] = Io<P>::put(rng.uni(-2, 2));
    bb[i] = Io<P>::put(rng.uni(-1, 1));
  }
  const double eps = 1e-5;
  emu::launch(grid, block, wave, [&] {
    Bn<T, P>::k(y.data(), x.data(), mean.data(), var.data(), flags & 1 ? w.data() : nullptr, flags & 2 ? bb.data() : nullptr, yOff, 0, 0, 0, 0, 0, planes, c,
        plane, (typename Elem<T>::C)eps, flags);
  });
  std::vector<double> want(n + yOff);
  for (u64 p = 0; p < planes; p++) {
    const u32 ch = (u32)(p % c);
    const double a = (flags & 1 ? Io<P>::get(w[ch]) : 1) / std::sqrt(Io<P>::get(var[ch]) + eps), sh = flags & 2 ? Io<P>::get(bb[ch]) : 0;
    for (u64 i = 0; i < plane; i++) want[yOff + p * plane + i] = (Io<T>::get(x[p * plane + i]) - Io<P>::get(mean[ch])) * a + sh;
  }
  // the elements before yOff stay poisoned too
  bool ok = true;
  for (i64 i = 0; i < yOff; i++) ok = ok && Io<T>::get(y[i]) != Io<T>::get(y[i]);
  std::vector<T> body(y.begin() + yOff, y.end());
  std::vector<double> wb(want.begin() + yOff, want.end());
  return compare(body, wb, n, 8, std::string(Bn<T, P>::name) + " wave " + std::to_string(wave) + " plane " + std::to_string(plane) + " flags " +
      std::to_string(flags) + " yOff " + std::to_string(yOff)) && ok;
}

template <class T> static void rope_all(int wave, Rng& rng) {
  bool ok = true;
  for (int layout = 0; layout < 3; layout++)
    for (unsigned grid : {1u, 4u}) ok = rope<T>(wave, layout, grid, rng) && ok;
  if (ok) std::printf("ok rope %s wave %d\n", Io<T>::name, wave);
  else failures++;
}

template <class T, class P> static void bn_all(int wave, Rng& rng) {
  bool ok = true;
  for (u32 flags = 0; flags < 4; flags++) {
    ok = bn<T, P>(wave, 2, 3, 64, {4, 1, 1}, 64, flags, 0, rng) && ok;     // vectors, planes past the grid
    ok = bn<T, P>(wave, 1, 5, 37, {2, 2, 1}, 64, flags, 0, rng) && ok;     // elements; y splits the plane
  }
  ok = bn<T, P>(wave, 2, 2, 128, {3, 1, 1}, 128, 3, 1, rng) && ok;         // y misaligned
  ok = bn<T, P>(wave, 1, 3, 4096, {2, 3, 1}, 256, 3, 0, rng) && ok;        // long planes split over y
  if (ok) std::printf("ok %s wave %d\n", Bn<T, P>::name, wave);
  else failures++;
}

int main() {
  Rng rng{0x12345};
  for (int wave : {64, 32}) {
    rope_all<float>(wave, rng);
    rope_all<double>(wave, rng);
    rope_all<f16>(wave, rng);
    rope_all<bf16>(wave, rng);
    bn_all<float, float>(wave, rng);
    bn_all<double, double>(wave, rng);
    bn_all<f16, f16>(wave, rng);
    bn_all<f16, float>(wave, rng);
    bn_all<bf16, bf16>(wave, rng);
    bn_all<bf16, float>(wave, rng);
  }
  if (failures) {
    std::printf("%d mismatching families\n", failures);
    return 1;
  }
  std::printf("ok: 0 mismatches\n");
  return 0;
}
