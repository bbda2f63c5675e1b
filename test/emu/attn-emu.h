// The attention emulators' shared parts (included after the kernel sources, which define f16,
// bf16 and their conversions): the arch name of the build, the dtypes' I/O, and for the paged
// kernels a case's inputs (shuffled block tables, pools, q/k/v, meta's lengths) and the
// double-precision reference of paged attention (query i of a sequence with qlen queries and ctx
// cached tokens sits at ctx - qlen + i and sees the keys up to it, with a window only those past
// it - window; keys and values read from the pools through the sequence's row of the block table).
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>

#include "emu-rng.h"
#include "emu-io.h"
#include "paged-tables.h"

#if defined(__gfx90a__)
static const char* ARCH = "gfx90a";
#elif defined(__gfx942__)
static const char* ARCH = "gfx942";
#elif defined(__gfx1100__)
static const char* ARCH = "gfx1100";
#elif defined(__gfx1200__)
static const char* ARCH = "gfx1200";
#else
static const char* ARCH = "gfx1030";
#endif

static int failures = 0;

template <class T> struct Io;
template <> struct Io<f16> : EmuIo<f16> {
  static constexpr double eps = 1.0 / 1024;
};
template <> struct Io<bf16> : EmuIo<bf16> {
  static constexpr double eps = 1.0 / 128;
};

// ---- paged attention ---------------------------------------------------------------------------

// the paged kernels' head-dim bucket
inline unsigned pagedBucket(unsigned d) { return d <= 64 ? 64 : 128; }

// what a paged case shares; each emulator's Case adds its own fields after these
struct PagedCase {
  const char* name;
  unsigned hq, hkv, d, bs;
  std::vector<unsigned> qlens, ctxs;
  long long window;  // 0: none
  bool i64Table;
  unsigned headPad;  // extra elements between kv heads in the pools (padded strides)
};

