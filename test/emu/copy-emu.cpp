// copy-emu.cpp: runs copy.hip's transpose_<w> (hip-src/transpose.h) and cat_rows_<w>, and
// index-rows.hip's index_add_rows and put_rows, on the host, compiled through their HIP path
// (hip-host/hip/hip_runtime.h: a block's threads as fibers, real barriers, blocks one after
// another) at wave sizes 64 and 32. No AMD GPU is at hand, so this is the only run the AMD code
// gets; it also checks the tile, chunk and row arithmetic both vendors share.
//   transpose: every element width, tiles cut by the tensor's edges, row strides that are not a
//     whole number of 16-byte chunks (the element-by-element chunks), offsets, batches, thin
//     sides, grids smaller than the tiles; every byte of y is checked: the copy where the view
//     is, the poison left everywhere else.
//   cat_rows: 16-byte and 1-byte units, rows longer and shorter than a block's tile, padded
//     input rows, offsets, a grid smaller than the work.
//   index_add_rows: f32 and bf16 (an f32 accumulator) with repeated ids (every row adds), a bad
//     id (skipped, recorded once with its position), pre > 1 (the per-row division).
//   put_rows: 4-byte and 16-byte units, distinct ids with a bad one (skipped, recorded), padded
//     source rows, pre > 1; every byte of y checked (rows no id names keep their poison).
// Prints one line per family and wave; exits 1 on a mismatch.
//   g++ -std=c++20 -O1 -D__HIP__ -Itest/emu/hip-host test/emu/copy-emu.cpp -o copy-emu && ./copy-emu
#include "../../hip-src/copy.hip"
#include "../../hip-src/index-rows.hip"
#include <cstdio>
#include <string>

#include "emu-rng.h"

static int failures = 0, checks = 0;


// a 16-byte aligned byte buffer of n bytes, filled with `fill`
struct Buf {
  std::vector<uint4> v;
  explicit Buf(size_t n, uint8_t fill) : v((n + 15) / 16 + 1) { std::memset(v.data(), fill, v.size() * 16); }
  uint8_t* bytes() { return reinterpret_cast<uint8_t*>(v.data()); }
  size_t size() const { return v.size() * 16; }
};

static void fail(const std::string& what, const char* fmt, long long a, long long b, long long c) {
  if (failures < 20) { std::printf("FAIL %s: ", what.c_str()); std::printf(fmt, a, b, c); std::printf("\n"); }
  failures++;
}

// ---- strided copy ----------------------------------------------------------------------------
// copy_strided_b<W> over [2, 5, 3, 4] units: y contiguous after an offset, x with its two
// middle dims swapped (attention's [b, t, h, d] <-> [b, h, t, d] in the units the host widens
// to), every byte compared and the poison around y kept.
template <int W> struct StridedK;
template <> struct StridedK<1> { typedef u8 E; static constexpr auto k = &copy_strided_b1; };
template <> struct StridedK<2> { typedef u16 E; static constexpr auto k = &copy_strided_b2; };
template <> struct StridedK<4> { typedef u32 E; static constexpr auto k = &copy_strided_b4; };
template <> struct StridedK<8> { typedef u64 E; static constexpr auto k = &copy_strided_b8; };
template <> struct StridedK<16> { typedef uint4 E; static constexpr auto k = &copy_strided_b16; };

template <int W>
static void strided(int wave, Rng& rng) {
  typedef typename StridedK<W>::E E;
  const int64_t sh[4] = {2, 5, 3, 4};
  const int64_t n = sh[0] * sh[1] * sh[2] * sh[3];
  const int64_t yOff = 3, xOff = 2;
  const int64_t ys[4] = {sh[1] * sh[2] * sh[3], sh[2] * sh[3], sh[3], 1};
  const int64_t xs[4] = {sh[1] * sh[2] * sh[3], sh[3], sh[1] * sh[3], 1};
  Buf xb((size_t)(xOff + n) * W, 0), yb((size_t)(yOff + n + 2) * W, 0xa5), want((size_t)(yOff + n + 2) * W, 0xa5);
  for (size_t k = 0; k < (size_t)(xOff + n) * W; k++) xb.bytes()[k] = (uint8_t)rng.next();
  const E* x = reinterpret_cast<const E*>(xb.bytes());
  E* y = reinterpret_cast<E*>(yb.bytes());
  E* w = reinterpret_cast<E*>(want.bytes());
  Geom g{};
  g.numel = n;
  g.rank = 4;
  g.offset[0] = yOff;
  g.offset[1] = xOff;
  for (int d = 0; d < 4; d++) {
    g.shape[d] = sh[d];
    g.strides[0][d] = ys[d];
    g.strides[1][d] = xs[d];
  }
  for (int64_t i = 0; i < n; i++) {
    int64_t r = i, yo = yOff, xo = xOff;
    for (int d = 3; d >= 0; d--) {
      const int64_t c = r % sh[d];
      r /= sh[d];
      yo += c * ys[d];
      xo += c * xs[d];
    }
    w[yo] = x[xo];
  }
  const int before = failures;
  for (unsigned grid : {1u, 7u}) {
    std::memset(yb.bytes(), 0xa5, yb.size());
    emu::launch(grid, 64, wave, [&] { StridedK<W>::k(y, x, g); });
    checks++;
    const std::string what = "copy_strided_b" + std::to_string(W) + " wave " + std::to_string(wave) + " grid " + std::to_string(grid);
    for (size_t k = 0; k < (size_t)(yOff + n + 2) * W; k++)
      if (yb.bytes()[k] != want.bytes()[k]) {
        fail(what, "byte %lld: %lld, want %lld", (long long)k, yb.bytes()[k], want.bytes()[k]);
        break;
      }
  }
  if (failures == before) std::printf("ok copy_strided b%d wave %d: 2 grids\n", W, wave);
}

