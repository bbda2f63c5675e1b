// mma-emu.cpp: runs the fragment and lane index arithmetic of flash.hip (hip-src/mma-layout.h,
// compiled for the host) against models of the matrix instructions written from the vendors'
// layout descriptions (isa-models.h), because no AMD GPU is at hand to run the AMD paths. Per
// family it checks that
//   (a) products land where acc_row says (operands built by the kernel's a_k/b_k, read as the
//       kernel reads them: 32 bits at a time from an LDS row);
//   (b) the row-reduction xor masks join exactly the lanes of one query, which together hold
//       each key of a tile once;
//   (c) the P^T exchange (p_lane/p_acc, EXCHANGE) gives the B operand the second product needs;
//   (d) one wave-level flash step (16 queries, 2 key blocks of 16 or 32 keys, head dim 32: S^T
//       through the model, masking, online softmax through the xor masks, the P exchange, O^T
//       through the model) matches a double-precision reference;
// and that a wrong accumulator layout fails (a), so the checks can fail at all. NVIDIA's
// m16n8k16 layout gets (a)-(c). Prints one line per check; exits 1 on any mismatch.
//   g++ -std=c++17 -O1 test/emu/mma-emu.cpp -o mma-emu && ./mma-emu
#include "../../hip-src/mma-layout.h"
#include "isa-models.h"
#include <cmath>
#include <cstdio>
#include <set>
#include <vector>

static int failures = 0;
static double worst_step[2];  // the largest flash-step error of a family, per input type
static bool quiet = false;  // the negative controls expect failures: keep them off the report
static bool report(bool ok, const std::string& what) {
  if (!ok && !quiet) { std::printf("FAIL %s\n", what.c_str()); failures++; }
  return ok;
}

struct Rng {
  uint64_t s;
  uint32_t next() { s ^= s << 13; s ^= s >> 7; s ^= s << 17; return (uint32_t)(s >> 16); }
  float uni() { return (float)(next() % 20001) / 10000.f - 1.f; }  // [-1, 1]
};
static const char* dt_name(Dt dt) { return dt == DT_F16 ? "f16" : "bf16"; }
static uint16_t rnd16(Rng& r, Dt dt) { return f_to_h16(r.uni(), dt); }

// the instruction each family issues (ML_FMA has none: see fma_* below)
template <int F> struct Fam;
template <> struct Fam<ML_MFMA> { static constexpr const char* name = "mfma"; static std::string mma(WaveAcc& d, const WaveRegs& a, const WaveRegs& b, const WaveAcc& c, Dt dt) { return model_mfma16(d, a, b, c, dt); } };
template <> struct Fam<ML_WMMA11> { static constexpr const char* name = "wmma11"; static std::string mma(WaveAcc& d, const WaveRegs& a, const WaveRegs& b, const WaveAcc& c, Dt dt) { return model_wmma11(d, a, b, c, dt); } };
template <> struct Fam<ML_WMMA12> { static constexpr const char* name = "wmma12"; static std::string mma(WaveAcc& d, const WaveRegs& a, const WaveRegs& b, const WaveAcc& c, Dt dt) { return model_wmma12(d, a, b, c, dt); } };
template <> struct Fam<ML_FMA> { static constexpr const char* name = "fma"; };

// flash.hip's FlArchAmd::frag: OPS values of one LDS row, 32 bits (two values) at a time from
// element a_k (or b_k) of each even v
template <class Lay, bool IS_A> static void frag(uint32_t* w, const uint16_t* row, int lane) {
  for (int v = 0; v < Lay::OPS; v += 2) {
    const int k = IS_A ? Lay::a_k(lane, v) : Lay::b_k(lane, v);
    w[v / 2] = (uint32_t)row[k] | ((uint32_t)row[k + 1] << 16);
  }
}

