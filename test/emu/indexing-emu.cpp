// indexing-emu.cpp: runs indexing.hip (gather_<W>_<I>, scatter_mark_<I> + scatter_write_<W>_<I>,
// scatter_mark_<I> + index_set_<W>_<I> (winners per id, and with no winner buffer for one id),
// scatter_add_<DT>_<I>) on the host through its HIP path (hip-host/hip/hip_runtime.h) at wave
// sizes 64 and 32, against references from the kernels' definitions (indexing.hip's header):
// gathered bits copied unchanged; with duplicate targets the scatter's last id in row-major order
// wins; scatter_add sums every duplicate (integers wrap; u8 through its 32-bit word); an id
// outside [0, limit) (a negative i64 too) is skipped and the first one is recorded with its tag,
// id, position and limit. The problems index dim 1 of a [4, 6] tensor with [4, 5] ids, through
// the Geom each family uses, on grids smaller and larger than the ids. Outputs start poisoned.
// Prints one line per family and wave; exits 1 on a mismatch.
//   g++ -std=c++20 -O1 -D__HIP__ -Itest/emu/hip-host test/emu/indexing-emu.cpp && ./a.out
#include "../../hip-src/indexing.hip"
#include <cstdio>
#include <string>

#include "emu-rng.h"

static int failures = 0;
constexpr unsigned A = 4, B = 6, K = 5;  // x / y [A, B], ids and src [A, K], indexed dim 1

static Geom geom(std::initializer_list<std::pair<i64, i64>> strides, unsigned cols = K) {
  Geom g{};
  g.numel = A * cols;
  g.rank = 2;
  g.shape[0] = A;
  g.shape[1] = cols;
  int k = 0;
  for (auto [s0, s1] : strides) {
    g.strides[k][0] = s0;
    g.strides[k][1] = s1;
    k++;
  }
  return g;
}

// ids in [0, B) with duplicates, and, when `bad`, one bad id at position 7 (-1 for i64, B + 3 else)
template <class I> static std::vector<I> make_ids(Rng& rng, bool bad) {
  std::vector<I> ids(A * K);
  for (auto& v : ids) v = (I)(rng.next() % B);
  ids[3] = ids[2];  // a duplicate target in row 0
  if (bad) ids[7] = std::is_same_v<I, i64> ? (I)-1 : (I)(B + 3);
  return ids;
}

// the error record: what the kernels must have left in it
template <class I> static bool check_err(const u64* err, bool bad, const std::vector<I>& ids, const std::string& what) {
  const u32 tag = (u32)err[0], done = (u32)(err[0] >> 32);
  bool ok = bad ? tag == 77 && done == 1 && err[1] == (u64)ids[7] && err[2] == 7 && err[3] == B : err[0] == 0;
  if (!ok) std::printf("MISMATCH %s: error record tag %u done %u id %llu pos %llu limit %llu (bad id %s)\n", what.c_str(), tag, done,
      (unsigned long long)err[1], (unsigned long long)err[2], (unsigned long long)err[3], bad ? "present" : "absent");
  return ok;
}

template <class E, class I, class Gather> static bool gather(int wave, unsigned grid, bool bad, Gather fn, const char* name, Rng& rng) {
  std::vector<E> x(A * B);
  for (auto& v : x) v = (E)rng.next();
  const std::vector<I> ids = make_ids<I>(rng, bad);
  std::vector<E> y(A * K, (E)0xa5a5a5a5a5a5a5a5ull);
  u64 err[4] = {0, 0, 0, 0};
  // operands: 0 y [A, K], 1 x with stride 0 on the indexed dim, 2 ids, 3 pos
  const Geom g = geom({{K, 1}, {B, 0}, {K, 1}, {K, 1}});
  emu::launch(grid, 64, wave, [&] { fn(y.data(), x.data(), ids.data(), g, 1, B, err, 77); });
  bool ok = true;
  for (unsigned i = 0; i < A; i++)
    for (unsigned j = 0; j < K; j++) {
      const u64 id = (u64)ids[i * K + j];
      const E want = id < B ? x[i * B + id] : (E)0xa5a5a5a5a5a5a5a5ull;
      if (y[i * K + j] != want) {
        if (ok) std::printf("MISMATCH %s wave %d grid %u: y[%u, %u]\n", name, wave, grid, i, j);
        ok = false;
      }
    }
  return check_err(err, bad, ids, name) && ok;
}

