// isa-models.h: what one matrix instruction does to a wave's registers, modelled from the vendors'
// descriptions of where each matrix element lives, and nothing else: these models never use
// hip-src/mma-layout.h, so mma-emu.cpp can hold the kernel's index arithmetic against them.
//
// Every model takes the operand registers of all lanes (32-bit words, two 16-bit values each,
// the lower-numbered element in bits 15:0), builds the matrices the instruction sees, checks that
// every element was given exactly once (or, on gfx11, identically by both half-waves), and
// writes D = A B + C back in the instruction's accumulator layout. Sums are taken in double and
// rounded to f32 once: the hardware's f32 accumulation order is not specified, and the checks
// compare against double references with tolerances far below a misplaced element's error.
//
// Sources checked (what each model rests on):
// - MFMA, CDNA2/CDNA3 (gfx90a, gfx942, gfx950): the layout convention of AMD's Matrix
//   Instruction Calculator, which encodes the CDNA ISA guides' tables (github.com/ROCm/
//   amd_matrix_instruction_calculator; its README's CDNA2 register-layout examples show the
//   convention: a 16-row A block keeps row M in lane M + 16 * (lane group), two 16-bit K values
//   a VGPR, low half first, and 16-wide D tiles keep column N in lane N + 16 * (lane group)).
//   For 16x16x16 the four lane groups take four K (A, B) or four rows (D) each: A lane l holds
//   row l%16, k 4(l/16)+i; B lane l column l%16, k 4(l/16)+i; D lane l VGPR i row 4(l/16)+i,
//   column l%16. The bf16 form (v_mfma_f32_16x16x16bf16_1k on gfx90a, _16x16x16_bf16 on
//   gfx942/gfx950) has the same layout.
// - WMMA, RDNA3 (gfx11): GPUOpen "How to accelerate AI applications on RDNA 3 using WMMA"
//   (which points to the RDNA3 ISA guide): wave32, A lane l holds row l%16 with all 16 k
//   (8 VGPRs), B lane l column l%16 with all 16 k, lanes 16-31 hold a copy of lanes 0-15; the
//   f32 D is 8 VGPRs, VGPR j of lane l = row 2j + l/16, column l%16 (even rows in lanes 0-15,
//   odd rows in 16-31). The same accumulator mapping is stated in Modular's RDNA attention docs
//   (docs.modular.com, get_rdna_fragment_layout: "row = v*2 + l//16, col = l%16").
// - WMMA, RDNA4 (gfx12): AMD's Matrix Instruction Calculator v1.3.2 (RDNA4,
//   v_wmma_f32_16x16x16_{f16,bf16}, wave32; no replication): A lane l holds row l%16, element i
//   k 4(l/16) + i%4 + 8(i/4) (lanes 0-15: k 0-3 and 8-11), B lane l column l%16, the same k; D
//   VGPR j of lane l = row 8(l/16)+j, column l%16. (The _gfx12 builtins' types agree: 8 halves
//   in, 8 floats out a lane.) An earlier version of this model had A/B k = 8(l/16)+i, from
//   secondary sources; the calculator is AMD's own encoding of the ISA guide's tables.
// - NVIDIA mma.sync.m16n8k16 (.f16/.bf16, f32 accumulate): PTX ISA, "Matrix Fragments for
//   mma.m16n8k16 with floating point type": groupID = lane / 4, t = lane % 4; a0,a1 row groupID,
//   a2,a3 row groupID+8, a4,a5 row groupID, a6,a7 row groupID+8, column 2t + (i & 1) (+8 for
//   a4..a7); b0,b1 k 2t + (i & 1), b2,b3 k 2t+8 + (i & 1), column groupID; c0,c1 row groupID,
//   c2,c3 row groupID+8, column 2t + (i & 1).
// The ISA PDFs themselves could not be opened from where this was written: the descriptions above
// were checked against the articles, tools and docs named (which agree with each other), not
// against the PDFs' tables. Nothing here ran on AMD hardware.
#pragma once
#include <cstdint>
#include <cstring>
#include <string>

enum Dt { DT_F16, DT_BF16 };