// ---- (a) one product: A (16 x 16, rows in LDS), B^T (rows = columns of B), C in the layout -----
template <int F, class Lay> static bool check_product(Dt dt, Rng& rng, bool expect) {
  uint16_t a[16][16], bt[16][16];
  float c[16][16];
  for (int i = 0; i < 16; i++)
    for (int k = 0; k < 16; k++) { a[i][k] = rnd16(rng, dt); bt[i][k] = rnd16(rng, dt); c[i][k] = rng.uni(); }
  WaveRegs ra{}, rb{};
  WaveAcc cin{}, d{};
  int seen[16][16] = {};
  for (int l = 0; l < Lay::WAVE; l++) {
    frag<Lay, true>(ra.w[l], a[l % 16], l);
    frag<Lay, false>(rb.w[l], bt[l % 16], l);
    for (int e = 0; e < Lay::ACC; e++) { cin.f[l][e] = c[Lay::acc_row(l, e)][l % 16]; seen[Lay::acc_row(l, e)][l % 16]++; }
  }
  bool ok = true;
  for (int i = 0; i < 16; i++)
    for (int j = 0; j < 16; j++) ok = ok && seen[i][j] == 1;
  const std::string err = Fam<F>::mma(d, ra, rb, cin, dt);
  if (!err.empty()) return report(!expect, std::string(Fam<F>::name) + " (a): " + err), false;
  double worst = 0;
  for (int l = 0; l < Lay::WAVE; l++)
    for (int e = 0; e < Lay::ACC; e++) {
      const int i = Lay::acc_row(l, e), j = l % 16;
      double ref = c[i][j];
      for (int k = 0; k < 16; k++) ref += (double)h16_to_f(a[i][k], dt) * h16_to_f(bt[j][k], dt);
      worst = std::fmax(worst, std::fabs(d.f[l][e] - ref) / (1 + std::fabs(ref)));
    }
  ok = ok && worst < 1e-5;
  if (expect) report(ok, std::string(Fam<F>::name) + " (a) " + dt_name(dt) + ": product misplaced (rel err " + std::to_string(worst) + ")");
  return ok;
}

// ---- (b) the xor masks of the row reductions ----------------------------------------------------
template <class Lay> static bool check_masks(const char* name) {
  bool ok = true;
  for (int l = 0; l < Lay::WAVE; l++) {
    std::set<int> group{ l, l ^ Lay::XOR0 }, same;
    if (Lay::XOR1) { group.insert(l ^ Lay::XOR1); group.insert(l ^ Lay::XOR0 ^ Lay::XOR1); }
    for (int m = 0; m < Lay::WAVE; m++)
      if (m % 16 == l % 16) same.insert(m);
    ok = ok && group == same;
    // the group holds each key (row of S^T) of a tile for this query exactly once
    int keys[16] = {};
    for (int m : group)
      for (int e = 0; e < Lay::ACC; e++) keys[Lay::acc_row(m, e)]++;
    for (int k = 0; k < 16; k++) ok = ok && keys[k] == 1;
  }
  return report(ok, std::string(name) + " (b): xor masks do not join exactly one query's lanes");
}

// ---- (c) P^T as the B operand, by the kernel's exchange -----------------------------------------
// S^T accumulator element e of lane l holds (key acc_row(l, e), query l % 16); encode that pair
// as the value and replay the exchange of FlArchAmd::pv: B element v must be (b_k(l, v), l % 16).
template <class Lay> static bool check_exchange(const char* name) {
  bool ok = true;
  auto code = [](int key, int query) { return (float)(key * 16 + query); };
  for (int l = 0; l < Lay::WAVE; l++)
    for (int v = 0; v < Lay::OPS; v++) {
      const int pl = Lay::p_lane(l, v);
      ok = ok && (pl == l || (Lay::EXCHANGE && pl == (l ^ 16)));
      const float mine = code(Lay::acc_row(l, Lay::p_acc(l, v)), l % 16);
      const int partner = l ^ 16;
      const float there = Lay::EXCHANGE ? code(Lay::acc_row(partner, Lay::p_acc(partner, v)), partner % 16) : mine;
      ok = ok && (pl == l ? mine : there) == code(Lay::b_k(l, v), l % 16);
    }
  return report(ok, std::string(name) + " (c): the P exchange does not give P^T's B operand");
}

