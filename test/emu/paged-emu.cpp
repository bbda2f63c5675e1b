// paged-emu.cpp: runs paged-attention.hip (paged_attn) and attention.hip's attn_merge as written,
// through their HIP path, on the host emulator (hip-host/hip/hip_runtime.h: a block's threads as
// fibers, in a shuffled order, at wave 64 and at wave 32), against a double-precision reference
// written here from the op's definition (src/backends/cpu/attention-paged.ts's rules: query i of
// a sequence with qlen queries and ctx cached tokens sits at ctx - qlen + i and sees the keys at
// positions <= its own, and with a window only those past position - window; keys and values
// come from the pools through the sequence's row of the block table), with inputs rounded to the
// dtype. Launch shapes as src/backends/gpu/attention-paged.ts makes them: 256 threads, grid
// (tokens, kv heads * head chunks, splits), RT 1 for one query head a kv head, else 4.
// Cases: shuffled block tables (u32 and i64, a row stride past the row's length), block sizes 16
// and 1, prefill chunks and decode tokens mixed in one launch, empty sequences, windows, grouped
// heads (groups of 1, 3, 4, 6), a v head dim other than q's, head dims that take the scalar path,
// pools seen through padded strides, keys split over blocks and merged. The outputs start
// poisoned (NaN), so a row left unwritten fails. Also: a block id out of range is recorded in
// the error record and makes its rows NaN, and a NaN key makes the rows that see it NaN.
// Prints `ok <what>` per dtype and wave; exits 1 on a mismatch.
//   g++ -std=c++20 -O1 -D__HIP__ -Itest/emu/hip-host test/emu/paged-emu.cpp && ./a.out
#include "../../hip-src/paged-attention.hip"
// attention.hip writes `__shared__ alignas(16)`, which reads `static alignas(16)` here: the GNU
// spelling takes that place
#define alignas(n) __attribute__((aligned(n)))
#include "../../hip-src/attention.hip"
#undef alignas
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "emu-rng.h"
#include "paged-tables.h"

static int failures = 0;

template <class T> struct Io;
template <> struct Io<float> {
  static constexpr const char* name = "f32";
  static float put(double v) { return (float)v; }
  static double get(float v) { return v; }
  // a score's f32 rounding (d products of size up to 4) moves its probability by about d ulps,
  // and the output's sums of up to a few hundred terms round at the values' size (|v| <= 1)
  static constexpr double eps = 1.0 / (1 << 16);
  static constexpr double floor = 0.25;
  static constexpr auto r1 = &paged_attn_r1_f32, r4 = &paged_attn_r4_f32;
  static constexpr auto merge = &attn_merge_f32;
};
template <> struct Io<f16> {
  static constexpr const char* name = "f16";
  static f16 put(double v) { return f64_to_f16(v); }
  static double get(f16 v) { return f16_to_f32(v); }
  static constexpr double eps = 1.0 / 1024;
  static constexpr double floor = 0.02;
  static constexpr auto r1 = &paged_attn_r1_f16, r4 = &paged_attn_r4_f16;
  static constexpr auto merge = &attn_merge_f16;
};
template <> struct Io<bf16> {
  static constexpr const char* name = "bf16";
  static bf16 put(double v) { return f64_to_bf16(v); }
  static double get(bf16 v) { return bf16_to_f32(v); }
  static constexpr double eps = 1.0 / 128;
  static constexpr double floor = 0.02;
  static constexpr auto r1 = &paged_attn_r1_bf16, r4 = &paged_attn_r4_bf16;
  static constexpr auto merge = &attn_merge_bf16;
};

struct Case {
  const char* name;
  unsigned hq, hkv, d, dv, bs;
  std::vector<unsigned> qlens, ctxs;
  long long window;  // 0: none
  unsigned splits;
  bool i64Table;
  unsigned headPad;  // extra elements between kv heads in the pools (padded strides)
  unsigned rowPad;   // extra block-table columns past maxBlocks (a narrowed table)
  int fault;         // 0 none, 1 a bad block id, 2 a NaN key
  unsigned maxQ = 0xffffffffu;  // sequences with more queries are left to paged-prefill.hip
  bool listed = false;          // blocks over a list of the other sequences' tokens only
};

