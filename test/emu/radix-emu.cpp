// radix-emu.cpp: runs the radix sort and top-k kernels (hip-src/sort.hip, hip-src/topk.hip, the
// sources themselves) on the host through hip-host/hip/hip_runtime.h, with 32- and 64-lane
// waves, against a stable sort written here from the values (not from the kernels' keys): every
// dtype, ascending and descending, rows of one block and long rows of several tiles, ties, NaN,
// -0 and +0, infinities, offsets, outputs poisoned, grids smaller than the work (grid-stride
// loops); top-k's rounds, first-round bound, overflowing rounds (sorted rows, one value) and
// levels of slices. No GPU runs the wave64 paths where this is built; this checks their logic.
// Blocks run one after another here, so radix_sweep's look-back would always find its
// predecessor done (an inclusive count); half the long-row sorts keep every tile's inclusive
// count but tile 0's from being seen (as if published late), so each look-back walks the
// earlier tiles' own counts back to tile 0. The launch parameters follow
// src/backends/gpu/sort.ts and topk.ts. Prints one line per group of checks and exits 1 on any
// mismatch.
//   g++ -std=c++17 -O1 -D__HIP__ -Itest/emu/hip-host test/emu/radix-emu.cpp -o radix-emu && ./radix-emu
#include <hip/hip_runtime.h>
// sort.hip and topk.hip declare their LDS extern (sized at launch); the arrays are defined below
#undef __shared__
#define __shared__
#include "../../hip-src/sort.hip"
#include "../../hip-src/topk.hip"
#include <cstdio>
#include <string>

// the dynamic LDS of the kernels: 64 KiB, the most any arch gives a block
u64 sort_lds[65536 / 8];
u64 topk_lds[65536 / 8];

static int failures = 0;
static void fail(const std::string& what) {
  if (failures < 30) std::printf("FAIL %s\n", what.c_str());
  failures++;
}

// ---- values, compared without the kernels' keys ----------------------------------------------
static double f16_value(u16 h) {
  const int e = (h >> 10) & 0x1f, m = h & 0x3ff;
  const double s = (h & 0x8000) ? -1.0 : 1.0;
  if (e == 0x1f) return m ? NAN : s * INFINITY;
  if (e == 0) return s * std::ldexp((double)m, -24);
  return s * std::ldexp((double)(m | 0x400), e - 25);
}
static double bf16_value(u16 h) { return (double)__uint_as_float((u32)h << 16); }

template <class T> struct Dt;
template <> struct Dt<float> {
  static constexpr const char* name = "f32";
  static double num(float v) { return v; }
};
template <> struct Dt<double> { static constexpr const char* name = "f64"; static double num(double v) { return v; } };
template <> struct Dt<f16> { static constexpr const char* name = "f16"; static double num(f16 v) { return f16_value(v.bits); } };
template <> struct Dt<bf16> { static constexpr const char* name = "bf16"; static double num(bf16 v) { return bf16_value(v.bits); } };
template <> struct Dt<u8> { static constexpr const char* name = "u8"; };
template <> struct Dt<u32> { static constexpr const char* name = "u32"; };
template <> struct Dt<i64> { static constexpr const char* name = "i64"; };

// -1, 0, 1: a before, tied with, after b in ascending order (NaN the largest, -0 == +0)
template <class T> static int cmp(T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    return a < b ? -1 : a > b ? 1 : 0;
  } else {
    const double x = Dt<T>::num(a), y = Dt<T>::num(b);
    const bool nx = x != x, ny = y != y;
    if (nx || ny) return nx == ny ? 0 : nx ? 1 : -1;
    return x < y ? -1 : x > y ? 1 : 0;
  }
}

template <class T> static bool same_bits(T a, T b) { return std::memcmp(&a, &b, sizeof(T)) == 0; }

// the stable order of row r (positions), ascending or descending
template <class T> static std::vector<u32> stable_order(const T* row, u64 n, bool desc) {
  std::vector<u32> p(n);
  for (u64 i = 0; i < n; i++) p[i] = (u32)i;
  std::stable_sort(p.begin(), p.end(), [&](u32 a, u32 b) { const int c = cmp(row[a], row[b]); return desc ? c > 0 : c < 0; });
  return p;
}

