// train-emu.cpp: runs the training kernels (softmax-grad.hip, norm-grad.hip, cross-entropy.hip,
// optim.hip, swiglu.hip) on the host through their HIP path (hip-host/hip/hip_runtime.h: a block's threads as
// fibers, real barriers and shuffles) at wave sizes 64 and 32, against double-precision
// references written from the formulas in the kernels' headers. Cases: rows shorter and longer
// than a block, grids smaller than the rows (grid-stride), several blocks' partial sums folded
// per column, ignored and out-of-range class ids, a broadcast loss gradient, Adam/AdamW with and
// without amsgrad and SGD with momentum/nesterov over lists whose tensors end inside and on chunk
// boundaries, master copies of half parameters. Outputs start poisoned (NaN).
// Prints one line per kernel family, dtype and wave; exits 1 on a mismatch.
//   g++ -std=c++20 -O1 -D__HIP__ -Itest/emu/hip-host test/emu/train-emu.cpp && ./a.out
#include "../../hip-src/softmax-grad.hip"
#include "../../hip-src/norm-grad.hip"
#include "../../hip-src/cross-entropy.hip"
#include "../../hip-src/optim.hip"
#include "../../hip-src/swiglu.hip"
#include <cstdio>
#include <string>
#include <vector>

#include "emu-rng.h"
#include "emu-io.h"

static int failures = 0;

template <class T> struct Io;
template <> struct Io<float> : EmuIo<float> {
  static constexpr double eps = 1.0 / (1 << 20);
};
template <> struct Io<double> : EmuIo<double> {
  static constexpr double eps = 1e-12;
};
template <> struct Io<f16> : EmuIo<f16> {
  static constexpr double eps = 1.0 / 512;
};
template <> struct Io<bf16> : EmuIo<bf16> {
  static constexpr double eps = 1.0 / 64;
};

template <class T> static std::vector<T> rand_vec(size_t n, double lo, double hi, Rng& rng) {
  std::vector<T> v(n);
  for (auto& e : v) e = Io<T>::put(rng.uni(lo, hi));
  return v;
}
template <class T> static std::vector<double> as_f64(const std::vector<T>& v) {
  std::vector<double> o(v.size());
  for (size_t i = 0; i < v.size(); i++) o[i] = Io<T>::get(v[i]);
  return o;
}

// y against want (NaN wanted: NaN got), |err| <= eps (|want| + scale)
template <class T> static bool compare(const std::vector<T>& y, const std::vector<double>& want, double scale, const std::string& what,
                                       double eps = Io<T>::eps) {
  int bad = 0;
  for (size_t i = 0; i < want.size(); i++) {
    const double g = Io<T>::get(y[i]), w = want[i];
    const bool ok = w != w ? g != g : std::fabs(g - w) <= eps * (std::fabs(w) + scale);
    if (!ok && bad++ < 3) std::printf("MISMATCH %s: [%zu] = %.9g, want %.9g\n", what.c_str(), i, g, w);
  }
  return bad == 0;
}

static std::string tag(const char* k, const char* dt, int wave, unsigned grid, u64 cols) {
  return std::string(k) + "_" + dt + " wave " + std::to_string(wave) + " grid " + std::to_string(grid) + " cols " + std::to_string(cols);
}

// ---- softmax backward ------------------------------------------------------------------------
template <class T> struct SmG;
#define EMU_SMG(DT, T) template <> struct SmG<T> { static constexpr auto k = &softmaxgrad_##DT; };
EMU_SMG(f32, float) EMU_SMG(f64, double) EMU_SMG(f16, f16) EMU_SMG(bf16, bf16)