// ---- transpose -------------------------------------------------------------------------------
struct TpCase { uint64_t nI, nJ, batch; int64_t xJ, yI, xB, yB, xOff, yOff; unsigned grid; };

template <int E>
static void run_transpose(int wave, const TpCase& c, Rng& rng) {
  typedef typename TpShape<E>::T T;
  const std::string what = "transpose b" + std::to_string(E) + " wave " + std::to_string(wave) + " [" + std::to_string(c.batch) + ", " +
    std::to_string(c.nI) + ", " + std::to_string(c.nJ) + "] xJ " + std::to_string(c.xJ) + " yI " + std::to_string(c.yI);
  checks++;
  const size_t xn = (size_t)(c.xOff + (c.batch - 1) * c.xB + (c.nJ - 1) * c.xJ + c.nI);
  const size_t yn = (size_t)(c.yOff + (c.batch - 1) * c.yB + (c.nI - 1) * c.yI + c.nJ);
  Buf xb(xn * E, 0), yb(yn * E, 0xa5), want(yn * E, 0xa5);
  for (size_t k = 0; k < xn * E; k++) xb.bytes()[k] = (uint8_t)rng.next();
  T* x = reinterpret_cast<T*>(xb.bytes());
  T* y = reinterpret_cast<T*>(yb.bytes());
  T* w = reinterpret_cast<T*>(want.bytes());
  for (uint64_t b = 0; b < c.batch; b++)
    for (uint64_t i = 0; i < c.nI; i++)
      for (uint64_t j = 0; j < c.nJ; j++) w[c.yOff + b * c.yB + i * c.yI + j] = x[c.xOff + b * c.xB + j * c.xJ + i];
  emu::launch(c.grid, TP_THREADS, wave, [&] {
    transpose_tiles<E>(y + c.yOff, x + c.xOff, c.nI, c.nJ, c.batch, c.yI, c.xJ, c.yB, c.xB);
  });
  for (size_t k = 0; k < yn * E; k++) {
    if (yb.bytes()[k] != want.bytes()[k]) { fail(what, "byte %lld is 0x%llx, expected 0x%llx", (long long)k, yb.bytes()[k], want.bytes()[k]); return; }
  }
}

template <int E>
static void transposes(int wave, Rng& rng) {
  const int64_t V = 16 / E, TI = TpShape<E>::TI, TJ = TpShape<E>::TJ;
  const int before = failures;
  auto up = [](int64_t n, int64_t m) { return (n + m - 1) / m * m; };
  // dense, whole tiles: every chunk takes the 16-byte path
  { const int64_t nI = 2 * TI, nJ = 2 * TJ; run_transpose<E>(wave, { (uint64_t)nI, (uint64_t)nJ, 1, nI, nJ, 0, 0, 0, 0, 4 }, rng); }
  // edges cut tiles and chunks; rows a whole number of chunks (aligned) with offsets that keep them so
  { const int64_t nI = TI + V + 1, nJ = TJ + 3, xJ = up(nI, V) + V, yI = up(nJ, V);
    run_transpose<E>(wave, { (uint64_t)nI, (uint64_t)nJ, 2, xJ, yI, nJ * xJ + V, nI * yI + 2 * V, V, 3 * V, 3 }, rng); }
  // row strides off the chunk grid and odd offsets: chunks element by element; a grid of 2
  { const int64_t nI = TI / 2 + 3, nJ = 2 * TJ - 5;
    run_transpose<E>(wave, { (uint64_t)nI, (uint64_t)nJ, 3, nI + 1, nJ + 3, (nJ + 1) * (nI + 1), nI * (nJ + 3) + 1, 1, 5, 2 }, rng); }
  // thin sides, a batch with stride 0 on x (broadcast)
  run_transpose<E>(wave, { 8, 300, 2, 8, 300, 0, 8 * 300, 0, 0, 7 }, rng);
  run_transpose<E>(wave, { 300, 9, 1, 304, 9, 0, 0, 0, 0, 1 }, rng);
  if (failures == before) std::printf("ok  transpose b%d wave %d: 5 layouts\n", E, wave);
}