// ---- data: ties, specials, full-range integers ----------------------------------------------
struct Rng {
  u64 s;
  u64 next() { s ^= s << 13; s ^= s >> 7; s ^= s << 17; return s; }
};

template <class T> static T make(Rng& r, int spread) {
  const u64 v = r.next();
  const int pick = (int)(v % 100);
  if constexpr (std::is_same_v<T, u8>) return (u8)(spread ? (v >> 8) % (u64)spread : v >> 8);
  else if constexpr (std::is_same_v<T, u32>) return pick < 5 ? 0xffffffffu - (u32)(v >> 60) : (u32)(spread ? (v >> 8) % (u64)spread : v >> 16);
  else if constexpr (std::is_same_v<T, i64>) {
    if (pick < 5) return (i64)(0x8000000000000000ull + (v >> 62));
    if (pick < 10) return (i64)(0x7fffffffffffffffull - (v >> 62));
    return spread ? (i64)((v >> 8) % (u64)spread) - spread / 2 : (i64)(v * 0x9e3779b97f4a7c15ull);
  } else {
    // floats: multiples of 0.25 (ties), or any bits; and NaN (several payloads, both signs),
    // +-0, +-inf
    double d;
    if (pick < 4) d = NAN;
    else if (pick < 8) d = (v & 256) ? -0.0 : 0.0;
    else if (pick < 11) d = (v & 256) ? -INFINITY : INFINITY;
    else d = spread ? ((double)((v >> 8) % (u64)spread) - spread / 2) * 0.25 : (double)(i64)(v >> 11) * 1e-6;
    if constexpr (std::is_same_v<T, float>) {
      u32 b = __float_as_uint((float)d);
      if (d != d) b = (v & 512 ? 0xff800000u : 0x7f800000u) | 1u | (u32)((v >> 20) & 0x3fffff);
      return __uint_as_float(b);
    } else if constexpr (std::is_same_v<T, double>) {
      u64 b = (u64)__double_as_longlong(d);
      if (d != d) b = (v & 512 ? 0xfff0000000000000ull : 0x7ff0000000000000ull) | 1u | ((v >> 12) & 0xfffffffffffull);
      double o; std::memcpy(&o, &b, 8); return o;
    } else if constexpr (std::is_same_v<T, f16>) {
      f16 h = f64_to_f16(d);
      if (d != d) h.bits = (u16)((v & 512 ? 0xfc00u : 0x7c00u) | 1u | ((v >> 20) & 0x1ff));
      return h;
    } else {
      bf16 h = f64_to_bf16(d);
      if (d != d) h.bits = (u16)((v & 512 ? 0xff80u : 0x7f80u) | 1u | ((v >> 20) & 0x3f));
      return h;
    }
  }
}

// mode 0: make(); 1: one value throughout (every pass of one digit: skipped); 2: a narrow range
// (values in [1, 2) or [0, 256): the high digits of one value, their passes skipped)
template <class T> static void fill(std::vector<T>& v, Rng& r, int spread, int mode) {
  const T one = make<T>(r, spread);
  for (auto& e : v) {
    if (mode == 1) { e = one; continue; }
    if (mode == 0) { e = make<T>(r, spread); continue; }
    const u64 k = r.next() % 200;
    if constexpr (std::is_integral_v<T>) e = (T)(k % 256);
    else if constexpr (std::is_same_v<T, f16>) e = f64_to_f16(1.0 + (double)k / 256);
    else if constexpr (std::is_same_v<T, bf16>) e = f64_to_bf16(1.0 + (double)k / 256);
    else e = (T)(1.0 + (double)k / 256);
  }
}

template <class T> static void poison(std::vector<T>& v) { std::memset((void*)v.data(), 0xff, v.size() * sizeof(T)); }

