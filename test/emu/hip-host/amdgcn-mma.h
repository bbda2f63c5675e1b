// amdgcn-mma.h: the AMD matrix-instruction builtins flash.hip calls, run on the host emulator
// (hip/hip_runtime.h) as wave-level operations. Every lane of the wave must call the builtin (as
// the hardware needs EXEC full); each publishes its A, B and C registers, and each computes its
// own D registers from everyone's. Which matrix entry a (lane, element) holds comes only from
// mma-tables.h, generated from AMD's Matrix Instruction Calculator, never from hip-src/mma-layout.h.
//
// The arch comes from the macro the AMD compiler defines (-D__gfx942__ and so on on the host):
//   gfx90a          CDNA2 tables; f16/bf16 inputs and the f32 results flush subnormals to zero
//   gfx942, gfx950  CDNA3 tables (the calculator stops at CDNA3; gfx950's 16x16x16 f16/bf16 is
//                   taken to keep that layout)
//   gfx1100-1102    RDNA3 tables, wave32. A and B are held twice (lanes 0-15 and 16-31): two copies
//                   that differ abort, since no document says which one the hardware reads
//   gfx1200, 1201   RDNA4 tables, wave32
// The sum: products of the 16-bit inputs and C added exactly (in double), rounded once to f32.
// The hardware's own order and rounding of the sum are not modelled.
#pragma once
#include <hip/hip_runtime.h>
#include "../mma-tables.h"

namespace emu {

// where each A (i, k) and B (k, j) entry is held: every (lane, element) that holds it
struct MmaIndex {
  std::vector<std::pair<int, int>> a[16][16], b[16][16];
  explicit MmaIndex(const mma_tables::Table& t) {
    for (int l = 0; l < t.wave; l++)
      for (int e = 0; e < t.ab_elems; e++) {
        a[t.a[l][e][0]][t.a[l][e][1]].push_back({l, e});
        b[t.b[l][e][0]][t.b[l][e][1]].push_back({l, e});
      }
    for (int i = 0; i < 16; i++)
      for (int k = 0; k < 16; k++)
        if (a[i][k].empty() || b[k][i].empty()) {
          std::fprintf(stderr, "emu: %s: table misses A[%d][%d] or B[%d][%d]\n", t.name, i, k, k, i);
          std::abort();
        }
  }
};

struct MmaLane {
  uint16_t a[16], b[16];
  float c[8];
};

inline float mma_in(uint16_t v, bool bf, bool flush) {
  float x;
  if (bf) {
    const uint32_t u = (uint32_t)v << 16;
    std::memcpy(&x, &u, 4);
  } else {
    _Float16 h;
    std::memcpy(&h, &v, 2);
    x = (float)h;
  }
  // subnormal in its own format: below 2^-14 (f16) or 2^-126 (bf16)
  if (flush && std::fabs(x) < (bf ? 1.17549435e-38f : 6.103515625e-05f)) x = std::copysign(0.f, x);
  return x;
}

// the value entry (i, k) of operand `m` (0 A, 1 B) holds, checking that its copies agree
inline uint16_t mma_entry(const mma_tables::Table& t, const std::vector<std::pair<int, int>>& at, const unsigned char* lanes, int m, int i, int k) {
  const auto& [l0, e0] = at[0];
  const uint16_t v = (m ? ((const MmaLane*)(lanes + l0 * WIDE))->b : ((const MmaLane*)(lanes + l0 * WIDE))->a)[e0];
  for (size_t x = 1; x < at.size(); x++) {
    const auto& [l, e] = at[x];
    const MmaLane* p = (const MmaLane*)(lanes + l * WIDE);
    const uint16_t w = (m ? p->b : p->a)[e];
    if (w != v) {
      std::fprintf(stderr, "emu: %s: the copies of %c[%d][%d] differ (lane %d element %d: 0x%04x, lane %d element %d: 0x%04x)\n", t.name,
          m ? 'B' : 'A', i, k, l0, e0, v, l, e, w);
      std::abort();
    }
  }
  return v;
}

// D = A B + C of a 16 x 16 x 16 instruction, this lane's registers of D
template <class VA, class VB, class VC>
[[gnu::noinline]] VC mma(const mma_tables::Table& t, bool bf, bool flush, const VA& a, const VB& b, const VC& c) {
  static_assert(sizeof(VA) <= sizeof(MmaLane::a) && sizeof(VB) <= sizeof(MmaLane::b) && sizeof(VC) <= sizeof(MmaLane::c));
  if (st.wave != t.wave || (int)sizeof(VA) != 2 * t.ab_elems || (int)sizeof(VB) != 2 * t.ab_elems || (int)sizeof(VC) != 4 * t.d_elems) {
    std::fprintf(stderr, "emu: %s wants wave %d, %d-element A/B and %d-element C; called at wave %d with %zu, %zu and %zu bytes\n", t.name,
        t.wave, t.ab_elems, t.d_elems, st.wave, sizeof(VA), sizeof(VB), sizeof(VC));
    std::abort();
  }
  static const MmaIndex* index[2] = {nullptr, nullptr};
  const MmaIndex*& ix = index[bf];
  if (!ix) ix = new MmaIndex(t);
  MmaLane me{};
  std::memcpy(me.a, &a, sizeof(VA));
  std::memcpy(me.b, &b, sizeof(VB));
  std::memcpy(me.c, &c, sizeof(VC));
  const int lane = (int)emu::lane();
  return wave_op_wide(&me, sizeof me, [&](const unsigned char* lanes) {
    float d[8];
    for (int e = 0; e < t.d_elems; e++) {
      const int i = t.d[lane][e][0], j = t.d[lane][e][1];
      double acc = flush && std::fabs(me.c[e]) < 1.17549435e-38f ? 0.0 : (double)me.c[e];
      for (int k = 0; k < 16; k++) {
        const float x = mma_in(mma_entry(t, ix->a[i][k], lanes, 0, i, k), bf, flush);
        const float y = mma_in(mma_entry(t, ix->b[k][j], lanes, 1, k, j), bf, flush);
        acc += (double)x * (double)y;
      }
      float r = (float)acc;
      if (flush && std::fabs(r) < 1.17549435e-38f) r = std::copysign(0.f, r);
      d[e] = r;
    }
    VC out;
    std::memcpy(&out, d, sizeof(VC));
    return out;
  });
}

// the modifiers flash.hip never sets; anything else is not modelled
inline void mma_plain(int cbsz, int abid, int blgp) {
  if (cbsz || abid || blgp) {
    std::fprintf(stderr, "emu: MFMA broadcast modifiers (cbsz %d, abid %d, blgp %d) are not modelled\n", cbsz, abid, blgp);
    std::abort();
  }
}

}  // namespace emu

