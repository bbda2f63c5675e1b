// mma-layout.h: where each lane of a wave keeps the elements of a 16-row matrix-core tile, for
// every instruction family flash.hip uses. Pure index arithmetic with no device intrinsics, so
// the same code compiles for the GPUs and for the host: test/emu/mma-emu.cpp runs these
// functions against models of the instructions written from the vendors' layout descriptions
// (test/emu/isa-models.h names them), which is how the AMD layouts are checked with no AMD GPU
// at hand.
//
// flash.hip computes, per wave, S = Q K^T for 16 query rows and O += P V. On NVIDIA it does so
// as written (m16n8k16: a lane holds two query rows). On AMD it computes the transposes
// S^T = K Q^T and O^T += V^T P^T, so that every lane owns one query (lane % 16) and the scores'
// accumulator layout is, or is one exchange away from, the layout the second product wants for
// P^T as its B operand.
//
// Families: ML_NV    mma.sync m16n8k16 (sm_80+), wave 32
//           ML_MFMA  v_mfma_f32_16x16x16{f16,bf16_1k} (gfx90a, gfx942, gfx950), wave 64
//           ML_WMMA11 v_wmma_f32_16x16x16_{f16,bf16} (gfx11), wave 32, A/B replicated
//           ML_WMMA12 v_wmma_f32_16x16x16_{f16,bf16} (gfx12), wave 32
//           ML_FMA   gfx1030 (no matrix cores): the ML_WMMA12 layout, products done with FMAs
#pragma once

#if defined(__HIP__) || defined(__CUDACC__)
#define ML_FN __host__ __device__ __forceinline__
#else
#define ML_FN inline
#endif

enum MlFamily { ML_NV = 0, ML_MFMA = 1, ML_WMMA11 = 2, ML_WMMA12 = 3, ML_FMA = 4 };

template <int F> struct MlLayout;

// NVIDIA m16n8k16, lane = 4 g + t. Accumulator of one n8 tile: c0 c1 at row g, c2 c3 at row
// g + 8, columns 2t and 2t + 1. A (row-major 16x16): a0 (g, 2t..), a1 (g + 8, 2t..),
// a2 (g, 2t + 8..), a3 (g + 8, 2t + 8..), two 16-bit values each. B (16x8, k-major): b0 (k 2t..,
// n g), b1 (k 2t + 8.., n g). The accumulators of two adjacent n8 tiles are, element for
// element, the A operand of a k16 step: P needs no exchange.
template <> struct MlLayout<ML_NV> {
  static constexpr int WAVE = 32, ROWS_PER_LANE = 2, TILE_N = 8, ACC = 4;
  // element e (0..3) of an n8 accumulator tile
  static ML_FN int acc_row(int lane, int e) { return lane / 4 + 8 * (e >> 1); }
  static ML_FN int acc_col(int lane, int e) { return 2 * (lane % 4) + (e & 1); }
  static ML_FN int acc_slot(int e) { return e >> 1; }
  // lanes holding the same rows differ in the low two bits
  static constexpr int XOR0 = 1, XOR1 = 2;
  // A operand element v (0..7, 16-bit) of a lane: (row, k)
  static ML_FN int a_row(int lane, int v) { return lane / 4 + 8 * ((v >> 1) & 1); }
  static ML_FN int a_k(int lane, int v) { return 2 * (lane % 4) + (v & 1) + 8 * (v >> 2); }
  // B operand element v (0..3): (k, n)
  static ML_FN int b_k(int lane, int v) { return 2 * (lane % 4) + (v & 1) + 8 * (v >> 1); }
  static ML_FN int b_n(int lane, int) { return lane / 4; }
  // the P operand's element v (A, keys of a k16 step) is accumulator element p_acc(v) of n8 tile
  // p_tile(v) (0 or 1) of the same lane
  static ML_FN int p_tile(int v) { return v >> 2; }
  static ML_FN int p_acc(int v) { return v & 3; }
};

// The AMD families share one orientation: a 16x16 accumulator tile of S^T (keys x queries) or
// O^T (head dims x queries) whose column is lane % 16, the query, and whose row (key or head dim)
// is acc_row(lane, e). A and B operands hold OPS 16-bit values per lane: A (row, k) is
// (lane % 16, a_k), B (k, column) is (b_k, lane % 16).
template <> struct MlLayout<ML_MFMA> {
  static constexpr int WAVE = 64, ROWS_PER_LANE = 1, TILE_N = 16, ACC = 4, OPS = 4;
  static ML_FN int acc_row(int lane, int e) { return 4 * (lane / 16) + e; }
  static ML_FN int a_k(int lane, int v) { return 4 * (lane / 16) + v; }
  static ML_FN int b_k(int lane, int v) { return 4 * (lane / 16) + v; }
  // the lanes of one query: lane % 16 equal
  static constexpr int XOR0 = 16, XOR1 = 32;
  static constexpr bool EXCHANGE = false;
  // P^T as B: element v comes from accumulator element p_acc(lane, v) of lane p_lane(lane, v)
  static ML_FN int p_lane(int lane, int) { return lane; }
  static ML_FN int p_acc(int, int v) { return v; }
};

template <> struct MlLayout<ML_WMMA11> {
  static constexpr int WAVE = 32, ROWS_PER_LANE = 1, TILE_N = 16, ACC = 8, OPS = 16;
  static ML_FN int acc_row(int lane, int e) { return 2 * e + (lane / 16); }
  static ML_FN int a_k(int, int v) { return v; }
  static ML_FN int b_k(int, int v) { return v; }
  static constexpr int XOR0 = 16, XOR1 = 0;
  static constexpr bool EXCHANGE = true;
  // key v of the query sits in the lane of its parity: this one or its partner across halves
  static ML_FN int p_lane(int lane, int v) { return (lane % 16) + 16 * (v % 2); }
  static ML_FN int p_acc(int, int v) { return v / 2; }
};

// a_k / b_k give the order in which the kernel feeds k to the operands, not the instruction's
// own: AMD's Matrix Instruction Calculator (RDNA4) puts k = 4 (l / 16) + v % 4 + 8 (v / 4) in
// element v of lane l. The kernel feeds k = 8 (l / 16) + v to A and to B alike, a permutation of
// k that leaves every product as it is, and in that order P^T's B operand is the scores'
// accumulator as it stands (key 8 (l / 16) + e), with no exchange between half-waves.
// test/emu/flash-emu.cpp runs flash.hip with the instruction in the calculator's layout.
template <> struct MlLayout<ML_WMMA12> {
  static constexpr int WAVE = 32, ROWS_PER_LANE = 1, TILE_N = 16, ACC = 8, OPS = 8;
  static ML_FN int acc_row(int lane, int e) { return 8 * (lane / 16) + e; }
  static ML_FN int a_k(int lane, int v) { return 8 * (lane / 16) + v; }
  static ML_FN int b_k(int lane, int v) { return 8 * (lane / 16) + v; }
  static constexpr int XOR0 = 16, XOR1 = 0;
  static constexpr bool EXCHANGE = false;
  static ML_FN int p_lane(int lane, int) { return lane; }
  static ML_FN int p_acc(int, int v) { return v; }
};

template <> struct MlLayout<ML_FMA> : MlLayout<ML_WMMA12> {};