// ---- (d) one wave-level flash step --------------------------------------------------------------
// two key blocks of BN = 16 KT keys (KT 16-key tiles a block: 1 as on wave32, 2 to exercise the
// tile offsets that wave64's 64-key blocks use), head dim 32
constexpr int HD = 32, LD = HD + 8, TKMAX = 64;
constexpr float SCALE = 0.35f, LOG2E = 1.4426950408889634f;
// visibility: a diagonal (key <= query + 9), plus rows that test the online softmax's edges:
// query 3 sees nothing in the first block, query 5 nothing at all, query 7 nothing in the second
static bool visible(int i, int j, int bn) {
  if (i == 5) return false;
  if (i == 3 && j < bn) return false;
  if (i == 7 && j >= bn) return false;
  return j <= i + 9 || (i * 7 + j * 3) % 5 == 0;
}

struct Step {
  int bn, tk, vld;
  std::vector<uint16_t> q, k, vt;  // Q [16][LD], K [tk][LD] (row per key), V^T [HD][vld]
  double ref[16][HD];
};
static Step make_step(Dt dt, Rng& rng, int bn) {
  Step t;
  t.bn = bn; t.tk = 2 * bn; t.vld = t.tk + 8;
  const int TK = t.tk, VLD = t.vld;
  t.q.assign(16 * LD, 0); t.k.assign(TK * LD, 0); t.vt.assign(HD * VLD, 0);
  for (int i = 0; i < 16; i++) for (int c = 0; c < HD; c++) t.q[i * LD + c] = rnd16(rng, dt);
  for (int j = 0; j < TK; j++) for (int c = 0; c < HD; c++) t.k[j * LD + c] = rnd16(rng, dt);
  for (int c = 0; c < HD; c++) for (int j = 0; j < TK; j++) t.vt[c * VLD + j] = rnd16(rng, dt);
  for (int i = 0; i < 16; i++) {
    double s[TKMAX], mx = -INFINITY, sum = 0;
    for (int j = 0; j < TK; j++) {
      double x = 0;
      for (int c = 0; c < HD; c++) x += (double)h16_to_f(t.q[i * LD + c], dt) * h16_to_f(t.k[j * LD + c], dt);
      s[j] = visible(i, j, bn) ? x * SCALE : -INFINITY;
      mx = std::fmax(mx, s[j]);
    }
    for (int c = 0; c < HD; c++) t.ref[i][c] = 0;
    if (mx == -INFINITY) continue;  // a row that sees no key gets zeros
    for (int j = 0; j < TK; j++) { s[j] = std::exp(s[j] - mx); sum += s[j]; }
    for (int c = 0; c < HD; c++) {
      double o = 0;
      for (int j = 0; j < TK; j++) o += s[j] * h16_to_f(t.vt[c * VLD + j], dt);
      t.ref[i][c] = o / sum;
    }
  }
  return t;
}

// the wave's registers between the kernel's steps: scores (KT 16-key tiles), output (HD / 16
// column tiles), running max and sum; a lane owns query lane % 16
template <class Lay, int KT> struct WaveState {
  static constexpr int SN = KT * Lay::ACC, ON = HD / 16 * Lay::ACC;
  float s[64][SN], o[64][ON], m[64], l[64];
};

// S^T = K Q^T for key block j0 (FlArchAmd::qk)
template <int F, class Lay, int KT> static std::string qk(WaveState<Lay, KT>& w, const Step& t, int j0, Dt dt) {
  for (int l = 0; l < Lay::WAVE; l++) for (int e = 0; e < KT * Lay::ACC; e++) w.s[l][e] = 0;
  for (int kk = 0; kk < HD / 16; kk++)
    for (int kt = 0; kt < KT; kt++) {
      WaveRegs ra{}, rb{};
      WaveAcc c{}, d{};
      for (int l = 0; l < Lay::WAVE; l++) {
        frag<Lay, true>(ra.w[l], &t.k[(j0 + kt * 16 + l % 16) * LD + kk * 16], l);
        frag<Lay, false>(rb.w[l], &t.q[(l % 16) * LD + kk * 16], l);
        for (int e = 0; e < Lay::ACC; e++) c.f[l][e] = w.s[l][kt * Lay::ACC + e];
      }
      const std::string err = Fam<F>::mma(d, ra, rb, c, dt);
      if (!err.empty()) return err;
      for (int l = 0; l < Lay::WAVE; l++) for (int e = 0; e < Lay::ACC; e++) w.s[l][kt * Lay::ACC + e] = d.f[l][e];
    }
  return "";
}