template <class T> static bool smgrad(int wave, u64 rows, u64 cols, unsigned grid, unsigned block, bool lg, Rng& rng) {
  const u64 n = rows * cols;
  std::vector<double> yd(n);
  // y: a real softmax (or logSoftmax) of random logits, as the forward hands it over
  for (u64 r = 0; r < rows; r++) {
    double m = -1e300, s = 0;
    std::vector<double> x(cols);
    for (auto& e : x) m = std::max(m, e = rng.uni(-3, 3));
    for (auto e : x) s += std::exp(e - m);
    for (u64 c = 0; c < cols; c++) yd[r * cols + c] = lg ? x[c] - m - std::log(s) : std::exp(x[c] - m) / s;
  }
  std::vector<T> y(n), g = rand_vec<T>(n, -2, 2, rng), dx(n + 3, Io<T>::put(NAN));
  for (u64 i = 0; i < n; i++) y[i] = Io<T>::put(yd[i]);
  emu::launch(grid, block, wave, [&] { SmG<T>::k(dx.data() + 1, g.data(), y.data(), 0, 0, 0, rows, cols, lg ? 1u : 0u); });
  const auto gv = as_f64(g), yv = as_f64(y);
  std::vector<double> want(n + 3, NAN);
  for (u64 r = 0; r < rows; r++) {
    double s = 0;
    for (u64 c = 0; c < cols; c++) s += lg ? gv[r * cols + c] : gv[r * cols + c] * yv[r * cols + c];
    for (u64 c = 0; c < cols; c++) {
      const u64 i = r * cols + c;
      want[i + 1] = lg ? gv[i] - std::exp(yv[i]) * s : yv[i] * (gv[i] - s);
    }
  }
  return compare(dx, want, 2, tag(lg ? "logsoftmaxgrad" : "softmaxgrad", Io<T>::name, wave, grid, cols));
}

// ---- SwiGLU forward and backward --------------------------------------------------------------
template <class T> struct Swi;
#define EMU_SWI(DT, T) template <> struct Swi<T> { static constexpr auto f = &swiglu_fwd_##DT; static constexpr auto b = &swiglu_bwd_##DT; };
EMU_SWI(f32, float) EMU_SWI(f64, double) EMU_SWI(f16, f16) EMU_SWI(bf16, bf16)

// off: the outputs' offset in elements (0 with n a multiple of 16 bytes: the vector path)
template <class T> static bool swiglu(int wave, u64 rows, u64 n, unsigned grid, unsigned block, u64 off, Rng& rng) {
  std::vector<T> x = rand_vec<T>(rows * 2 * n, -4, 4, rng), g = rand_vec<T>(rows * n, -2, 2, rng);
  std::vector<T> y(rows * n + 3, Io<T>::put(NAN)), dx(rows * 2 * n + 3, Io<T>::put(NAN));
  emu::launch(grid, block, wave, [&] { Swi<T>::f(y.data(), x.data(), (i64)off, 0, rows, n); });
  emu::launch(grid, block, wave, [&] { Swi<T>::b(dx.data(), g.data(), x.data(), (i64)off, 0, 0, rows, n); });
  const auto xv = as_f64(x), gv = as_f64(g);
  std::vector<double> wy(rows * n + 3, NAN), wdx(rows * 2 * n + 3, NAN);
  const u64 o = off;
  for (u64 r = 0; r < rows; r++)
    for (u64 c = 0; c < n; c++) {
      const double a = xv[r * 2 * n + c], b = xv[r * 2 * n + n + c], gg = gv[r * n + c], s = 1 / (1 + std::exp(-a));
      wy[o + r * n + c] = a * s * b;
      wdx[o + r * 2 * n + c] = gg * b * s * (1 + a * (1 - s));
      wdx[o + r * 2 * n + n + c] = gg * a * s;
    }
  const bool okf = compare(y, wy, 1, tag("swiglu_fwd", Io<T>::name, wave, grid, n));
  return compare(dx, wdx, 1, tag("swiglu_bwd", Io<T>::name, wave, grid, n)) && okf;
}

