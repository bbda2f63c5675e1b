// gemv-emu.cpp: runs gemv-fused.hip (gemvf, gemvf_swiglu, gemvf_qkv; plain and RMS-normalised x;
// f32, f16, bf16) on the host through its HIP path (hip-host/hip/hip_runtime.h: a block's
// threads as fibers, the wave reductions as real shuffles) at wave sizes 64 and 32, against
// double-precision references written here from the kernels' definitions. Cases: split 1, 2 and
// 4 waves a unit, grids smaller than the units (grid-stride), k that takes the 16-byte path and
// k that does not (odd, or W rows not aligned), bias and residual flags, the rotary pairs of the
// q/k/v projection written into strided caches at a position given by value and by pointer.
// Outputs start poisoned (NaN), so an unwritten element shows. Exits 1 on a mismatch.
//   g++ -std=c++20 -O1 -D__HIP__ -Itest/emu/hip-host test/emu/gemv-emu.cpp && ./a.out
#include "../../hip-src/gemv-fused.hip"
#include <cstdio>
#include <string>

#include "emu-rng.h"

static int failures = 0;

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

// the kernels of a dtype
template <class T> struct Gf;
#define EMU_GF(DT, T)                                                   \
  template <> struct Gf<T> {                                            \
    static constexpr auto n = &gemvf_n_##DT, r = &gemvf_r_##DT;         \
    static constexpr auto sn = &gemvf_swiglu_n_##DT, sr = &gemvf_swiglu_r_##DT; \
    static constexpr auto qn = &gemvf_qkv_n_##DT, qr = &gemvf_qkv_r_##DT; \
  };
EMU_GF(f32, float)
EMU_GF(f16, f16)
EMU_GF(bf16, bf16)

// a reference value and the scale of its terms (f32 sums: their rounding grows with it)
struct Ref {
  double v, scale;
};

template <class T> static void expect(const char* what, const T& got, Ref want, int& bad) {
  const double g = Io<T>::get(got);
  const double tol = Io<T>::eps * std::fabs(want.v) + 1e-5 * want.scale;
  if (!(std::fabs(g - want.v) <= tol)) {
    if (bad++ < 5) std::printf("MISMATCH %s: %.8g, want %.8g (tolerance %.3g)\n", what, g, want.v, tol);
  }
}

struct Shape {
  unsigned n, k, ldw, split, grid;
};

template <class T, bool NORM> struct Data {
  std::vector<T> x, w, g, bias, r;
  std::vector<double> xn;  // x as the dot products see it (normalised, times g)
  double rms = 1;
  Data(const Shape& s, unsigned rows, Rng& rng) {
    x.resize(s.k);
    g.resize(s.k);
    w.resize((size_t)rows * s.ldw + 1);
    bias.resize(rows);
    r.resize(rows);
    for (auto& e : x) e = Io<T>::put(rng.uni(-1, 1));
    for (auto& e : g) e = Io<T>::put(rng.uni(0.5, 1.5));
    for (auto& e : w) e = Io<T>::put(rng.uni(-1, 1));
    for (auto& e : bias) e = Io<T>::put(rng.uni(-1, 1));
    for (auto& e : r) e = Io<T>::put(rng.uni(-1, 1));
    xn.resize(s.k);
    if (NORM) {
      double sq = 0;
      for (auto& e : x) sq += Io<T>::get(e) * Io<T>::get(e);
      rms = 1 / std::sqrt(sq / s.k + 1e-5);
    }
    for (unsigned i = 0; i < s.k; i++) xn[i] = Io<T>::get(x[i]) * (NORM ? Io<T>::get(g[i]) * rms : 1);
  }
  // x . W[row] over a W starting `off` elements in
  Ref dot(const Shape& s, unsigned row, unsigned off) const {
    double v = 0, sc = 0;
    for (unsigned i = 0; i < s.k; i++) {
      const double t = xn[i] * Io<T>::get(w[off + (size_t)row * s.ldw + i]);
      v += t;
      sc += std::fabs(t);
    }
    return {v, sc};
  }
};

// the kernels' W starts `off` elements into w: 1 misaligns its rows (the scalar path)
template <class T, bool NORM> static void linear(const Shape& s, int wave, bool swiglu, unsigned off, unsigned flags, Rng& rng) {
  const unsigned rows = swiglu ? 2 * s.n : s.n;
  Data<T, NORM> d(s, rows, rng);
  std::vector<T> y(s.n, Io<T>::put(NAN));
  emu::launch(s.grid, 256, wave, [&] {
    const auto fn = swiglu ? (NORM ? Gf<T>::sr : Gf<T>::sn) : (NORM ? Gf<T>::r : Gf<T>::n);
    fn(&y[0], &d.x[0], &d.w[0], &d.g[0], &d.bias[0], &d.r[0], 0, 0, off, 0, 0, 0, s.n, s.k, s.ldw, 1e-5f, flags, s.split);
  });
  int bad = 0;
  char what[160];
  for (unsigned j = 0; j < s.n; j++) {
    const double b0 = flags & 1 ? Io<T>::get(d.bias[j]) : 0, rr = flags & 2 ? Io<T>::get(d.r[j]) : 0;
    Ref want;
    if (swiglu) {
      const Ref a = d.dot(s, j, off), b = d.dot(s, s.n + j, off);
      const double gate = a.v + b0, up = b.v + (flags & 1 ? Io<T>::get(d.bias[s.n + j]) : 0);
      want = {gate / (1 + std::exp(-gate)) * up + rr, (a.scale + 1) * (std::fabs(up) + 1) + b.scale * (std::fabs(gate) + 1)};
    } else {
      const Ref a = d.dot(s, j, off);
      want = {a.v + b0 + rr, a.scale + 2};
    }
    std::snprintf(what, sizeof what, "%s%s_%s wave %d n %u k %u ldw %u off %u split %u grid %u flags %u: y[%u]", swiglu ? "gemvf_swiglu_" : "gemvf_",
        NORM ? "r" : "n", Io<T>::name, wave, s.n, s.k, s.ldw, off, s.split, s.grid, flags, j);
    expect(what, y[j], want, bad);
  }
  if (bad) failures++;
}