template <class T> struct Problem {
  Case c;
  unsigned seqs, tokens, maxBlocks, nblocks;
  long long kss, kbk, ksh, vss, vbk, vsh, tsr;
  std::vector<T> q, kp, vp;
  std::vector<unsigned> meta;
  std::vector<long long> ids;  // [seqs][maxBlocks] logical block ids
  std::vector<unsigned> t32;
  std::vector<long long> t64;
  double scale;
  long long badSeq = -1, badCol = -1, badId = 0, nanBlock = -1, nanSlot = -1;

  Problem(const Case& cs, uint64_t seed) : c(cs) {
    Rng rng{ seed };
    seqs = (unsigned)c.qlens.size();
    tokens = 0;
    maxBlocks = 1;
    for (unsigned s = 0; s < seqs; s++) {
      tokens += c.qlens[s];
      maxBlocks = std::max(maxBlocks, (c.ctxs[s] + c.bs - 1) / c.bs);
    }
    // every sequence's blocks, plus a few never named, shuffled through the pool
    unsigned need = 0;
    for (unsigned s = 0; s < seqs; s++) need += (c.ctxs[s] + c.bs - 1) / c.bs;
    nblocks = need + 3;
    std::vector<unsigned> perm(nblocks);
    for (unsigned i = 0; i < nblocks; i++) perm[i] = i;
    for (unsigned i = nblocks - 1; i > 0; i--) std::swap(perm[i], perm[rng.next() % (i + 1)]);
    ids.assign((size_t)seqs * maxBlocks, 0);
    unsigned at = 0;
    for (unsigned s = 0; s < seqs; s++) {
      const unsigned nb = (c.ctxs[s] + c.bs - 1) / c.bs;
      // unused entries hold ids past the pool: the kernel must never read them
      for (unsigned b = 0; b < maxBlocks; b++) ids[(size_t)s * maxBlocks + b] = b < nb ? perm[at++] : 1000000 + b;
    }
    if (c.fault == 1) {
      for (unsigned s = 0; s < seqs && badSeq < 0; s++)
        if (c.ctxs[s] > 0) { badSeq = s; badCol = (c.ctxs[s] - 1) / c.bs; badId = nblocks + 5; }
      ids[(size_t)badSeq * maxBlocks + badCol] = badId;
    }
    tsr = maxBlocks + c.rowPad;
    paged_tables(ids, seqs, maxBlocks, tsr, t32, t64);
    ksh = c.d + c.headPad; kss = ksh * c.hkv; kbk = kss * c.bs;
    vsh = c.dv + c.headPad; vss = vsh * c.hkv; vbk = vss * c.bs;
    q.resize((size_t)tokens * c.hq * c.d);
    for (auto& x : q) x = Io<T>::put(rng.uni(-2, 2));
    kp.resize((size_t)nblocks * kbk);
    vp.resize((size_t)nblocks * vbk);
    for (auto& x : kp) x = Io<T>::put(rng.uni(-2, 2));
    for (auto& x : vp) x = Io<T>::put(rng.uni(-1, 1));
    if (c.fault == 2) {
      // a NaN key in the middle of the first non-empty sequence
      for (unsigned s = 0; s < seqs && nanBlock < 0; s++)
        if (c.ctxs[s] > 1) {
          const unsigned j = c.ctxs[s] / 2;
          nanBlock = ids[(size_t)s * maxBlocks + j / c.bs];
          nanSlot = j % c.bs;
          kp[nanBlock * kbk + nanSlot * kss + 0 * ksh + 1] = Io<T>::put(NAN);
        }
    }
    meta.assign(2 * seqs + 1, 0);
    for (unsigned s = 0; s < seqs; s++) meta[s + 1] = meta[s] + c.qlens[s];
    for (unsigned s = 0; s < seqs; s++) meta[seqs + 1 + s] = c.ctxs[s];
    scale = 1.0 / std::sqrt((double)c.d);
  }

  // the f64 reference of one output row (token t, head h); nan: the row must be NaN
  void reference(unsigned s, unsigned i, unsigned t, unsigned h, std::vector<double>& out, bool& nan) const {
    const unsigned qlen = c.qlens[s], ctx = c.ctxs[s], kh = h / (c.hq / c.hkv);
    const long long pos = (long long)ctx - qlen + i;
    out.assign(c.dv, 0.0);
    nan = false;
    std::vector<double> w;
    std::vector<long long> rows;
    double m = -INFINITY;
    for (long long j = 0; j <= pos; j++) {
      if (c.window > 0 && j <= pos - c.window) continue;
      const long long id = ids[(size_t)s * maxBlocks + j / c.bs];
      if (id < 0 || id >= (long long)nblocks) { nan = true; return; }
      const long long slot = j % c.bs;
      double sc = 0;
      for (unsigned e = 0; e < c.d; e++)
        sc += Io<T>::get(q[((size_t)t * c.hq + h) * c.d + e]) * Io<T>::get(kp[id * kbk + slot * kss + kh * ksh + e]);
      sc *= scale;
      if (std::isnan(sc)) { nan = true; return; }
      w.push_back(sc);
      rows.push_back(id * vbk + slot * vss + kh * vsh);
      m = std::max(m, sc);
    }
    double sum = 0;
    for (auto& x : w) sum += (x = std::exp(x - m));
    for (size_t n = 0; n < w.size(); n++)
      for (unsigned e = 0; e < c.dv; e++) out[e] += w[n] / sum * Io<T>::get(vp[rows[n] + e]);
  }

  bool check(const std::vector<T>& o, const char* what) const {
    bool ok = true;
    std::vector<double> ref;
    unsigned t = 0;
    for (unsigned s = 0; s < seqs; s++) {
      for (unsigned i = 0; i < c.qlens[s]; i++, t++) {
        for (unsigned h = 0; h < c.hq; h++) {
          if (c.qlens[s] > c.maxQ) {
            // not this kernel's rows: untouched (poison) with one split, zeros from attn_merge;
            // listed, attn_merge's result there is whatever the unwritten partials give (the
            // prefill kernel, launched after it, writes those rows)
            if (c.listed) continue;
            for (unsigned e = 0; e < c.dv; e++) {
              const double got = Io<T>::get(o[((size_t)t * c.hq + h) * c.dv + e]);
              if (c.splits > 1 ? got != 0 : !std::isnan(got)) {
                if (ok) std::printf("FAIL %s %s: token %u head %u col %u of a skipped sequence: %g\n", what, c.name, t, h, e, got);
                ok = false;
              }
            }
            continue;
          }
          bool nan;
          reference(s, i, t, h, ref, nan);
          for (unsigned e = 0; e < c.dv; e++) {
            const double got = Io<T>::get(o[((size_t)t * c.hq + h) * c.dv + e]);
            if (nan) {
              if (!std::isnan(got)) {
                if (ok) std::printf("FAIL %s %s: token %u head %u col %u: %g, want NaN\n", what, c.name, t, h, e, got);
                ok = false;
              }
              continue;
            }
            const double err = std::fabs(got - ref[e]);
            const double tol = 2 * Io<T>::eps * (std::fabs(ref[e]) + Io<T>::floor);
            if (!(err <= tol)) {
              if (ok) std::printf("FAIL %s %s: token %u head %u col %u: %.8g, want %.8g\n", what, c.name, t, h, e, got, ref[e]);
              ok = false;
            }
          }
        }
      }
    }
    if (!ok) failures++;
    return ok;
  }
};