template <class E, class I, class Mark, class Write> static bool scatter(int wave, unsigned grid, bool bad, Mark mark, Write write, const char* name, Rng& rng) {
  std::vector<E> src(A * K), y(A * B);
  for (auto& v : src) v = (E)rng.next();
  for (auto& v : y) v = (E)rng.next();
  const std::vector<E> before = y;
  const std::vector<I> ids = make_ids<I>(rng, bad);
  std::vector<u32> win(A * B, 0);
  u64 err[4] = {0, 0, 0, 0};
  // mark: 0 win with stride 0 on the indexed dim, 1 ids, 2 pos; write: 0 y, 1 ids, 2 pos, 3 src
  const Geom gm = geom({{B, 0}, {K, 1}, {K, 1}});
  const Geom gw = geom({{B, 0}, {K, 1}, {K, 1}, {K, 1}});
  emu::launch(grid, 64, wave, [&] { mark(win.data(), ids.data(), gm, 1, B, err, 77); });
  emu::launch(grid, 64, wave, [&] { write(y.data(), src.data(), ids.data(), win.data(), gw, 1, B); });
  std::vector<E> want = before;
  for (unsigned i = 0; i < A; i++)
    for (unsigned j = 0; j < K; j++) {  // row-major order: the last write wins
      const u64 id = (u64)ids[i * K + j];
      if (id < B) want[i * B + id] = src[i * K + j];
    }
  const bool ok = want == y;
  if (!ok) std::printf("MISMATCH %s wave %d grid %u: the scattered tensor\n", name, wave, grid);
  return check_err(err, bad, ids, name) && ok;
}

// indexSet along dim 1: src [A, n] rows at 1-d ids [n] (a duplicate pair when n > 1, and with
// `bad` a bad id last); the winner buffer has one entry per row of y's dim 1, none for n = 1
template <class E, class I, class Mark, class Set>
static bool index_set(int wave, unsigned grid, bool bad, unsigned n, Mark mark, Set set, const char* name, Rng& rng) {
  std::vector<E> src(A * n), y(A * B);
  for (auto& v : src) v = (E)rng.next();
  for (auto& v : y) v = (E)rng.next();
  const std::vector<E> before = y;
  std::vector<I> ids(n);
  for (auto& v : ids) v = (I)(rng.next() % B);
  if (n > 3) ids[3] = ids[2];
  if (bad) ids[n - 1] = std::is_same_v<I, i64> ? (I)-1 : (I)(B + 3);
  std::vector<u32> win(B, 0);
  u64 err[4] = {0, 0, 0, 0};
  // mark over the ids alone: 0 win with stride 0 (dimStride 1 adds the id), 1 ids, 2 pos
  Geom gm{};
  gm.numel = n;
  gm.rank = 1;
  gm.shape[0] = n;
  gm.strides[1][0] = gm.strides[2][0] = 1;
  // write over src: 0 y with stride 0 on dim 1, 1 ids and 2 pos along dim 1 only, 3 src
  const Geom gw = geom({{B, 0}, {0, 1}, {0, 1}, {n, 1}}, n);
  if (n > 1) emu::launch(grid, 64, wave, [&] { mark(win.data(), ids.data(), gm, 1, B, err, 77); });
  emu::launch(grid, 64, wave, [&] { set(y.data(), src.data(), ids.data(), n > 1 ? win.data() : nullptr, gw, 1, B, err, 77); });
  std::vector<E> want = before;
  for (unsigned i = 0; i < A; i++)
    for (unsigned j = 0; j < n; j++) {  // the last id wins
      const u64 id = (u64)ids[j];
      if (id < B) want[i * B + id] = src[i * n + j];
    }
  bool ok = want == y;
  if (!ok) std::printf("MISMATCH %s n %u wave %d grid %u: the written tensor\n", name, n, wave, grid);
  const u32 tag = (u32)err[0], done = (u32)(err[0] >> 32);
  const bool errOk = bad ? tag == 77 && done == 1 && err[1] == (u64)ids[n - 1] && err[2] == n - 1 && err[3] == B : err[0] == 0;
  if (!errOk) std::printf("MISMATCH %s n %u: error record tag %u id %llu pos %llu\n", name, n, tag, (unsigned long long)err[1], (unsigned long long)err[2]);
  return ok && errOk;
}