// a case's inputs, drawn from seed: a shuffled block table (u32 and i64, rows padded past
// maxBlocks, unused ids far out of range), with badId a bad block id in the last sequence's row,
// pools with padded head strides, random q, k and v, meta's first rows and contexts
template <class T> struct PagedInputs {
  const PagedCase& c;
  unsigned seqs, tokens = 0, maxBlocks = 1, nblocks;
  long long tsr, ksh, kss, kbk;
  std::vector<long long> ids;
  long long badSeq = -1, badCol = -1, badId;
  std::vector<unsigned> t32;
  std::vector<long long> t64;
  std::vector<T> q, kp, vp;
  std::vector<unsigned> meta;  // first rows, contexts; the emulator appends its list
  double scale;
  unsigned long long err[4] = { 0, 0, 0, 0 };
  static constexpr unsigned tag = 0x5a5a3;

  PagedInputs(const PagedCase& cs, uint64_t seed, bool bad) : c(cs), seqs((unsigned)cs.qlens.size()) {
    Rng rng{ seed };
    unsigned need = 0;
    for (unsigned s = 0; s < seqs; s++) {
      tokens += c.qlens[s];
      maxBlocks = std::max(maxBlocks, (c.ctxs[s] + c.bs - 1) / c.bs);
      need += (c.ctxs[s] + c.bs - 1) / c.bs;
    }
    nblocks = need + 2;
    std::vector<unsigned> perm(nblocks);
    for (unsigned i = 0; i < nblocks; i++) perm[i] = i;
    for (unsigned i = nblocks - 1; i > 0; i--) std::swap(perm[i], perm[rng.next() % (i + 1)]);
    tsr = maxBlocks + 2;
    ids.resize((size_t)seqs * maxBlocks);
    unsigned at = 0;
    for (unsigned s = 0; s < seqs; s++)
      for (unsigned b = 0; b < maxBlocks; b++) ids[(size_t)s * maxBlocks + b] = b < (c.ctxs[s] + c.bs - 1) / c.bs ? perm[at++] : 900000 + b;
    badId = nblocks + 3;
    if (bad) {
      badSeq = seqs - 1;
      badCol = (c.ctxs[badSeq] - 1) / c.bs / 2;
      ids[(size_t)badSeq * maxBlocks + badCol] = badId;
    }
    paged_tables(ids, seqs, maxBlocks, tsr, t32, t64);
    ksh = c.d + c.headPad, kss = ksh * c.hkv, kbk = kss * c.bs;
    q.resize((size_t)tokens * c.hq * c.d), kp.resize((size_t)nblocks * kbk), vp.resize((size_t)nblocks * kbk);
    for (auto& x : q) x = Io<T>::put(rng.uni(-2, 2));
    for (auto& x : kp) x = Io<T>::put(rng.uni(-2, 2));
    for (auto& x : vp) x = Io<T>::put(rng.uni(-1, 1));
    meta.assign(2 * seqs + 1, 0);
    for (unsigned s = 0; s < seqs; s++) meta[s + 1] = meta[s] + c.qlens[s];
    for (unsigned s = 0; s < seqs; s++) meta[seqs + 1 + s] = c.ctxs[s];
    scale = 1.0 / std::sqrt((double)c.d);
  }

  const void* table() const { return c.i64Table ? (const void*)t64.data() : (const void*)t32.data(); }

  // the reference row of query i of sequence s (token t) at head h into out; true where it is NaN
  // (a bad block id or a NaN score in its keys)
  bool want(unsigned s, unsigned i, unsigned t, unsigned h, std::vector<double>& out) const {
    const unsigned kh = h / (c.hq / c.hkv);
    const long long pos = (long long)c.ctxs[s] - c.qlens[s] + i;
    bool nan = false;
    std::vector<double> w;
    std::vector<long long> rows;
    double m = -INFINITY;
    for (long long j = 0; j <= pos && !nan; j++) {
      if (c.window > 0 && j <= pos - c.window) continue;
      const long long id = ids[(size_t)s * maxBlocks + j / c.bs];
      if (id < 0 || id >= (long long)nblocks) { nan = true; break; }
      const long long row = id * kbk + (j % c.bs) * kss + kh * ksh;
      double sc = 0;
      for (unsigned e = 0; e < c.d; e++) sc += Io<T>::get(q[((size_t)t * c.hq + h) * c.d + e]) * Io<T>::get(kp[row + e]);
      sc *= scale;
      if (std::isnan(sc)) { nan = true; break; }
      w.push_back(sc);
      rows.push_back(row);
      m = std::max(m, sc);
    }
    double sum = 0;
    for (auto& x : w) sum += (x = std::exp(x - m));
    out.assign(c.d, 0.0);
    for (size_t n = 0; n < w.size(); n++)
      for (unsigned e = 0; e < c.d; e++) out[e] += w[n] / sum * Io<T>::get(vp[rows[n] + e]);
    return nan;
  }

  // checks o's row of token t, head h against the reference; prints the first mismatch of a case
  void check(const std::vector<T>& o, unsigned s, unsigned i, unsigned t, unsigned h, const char* kernel, bool& ok) const {
    std::vector<double> out;
    const bool nan = want(s, i, t, h, out);
    for (unsigned e = 0; e < c.d; e++) {
      const double got = Io<T>::get(o[((size_t)t * c.hq + h) * c.d + e]);
      const bool good = nan ? std::isnan(got) : (got == got && std::fabs(got - out[e]) <= Io<T>::eps * (1 + std::fabs(out[e])));
      if (!good) {
        if (ok) std::printf("FAIL %s %s %s %s: token %u head %u col %u: %.6g, want %s%.6g\n", ARCH, kernel, Io<T>::name, c.name, t, h, e, got, nan ? "NaN, not " : "", out[e]);
        ok = false;
      }
    }
  }

  // checks err: the bad block id's record (tag, count 1, id, position, nblocks) where there is
  // one, nothing recorded otherwise
  void checkErr(const char* kernel, bool& ok) const {
    const unsigned* head = (const unsigned*)err;
    if (badSeq >= 0) {
      const unsigned long long pos = (unsigned long long)badSeq * maxBlocks + badCol;
      if (head[0] != tag || head[1] != 1 || err[1] != (unsigned long long)badId || err[2] != pos || err[3] != nblocks) {
        std::printf("FAIL %s %s %s %s: error record %x %u %llu %llu %llu\n", ARCH, kernel, Io<T>::name, c.name, head[0], head[1], err[1], err[2], err[3]);
        ok = false;
      }
    } else if (head[0] != 0) {
      std::printf("FAIL %s %s %s %s: an error was recorded with good ids\n", ARCH, kernel, Io<T>::name, c.name);
      ok = false;
    }
  }
};