// as gpu/attention-paged.ts launches it: the kernel, then attn_merge when the keys split
template <class T> static bool run(const Case& cs, int wave, uint64_t seed) {
  Problem<T> p(cs, seed);
  const Case& c = p.c;
  const unsigned g = c.hq / c.hkv, rt = g == 1 ? 1 : 4, hc = (g + rt - 1) / rt;
  const size_t rows = (size_t)p.tokens * c.hq;
  std::vector<T> o(rows * c.dv, Io<T>::put(NAN));
  std::vector<float> wso(rows * c.splits * c.dv, NAN), wsml(rows * c.splits * 2, NAN);
  unsigned long long err[4] = { 0, 0, 0, 0 };
  const unsigned tag = 0x123458;
  const void* table = c.i64Table ? (const void*)p.t64.data() : (const void*)p.t32.data();
  const auto fn = rt == 1 ? Io<T>::r1 : Io<T>::r4;
  // listed: the tokens of the sequences this kernel takes, after the lengths
  std::vector<unsigned> meta = p.meta;
  unsigned listAt = 0, blocksX = p.tokens;
  if (c.listed) {
    listAt = (unsigned)meta.size();
    blocksX = 0;
    for (unsigned s = 0; s < p.seqs; s++)
      if (c.qlens[s] <= c.maxQ)
        for (unsigned i = 0; i < c.qlens[s]; i++, blocksX++) meta.push_back(p.meta[s] + i);
  }
  if (blocksX > 0) {
    emu::launch(emu::Dim3{blocksX, c.hkv * hc, c.splits}, 256, wave, [&] {
      fn(o.data(), wso.data(), wsml.data(), p.q.data(), p.kp.data(), p.vp.data(), table, meta.data(), err, 0, 0, 0, 0, 0, 0,
          p.seqs, c.hq, c.hkv, c.d, c.dv, c.bs, p.nblocks, p.maxBlocks, c.i64Table ? 1u : 0u, tag, c.splits, c.maxQ, listAt,
          (long long)c.hq * c.d, c.d, p.kbk, p.kss, p.ksh, p.vbk, p.vss, p.vsh, p.tsr, 1, c.window, (float)p.scale);
    });
    if (c.splits > 1) {
      unsigned threads = (unsigned)wave;
      while (threads < 256 && threads / 32 * 8 < c.splits) threads *= 2;
      emu::launch(emu::Dim3{(unsigned)rows, (c.dv + 31) / 32, 1}, threads, wave, [&] {
        Io<T>::merge(o.data(), wso.data(), wsml.data(), 0, c.splits, c.dv);
      });
    }
  }
  char what[96];
  std::snprintf(what, sizeof what, "paged_attn_r%u %s wave%d", rt, Io<T>::name, wave);
  bool ok = p.check(o, what);
  if (c.fault == 1) {
    // the record: the tag, done, the id, its flat position in the table, the pool's blocks
    const unsigned* head = (const unsigned*)err;
    const unsigned long long pos = (unsigned long long)p.badSeq * p.maxBlocks + p.badCol;
    if (head[0] != tag || head[1] != 1 || err[1] != (unsigned long long)p.badId || err[2] != pos || err[3] != p.nblocks) {
      std::printf("FAIL %s %s: error record %x %u %llu %llu %llu, want %x 1 %lld %llu %u\n", what, c.name, head[0], head[1], err[1], err[2],
          err[3], tag, p.badId, pos, p.nblocks);
      failures++;
      ok = false;
    }
  } else if (err[0] != 0) {
    std::printf("FAIL %s %s: an error was recorded with good ids\n", what, c.name);
    failures++;
    ok = false;
  }
  return ok;
}