template <class T, class I, class Add> static bool scatter_add(int wave, unsigned grid, bool bad, Add fn, const char* name, Rng& rng) {
  typedef typename AddVal<T>::A Acc;
  std::vector<T> src(A * K);
  // u8: 4-byte blocks, as the allocator's (the kernel adds through the aligned word)
  std::vector<Acc> acc(A * B + 8);
  for (auto& v : src) v = std::is_floating_point_v<T> ? (T)(std::round(rng.uni(-50, 50)) / 4) : (T)rng.next();
  for (size_t i = 0; i < acc.size(); i++) acc[i] = std::is_floating_point_v<Acc> ? (Acc)(i % 7) : (Acc)rng.next();
  const std::vector<Acc> before = acc;
  const std::vector<I> ids = make_ids<I>(rng, bad);
  u64 err[4] = {0, 0, 0, 0};
  // operands: 0 acc with stride 0 on the indexed dim, 1 ids, 2 pos, 3 src
  const Geom g = geom({{B, 0}, {K, 1}, {K, 1}, {K, 1}});
  emu::launch(grid, 64, wave, [&] { fn(acc.data(), src.data(), ids.data(), g, 1, B, err, 77); });
  std::vector<Acc> want = before;
  for (unsigned i = 0; i < A; i++)
    for (unsigned j = 0; j < K; j++) {
      const u64 id = (u64)ids[i * K + j];
      if (id < B) want[i * B + id] = (Acc)(want[i * B + id] + (Acc)src[i * K + j]);  // small halves of 1/4: exact in any order
    }
  const bool ok = want == acc;
  if (!ok) std::printf("MISMATCH %s wave %d grid %u: the accumulated tensor\n", name, wave, grid);
  return check_err(err, bad, ids, name) && ok;
}

static void all(int wave) {
  Rng rng{0x1d + (uint64_t)wave};
  bool ok = true;
  for (unsigned grid : {1u, 3u})
    for (bool bad : {false, true}) {
      ok = gather<u8, u8>(wave, grid, bad, &gather_b1_u8, "gather_b1_u8", rng) && ok;
      ok = gather<u16, u32>(wave, grid, bad, &gather_b2_u32, "gather_b2_u32", rng) && ok;
      ok = gather<u32, i64>(wave, grid, bad, &gather_b4_i64, "gather_b4_i64", rng) && ok;
      ok = gather<u64, i64>(wave, grid, bad, &gather_b8_i64, "gather_b8_i64", rng) && ok;
      ok = scatter<u32, i64>(wave, grid, bad, &scatter_mark_i64, &scatter_write_b4_i64, "scatter_b4_i64", rng) && ok;
      ok = scatter<u16, u32>(wave, grid, bad, &scatter_mark_u32, &scatter_write_b2_u32, "scatter_b2_u32", rng) && ok;
      ok = scatter<u8, u8>(wave, grid, bad, &scatter_mark_u8, &scatter_write_b1_u8, "scatter_b1_u8", rng) && ok;
      for (unsigned n : {1u, K, 9u}) {
        ok = index_set<u32, i64>(wave, grid, bad, n, &scatter_mark_i64, &index_set_b4_i64, "index_set_b4_i64", rng) && ok;
        ok = index_set<u16, u32>(wave, grid, bad, n, &scatter_mark_u32, &index_set_b2_u32, "index_set_b2_u32", rng) && ok;
        ok = index_set<u64, u8>(wave, grid, bad, n, &scatter_mark_u8, &index_set_b8_u8, "index_set_b8_u8", rng) && ok;
      }
      ok = scatter_add<float, i64>(wave, grid, bad, &scatter_add_f32_i64, "scatter_add_f32_i64", rng) && ok;
      ok = scatter_add<double, u32>(wave, grid, bad, &scatter_add_f64_u32, "scatter_add_f64_u32", rng) && ok;
      ok = scatter_add<u8, i64>(wave, grid, bad, &scatter_add_u8_i64, "scatter_add_u8_i64", rng) && ok;
      ok = scatter_add<u32, u8>(wave, grid, bad, &scatter_add_u32_u8, "scatter_add_u32_u8", rng) && ok;
      ok = scatter_add<i64, i64>(wave, grid, bad, &scatter_add_i64_i64, "scatter_add_i64_i64", rng) && ok;
    }
  if (ok) std::printf("ok indexing wave %d\n", wave);
  else failures++;
}

int main() {
  all(64);
  all(32);
  if (failures) {
    std::printf("%d waves with mismatches\n", failures);
    return 1;
  }
  std::printf("ok: 0 mismatches\n");
  return 0;
}