// ---- cat_rows --------------------------------------------------------------------------------
template <class U>
static void cat_case(int wave, unsigned block, unsigned grid, Rng& rng) {
  const std::string what = "cat_rows " + std::to_string(sizeof(U)) + "-byte units wave " + std::to_string(wave) + " block " + std::to_string(block);
  checks++;
  const int64_t rows = 5;
  const int64_t lens[3] = { 3, (int64_t)block * 4 + 37, 7 };     // short, longer than a tile, short
  const int64_t pads[3] = { 2, 0, 5 }, offs[3] = { 1, 0, 4 };
  int64_t rowLen = 0, cols[3];
  for (int k = 0; k < 3; k++) { cols[k] = rowLen; rowLen += lens[k]; }
  const int64_t yOff = 2, yRow = rowLen + 1;
  std::vector<Buf> xs;
  CatArgs a{};
  a.yOff = yOff; a.yRowStride = yRow; a.rows = (u64)rows; a.count = 3;
  for (int k = 0; k < 3; k++) {
    const int64_t stride = lens[k] + pads[k];
    xs.emplace_back((size_t)(offs[k] + rows * stride) * sizeof(U), 0);
    for (size_t b = 0; b < xs.back().size(); b++) xs.back().bytes()[b] = (uint8_t)rng.next();
    a.x[k] = xs.back().bytes(); a.xOff[k] = offs[k]; a.xRowStride[k] = stride; a.len[k] = (u64)lens[k]; a.col[k] = cols[k];
  }
  const size_t yn = (size_t)(yOff + rows * yRow);
  Buf yb(yn * sizeof(U), 0xa5), want(yn * sizeof(U), 0xa5);
  U* y = reinterpret_cast<U*>(yb.bytes());
  U* w = reinterpret_cast<U*>(want.bytes());
  for (int k = 0; k < 3; k++)
    for (int64_t r = 0; r < rows; r++)
      for (int64_t u = 0; u < lens[k]; u++) w[yOff + r * yRow + cols[k] + u] = reinterpret_cast<const U*>(a.x[k])[offs[k] + r * a.xRowStride[k] + u];
  emu::launch(grid * 3, block, wave, [&] { cat_rows<U>(y, a); });   // input b % 3 for block b
  for (size_t k = 0; k < yn * sizeof(U); k++) {
    if (yb.bytes()[k] != want.bytes()[k]) { fail(what, "byte %lld is 0x%llx, expected 0x%llx", (long long)k, yb.bytes()[k], want.bytes()[k]); return; }
  }
}

static void cats(int wave, Rng& rng) {
  const int before = failures;
  cat_case<uint4>(wave, 64, 3, rng);
  cat_case<u8>(wave, 64, 100, rng);
  cat_case<u32>(wave, 128, 1, rng);
  if (failures == before) std::printf("ok  cat_rows wave %d: 3 launches\n", wave);
}

// ---- index_add_rows ----------------------------------------------------------------------------
template <class T> static T put(float v);
template <> float put<float>(float v) { return v; }
template <> bf16 put<bf16>(float v) { return f32_to_bf16(v); }
static double get(float v) { return v; }
static double get(bf16 v) { return bf16_to_f32(v); }

template <class T>
static void index_add_case(int wave, const char* name, Rng& rng) {
  const std::string what = std::string("index_add_rows ") + name + " wave " + std::to_string(wave);
  checks++;
  // x [pre, limit, len] (acc, contiguous), src [pre, n, len] with padded rows, ids with repeats and one bad id
  const u64 pre = 2, limit = 6, len = 70, n = 9;
  const i64 srcDim = 75, srcPre = (i64)n * srcDim + 3;
  const i64 ids[n] = { 4, 1, 4, 0, 6 /* bad: == limit */, 4, 5, 1, 2 };
  std::vector<float> acc(pre * limit * len);
  std::vector<double> want(acc.size());
  for (size_t k = 0; k < acc.size(); k++) { acc[k] = (float)(rng.next() % 200) / 8.0f - 12.0f; want[k] = acc[k]; }
  std::vector<T> src((size_t)(pre * srcPre));
  for (auto& v : src) v = put<T>((float)(rng.next() % 256) / 16.0f - 8.0f);
  for (u64 p = 0; p < pre; p++)
    for (u64 j = 0; j < n; j++) {
      if ((u64)ids[j] >= limit) continue;
      for (u64 k = 0; k < len; k++) want[(p * limit + (u64)ids[j]) * len + k] += get(src[p * srcPre + j * srcDim + k]);
    }
  u64 err[4] = { 0, 0, 0, 0 };
  // groups of 16 lanes: several rows a block, lanes past the row's end
  emu::launch(3, 64, wave, [&] {
    index_add_rows_impl<T, i64>(acc.data(), src.data(), ids, err, pre * n, n, (u32)len, (i64)(limit * len), (i64)len, srcPre, srcDim, 1, limit, 16, 9);
  });
  // small integers in eighths and sixteenths: every sum is exact in f32, in any order
  for (size_t k = 0; k < acc.size(); k++) {
    if ((double)acc[k] != want[k]) { fail(what, "element %lld is %lld/64, expected %lld/64", (long long)k, (long long)(acc[k] * 64), (long long)(want[k] * 64)); return; }
  }
  const u32* head = reinterpret_cast<const u32*>(err);
  if (head[0] != 9 || head[1] != 1 || err[1] != 6 || err[2] != 4 || err[3] != limit) fail(what, "error record tag %lld id %lld pos %lld", head[0], (long long)err[1], (long long)err[2]);
}