// O^T += V^T P^T (FlArchAmd::pv): P^T's B operand by the exchange, rounded to the input type
template <int F, class Lay, int KT> static std::string pv(WaveState<Lay, KT>& w, const Step& t, int j0, Dt dt) {
  for (int kt = 0; kt < KT; kt++) {
    WaveRegs rb{};
    for (int l = 0; l < Lay::WAVE; l++)
      for (int v = 0; v < Lay::OPS; v += 2) {
        uint16_t x[2];
        for (int u = 0; u < 2; u++) {
          const float mine = w.s[l][kt * Lay::ACC + Lay::p_acc(l, v + u)];
          const float there = Lay::EXCHANGE ? w.s[l ^ 16][kt * Lay::ACC + Lay::p_acc(l ^ 16, v + u)] : mine;  // shfl_xor(mine, 16)
          x[u] = f_to_h16(Lay::p_lane(l, v + u) == l ? mine : there, dt);
        }
        rb.w[l][v / 2] = (uint32_t)x[0] | ((uint32_t)x[1] << 16);
      }
    for (int dt16 = 0; dt16 < HD / 16; dt16++) {
      WaveRegs ra{};
      WaveAcc c{}, d{};
      for (int l = 0; l < Lay::WAVE; l++) {
        frag<Lay, true>(ra.w[l], &t.vt[(dt16 * 16 + l % 16) * t.vld + j0 + kt * 16], l);
        for (int e = 0; e < Lay::ACC; e++) c.f[l][e] = w.o[l][dt16 * Lay::ACC + e];
      }
      const std::string err = Fam<F>::mma(d, ra, rb, c, dt);
      if (!err.empty()) return err;
      for (int l = 0; l < Lay::WAVE; l++) for (int e = 0; e < Lay::ACC; e++) w.o[l][dt16 * Lay::ACC + e] = d.f[l][e];
    }
  }
  return "";
}

// gfx1030's FMA layer, as flash.hip's FlArch<T, HD, ML_FMA> writes it: element e of a lane in half
// h = lane / 16 is key (or head-dim column) (e / 8) * 16 + 8 h + e % 8 of its tiles; P's 16 keys
// gathered from this lane and its partner. (Restated here: that code is not in mma-layout.h.)
template <class Lay, int KT> static std::string fma_qk(WaveState<Lay, KT>& w, const Step& t, int j0, Dt dt) {
  for (int l = 0; l < 32; l++)
    for (int e = 0; e < KT * 8; e++) {
      const int key = (e / 8) * 16 + 8 * (l / 16) + e % 8;
      float s = 0;
      for (int c = 0; c < HD; c++) s += h16_to_f(t.q[(l % 16) * LD + c], dt) * h16_to_f(t.k[(j0 + key) * LD + c], dt);
      w.s[l][e] = s;
    }
  return "";
}
template <class Lay, int KT> static std::string fma_pv(WaveState<Lay, KT>& w, const Step& t, int j0, Dt dt) {
  for (int kt = 0; kt < KT; kt++)
    for (int l = 0; l < 32; l++) {
      const int h = l / 16;
      float p[16];
      for (int e = 0; e < 8; e++) {
        const float mine = w.s[l][kt * 8 + e], other = w.s[l ^ 16][kt * 8 + e];
        p[e] = h ? other : mine;
        p[8 + e] = h ? mine : other;
      }
      for (int e = 0; e < WaveState<Lay, KT>::ON; e++) {
        const int col = (e / 8) * 16 + 8 * h + e % 8;
        float acc = 0;
        for (int u = 0; u < 16; u++) acc += p[u] * h16_to_f(t.vt[col * t.vld + j0 + kt * 16 + u], dt);
        w.o[l][e] += acc;
      }
    }
  return "";
}

