// upsample-emu.cpp: runs upsample.hip's exact-2x kernels (upsample_nearest_x2_<W>,
// upsample_bilinear_x2_<DT>) on the host through their HIP path (hip-host/hip/hip_runtime.h: a
// block's threads as fibers), at wave sizes 64 and 32, against references written here from the
// op's definition, and bit for bit against the kernels they stand in for (the element kernels,
// upsample_nearest_rows, upsample_bilinear_rows), which is what lets the GPU suite compare the
// paths exactly. Covered: every width and float dtype; heights that fill the 4-row strips, leave
// the last one short, or are 1; widths of 1 to 5 vectors; several planes, n and c apart; views
// with padded rows and planes, an offset, and a broadcast batch (sN = 0); grids smaller than the
// tasks (the grid-stride loop); NaN and infinities at the edges, where a cell of weight 0 still
// decides (0 * inf). x and y sit against inaccessible pages (mprotect), once ending at one and
// once starting at one, so a read or write past either end faults; y is poisoned first, so an
// element left unwritten shows. Prints one line per dtype and wave; exits 1 on a mismatch.
//   g++ -std=c++20 -O1 -D__HIP__ -Itest/emu/hip-host test/emu/upsample-emu.cpp -o upsample-emu && ./upsample-emu
#include "../../hip-src/upsample.hip"
#include <sys/mman.h>
#include <unistd.h>
#include <csignal>
#include <cstdio>
#include <string>

#include "emu-rng.h"

static int failures = 0, checks = 0;


// storage <-> f32, with the library's conversions (compat.h)
template <class T> struct Io;
template <> struct Io<float> {
  static constexpr const char* name = "f32";
  static float put(double v) { return (float)v; }
  static float get(float v) { return v; }
  static float round(float v) { return v; }
};
template <> struct Io<double> {
  static constexpr const char* name = "f64";
  static double put(double v) { return v; }
};
template <> struct Io<f16> {
  static constexpr const char* name = "f16";
  static f16 put(double v) { return f64_to_f16(v); }
  static float get(f16 v) { return f16_to_f32(v); }
  static f16 round(float v) { return f32_to_f16(v); }
};
template <> struct Io<bf16> {
  static constexpr const char* name = "bf16";
  static bf16 put(double v) { return f64_to_bf16(v); }
  static float get(bf16 v) { return bf16_to_f32(v); }
  static bf16 round(float v) { return f32_to_bf16(v); }
};