static void index_adds(int wave, Rng& rng) {
  const int before = failures;
  index_add_case<float>(wave, "f32", rng);
  index_add_case<bf16>(wave, "bf16", rng);
  if (failures == before) std::printf("ok  index_add_rows wave %d: f32, bf16\n", wave);
}
// ---- put_rows ----------------------------------------------------------------------------------
template <class E>
static void put_rows_case(int wave, const char* name, Rng& rng) {
  const std::string what = std::string("put_rows ") + name + " wave " + std::to_string(wave);
  checks++;
  // y [pre, limit, len] (contiguous), x [pre, n, len] with padded rows, distinct ids and one bad id
  const u64 pre = 2, limit = 9, len = 13, n = 6;
  const i64 xDim = 15, xPre = (i64)n * xDim + 4;
  const i64 ids[n] = { 7, 2, 9 /* bad: == limit */, 0, 5, 8 };
  const size_t yn = pre * limit * len, xn = (size_t)(pre * xPre);
  Buf yb(yn * sizeof(E), 0xa5), want(yn * sizeof(E), 0xa5), xb(xn * sizeof(E), 0);
  for (size_t k = 0; k < xn * sizeof(E); k++) xb.bytes()[k] = (uint8_t)rng.next();
  E* y = reinterpret_cast<E*>(yb.bytes());
  E* w = reinterpret_cast<E*>(want.bytes());
  const E* x = reinterpret_cast<const E*>(xb.bytes());
  for (u64 p = 0; p < pre; p++)
    for (u64 j = 0; j < n; j++) {
      if ((u64)ids[j] >= limit) continue;
      for (u64 k = 0; k < len; k++) w[(p * limit + (u64)ids[j]) * len + k] = x[p * xPre + j * xDim + k];
    }
  u64 err[4] = { 0, 0, 0, 0 };
  // groups of 8 lanes: several rows a block, lanes past the row's end; a grid smaller than the rows
  emu::launch(2, 64, wave, [&] {
    put_rows_impl<E, i64>(y, x, ids, err, pre * n, n, (u32)len, (i64)(limit * len), (i64)len, xPre, xDim, 1, limit, 8, 7);
  });
  for (size_t k = 0; k < yn * sizeof(E); k++) {
    if (yb.bytes()[k] != want.bytes()[k]) { fail(what, "byte %lld is 0x%llx, expected 0x%llx", (long long)k, yb.bytes()[k], want.bytes()[k]); return; }
  }
  const u32* head = reinterpret_cast<const u32*>(err);
  if (head[0] != 7 || head[1] != 1 || err[1] != 9 || err[2] != 2 || err[3] != limit) fail(what, "error record tag %lld id %lld pos %lld", head[0], (long long)err[1], (long long)err[2]);
}

static void put_rows_all(int wave, Rng& rng) {
  const int before = failures;
  put_rows_case<u32>(wave, "b4", rng);
  put_rows_case<uint4>(wave, "b16", rng);
  if (failures == before) std::printf("ok  put_rows wave %d: b4, b16\n", wave);
}

int main() {
  Rng rng{ 0x9e3779b97f4a7c15ull };
  for (int wave : { 64, 32 }) {
    strided<1>(wave, rng);
    strided<2>(wave, rng);
    strided<4>(wave, rng);
    strided<8>(wave, rng);
    strided<16>(wave, rng);
    transposes<1>(wave, rng);
    transposes<2>(wave, rng);
    transposes<4>(wave, rng);
    transposes<8>(wave, rng);
    cats(wave, rng);
    index_adds(wave, rng);
    put_rows_all(wave, rng);
  }
  std::printf("%s: %d mismatches in %d checks\n", failures ? "FAIL" : "ok", failures, checks);
  return failures ? 1 : 0;
}