// the step of flash_fwd between two key blocks, wave-wide: masking, the online softmax with its
// shuffles (shfl_xor(x, m) reads lane ^ m), then P V; compares the output with the reference
template <int F, class Lay, int KT> static bool check_step(Dt dt, Rng& rng) {
  const Step t = make_step(dt, rng, 16 * KT);
  WaveState<Lay, KT> w{};
  constexpr int N = Lay::WAVE, SN = WaveState<Lay, KT>::SN, ON = WaveState<Lay, KT>::ON;
  for (int l = 0; l < N; l++) { w.m[l] = -INFINITY; w.l[l] = 0; }
  const float sl2 = SCALE * LOG2E;
  std::string err;
  for (int j0 = 0; j0 < t.tk && err.empty(); j0 += t.bn) {
    if constexpr (F == ML_FMA) err = fma_qk(w, t, j0, dt);
    else err = qk<F>(w, t, j0, dt);
    // FlArchAmd::row / col: the query is lane % 16, element e is key (e / ACC) * 16 + acc_row
    float mx[64], mx2[64];
    for (int l = 0; l < N; l++) {
      mx[l] = -INFINITY;
      for (int e = 0; e < SN; e++) {
        const int i = l % 16, j = j0 + (e / Lay::ACC) * 16 + Lay::acc_row(l, e % Lay::ACC);
        w.s[l][e] = visible(i, j, t.bn) ? w.s[l][e] * sl2 : -INFINITY;
        mx[l] = std::fmax(mx[l], w.s[l][e]);
      }
    }
    for (int l = 0; l < N; l++) mx2[l] = std::fmax(mx[l], mx[l ^ Lay::XOR0]);
    for (int l = 0; l < N; l++) mx[l] = Lay::XOR1 ? std::fmax(mx2[l], mx2[l ^ Lay::XOR1]) : mx2[l];
    for (int l = 0; l < N; l++) {
      const float mn = std::fmax(w.m[l], mx[l]);
      const float alpha = mn == -INFINITY ? 1.f : std::exp2(w.m[l] - mn), mu = mn == -INFINITY ? 0.f : mn;
      w.m[l] = mn;
      float ls = 0;
      for (int e = 0; e < SN; e++) { w.s[l][e] = std::exp2(w.s[l][e] - mu); ls += w.s[l][e]; }
      w.l[l] = w.l[l] * alpha + ls;
      for (int e = 0; e < ON; e++) w.o[l][e] *= alpha;
    }
    if (!err.empty()) break;
    if constexpr (F == ML_FMA) err = fma_pv(w, t, j0, dt);
    else err = pv<F>(w, t, j0, dt);
  }
  if (!err.empty()) return report(false, std::string(Fam<F>::name) + " (d): " + err);
  float l2[64];
  for (int l = 0; l < N; l++) l2[l] = w.l[l] + w.l[l ^ Lay::XOR0];
  for (int l = 0; l < N; l++) w.l[l] = Lay::XOR1 ? l2[l] + l2[l ^ Lay::XOR1] : l2[l];
  // every (query, column) stored exactly once, within the rounding of P to the input type
  int seen[16][HD] = {};
  double worst = 0;
  bool zero_row = true;
  for (int l = 0; l < N; l++)
    for (int e = 0; e < ON; e++) {
      const int i = l % 16, c = (e / Lay::ACC) * 16 + Lay::acc_row(l, e % Lay::ACC);
      const float out = w.l[l] == 0.f ? 0.f : w.o[l][e] / w.l[l];
      seen[i][c]++;
      worst = std::fmax(worst, std::fabs(out - t.ref[i][c]));
      if (i == 5) zero_row = zero_row && out == 0.f;
    }
  bool once = true;
  for (int i = 0; i < 16; i++) for (int c = 0; c < HD; c++) once = once && seen[i][c] == 1;
  const double tol = dt == DT_F16 ? 1e-3 : 1e-2;  // P is rounded to the input type (not on gfx1030)
  worst_step[dt] = std::fmax(worst_step[dt], worst);
  return report(once && zero_row && worst <= tol, std::string(Fam<F>::name) + " (d) " + dt_name(dt) + " " + std::to_string(KT) + " tile(s) a block: flash step differs from the reference (max abs err " + std::to_string(worst) + ")");
}