// ---- 16-bit storage, round to nearest even ------------------------------------------------------
inline float bits_f(uint32_t u) { float f; std::memcpy(&f, &u, 4); return f; }
inline uint32_t f_bits(float f) { uint32_t u; std::memcpy(&u, &f, 4); return u; }

inline float h16_to_f(uint16_t h, Dt dt) {
  if (dt == DT_BF16) return bits_f((uint32_t)h << 16);
  const uint32_t s = (uint32_t)(h >> 15) << 31, e = (h >> 10) & 31, m = h & 1023;
  if (e == 31) return bits_f(s | 0x7f800000u | (m << 13));
  if (e) return bits_f(s | ((e + 112) << 23) | (m << 13));
  return (s ? -1.f : 1.f) * (float)m * 5.9604644775390625e-8f;  // subnormal: m * 2^-24
}
inline uint16_t f_to_h16(float f, Dt dt) {
  const uint32_t u = f_bits(f);
  if (dt == DT_BF16) return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1)) >> 16);  // (no NaN here)
  const uint32_t s = (u >> 16) & 0x8000u;
  const float a = f < 0 ? -f : f;
  if (a >= 65520.f) return (uint16_t)(s | 0x7c00u);
  if (a < 6.103515625e-5f) {  // f16 subnormal: round a * 2^24 to an integer, ties to even
    const float q = a * 16777216.f;
    uint32_t n = (uint32_t)q;
    const float r = q - (float)n;
    if (r > 0.5f || (r == 0.5f && (n & 1))) n++;
    return (uint16_t)(s | n);
  }
  const uint32_t e = ((u >> 23) & 255) - 112, m = u & 0x7fffffu;
  uint32_t h = (e << 10) | (m >> 13);
  const uint32_t rest = m & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (h & 1))) h++;
  return (uint16_t)(s | h);
}

// registers of one wave: up to 64 lanes, up to 8 operand words or 8 accumulators a lane
struct WaveRegs { uint32_t w[64][8]; };
struct WaveAcc { float f[64][8]; };

inline uint16_t half_of(uint32_t word, int hi) { return (uint16_t)(hi ? word >> 16 : word & 0xffffu); }

// Gathers a 16x16 operand: set(lane, element) names the (row, col) the model says it holds.
// Returns an error text on an element given twice or never.
template <class Where>
std::string gather16(float (&m)[16][16], const WaveRegs& r, int lanes, int elems, Dt dt, Where where) {
  int seen[16][16] = {};
  for (int l = 0; l < lanes; l++)
    for (int v = 0; v < elems; v++) {
      int row, col;
      where(l, v, row, col);
      const float x = h16_to_f(half_of(r.w[l][v / 2], v & 1), dt);
      if (seen[row][col]) return "element (" + std::to_string(row) + "," + std::to_string(col) + ") given twice (again by lane " + std::to_string(l) + ")";
      m[row][col] = x;
      seen[row][col] = 1;
    }
  for (int i = 0; i < 16; i++)
    for (int j = 0; j < 16; j++)
      if (!seen[i][j]) return "element (" + std::to_string(i) + "," + std::to_string(j) + ") never given";
  return "";
}

// D = A B + C for a 16 x 16 x 16 product whose accumulator element e of lane l is (row, col) =
// acc(l, e); A (M x K) and B (K x N) gathered by the models below.
template <class Acc>
void product16(WaveAcc& d, const float (&a)[16][16], const float (&b)[16][16], const WaveAcc& c, int lanes, int accs, Acc acc) {
  for (int l = 0; l < lanes; l++)
    for (int e = 0; e < accs; e++) {
      int row, col;
      acc(l, e, row, col);
      double s = c.f[l][e];
      for (int k = 0; k < 16; k++) s += (double)a[row][k] * b[k][col];
      d.f[l][e] = (float)s;
    }
}

// v_mfma_f32_16x16x16_f16 / _bf16(_1k): wave64, 2 VGPRs of A and of B, 4 of C/D
inline std::string model_mfma16(WaveAcc& d, const WaveRegs& ra, const WaveRegs& rb, const WaveAcc& c, Dt dt) {
  float a[16][16], b[16][16];
  std::string err = gather16(a, ra, 64, 4, dt, [](int l, int v, int& row, int& col) { row = l % 16; col = 4 * (l / 16) + v; });
  if (err.empty()) err = gather16(b, rb, 64, 4, dt, [](int l, int v, int& row, int& col) { row = 4 * (l / 16) + v; col = l % 16; });
  if (!err.empty()) return "mfma: " + err;
  product16(d, a, b, c, 64, 4, [](int l, int i, int& row, int& col) { row = 4 * (l / 16) + i; col = l % 16; });
  return "";
}