static std::vector<Case> cases() {
  std::vector<Case> v;
  // mixed step: a prefill chunk over a longer cache, decodes, a whole prompt, an empty sequence
  v.push_back({ "gqa4 bs16 mixed", 8, 2, 64, 64, 16, { 5, 1, 1, 0, 9 }, { 300, 17, 1, 4, 9 }, 0, 1, false, 0, 0, 0 });
  v.push_back({ "gqa4 bs16 mixed split3", 8, 2, 64, 64, 16, { 5, 1, 1, 0, 9 }, { 300, 17, 1, 4, 9 }, 0, 3, true, 8, 2, 0 });
  v.push_back({ "mha bs1 window", 2, 2, 40, 40, 1, { 1, 6, 1 }, { 40, 6, 260 }, 7, 1, false, 0, 0, 0 });
  v.push_back({ "mha bs1 window split2", 2, 2, 40, 40, 1, { 1, 6, 1 }, { 40, 6, 260 }, 100, 2, true, 0, 1, 0 });
  v.push_back({ "g3 d20 dv12 bs16", 6, 2, 20, 12, 16, { 3, 1 }, { 33, 70 }, 0, 2, false, 0, 0, 0 });
  v.push_back({ "g6 d80 bs16 window", 6, 1, 80, 80, 16, { 1, 4, 2 }, { 513, 20, 2 }, 32, 1, false, 8, 0, 0 });
  v.push_back({ "g6 d80 bs1 split4", 6, 1, 80, 80, 1, { 1, 2 }, { 45, 2 }, 0, 4, true, 0, 0, 0 });
  v.push_back({ "bad block id", 4, 1, 64, 64, 16, { 1, 2 }, { 20, 40 }, 0, 1, false, 0, 0, 1 });
  v.push_back({ "nan key", 4, 2, 64, 64, 16, { 3, 1 }, { 40, 20 }, 0, 2, true, 0, 0, 2 });
  // the chunks past maxQ queries are paged-prefill.hip's: skipped here
  v.push_back({ "skip maxQ 4", 8, 2, 64, 64, 16, { 5, 1, 20, 1 }, { 300, 17, 20, 90 }, 0, 1, false, 0, 0, 0, 4 });
  v.push_back({ "skip maxQ 4 split3", 8, 2, 64, 64, 16, { 5, 1, 20, 1 }, { 300, 17, 20, 90 }, 0, 3, false, 0, 0, 0, 4 });
  v.push_back({ "listed maxQ 4", 8, 2, 64, 64, 16, { 5, 1, 20, 1 }, { 300, 17, 20, 90 }, 0, 1, true, 0, 0, 0, 4, true });
  v.push_back({ "listed maxQ 4 split2", 6, 2, 40, 40, 1, { 2, 30, 3 }, { 50, 30, 3 }, 9, 2, false, 0, 0, 0, 4, true });
  return v;
}

template <class T> static void all(int wave) {
  const std::vector<Case> cs = cases();
  bool ok = true;
  uint64_t seed = 0x9e3779b97f4a7c15ull ^ (uint64_t)wave;
  for (const Case& c : cs) ok = run<T>(c, wave, seed++) && ok;
  if (ok) std::printf("ok paged_attn+attn_merge %s wave%d (%zu cases)\n", Io<T>::name, wave, cs.size());
}

int main() {
  for (int wave : { 64, 32 }) {
    all<float>(wave);
    all<f16>(wave);
    all<bf16>(wave);
  }
  if (failures) {
    std::printf("%d failing cases\n", failures);
    return 1;
  }
  return 0;
}