#if defined(__gfx90a__)
#define EMU_MFMA(T, BF, a, b, c, x, y, z) (emu::mma_plain(x, y, z), emu::mma(mma_tables::cdna2_##T, BF, true, a, b, c))
#else
#define EMU_MFMA(T, BF, a, b, c, x, y, z) (emu::mma_plain(x, y, z), emu::mma(mma_tables::cdna3_##T, BF, false, a, b, c))
#endif
#define __builtin_amdgcn_mfma_f32_16x16x16f16(a, b, c, x, y, z) EMU_MFMA(f16, false, a, b, c, x, y, z)
#define __builtin_amdgcn_mfma_f32_16x16x16bf16_1k(a, b, c, x, y, z) EMU_MFMA(bf16, true, a, b, c, x, y, z)
#define __builtin_amdgcn_wmma_f32_16x16x16_f16_w32(a, b, c) emu::mma(mma_tables::rdna3_f16, false, false, a, b, c)
#define __builtin_amdgcn_wmma_f32_16x16x16_bf16_w32(a, b, c) emu::mma(mma_tables::rdna3_bf16, true, false, a, b, c)
#define __builtin_amdgcn_wmma_f32_16x16x16_f16_w32_gfx12(a, b, c) emu::mma(mma_tables::rdna4_f16, false, false, a, b, c)
#define __builtin_amdgcn_wmma_f32_16x16x16_bf16_w32_gfx12(a, b, c) emu::mma(mma_tables::rdna4_bf16, true, false, a, b, c)