// ---- the kernels by dtype --------------------------------------------------------------------
template <class T> struct K;
#define EMU_K(DT, T) \
  template <> struct K<T> { \
    static void rows(int items, u32* iy, T* vy, const T* x, i64 iOff, i64 vOff, i64 xOff, u64 rows, u64 cols, u32 desc) { \
      switch (items) { \
        case 1: radix_rows1_##DT(iy, vy, x, iOff, vOff, xOff, rows, cols, desc); break; \
        case 2: radix_rows2_##DT(iy, vy, x, iOff, vOff, xOff, rows, cols, desc); break; \
        case 4: radix_rows4_##DT(iy, vy, x, iOff, vOff, xOff, rows, cols, desc); break; \
        case 8: radix_rows8_##DT(iy, vy, x, iOff, vOff, xOff, rows, cols, desc); break; \
        default: radix_rows16_##DT(iy, vy, x, iOff, vOff, xOff, rows, cols, desc); break; \
      } } \
    static void counts(u32* ws, const T* x, i64 xOff, u64 rows, u64 cols, u32 tiles, u32 items, u32 passes, u32 desc) { \
      radix_counts_##DT(ws, x, xOff, rows, cols, tiles, items, passes, desc); } \
    static void sweep(T* ko, u32* io, const T* ki, const u32* ii, u32* ws, i64 koOff, i64 ioOff, i64 kiOff, i64 iiOff, \
        u64 rows, u64 cols, u32 tiles, u32 pass, u32 passes, u32 desc) { \
      radix_sweep_##DT(ko, io, ki, ii, ws, koOff, ioOff, kiOff, iiOff, rows, cols, tiles, pass, passes, desc); } \
    static void topk(T* vo, u32* io, const T* x, const u32* ii, i64 voOff, i64 ioOff, i64 xOff, i64 iiOff, \
        u64 rows, u64 cols, u64 ld, u64 slen, u64 ostride, u32 k, u32 largest) { \
      topk_##DT(vo, io, x, ii, voOff, ioOff, xOff, iiOff, rows, cols, ld, slen, ostride, k, largest); } \
  };
EMU_K(f32, float) EMU_K(f64, double) EMU_K(f16, f16) EMU_K(bf16, bf16) EMU_K(u8, u8) EMU_K(u32, u32) EMU_K(i64, i64)

template <class T> static u32 key_bits() { return (u32)RKey<T>::BITS; }
template <class T> static u32 rec_bytes() { return (u32)sizeof(typename RKey<T>::R) + 4; }

// src/backends/gpu/radix.ts radixLdsBytes, for AMD (u64 lane masks): the LDS of radix_rows and
// radix_sweep over `cap` records
template <class T> static u32 radix_lds(int wave, u32 cap) {
  const u32 nw = RADIX / (u32)wave;
  return nw * RADIX * 8 + (2 * RADIX + 3 * RADIX_WAVES_MAX) * 4 + nw * RADIX * 2 + cap * rec_bytes<T>();
}
static constexpr u32 LDS_MAX = 65536;  // the most an AMD block gets, and the emulator's buffer
// sort.ts: the most items a thread radix_rows takes with this LDS
template <class T> static u32 row_items_max(int wave) {
  u32 best = 0;
  for (u32 i : {1u, 2u, 4u, 8u, 16u}) if (radix_lds<T>(wave, RADIX * i) <= LDS_MAX) best = i;
  return best;
}

// ---- sort: the host side of src/backends/gpu/sort.ts ----------------------------------------------
// sorts rows [rows, cols] of x (from offset xo) into iy/vy (from offset 2); grid = the launch's
// block count (smaller than the work, to run the grid-stride loops)
template <class T>
static void run_sort(int wave, const std::vector<T>& xbuf, i64 xo, u64 rows, u64 cols, bool desc, bool long_path,
                     std::vector<u32>& iy, std::vector<T>& vy) {
  const i64 oo = 2;
  iy.assign(rows * cols + oo, 0);
  vy.assign(rows * cols + oo, T{});
  poison(iy);
  poison(vy);
  std::memset(sort_lds, 0xff, sizeof sort_lds);
  if (!long_path && cols <= (u64)RADIX * row_items_max<T>(wave)) {
    int items = 1;
    while ((u64)items * RADIX < cols) items *= 2;
    const unsigned grid = (unsigned)std::min<u64>(rows, 3);
    emu::launch(grid, RADIX, wave, [&] { K<T>::rows(items, iy.data(), vy.data(), xbuf.data(), oo, oo, xo, rows, cols, desc); });
    return;
  }
  const u32 items = rec_bytes<T>() == 12 ? 8 : 16, tile = items * RADIX;
  if (radix_lds<T>(wave, tile) > LDS_MAX) { fail("radix_sweep's LDS does not fit"); return; }
  const u32 tiles = (u32)((cols + tile - 1) / tile), passes = key_bits<T>() / 8;
  // sort.hip SweepWs, zeroed as the host does; u64 words so the status part is aligned
  const u64 words = rows * passes * RADIX + 2 * ((passes + 1) / 2) + 2 * rows * tiles * RADIX;
  std::vector<u64> ws((words + 1) / 2, 0);
  u32* w = reinterpret_cast<u32*>(ws.data());
  std::vector<T> kw[2] = {std::vector<T>(rows * cols), std::vector<T>(rows * cols)};
  std::vector<u32> iw[2] = {std::vector<u32>(rows * cols), std::vector<u32>(rows * cols)};
  poison(kw[0]); poison(kw[1]); poison(iw[0]); poison(iw[1]);
  // grids smaller than the work: blocks take tiles in turn
  const unsigned g = (unsigned)std::min<u64>(rows * tiles, 5);
  // descending sorts: a tile's inclusive count (flag 2) replacing its own count (flag 1) of the
  // same pass is never seen; tile 0 publishes its inclusive count first, which stays
  if (desc) {
    emu::st.exch64 = [](uint64_t old, uint64_t v) {
      const bool incl = ((v >> 32) & 3u) == SWEEP_INCL, had_own = ((old >> 32) & 3u) == SWEEP_AGG && (old >> 34) == (v >> 34);
      return incl && had_own ? old : v;
    };
  }
  emu::launch(g, RADIX, wave, [&] { K<T>::counts(w, xbuf.data(), xo, rows, cols, tiles, items, passes, desc); });
  for (u32 p = 0; p < passes; p++) {
    const bool firstp = p == 0, lastp = p + 1 == passes;
    const T* ki = firstp ? xbuf.data() : kw[(p - 1) & 1].data();
    const i64 kiOff = firstp ? xo : 0;
    const u32* ii = firstp ? nullptr : iw[(p - 1) & 1].data();
    T* ko = lastp ? vy.data() : kw[p & 1].data();
    u32* io = lastp ? iy.data() : iw[p & 1].data();
    const i64 outOff = lastp ? oo : 0;
    emu::launch(g, RADIX, wave, [&] { K<T>::sweep(ko, io, ki, ii, w, outOff, outOff, kiOff, 0, rows, cols, tiles, p, passes, desc); });
  }
  emu::st.exch64 = nullptr;
}

template <class T>
static void check_sort(int wave, u64 rows, u64 cols, int spread, bool desc, bool long_path, u64 seed, int mode = 0) {
  Rng r{seed * 2654435761u + cols};
  const i64 xo = 3;
  std::vector<T> xbuf(rows * cols + xo);
  fill(xbuf, r, spread, mode);
  std::vector<u32> iy;
  std::vector<T> vy;
  run_sort(wave, xbuf, xo, rows, cols, desc, long_path, iy, vy);
  const std::string what = std::string("sort ") + Dt<T>::name + " wave" + std::to_string(wave) + " [" + std::to_string(rows) + ", " +
                           std::to_string(cols) + "]" + (desc ? " desc" : "") + (long_path ? " tiles" : "") +
                           (mode == 1 ? " constant" : mode == 2 ? " narrow" : "");
  for (u64 row = 0; row < rows; row++) {
    const T* x = xbuf.data() + xo + row * cols;
    const auto want = stable_order(x, cols, desc);
    for (u64 p = 0; p < cols; p++) {
      const u32 got = iy[2 + row * cols + p];
      if (got != want[p]) { fail(what + ": row " + std::to_string(row) + " index at " + std::to_string(p) + " is " + std::to_string(got) + ", expected " + std::to_string(want[p])); return; }
      if (!same_bits(vy[2 + row * cols + p], x[want[p]])) { fail(what + ": row " + std::to_string(row) + " value bits at " + std::to_string(p)); return; }
    }
  }
}

// ---- top-k: the host side of src/backends/gpu/topk.ts ---------------------------------------------
// topkSlices with a device of `target` resident blocks (small, so that short rows still split)
template <class T> static void topk_slices(u64 rows, u64 cols, u64 target, u64& slen, u64& slices) {
  const u64 round = (u64)RADIX * TopkItems<T>::N, most = (cols + round - 1) / round;
  const u64 want = rows >= target ? 1 : std::max<u64>(1, std::min<u64>(most, target / rows));
  slen = (cols + want - 1) / want;
  slen = (slen + 15) / 16 * 16;
  slices = (cols + slen - 1) / slen;
}

// x from offset xo (5: a misaligned row start, the scalar loads; 0: aligned, 16-byte loads
// where a thread's elements are all there); levels until one slice holds a row; grid smaller
// than the work. Returns the launches made.
template <class T>
static int run_topk(int wave, const std::vector<T>& xbuf, i64 xo, u64 rows, u64 cols, u32 k, bool largest, u64 target,
                    std::vector<T>& vo, std::vector<u32>& io) {
  std::vector<T> cur(xbuf);
  std::vector<u32> curi;
  i64 off = xo;
  u64 c = cols, ld = cols;
  for (int launches = 1;; launches++) {
    u64 slen, slices;
    topk_slices<T>(rows, c, target, slen, slices);
    const bool last = slices == 1;
    const u64 ocols = last ? k : (slices - 1) * k + std::min<u64>(k, c - (slices - 1) * slen);
    const u64 ostride = last ? k : (ocols + 15) / 16 * 16;
    // the level's output from element 1 (last) or 0 (a candidate row set, aligned like the GPU's)
    const i64 oo = last ? 1 : 0;
    std::vector<T> nv(rows * ostride + 1);
    std::vector<u32> ni(rows * ostride + 1);
    poison(nv);
    poison(ni);
    std::memset(topk_lds, 0xff, sizeof topk_lds);
    const unsigned g = (unsigned)std::min<u64>(rows * slices, 4);
    const u32* ii = curi.empty() ? nullptr : curi.data();
    emu::launch(g, RADIX, wave, [&] { K<T>::topk(nv.data(), ni.data(), cur.data(), ii, oo, oo, off, 0, rows, c, ld, slen, ostride, k, largest); });
    if (last) { vo = nv; io = ni; return launches; }
    cur = nv;
    curi = ni;
    off = 0;
    c = ocols;
    ld = ostride;
  }
}

// mode: 0 make(); 1 one value throughout (every element ties: rounds whose candidates overflow
// the append area); 3 ascending, 4 descending (each later element beats the bound, or none does)
template <class T>
static void check_topk(int wave, u64 rows, u64 cols, u32 k, int spread, bool largest, u64 target, u64 seed, int mode = 0,
                       i64 xo = 5) {
  Rng r{seed * 40503u + cols * 7 + k};
  std::vector<T> xbuf(rows * cols + xo);
  if (mode == 1) fill(xbuf, r, spread, 1);
  else for (auto& v : xbuf) v = make<T>(r, spread);
  if (mode == 3 || mode == 4) {
    for (u64 row = 0; row < rows; row++) {
      T* x = xbuf.data() + xo + row * cols;
      std::stable_sort(x, x + cols, [&](T a, T b) { const int c = cmp(a, b); return mode == 3 ? c < 0 : c > 0; });
    }
  }
  std::vector<T> vo;
  std::vector<u32> io;
  const int launches = run_topk(wave, xbuf, xo, rows, cols, k, largest, target, vo, io);
  const std::string what = std::string("topk ") + Dt<T>::name + " wave" + std::to_string(wave) + " [" + std::to_string(rows) + ", " +
                           std::to_string(cols) + "] k=" + std::to_string(k) + (largest ? " largest" : " smallest") + " target " +
                           std::to_string(target) + " mode " + std::to_string(mode) + " offset " + std::to_string(xo) + " (" +
                           std::to_string(launches) + " launches)";
  for (u64 row = 0; row < rows; row++) {
    const T* x = xbuf.data() + xo + row * cols;
    const auto want = stable_order(x, cols, largest);
    for (u32 j = 0; j < k; j++) {
      const u32 got = io[1 + row * k + j];
      if (got != want[j]) { fail(what + ": row " + std::to_string(row) + " index " + std::to_string(j) + " is " + std::to_string(got) + ", expected " + std::to_string(want[j])); return; }
      if (!same_bits(vo[1 + row * k + j], x[want[j]])) { fail(what + ": row " + std::to_string(row) + " value bits " + std::to_string(j)); return; }
    }
  }
}

template <class T> static void all_checks(int wave, int& groups) {
  const int before = failures;
  for (bool desc : {false, true}) {
    // one block a row: every tile size (1 to 16 items a thread), ties, few and many (past what
    // the LDS takes: the long path, as sort.ts chooses)
    for (u64 cols : {1ull, 2ull, 37ull, 256ull, 300ull, 1000ull, 2048ull, 4096ull}) check_sort<T>(wave, 3, cols, cols > 300 ? 50 : 8, desc, false, 1);
    check_sort<T>(wave, 2, 3000, 0, desc, false, 2);
    // long rows: several tiles, the last one partial; and a row of one partial tile
    check_sort<T>(wave, 2, 9000, 200, desc, true, 3);
    check_sort<T>(wave, 3, 100, 10, desc, true, 4);
    check_sort<T>(wave, 1, 4097, 0, desc, true, 5);
    // passes over one digit, skipped: constant rows, narrow ranges; one block and tiles
    for (int mode : {1, 2}) {
      check_sort<T>(wave, 2, 1000, 0, desc, false, 6, mode);
      check_sort<T>(wave, 2, 9000, 0, desc, true, 7, mode);
    }
  }
  for (bool largest : {true, false}) {
    // one slice a row (target 1): short rows, k = cols, the first round's bound with few and
    // many holders, k = 256 past the holders (no bound: a round of 4096 through the select),
    // a misaligned and an aligned row start
    check_topk<T>(wave, 3, 1, 1, 4, largest, 1, 1);
    check_topk<T>(wave, 2, 37, 37, 4, largest, 1, 2);
    check_topk<T>(wave, 2, 1000, 1, 6, largest, 1, 3);
    check_topk<T>(wave, 2, 1000, 50, 6, largest, 1, 4);
    check_topk<T>(wave, 2, 3000, 7, 0, largest, 1, 5, 0, 0);
    check_topk<T>(wave, 1, 4096, 256, 40, largest, 1, 6, 0, 0);
    check_topk<T>(wave, 2, 5000, 64, 1000, largest, 1, 7);
    // rows of several rounds in one block: the bound carried on, appends, selects when full
    check_topk<T>(wave, 2, 20000, 50, 0, largest, 1, 8, 0, 0);
    check_topk<T>(wave, 1, 20000, 256, 300, largest, 1, 9);
    // ties throughout, sorted rows (every later element passes the bound, or none does)
    check_topk<T>(wave, 2, 9000, 30, 0, largest, 1, 10, 1, 0);
    check_topk<T>(wave, 1, 20000, 40, 0, largest, 1, 11, 3, 0);
    check_topk<T>(wave, 1, 20000, 40, 0, largest, 1, 12, 4);
    // slices over blocks, then the candidates: slices of one and of several rounds, k = 256 over
    // candidates, 3 levels (a row of 70000 in 18 slices, 35 of 64-bit elements: more than a
    // round of candidates, which are sliced again)
    check_topk<T>(wave, 1, 40000, 20, 12, largest, 3, 13, 0, 0);
    check_topk<T>(wave, 2, 20000, 256, 3000, largest, 8, 14);
    check_topk<T>(wave, 1, 9000, 200, 0, largest, 2, 15, 0, 0);
    check_topk<T>(wave, 1, 70000, 256, 0, largest, 64, 16, 0, 0);
    check_topk<T>(wave, 3, 30000, 17, 0, largest, 7, 17, 3, 0);
  }
  std::printf("%s %-4s wave%d\n", failures == before ? "ok  " : "FAIL", Dt<T>::name, wave);
  groups++;
}

int main() {
  int groups = 0;
  for (int wave : {32, 64}) {
    all_checks<float>(wave, groups);
    all_checks<double>(wave, groups);
    all_checks<f16>(wave, groups);
    all_checks<bf16>(wave, groups);
    all_checks<u8>(wave, groups);
    all_checks<u32>(wave, groups);
    all_checks<i64>(wave, groups);
  }
  std::printf("%s: %d groups, %d mismatches\n", failures ? "FAIL" : "ok", groups, failures);
  return failures ? 1 : 0;
}