// ---- norm backward ---------------------------------------------------------------------------
template <class T> struct NormG;
#define EMU_NORMG(DT, T) \
  template <> struct NormG<T> { static constexpr auto ln = &layernormgrad_##DT; static constexpr auto rms = &rmsnormgrad_##DT; \
                                static constexpr auto cols = &normgrad_cols_##DT; };
EMU_NORMG(f32, float) EMU_NORMG(f64, double) EMU_NORMG(f16, f16) EMU_NORMG(bf16, bf16)
// the one-row-a-wave kernels (V 24 columns a lane); none for f64
template <class T> struct NormGW;
#define EMU_NORMGW(DT, T) \
  template <> struct NormGW<T> { \
    static constexpr decltype(&rmsnormgrad_##DT##_w24) rms[1] = {&rmsnormgrad_##DT##_w24}; \
    static constexpr decltype(&layernormgrad_##DT##_w24) ln[1] = {&layernormgrad_##DT##_w24}; };
EMU_NORMGW(f32, float) EMU_NORMGW(f16, f16) EMU_NORMGW(bf16, bf16)
static int vslot(int) { return 0; }

// mode 0 rmsNorm, 1 layerNorm without bias, 2 layerNorm with bias; v 0 the block-a-row kernel, else
// the one-row-a-wave kernel of V = v
template <class T> static bool normgrad(int wave, u64 rows, u64 cols, unsigned grid, unsigned block, int mode, int v, Rng& rng) {
  typedef typename Elem<T>::C C;
  const u64 n = rows * cols, nvec = mode == 2 ? 2 : 1;
  const double eps = 1e-5;
  auto x = rand_vec<T>(n, -2, 2, rng), g = rand_vec<T>(n, -1, 1, rng), w = rand_vec<T>(cols, 0.5, 1.5, rng);
  std::vector<T> dx(n, Io<T>::put(NAN)), dw(cols, Io<T>::put(NAN)), db(cols, Io<T>::put(NAN));
  std::vector<C> part(grid * nvec * cols, (C)NAN);
  emu::launch(grid, block, wave, [&] {
    if (v == 0 && mode == 0) NormG<T>::rms(dx.data(), part.data(), g.data(), x.data(), w.data(), 0, 0, 0, 0, rows, cols, eps);
    else if (v == 0) NormG<T>::ln(dx.data(), part.data(), g.data(), x.data(), w.data(), 0, 0, 0, 0, rows, cols, eps, mode == 2 ? 1u : 0u);
    else if constexpr (sizeof(T) != 8) {
      if (mode == 0) NormGW<T>::rms[vslot(v)](dx.data(), part.data(), g.data(), x.data(), w.data(), 0, 0, 0, 0, rows, cols, eps);
      else NormGW<T>::ln[vslot(v)](dx.data(), part.data(), g.data(), x.data(), w.data(), 0, 0, 0, 0, rows, cols, eps, mode == 2 ? 1u : 0u);
    }
  });
  emu::launch(2, 64, wave, [&] {
    NormG<T>::cols(dw.data(), mode == 2 ? db.data() : nullptr, part.data(), 0, 0, cols, grid, (u32)nvec);
  });
  const auto xv = as_f64(x), gv = as_f64(g), wv = as_f64(w);
  std::vector<double> wdx(n), wdw(cols, 0), wdb(cols, 0);
  for (u64 r = 0; r < rows; r++) {
    const double* xr = &xv[r * cols];
    const double* gr = &gv[r * cols];
    double mean = 0, sq = 0, a = 0, b = 0;
    if (mode != 0) {
      for (u64 c = 0; c < cols; c++) mean += xr[c];
      mean /= (double)cols;
    }
    for (u64 c = 0; c < cols; c++) sq += (xr[c] - mean) * (xr[c] - mean);
    const double rs = 1 / std::sqrt(sq / (double)cols + eps);
    for (u64 c = 0; c < cols; c++) {
      const double xh = (xr[c] - mean) * rs, gh = gr[c] * wv[c];
      a += gh * xh;
      b += gh;
      wdw[c] += gr[c] * xh;
      wdb[c] += gr[c];
    }
    if (mode == 0) b = 0;
    for (u64 c = 0; c < cols; c++) {
      const double xh = (xr[c] - mean) * rs, gh = gr[c] * wv[c];
      wdx[r * cols + c] = rs * (gh - b / (double)cols - xh * a / (double)cols);
    }
  }
  static const char* NAMES[] = {"rmsnormgrad", "layernormgrad", "layernormgrad+bias"};
  const std::string t = tag(NAMES[mode], Io<T>::name, wave, grid, cols) + (v ? " w" + std::to_string(v) : "");
  bool ok = compare(dx, wdx, 4, t + " dx") && compare(dw, wdw, 4, t + " dw");
  if (mode == 2) ok = compare(db, wdb, 4, t + " db") && ok;
  return ok;
}

// ---- cross entropy ---------------------------------------------------------------------------
template <class T> struct Xent;
#define EMU_XENT(DT, T) template <> struct Xent<T> { static constexpr auto fwd = &xent_fwd_##DT; static constexpr auto bwd = &xent_bwd_##DT; };
EMU_XENT(f32, float) EMU_XENT(f64, double) EMU_XENT(f16, f16) EMU_XENT(bf16, bf16)

template <class T> static bool xent(int wave, u64 rows, u64 cols, unsigned grid, unsigned block, bool weighted, double sm, bool gBroadcast,
                                    Rng& rng) {
  const u64 n = rows * cols;
  const i64 ignore = -100;
  auto x = rand_vec<T>(n, -4, 4, rng), w = rand_vec<T>(cols, 0.2, 2, rng), gl = rand_vec<T>(rows, -1.5, 1.5, rng);
  std::vector<i64> t(rows);
  for (u64 r = 0; r < rows; r++) t[r] = (i64)(rng.next() % cols);
  t[1 % rows] = ignore;
  if (rows > 3) t[3] = (i64)cols + 2;  // out of range: NaN
  std::vector<T> loss(rows, Io<T>::put(NAN)), dx(n, Io<T>::put(NAN));
  const T* wp = weighted ? w.data() : nullptr;
  emu::launch(grid, block, wave, [&] { Xent<T>::fwd(loss.data(), x.data(), t.data(), wp, 0, 0, 0, 0, rows, cols, ignore, sm); });
  emu::launch(grid, block, wave, [&] {
    Xent<T>::bwd(dx.data(), gl.data(), x.data(), t.data(), wp, 0, 0, 0, 0, 0, rows, cols, gBroadcast ? 0 : 1, ignore, sm);
  });
  const auto xv = as_f64(x), wv = as_f64(w), gv = as_f64(gl);
  std::vector<double> wl(rows), wdx(n);
  double W = 0;
  for (u64 c = 0; c < cols; c++) W += weighted ? wv[c] : 1;
  for (u64 r = 0; r < rows; r++) {
    const double* xr = &xv[r * cols];
    double m = -1e300, s = 0, wx = 0;
    for (u64 c = 0; c < cols; c++) m = std::max(m, xr[c]);
    for (u64 c = 0; c < cols; c++) s += std::exp(xr[c] - m), wx += (weighted ? wv[c] : 1) * xr[c];
    const double lse = m + std::log(s), g = gv[gBroadcast ? 0 : r];
    if (t[r] == ignore) {
      wl[r] = 0;
      for (u64 c = 0; c < cols; c++) wdx[r * cols + c] = 0;
      continue;
    }
    if (t[r] < 0 || (u64)t[r] >= cols) {
      wl[r] = NAN;
      for (u64 c = 0; c < cols; c++) wdx[r * cols + c] = NAN;
      continue;
    }
    const double wt = weighted ? wv[t[r]] : 1, hard = (1 - sm) * wt, soft = sm / (double)cols;
    wl[r] = hard * (lse - xr[t[r]]) + soft * (W * lse - wx);
    for (u64 c = 0; c < cols; c++)
      wdx[r * cols + c] = g * (std::exp(xr[c] - lse) * (hard + soft * W) - ((i64)c == t[r] ? hard : 0) - soft * (weighted ? wv[c] : 1));
  }
  const std::string tg = tag("xent", Io<T>::name, wave, grid, cols) + (weighted ? " weighted" : "") + " smoothing " + std::to_string(sm) +
                         (gBroadcast ? " g broadcast" : "");
  return compare(loss, wl, 4, tg + " loss") && compare(dx, wdx, 1, tg + " dx");
}

// ---- optimizer steps -------------------------------------------------------------------------
template <class P, class S> struct Opt;
#define EMU_OPT(PD, P, SD, S) \
  template <> struct Opt<P, S> { static constexpr auto adam = &optim_adam_##PD##_##SD; static constexpr auto sgd = &optim_sgd_##PD##_##SD; \
                                 static constexpr const char* name = #PD "_" #SD; };
EMU_OPT(f32, float, f32, float) EMU_OPT(f64, double, f64, double) EMU_OPT(f16, f16, f16, f16) EMU_OPT(bf16, bf16, bf16, bf16)
EMU_OPT(f16, f16, f32, float) EMU_OPT(bf16, bf16, f32, float)

// adam: flags as optim.hip's (1 decoupled, 2 amsgrad); sgd (adam false): 1 momentum, 2 nesterov, 4 first
template <class P, class S> static bool optim(int wave, bool adam, u32 flags, bool master, unsigned grid, Rng& rng) {
  const std::vector<u64> sizes = {5000, 1, 8192, 3};
  const size_t k = sizes.size();
  std::vector<std::vector<P>> p(k), g(k);
  std::vector<std::vector<S>> s0(k), s1(k), s2(k), ms(k);
  std::vector<u64> tab(k * OPTIM_WORDS);
  u64 chunks = 0;
  for (size_t i = 0; i < k; i++) {
    const u64 n = sizes[i];
    p[i] = rand_vec<P>(n, -1, 1, rng);
    g[i] = rand_vec<P>(n, -0.5, 0.5, rng);
    s0[i] = rand_vec<S>(n, -0.1, 0.1, rng);
    s1[i] = rand_vec<S>(n, 0, 0.01, rng);
    s2[i] = rand_vec<S>(n, 0, 0.02, rng);
    ms[i].resize(n);
    for (u64 j = 0; j < n; j++) ms[i][j] = Io<S>::put(Io<P>::get(p[i][j]) + rng.uni(-1e-3, 1e-3));
    u64* e = &tab[i * OPTIM_WORDS];
    e[0] = (u64)p[i].data(); e[1] = (u64)g[i].data(); e[2] = (u64)s0[i].data(); e[3] = adam ? (u64)s1[i].data() : 0;
    e[4] = adam && (flags & 2) ? (u64)s2[i].data() : 0; e[5] = master ? (u64)ms[i].data() : 0; e[6] = n; e[7] = chunks;
    chunks += (n + OPTIM_CHUNK - 1) / OPTIM_CHUNK;
  }
  const auto p0 = p; const auto s00 = s0, s10 = s1, s20 = s2, ms0 = ms;
  const double lr = 0.01, b1 = 0.9, b2 = 0.999, eps = 1e-8, wd = 0.05, mo = 0.9, damp = adam ? 0 : (flags & 2 ? 0 : 0.1), t = 3;
  const double stepSize = lr / (1 - std::pow(b1, t)), ib = 1 / std::sqrt(1 - std::pow(b2, t));
  emu::launch(grid, 128, wave, [&] {
    if (adam) Opt<P, S>::adam(tab.data(), (u32)k, chunks, b1, 1 - b1, b2, 1 - b2, eps, wd, 1 - lr * wd, stepSize, ib, flags);
    else Opt<P, S>::sgd(tab.data(), (u32)k, chunks, lr, mo, 1 - damp, wd, flags);
  });
  bool ok = true;
  const std::string tg = std::string(adam ? "adam_" : "sgd_") + Opt<P, S>::name + " wave " + std::to_string(wave) + " grid " + std::to_string(grid) +
                         " flags " + std::to_string(flags) + (master ? " master" : "");
  for (size_t i = 0; i < k; i++) {
    const u64 n = sizes[i];
    std::vector<double> wp(n), w0(n), w1(n), w2(n), wm(n);
    for (u64 j = 0; j < n; j++) {
      double w = master ? Io<S>::get(ms0[i][j]) : Io<P>::get(p0[i][j]), gr = Io<P>::get(g[i][j]);
      if (adam) {
        if (!(flags & 1)) gr += w * wd;
        const double m = Io<S>::get(s00[i][j]) * b1 + gr * (1 - b1), v = Io<S>::get(s10[i][j]) * b2 + gr * gr * (1 - b2);
        const double vu = flags & 2 ? std::max(Io<S>::get(s20[i][j]), v) : v;
        w0[j] = m; w1[j] = v; w2[j] = vu;
        const double base = flags & 1 ? w * (1 - lr * wd) : w;
        w = base - m / (std::sqrt(vu) * ib + eps) * stepSize;
      } else {
        double d = gr + w * wd;
        if (flags & 1) {
          const double b = flags & 4 ? d : Io<S>::get(s00[i][j]) * mo + d * (1 - damp);
          w0[j] = b;
          d = flags & 2 ? d + b * mo : b;
        }
        w = w - d * lr;
      }
      wp[j] = w; wm[j] = w;
    }
    const std::string ti = tg + " tensor " + std::to_string(i);
    // the parameter: one rounding (from S's compute) off; the states where the step wrote them
    ok = compare(p[i], wp, 1, ti + " param", Io<P>::eps * 2) && ok;
    if (master) ok = compare(ms[i], wm, 1, ti + " master") && ok;
    if (adam || (flags & 1)) ok = compare(s0[i], w0, 0.1, ti + " state0") && ok;
    if (adam) ok = compare(s1[i], w1, 0.01, ti + " state1") && ok;
    if (adam && (flags & 2)) ok = compare(s2[i], w2, 0.01, ti + " state2") && ok;
  }
  return ok;
}

template <class T> static void rows_all(int wave, Rng& rng) {
  bool ok = true;
  for (bool lg : {false, true})
    for (u64 cols : {1ull, 37ull, 300ull})
      for (unsigned grid : {1u, 3u}) ok = smgrad<T>(wave, 5, cols, grid, 128, lg, rng) && ok;
  if (ok) std::printf("ok softmaxgrad %s wave %d\n", Io<T>::name, wave);
  else failures++;
  ok = true;
  for (int mode = 0; mode < 3; mode++)
    for (u64 cols : {1ull, 33ull, 260ull})
      // 11 blocks: the fold's batches of eight partials and a tail (and blocks with no row)
      for (unsigned grid : {1u, 3u, 11u}) {
        ok = normgrad<T>(wave, 7, cols, grid, 128, mode, 0, rng) && ok;
        if (sizeof(T) == 8) continue;
        // the one-row-a-wave kernels: the smallest V that holds the row, and the largest
        if ((u64)24 * wave >= cols) ok = normgrad<T>(wave, 7, cols, grid, 128, mode, 24, rng) && ok;
      }
  if (ok) std::printf("ok normgrad %s wave %d\n", Io<T>::name, wave);
  else failures++;
  ok = true;
  for (u64 cols : {5ull, 100ull, 300ull})
    for (bool weighted : {false, true})
      for (double sm : {0.0, 0.1})
        for (unsigned grid : {1u, 4u}) ok = xent<T>(wave, 6, cols, grid, 128, weighted, sm, grid == 4, rng) && ok;
  if (ok) std::printf("ok xent %s wave %d\n", Io<T>::name, wave);
  else failures++;
  ok = true;
  for (u64 n : {1ull, 45ull, 64ull, 300ull})
    for (unsigned grid : {1u, 4u})
      for (u64 off : {0ull, 1ull}) ok = swiglu<T>(wave, 7, n, grid, 128, off, rng) && ok;
  if (ok) std::printf("ok swiglu %s wave %d\n", Io<T>::name, wave);
  else failures++;
}

template <class P, class S> static void optim_all(int wave, bool master, Rng& rng) {
  bool ok = true;
  for (u32 flags : {0u, 1u, 2u, 3u})
    for (unsigned grid : {1u, 5u}) ok = optim<P, S>(wave, true, flags, master, grid, rng) && ok;
  for (u32 flags : {0u, 1u, 3u, 5u, 7u}) ok = optim<P, S>(wave, false, flags, master, 3, rng) && ok;
  if (ok) std::printf("ok optim %s%s wave %d\n", Opt<P, S>::name, master ? " master" : "", wave);
  else failures++;
}

int main() {
  Rng rng{0x7e57};
  for (int wave : {64, 32}) {
    rows_all<float>(wave, rng);
    rows_all<double>(wave, rng);
    rows_all<f16>(wave, rng);
    rows_all<bf16>(wave, rng);
    optim_all<float, float>(wave, false, rng);
    optim_all<double, double>(wave, false, rng);
    optim_all<f16, f16>(wave, false, rng);
    optim_all<bf16, bf16>(wave, false, rng);
    optim_all<f16, float>(wave, true, rng);
    optim_all<bf16, float>(wave, true, rng);
  }
  if (failures) {
    std::printf("%d mismatching families\n", failures);
    return 1;
  }
  std::printf("ok: 0 mismatches\n");
  return 0;
}