// v_wmma_f32_16x16x16_{f16,bf16} on gfx11: wave32, 8 VGPRs of A and of B (all 16 k in each lane,
// the upper half-wave a copy of the lower), 8 VGPRs of C/D
inline std::string model_wmma11(WaveAcc& d, const WaveRegs& ra, const WaveRegs& rb, const WaveAcc& c, Dt dt) {
  for (int l = 16; l < 32; l++)
    for (int w = 0; w < 8; w++)
      if (ra.w[l][w] != ra.w[l - 16][w] || rb.w[l][w] != rb.w[l - 16][w])
        return "wmma gfx11: lane " + std::to_string(l) + " does not replicate lane " + std::to_string(l - 16);
  float a[16][16], b[16][16];
  std::string err = gather16(a, ra, 16, 16, dt, [](int l, int v, int& row, int& col) { row = l; col = v; });
  if (err.empty()) err = gather16(b, rb, 16, 16, dt, [](int l, int v, int& row, int& col) { row = v; col = l; });
  if (!err.empty()) return "wmma gfx11: " + err;
  product16(d, a, b, c, 32, 8, [](int l, int j, int& row, int& col) { row = 2 * j + l / 16; col = l % 16; });
  return "";
}

// v_wmma_f32_16x16x16_{f16,bf16} on gfx12: wave32, 4 VGPRs of A and of B, 8 of C/D
inline std::string model_wmma12(WaveAcc& d, const WaveRegs& ra, const WaveRegs& rb, const WaveAcc& c, Dt dt) {
  float a[16][16], b[16][16];
  std::string err = gather16(a, ra, 32, 8, dt, [](int l, int v, int& row, int& col) { row = l % 16; col = 4 * (l / 16) + v % 4 + 8 * (v / 4); });
  if (err.empty()) err = gather16(b, rb, 32, 8, dt, [](int l, int v, int& row, int& col) { row = 4 * (l / 16) + v % 4 + 8 * (v / 4); col = l % 16; });
  if (!err.empty()) return "wmma gfx12: " + err;
  product16(d, a, b, c, 32, 8, [](int l, int j, int& row, int& col) { row = 8 * (l / 16) + j; col = l % 16; });
  return "";
}

// mma.sync.aligned.m16n8k16.row.col.f32.{f16,bf16}: wave 32; A 4 words (a0..a7), B 2 words
// (b0..b3), C/D 4 floats
inline std::string model_mma_m16n8k16(WaveAcc& d, const WaveRegs& ra, const WaveRegs& rb, const WaveAcc& c, Dt dt) {
  float a[16][16], b[16][16];
  std::string err = gather16(a, ra, 32, 8, dt, [](int l, int i, int& row, int& col) {
    row = l / 4 + ((i >> 1) & 1) * 8;
    col = 2 * (l % 4) + (i & 1) + (i >= 4 ? 8 : 0);
  });
  if (!err.empty()) return "mma m16n8k16 A: " + err;
  // B is 16 x 8: gather it into the left half of a 16 x 16 and give the right half zeros
  WaveRegs rb2 = rb;
  for (int l = 0; l < 32; l++) rb2.w[l][2] = rb2.w[l][3] = 0;
  err = gather16(b, rb2, 32, 8, dt, [](int l, int i, int& row, int& col) {
    if (i < 4) { row = 2 * (l % 4) + (i & 1) + (i >= 2 ? 8 : 0); col = l / 4; }
    else { row = 2 * (l % 4) + (i & 1) + (i >= 6 ? 8 : 0); col = 8 + l / 4; }  // the zero half
  });
  if (!err.empty()) return "mma m16n8k16 B: " + err;
  product16(d, a, b, c, 32, 4, [](int l, int i, int& row, int& col) { row = l / 4 + (i >= 2 ? 8 : 0); col = 2 * (l % 4) + (i & 1); });
  return "";
}