// q/k/v: heads + 2 kvHeads heads of d rows; caches [kvHeads, P, d] as strides
template <class T, bool NORM> static void qkv(int wave, unsigned k, unsigned split, unsigned grid, bool byPtr, Rng& rng) {
  const unsigned heads = 4, kvHeads = 2, dd = 8, half = dd / 2, P = 6, pos = 3;
  const Shape s{0, k, k, split, grid};
  const unsigned rows = (heads + 2 * kvHeads) * dd;
  Data<T, NORM> d(s, rows, rng);
  std::vector<T> cs((size_t)P * half), sn((size_t)P * half);
  for (unsigned i = 0; i < P * half; i++) {
    cs[i] = Io<T>::put(std::cos(0.3 * i));
    sn[i] = Io<T>::put(std::sin(0.3 * i));
  }
  std::vector<T> q((size_t)heads * dd, Io<T>::put(NAN)), kc((size_t)kvHeads * P * dd, Io<T>::put(NAN)), vc = kc;
  const long long headStride = (long long)P * dd, posStride = dd;
  const u32 posv = pos;
  emu::launch(grid, 256, wave, [&] {
    (NORM ? Gf<T>::qr : Gf<T>::qn)(&q[0], &kc[0], &vc[0], &d.x[0], &d.w[0], &d.g[0], &d.bias[0], &cs[0], &sn[0], byPtr ? &posv : nullptr, 0, 0, 0, 0,
        0, 0, 0, 0, 0, k, k, 1e-5f, 1, split, heads, kvHeads, dd, byPtr ? 0 : pos, headStride, posStride);
  });
  int bad = 0;
  char what[160];
  for (unsigned h = 0; h < heads + 2 * kvHeads; h++)
    for (unsigned i = 0; i < half; i++) {
      Ref a = d.dot(s, h * dd + i, 0), b = d.dot(s, h * dd + i + half, 0);
      a.v += Io<T>::get(d.bias[h * dd + i]);
      b.v += Io<T>::get(d.bias[h * dd + i + half]);
      double ra = a.v, rb = b.v;
      if (h < heads + kvHeads) {
        const double co = Io<T>::get(cs[pos * half + i]), si = Io<T>::get(sn[pos * half + i]);
        ra = a.v * co - b.v * si;
        rb = b.v * co + a.v * si;
      }
      const double sc = a.scale + b.scale + 2;
      const T* dst = h < heads ? &q[h * dd] : h < heads + kvHeads ? &kc[(h - heads) * headStride + pos * posStride] : &vc[(h - heads - kvHeads) * headStride + pos * posStride];
      std::snprintf(what, sizeof what, "gemvf_qkv_%s_%s wave %d k %u split %u grid %u %s: head %u pair %u", NORM ? "r" : "n", Io<T>::name, wave, k, split,
          grid, byPtr ? "pos by pointer" : "pos by value", h, i);
      expect(what, dst[i], {ra, sc}, bad);
      expect(what, dst[i + half], {rb, sc}, bad);
    }
  // nothing else written: the other positions of the caches stay poisoned
  for (unsigned x = 0; x < kc.size(); x++)
    if ((long long)(x % headStride) / posStride != pos && (Io<T>::get(kc[x]) == Io<T>::get(kc[x]) || Io<T>::get(vc[x]) == Io<T>::get(vc[x]))) {
      if (bad++ < 5) std::printf("MISMATCH gemvf_qkv_%s wave %d: cache element %u written outside position %u\n", Io<T>::name, wave, x, pos);
    }
  if (bad) failures++;
}

template <class T> static void all(int wave) {
  const int before = failures;
  Rng rng{0x5eed + (uint64_t)wave};
  const Shape shapes[] = {
      {37, 256, 256, 1, 3},   // 16-byte path, units past the grid
      {20, 1000, 1000, 2, 2}, // k not a multiple of the unroll's stride
      {9, 515, 520, 4, 1},    // odd k: the scalar path; padded rows
      {64, 64, 72, 1, 16},    // more blocks than units need
  };
  for (const Shape& s : shapes)
    for (unsigned flags : {0u, 1u, 2u, 3u}) {
      linear<T, false>(s, wave, false, 0, flags, rng);
      linear<T, true>(s, wave, false, 0, flags, rng);
      linear<T, false>(s, wave, true, 0, flags, rng);
      linear<T, true>(s, wave, true, 0, flags, rng);
    }
  linear<T, false>(Shape{11, 256, 256, 2, 2}, wave, false, 1, 3, rng);  // W misaligned by one
  linear<T, true>(Shape{11, 256, 256, 2, 2}, wave, true, 1, 3, rng);
  for (bool byPtr : {false, true}) {
    qkv<T, false>(wave, 128, 2, 3, byPtr, rng);
    qkv<T, true>(wave, 77, 1, 2, byPtr, rng);
    qkv<T, true>(wave, 512, 4, 5, byPtr, rng);
  }
  if (failures == before) std::printf("ok %s wave %d\n", Io<T>::name, wave);
}

int main() {
  for (int wave : {64, 32}) {
    all<float>(wave);
    all<f16>(wave);
    all<bf16>(wave);
  }
  if (failures) {
    std::printf("%d mismatching cases\n", failures);
    return 1;
  }
  std::printf("ok: 0 mismatches\n");
  return 0;
}