// `count` elements in pages of their own, flush against an inaccessible page at the end
// (atEnd) or at the start; the data start stays 16-byte aligned either way (count * sizeof(T)
// is a multiple of 16 where atEnd is used with vectors)
template <class T> struct Guarded {
  char* base = nullptr;
  size_t total = 0;
  T* p = nullptr;
  Guarded(size_t count, bool atEnd) {
    const size_t pg = (size_t)sysconf(_SC_PAGESIZE), bytes = count * sizeof(T), body = (bytes + pg - 1) / pg * pg;
    total = body + 2 * pg;
    base = (char*)mmap(nullptr, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (base == MAP_FAILED) { std::perror("mmap"); std::exit(2); }
    mprotect(base, pg, PROT_NONE);
    mprotect(base + pg + body, pg, PROT_NONE);
    p = (T*)(atEnd ? base + pg + body - bytes : base + pg);
    std::memset((void*)p, 0xff, bytes);  // a NaN of a pattern no kernel writes
  }
  ~Guarded() { munmap(base, total); }
  Guarded(const Guarded&) = delete;
  Guarded& operator=(const Guarded&) = delete;
};

template <class T> static bool same_bits(const T& a, const T& b) { return std::memcmp(&a, &b, sizeof(T)) == 0; }
static bool nan_bits(float v) { return v != v; }

// x as the kernels see it: [n, c, h, w] at strides sN, sC, sH (elements; columns unit-stride)
// from element xOff of a storage of `size` elements
struct View {
  unsigned n, c, h, w;
  int64_t sN, sC, sH, xOff;
  size_t size;
  std::string label;
  size_t at(unsigned ni, unsigned ci, unsigned r, unsigned k) const { return (size_t)(xOff + ni * sN + ci * sC + r * sH + k); }
};

// a view of [n, c, h, w] whose rows, planes and start are padded by whole vectors (pad 0:
// packed); bcast: sN = 0 (every batch entry the same planes)
static View make_view(unsigned n, unsigned c, unsigned h, unsigned w, unsigned N, unsigned pad, bool bcast) {
  View v{ n, c, h, w, 0, 0, 0, 0, 0, "" };
  v.sH = w + (int64_t)pad * N;
  v.sC = h * v.sH + (int64_t)pad * 2 * N;
  v.sN = bcast ? 0 : c * v.sC + (int64_t)pad * N;
  v.xOff = (int64_t)pad * 3 * N;
  v.size = (size_t)(v.xOff + (bcast ? 0 : (n - 1) * v.sN) + (c - 1) * v.sC + (h - 1) * v.sH + w);
  v.label = "[" + std::to_string(n) + ", " + std::to_string(c) + ", " + std::to_string(h) + ", " + std::to_string(w) + "]" +
    (pad ? " padded" : "") + (bcast ? " sN 0" : "");
  return v;
}

static unsigned x2_tasks(const View& v, unsigned N) { return v.n * v.c * ((v.h + RT_UP2_ROWS - 1) / RT_UP2_ROWS) * (2 * v.w / N); }

// grids: one block per 256 tasks, and 3 blocks (each thread loops over several tasks)
static std::vector<unsigned> grids(unsigned work) { return { (work + 255) / 256, 3u }; }

// ---- nearest: a move ----------------------------------------------------------------------------
template <class E> static void nearest_x2_k(E* y, const E* x, const View& v, unsigned grid, unsigned ws, unsigned block) {
  const unsigned tasks = x2_tasks(v, 16 / sizeof(E));
  emu::launch(grid, block, (int)ws, [&] {
    const u64 strips = (v.h + RT_UP2_ROWS - 1) / RT_UP2_ROWS;
    if (sizeof(E) == 2) upsample_nearest_x2_b2((uint4*)y, (const u8*)x, v.xOff, tasks, v.c, v.h, v.w, strips, v.sN, v.sC, v.sH);
    else if (sizeof(E) == 4) upsample_nearest_x2_b4((uint4*)y, (const u8*)x, v.xOff, tasks, v.c, v.h, v.w, strips, v.sN, v.sC, v.sH);
    else upsample_nearest_x2_b8((uint4*)y, (const u8*)x, v.xOff, tasks, v.c, v.h, v.w, strips, v.sN, v.sC, v.sH);
  });
}
// the kernels the x2 one stands in for: upsample_nearest_rows (dup 2, scale 0.5) and the element kernel
template <class E> static void nearest_old(E* y, const E* x, const View& v, bool rows, unsigned ws) {
  const unsigned N = 16 / sizeof(E), oh = 2 * v.h, ow = 2 * v.w;
  emu::launch(32, 256, (int)ws, [&] {
    if (rows) {
      const u64 r = (u64)v.n * v.c * oh, vw = v.w / N;
      if (sizeof(E) == 2) upsample_nearest_rows_b2((uint4*)y, (const u8*)x, v.xOff, r, v.c, v.h, oh, vw, v.sN, v.sC, v.sH, 0.5f, 2u);
      else if (sizeof(E) == 4) upsample_nearest_rows_b4((uint4*)y, (const u8*)x, v.xOff, r, v.c, v.h, oh, vw, v.sN, v.sC, v.sH, 0.5f, 2u);
      else upsample_nearest_rows_b8((uint4*)y, (const u8*)x, v.xOff, r, v.c, v.h, oh, vw, v.sN, v.sC, v.sH, 0.5f, 2u);
    } else {
      const u64 total = (u64)v.n * v.c * oh * ow;
      if (sizeof(E) == 2) upsample_nearest_b2((u16*)y, (const u16*)x, v.xOff, total, v.c, v.h, v.w, oh, ow, v.sN, v.sC, v.sH, 1, 0.5f, 0.5f);
      else if (sizeof(E) == 4) upsample_nearest_b4((u32*)y, (const u32*)x, v.xOff, total, v.c, v.h, v.w, oh, ow, v.sN, v.sC, v.sH, 1, 0.5f, 0.5f);
      else upsample_nearest_b8((u64*)y, (const u64*)x, v.xOff, total, v.c, v.h, v.w, oh, ow, v.sN, v.sC, v.sH, 1, 0.5f, 0.5f);
    }
  });
}

// E: the storage word of T (nearest moves bits); T only names the dtype in the report
template <class T, class E>
static void nearest_case(Rng& rng, const View& v, unsigned ws) {
  static_assert(sizeof(T) == sizeof(E), "the storage word of T");
  const unsigned N = 16 / sizeof(E), oh = 2 * v.h, ow = 2 * v.w;
  const size_t total = (size_t)v.n * v.c * oh * ow;
  for (bool atEnd : { true, false }) {
    Guarded<E> x(v.size, atEnd);
    for (size_t i = 0; i < v.size; i++) { const T t = Io<T>::put(rng.uni(-2, 2)); std::memcpy(&x.p[i], &t, sizeof(E)); }
    std::vector<E> want(total);
    for (unsigned ni = 0; ni < v.n; ni++)
      for (unsigned ci = 0; ci < v.c; ci++)
        for (unsigned oy = 0; oy < oh; oy++)
          for (unsigned ox = 0; ox < ow; ox++) want[(((size_t)ni * v.c + ci) * oh + oy) * ow + ox] = x.p[v.at(ni, ci, oy / 2, ox / 2)];
    std::vector<std::vector<E>> olds;
    for (bool rows : { true, false }) {
      Guarded<E> y(total, atEnd);
      nearest_old(y.p, x.p, v, rows, ws);
      olds.emplace_back(y.p, y.p + total);
    }
    for (unsigned block : { 256u, 64u }) {
      for (unsigned grid : grids(x2_tasks(v, N))) {
        Guarded<E> y(total, atEnd);
        nearest_x2_k(y.p, x.p, v, grid, ws, block);
        checks++;
        for (size_t i = 0; i < total; i++) {
          const char* bad = !same_bits(y.p[i], want[i]) ? "the reference" : !same_bits(y.p[i], olds[0][i]) ? "upsample_nearest_rows"
            : !same_bits(y.p[i], olds[1][i]) ? "the element kernel" : nullptr;
          if (bad) {
            std::printf("FAIL nearest_x2 %s wave %u block %u grid %u %s%s: element %zu differs from %s\n", Io<T>::name, ws, block, grid,
              v.label.c_str(), atEnd ? "" : " (start-guarded)", i, bad);
            failures++;
            break;
          }
        }
      }
    }
  }
}

// ---- bilinear -------------------------------------------------------------------------------------
// The reference, from the definition: PyTorch's half-pixel source coordinate (clamped at 0) on
// each axis in f32, the two cells around it, and the blend along the columns in each source row,
// then across the rows, each k0 * v0 + k1 * v1 as one product and one fused multiply-add (the
// order the kernels pin, lerp_c), rounded once to T.
struct Tap { unsigned i0, i1; float l1; };
static Tap tap(unsigned d, unsigned in) {
  float src = 0.5f * ((float)d + 0.5f) - 0.5f;
  if (src < 0) src = 0;
  const unsigned f = (unsigned)std::floor(src), i0 = f < in - 1 ? f : in - 1;
  return { i0, i0 < in - 1 ? i0 + 1 : i0, src - (float)i0 };
}
static float mix(float k0, float v0, float k1, float v1) { return std::fmaf(k1, v1, k0 * v0); }

template <class T> struct BiKern;
#define BI_KERN(DT, T) \
  template <> struct BiKern<T> { \
    static void x2(T* y, const T* x, const View& v, unsigned tasks, u64 strips) { \
      upsample_bilinear_x2_##DT(y, x, v.xOff, tasks, v.c, v.h, v.w, strips, v.sN, v.sC, v.sH); } \
    static void element(T* y, const T* x, const View& v) { \
      const u64 oh = 2 * v.h, ow = 2 * v.w; \
      upsample_bilinear_##DT(y, x, v.xOff, (u64)v.n * v.c * oh * ow, v.c, v.h, v.w, oh, ow, v.sN, v.sC, v.sH, 1, 0.5f, 0.5f, 0u); } \
    static void rows(T* y, const T* x, const View& v) { \
      const u64 oh = 2 * v.h, ow = 2 * v.w; \
      upsample_bilinear_rows_##DT(y, x, v.xOff, (u64)v.n * v.c * oh * ow / RegVec<T>::N, v.c, v.h, v.w, oh, ow, v.sN, v.sC, v.sH, 0.5f, 0.5f, 0u); } \
  };
BI_KERN(f32, float) BI_KERN(f16, f16) BI_KERN(bf16, bf16)

// specials: NaN and infinities where a cell of weight 0 or an edge clamp decides the result
template <class T>
static void fill_x(Rng& rng, const View& v, T* x, bool specials) {
  for (size_t i = 0; i < v.size; i++) x[i] = Io<T>::put(rng.uni(-2, 2));
  if (!specials) return;
  const unsigned last = v.w - 1;
  x[v.at(0, 0, 0, v.w > 1 ? 1 : 0)] = Io<T>::put(INFINITY);        // column 1 of row 0: output (0, 0) reads it at weight 0
  if (v.h > 1) x[v.at(0, 0, 1, 0)] = Io<T>::put(-INFINITY);        // row 1: output row 0 reads it at weight 0
  x[v.at(v.n - 1, v.c - 1, v.h - 1, last)] = Io<T>::put(NAN);      // the last cell, read twice by the clamps
  if (v.w > 8) x[v.at(0, v.c - 1, v.h / 2, 8)] = Io<T>::put(NAN);  // a vector's first element, read by its left neighbour
}

template <class T>
static void bilinear_case(Rng& rng, const View& v, unsigned ws, bool specials) {
  const unsigned N = RegVec<T>::N, oh = 2 * v.h, ow = 2 * v.w;
  const size_t total = (size_t)v.n * v.c * oh * ow;
  const std::string label = v.label + (specials ? " specials" : "");
  for (bool atEnd : { true, false }) {
    Guarded<T> x(v.size, atEnd);
    fill_x(rng, v, x.p, specials);
    std::vector<T> want(total);
    for (unsigned ni = 0; ni < v.n; ni++)
      for (unsigned ci = 0; ci < v.c; ci++)
        for (unsigned oy = 0; oy < oh; oy++) {
          const Tap ty = tap(oy, v.h);
          for (unsigned ox = 0; ox < ow; ox++) {
            const Tap tx = tap(ox, v.w);
            auto at = [&](unsigned r, unsigned k) { return Io<T>::get(x.p[v.at(ni, ci, r, k)]); };
            const float r0 = mix(1 - tx.l1, at(ty.i0, tx.i0), tx.l1, at(ty.i0, tx.i1));
            const float r1 = mix(1 - tx.l1, at(ty.i1, tx.i0), tx.l1, at(ty.i1, tx.i1));
            want[(((size_t)ni * v.c + ci) * oh + oy) * ow + ox] = Io<T>::round(mix(1 - ty.l1, r0, ty.l1, r1));
          }
        }
    std::vector<std::vector<T>> olds;
    for (bool rows : { true, false }) {
      Guarded<T> y(total, atEnd);
      emu::launch(32, 256, (int)ws, [&] { rows ? BiKern<T>::rows(y.p, x.p, v) : BiKern<T>::element(y.p, x.p, v); });
      olds.emplace_back(y.p, y.p + total);
    }
    const unsigned tasks = x2_tasks(v, N);
    const u64 strips = (v.h + RT_UP2_ROWS - 1) / RT_UP2_ROWS;
    for (unsigned block : { 256u, 64u }) {
      for (unsigned grid : grids(tasks)) {
        Guarded<T> y(total, atEnd);
        emu::launch(grid, block, (int)ws, [&] { BiKern<T>::x2(y.p, x.p, v, tasks, strips); });
        checks++;
        for (size_t i = 0; i < total; i++) {
          // f32 NaN: any payload (fmaf's choice between two NaN operands is no contract); the
          // 16-bit types store dtype.ts's one pattern, compared as bits
          const bool eq = sizeof(T) == 4 && nan_bits(Io<T>::get(want[i])) ? nan_bits(Io<T>::get(y.p[i])) : same_bits(y.p[i], want[i]);
          const bool eqOld = sizeof(T) == 4 && nan_bits(Io<T>::get(y.p[i])) ? nan_bits(Io<T>::get(olds[0][i])) && nan_bits(Io<T>::get(olds[1][i]))
            : same_bits(y.p[i], olds[0][i]) && same_bits(y.p[i], olds[1][i]);
          if (!eq || !eqOld) {
            const unsigned ox = (unsigned)(i % ow), oy = (unsigned)(i / ow % oh);
            std::printf("FAIL bilinear_x2 %s wave %u block %u grid %u %s%s: element %zu (row %u, column %u) is %.9g, reference %.9g, rows kernel %.9g, element kernel %.9g\n",
              Io<T>::name, ws, block, grid, label.c_str(), atEnd ? "" : " (start-guarded)", i, oy, ox, (double)Io<T>::get(y.p[i]),
              (double)Io<T>::get(want[i]), (double)Io<T>::get(olds[0][i]), (double)Io<T>::get(olds[1][i]));
            failures++;
            break;
          }
        }
      }
    }
  }
}

// [n, c, h, w / N]: one plane of one row and one vector; heights 1, 2, 4 (a whole strip), 5
// and 9 (a short last strip), 16; 1 to 5 vectors a row; n and c apart
static const unsigned SHAPES[][4] = {
  { 1, 1, 1, 1 }, { 1, 1, 2, 1 }, { 2, 3, 5, 2 }, { 1, 2, 4, 3 }, { 3, 1, 9, 1 }, { 2, 2, 16, 5 }, { 1, 3, 7, 4 },
};

template <class T, class E>
static void family(Rng& rng, unsigned ws, bool bilinear) {
  const int before = failures, c0 = checks;
  const unsigned N = 16 / sizeof(T);
  for (const auto& s : SHAPES) {
    for (unsigned pad : { 0u, 1u }) {
      for (bool bcast : { false, true }) {
        if (bcast && (pad == 0 || s[0] == 1)) continue;
        const View v = make_view(s[0], s[1], s[2], s[3] * N, N, pad, bcast);
        if (bilinear) {
          if constexpr (!std::is_same_v<T, double>) {
            bilinear_case<T>(rng, v, ws, false);
            bilinear_case<T>(rng, v, ws, true);
          }
        } else {
          nearest_case<T, E>(rng, v, ws);
        }
      }
    }
  }
  std::printf("%s %-8s %-4s wave %u: %d cases, %d failed\n", failures == before ? "ok  " : "FAIL", bilinear ? "bilinear" : "nearest",
    Io<T>::name, ws, checks - c0, failures - before);
}

// a fault is a read or write past a guarded end: say so (write(2): the handler may run only
// async-signal-safe calls) rather than die without a word
static void on_fault(int) {
  static const char msg[] = "FAIL: a kernel read or wrote past the end of x or y (an access faulted on a guard page)\n";
  (void)!write(2, msg, sizeof msg - 1);
  _exit(1);
}

int main() {
  std::signal(SIGSEGV, on_fault);
  std::signal(SIGBUS, on_fault);
  Rng rng{ 0x9e3779b97f4a7c15ull };
  for (unsigned ws : { 64u, 32u }) {
    family<f16, u16>(rng, ws, false);
    family<float, u32>(rng, ws, false);
    family<double, u64>(rng, ws, false);
    family<float, u32>(rng, ws, true);
    family<f16, u16>(rng, ws, true);
    family<bf16, u16>(rng, ws, true);
  }
  std::printf("%s: %d mismatches in %d cases\n", failures ? "FAIL" : "ok", failures, checks);
  return failures ? 1 : 0;
}