// ---- the AMD families ---------------------------------------------------------------------------
// a plausible wrong accumulator layout per family, which (a) must reject
struct BadMfma : MlLayout<ML_MFMA> { static int acc_row(int lane, int e) { return 4 * e + lane / 16; } };
struct BadWmma11 : MlLayout<ML_WMMA11> { static int acc_row(int lane, int e) { return 8 * (lane / 16) + e; } };
struct BadWmma12 : MlLayout<ML_WMMA12> { static int acc_row(int lane, int e) { return 2 * e + lane / 16; } };

template <int F, class Bad> static void amd_family(const char* what) {
  typedef MlLayout<F> Lay;
  Rng rng{ 0x9e3779b97f4a7c15ull ^ (uint64_t)F };
  const int failed0 = failures;
  int trials = 0;
  worst_step[0] = worst_step[1] = 0;
  for (Dt dt : { DT_F16, DT_BF16 })
    for (int r = 0; r < 25; r++, trials++) {
      if constexpr (F != ML_FMA) check_product<F, Lay>(dt, rng, true);
      check_step<F, Lay, 1>(dt, rng);
      check_step<F, Lay, 2>(dt, rng);
    }
  check_masks<Lay>(Fam<F>::name);
  if constexpr (F != ML_FMA) check_exchange<Lay>(Fam<F>::name);
  bool caught = true;
  if constexpr (F != ML_FMA) {
    quiet = true;
    caught = !check_product<F, Bad>(DT_F16, rng, false);
    quiet = false;
    report(caught, std::string(Fam<F>::name) + ": a wrong accumulator layout went unnoticed");
  }
  std::printf("%-4s %-7s %s\n     %s(d) %d flash steps (1 and 2 tiles a key block), max |err| f16 %.1e bf16 %.1e; (b) xor masks%s\n",
      failures == failed0 ? "ok" : "FAIL", Fam<F>::name, what,
      F != ML_FMA ? ("(a) " + std::to_string(trials) + " products; ").c_str() : "", 2 * trials, worst_step[0], worst_step[1],
      F != ML_FMA ? "; (c) P exchange; a wrong accumulator layout rejected" : "");
}

// ---- NVIDIA m16n8k16 ----------------------------------------------------------------------------
typedef MlLayout<ML_NV> NV;
// registers of a 16 x 16 A (row-major), and of an n8 B given as B^T rows (n, k), in NV's layout
static void nv_a(WaveRegs& ra, const uint16_t (&a)[16][16]) {
  for (int l = 0; l < 32; l++)
    for (int v = 0; v < 8; v += 2)
      ra.w[l][v / 2] = a[NV::a_row(l, v)][NV::a_k(l, v)] | ((uint32_t)a[NV::a_row(l, v + 1)][NV::a_k(l, v + 1)] << 16);
}
static void nv_b(WaveRegs& rb, const uint16_t (&bt)[16][16]) {
  for (int l = 0; l < 32; l++)
    for (int v = 0; v < 4; v += 2)
      rb.w[l][v / 2] = bt[NV::b_n(l, v)][NV::b_k(l, v)] | ((uint32_t)bt[NV::b_n(l, v + 1)][NV::b_k(l, v + 1)] << 16);
}
static void nv_family() {
  Rng rng{ 12345 };
  const int failed0 = failures;
  int trials = 0;
  for (Dt dt : { DT_F16, DT_BF16 })
    for (int r = 0; r < 25; r++, trials++) {
      // (a) and (c) at once: S = X Y^T as two n8 tiles, then P (S rounded) as A of P V
      uint16_t x[16][16], y[16][16], vt[16][16] = {};
      for (int i = 0; i < 16; i++) for (int k = 0; k < 16; k++) { x[i][k] = rnd16(rng, dt); y[i][k] = rnd16(rng, dt); }
      for (int n = 0; n < 8; n++) for (int k = 0; k < 16; k++) vt[n][k] = rnd16(rng, dt);
      WaveAcc s[2] = {}, zero{};
      double sref[16][16];
      bool ok = true;
      for (int tile = 0; tile < 2; tile++) {
        uint16_t yt[16][16] = {};
        for (int n = 0; n < 8; n++) for (int k = 0; k < 16; k++) yt[n][k] = y[tile * 8 + n][k];
        WaveRegs ra{}, rb{};
        nv_a(ra, x);
        nv_b(rb, yt);
        const std::string err = model_mma_m16n8k16(s[tile], ra, rb, zero, dt);
        ok = ok && report(err.empty(), "nv (a): " + err);
        for (int l = 0; l < 32; l++)
          for (int e = 0; e < 4; e++) {
            const int i = NV::acc_row(l, e), j = tile * 8 + NV::acc_col(l, e);
            double ref = 0;
            for (int k = 0; k < 16; k++) ref += (double)h16_to_f(x[i][k], dt) * h16_to_f(y[j][k], dt);
            sref[i][j] = ref;
            ok = ok && std::fabs(s[tile].f[l][e] - ref) <= 1e-5 * (1 + std::fabs(ref));
          }
      }
      report(ok, std::string("nv (a) ") + dt_name(dt) + ": product misplaced");
      bool okc0 = true;
      // (c): A element v of P is accumulator p_acc(v) of n8 tile p_tile(v), with no exchange
      WaveRegs pa{}, vb{};
      for (int l = 0; l < 32; l++)
        for (int v = 0; v < 8; v++) {
          const uint16_t h = f_to_h16(s[NV::p_tile(v)].f[l][NV::p_acc(v)], dt);
          pa.w[l][v / 2] |= (uint32_t)h << (16 * (v & 1));
          okc0 = okc0 && NV::a_row(l, v) == NV::acc_row(l, NV::p_acc(v)) && NV::a_k(l, v) == 8 * NV::p_tile(v) + NV::acc_col(l, NV::p_acc(v));
        }
      nv_b(vb, vt);
      WaveAcc o{};
      const std::string err = model_mma_m16n8k16(o, pa, vb, zero, dt);
      bool okc = okc0 && report(err.empty(), "nv (c): " + err);
      for (int l = 0; l < 32; l++)
        for (int e = 0; e < 4; e++) {
          const int i = NV::acc_row(l, e), n = NV::acc_col(l, e);
          double ref = 0;
          for (int k = 0; k < 16; k++) ref += (double)h16_to_f(f_to_h16((float)sref[i][k], dt), dt) * h16_to_f(vt[n][k], dt);
          okc = okc && std::fabs(o.f[l][e] - ref) <= 1e-5 * (1 + std::fabs(ref));
        }
      report(okc, std::string("nv (c) ") + dt_name(dt) + ": P from the accumulators is not the A operand of P V");
    }
  // (b): lanes sharing rows (lane / 4) are joined by xor 1 and 2; slot e >> 1 is row g or g + 8
  bool okb = true;
  for (int l = 0; l < 32; l++) {
    const std::set<int> group{ l, l ^ NV::XOR0, l ^ NV::XOR1, l ^ NV::XOR0 ^ NV::XOR1 };
    std::set<int> same;
    for (int m = 0; m < 32; m++) if (m / 4 == l / 4) same.insert(m);
    okb = okb && group == same;
    for (int e = 0; e < 4; e++) okb = okb && NV::acc_row(l, e) == l / 4 + 8 * NV::acc_slot(e);
  }
  report(okb, "nv (b): xor masks or row slots do not match the accumulator rows");
  std::printf("%-4s %-7s %s\n     (a) %d products; (c) %d P V products from the accumulators; (b) xor masks and row slots\n",
      failures == failed0 ? "ok" : "FAIL", "nv", "mma.sync m16n8k16 f16/bf16 (sm_80+)", 2 * trials, trials);
}

int main() {
  amd_family<ML_MFMA, BadMfma>("v_mfma_f32_16x16x16 f16/bf16 (gfx90a gfx942 gfx950)");
  amd_family<ML_WMMA11, BadWmma11>("v_wmma_f32_16x16x16 f16/bf16 (gfx1100 gfx1101 gfx1102)");
  amd_family<ML_WMMA12, BadWmma12>("v_wmma_f32_16x16x16 f16/bf16 _gfx12 (gfx1200 gfx1201)");
  amd_family<ML_FMA, BadWmma12>("the gfx12 layout with FMAs (gfx1030)");
  nv_family();
  std::printf("%s: %d mismatch%s (models written from the vendors' layout descriptions; nothing here ran on a GPU)\n",
      failures ? "FAIL" : "ok", failures, failures == 1 ? "" : "es");
  return failures ? 1 : 0;
}
