// flash.hip: fused attention for long queries (prefill) on the matrix cores, with the softmax
// kept online (no score matrix in global memory). A block takes BM query rows of one (batch,
// query head), four waves of WR rows each (FlCfg: 32 on NVIDIA up to head dim 128, else 16), and
// walks the visible keys in blocks of BN: K and V tiles go to LDS, each wave computes its WR x BN
// scores on the matrix cores, masks them, folds them into its running max and sum, and
// accumulates P V on the matrix cores again.
// Sums in f32; P is rounded to the input type for the second product (as FlashAttention does).
//
// One kernel body for every vendor; what differs is the wave-level arch layer FlArch below
// (fragment loads, the instruction, where a lane's accumulator elements sit), whose index
// arithmetic is mma-layout.h, run on the host by test/emu/mma-emu.cpp against instruction
// models. NVIDIA: mma.sync m16n8k16 with ldmatrix and cp.async; gfx90a/gfx942/gfx950: MFMA
// 16x16x16; gfx11 and gfx12: WMMA 16x16x16; gfx1030: the gfx12 layout with FMAs.
//
// Visibility as attention.hip (the CPU reference's rules): with hasDiag, query i sees key j iff
// j <= i + diag, and with window > 0 also j > i + diag - window; maskKind 1 (u8, 0 hides), 2
// (additive, the input type, -inf hides). A row that sees no key gets zeros; NaN propagates.
//
// Kernels (DT f16 bf16, HD the head-dim bucket 64 80 96 128 256; d = dv <= HD, columns past d
// are zero-filled in LDS and not stored):
//   flash_fwd_<DT>_<HD>(T* o, const T* q, const T* k, const T* v, const void* mask,
//       i64 oOff, i64 qOff, i64 kOff, i64 vOff, i64 mOff, u32 hq, u32 hkv, u32 tq, u32 tk, u32 d,
//       i64 qsb, i64 qsh, i64 qst, i64 ksb, i64 ksh, i64 kst, i64 vsb, i64 vsh, i64 vst,
//       i64 msb, i64 msh, i64 mst, i64 msk, u32 maskKind, u32 hasDiag, i64 diag, i64 window,
//       float scale, float* lse, i64 lseOff)
//     lse: null, or f32 [b, hq, tq] that takes each row's log-sum-exp of the scaled scores (+inf
//     for a row that sees nothing), which the gradient (flash-bwd.hip) then need not recompute.
//     grid (b * hq, ceil(tq / BM)), block 128 threads on NVIDIA (BM 128 for HD <= 128, else
//     64) with FlCfg::LDS_ELEMS elements of dynamic shared memory, 256 on AMD (BM 64). o
//     contiguous [b, hq, tq, d]. The head dim has
//     unit stride; the other strides are in elements and arbitrary (cache views read in place).
#include "rowreduce.h"
#include "mma-layout.h"

// LDS rows padded by 16 bytes: consecutive rows start 16 bytes apart modulo 128, so the eight
// 16-byte row pieces one fragment load reads fall in different banks
#define FL_PAD 8
// heads whose query blocks flash_fwd starts together (see its block order); chosen on an H200 at
// b8 h16 s4096 d128 bf16 among 1, 2, 4, 8, 16 and all heads
#define FL_GROUP 8u

#if RT_CUDA
#define FL_FAMILY ML_NV
#elif defined(__gfx90a__) || defined(__gfx942__) || defined(__gfx950__)
#define FL_FAMILY ML_MFMA
#elif defined(__gfx1100__) || defined(__gfx1101__) || defined(__gfx1102__)
#define FL_FAMILY ML_WMMA11
#elif defined(__gfx1200__) || defined(__gfx1201__)
#define FL_FAMILY ML_WMMA12
#else
#define FL_FAMILY ML_FMA
#endif

typedef MlLayout<FL_FAMILY> L;

// 16-bit storage to f32 and back for the scalar paths
template <class T> RT_DEVICE float fl_f(T x) { return Elem<T>::load(x); }
#if RT_HIP
// one exact v_cvt_f32_f16 instead of compat.h's branchy decoder, whose size kept gfx1030's FMA
// loops from unrolling fully and left the output accumulator in scratch, indexed dynamically
template <> RT_DEVICE float fl_f<f16>(f16 x) { return f16_widen_hw(x.bits); }
#endif

// keys per block: bounded by the LDS (64 KiB on AMD; flash_fwd's is dynamic on NVIDIA, 68 KiB at
// head dim 128, the kernels' other LDS static, within 48 KiB) with Q, K and V resident, and by
// the registers: a wave32 AMD lane holds 8 accumulators per 16 x 16 tile where a wave64 lane holds
// 4, so there the score tile stays 16 keys wide (wider ones spilled to scratch on gfx11/gfx12).
template <int HD> struct FlCfg {
  static constexpr int LD = HD + FL_PAD;
  // query rows a wave takes in flash_fwd: 32 on NVIDIA up to head dim 128 (two m16 tiles, so each
  // K and V fragment read from LDS feeds twice the products: with 16 rows the fragment reads, not
  // the products, set the pace), else 16; four waves a block
#if RT_CUDA
  static constexpr int WR = HD <= 128 ? 32 : 16;
#else
  static constexpr int WR = 16;
#endif
  static constexpr int WAVES = 4;
  static constexpr int BM = WR * WAVES;
  // flash_fwd's thread count where the kernel fixes it (NVIDIA: the tile copies unroll over it);
  // 0 on AMD, which copies by blockDim.x
#if RT_CUDA
  static constexpr int NT = 32 * WAVES;
#else
  static constexpr int NT = 0;
#endif
#if RT_CUDA
  static constexpr int BN = HD > 128 ? 32 : 64;
  // two m-tiles of Q do not fit a lane's registers next to their accumulators: they stay in LDS
  // and are read per key block; one m-tile (head dim 256) is staged in the K/V region and held
  static constexpr int Q_ROWS = WR == 32 ? BM : 0;
  static constexpr bool VT = false;
#else
  static constexpr int BN = L::WAVE == 32 || HD > 128 ? 16 : 64;
  static constexpr int Q_ROWS = BM;
  // AMD keeps V transposed ([head dim][keys], VLD apart): its V^T operand then reads along rows
  static constexpr bool VT = true;
#endif
  static constexpr int VLD = BN + FL_PAD;
  static constexpr int K_ELEMS = (Q_ROWS + BN) * LD;
  static constexpr int V_ELEMS = VT ? HD * VLD : BN * LD;
  static constexpr int LDS_ELEMS = K_ELEMS + V_ELEMS > BM * LD ? K_ELEMS + V_ELEMS : BM * LD;
  // AMD blocks are 256 threads: on wave32 that is 8 waves, two per 16 query rows, each computing
  // the rows' scores and half of their output columns (CT 16-wide column tiles each): a wave32
  // lane would otherwise hold 8 accumulators per tile of the whole head dim, which spilled
#if RT_CUDA
  static constexpr int CS = 1;
#else
  static constexpr int CS = 256 / (4 * L::WAVE);
#endif
  static constexpr int CT = (HD / 16 + CS - 1) / CS;
};

// ---- the wave-level arch layer --------------------------------------------------------------
// qs: this wave's 16 query rows in LDS; ks, vs: the key and value tiles (BN rows); all rows LD
// apart. s: the wave's scores, o: its output accumulator, both in the family's layout.
template <class T, int HD, int F> struct FlArch;

#if RT_CUDA
RT_DEVICE u32 fl_saddr(const void* p) { return (u32)__cvta_generic_to_shared(p); }
RT_DEVICE void fl_ldsm(u32 (&r)[4], const void* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
      : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(fl_saddr(p)));
}
RT_DEVICE void fl_ldsm_t(u32 (&r)[4], const void* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];"
      : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(fl_saddr(p)));
}
// c += A B, or with fl_mma0 c = A B (the accumulator's registers are the instruction's zero,
// not cleared first). FL_MMA's arguments after O are further inputs, each after a comma.
#define FL_MMA(TY, C, O, ...) asm volatile("mma.sync.aligned.m16n8k16.row.col.f32." TY "." TY ".f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, " C ";" \
    : O(c[0]), O(c[1]), O(c[2]), O(c[3]) : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1) __VA_ARGS__)
template <class T> RT_DEVICE void fl_mma(float (&c)[4], const u32 (&a)[4], u32 b0, u32 b1);
template <> RT_DEVICE void fl_mma<bf16>(float (&c)[4], const u32 (&a)[4], u32 b0, u32 b1) { FL_MMA("bf16", "{%0,%1,%2,%3}", "+f"); }
template <> RT_DEVICE void fl_mma<f16>(float (&c)[4], const u32 (&a)[4], u32 b0, u32 b1) { FL_MMA("f16", "{%0,%1,%2,%3}", "+f"); }
template <class T> RT_DEVICE void fl_mma0(float (&c)[4], const u32 (&a)[4], u32 b0, u32 b1);
template <> RT_DEVICE void fl_mma0<bf16>(float (&c)[4], const u32 (&a)[4], u32 b0, u32 b1) { FL_MMA("bf16", "{%10,%10,%10,%10}", "=f", , "f"(0.f)); }
template <> RT_DEVICE void fl_mma0<f16>(float (&c)[4], const u32 (&a)[4], u32 b0, u32 b1) { FL_MMA("f16", "{%10,%10,%10,%10}", "=f", , "f"(0.f)); }
#undef FL_MMA
// two f32 to the input type, round to nearest even; lo in the low half
template <class T> RT_DEVICE u32 fl_pack(float lo, float hi);
template <> RT_DEVICE u32 fl_pack<bf16>(float lo, float hi) {
  u32 r;
  asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
  return r;
}
template <> RT_DEVICE u32 fl_pack<f16>(float lo, float hi) {
  u32 r;
  asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
  return r;
}

// MT m16 tiles of query rows a wave (16 MT rows). Accumulator element e of s (or o) is element
// e % 4 of the tile at (n8 tile e / 4 / MT, m-tile e / 4 % MT). With one m-tile Q sits in registers;
// with two it is read from LDS per key block, each K/V fragment then serving both m-tiles.
template <class T, int HD, int MT> struct FlNv {
  static constexpr int BN = FlCfg<HD>::BN, LD = FlCfg<HD>::LD;
  static constexpr int R = 2 * MT, WR = 16 * MT;
  static constexpr int SN = BN / 8 * 4 * MT, ON = HD / 8 * 4 * MT;
  static constexpr bool QREG = MT == 1;
  struct QF { u32 a[QREG ? HD / 16 : 1][4]; };
  // ldmatrix x4 of A: lane l gives the row address of matrix l / 8; matrices 0..3 are a0..a3
  static RT_DEVICE const T* a_at(const T* qs, u32 lane) { return qs + (lane % 8 + 8 * ((lane / 8) & 1)) * LD + 8 * (lane / 16); }
  static RT_DEVICE void load_q(QF& qf, const T* qs, u32 lane) {
    if (!QREG) return;
    const T* p = a_at(qs, lane);
#pragma unroll
    for (int kk = 0; kk < HD / 16; kk++) fl_ldsm(qf.a[kk], p + kk * 16);
  }
  // the accumulator tile (n8 tile n8, m-tile mt) of s or o
  template <class F> static RT_DEVICE F (&tile(F* x, int n8, int mt))[4] { return *(F(*)[4])&x[4 * (n8 * MT + mt)]; }
  static RT_DEVICE void qk(float (&s)[SN], const QF& qf, const T* qs, const T* ks, u32 lane) {
    // matrices: keys +0 / +8 (bit 1 of l / 8), head-dim columns +0 / +8 (bit 0): b0 b1 of two
    // adjacent n8 tiles
    const T* p = ks + (lane % 8 + 8 * ((lane / 16) & 1)) * LD + 8 * ((lane / 8) & 1);
    const T* pq = a_at(qs, lane);
#pragma unroll
    for (int kk = 0; kk < HD / 16; kk++) {
      u32 a[MT][4];
#pragma unroll
      for (int mt = 0; mt < MT; mt++) {
        if (QREG) {
#pragma unroll
          for (int i = 0; i < 4; i++) a[mt][i] = qf.a[QREG ? kk : 0][i];
        } else {
          fl_ldsm(a[mt], pq + mt * 16 * LD + kk * 16);
        }
      }
#pragma unroll
      for (int np = 0; np < BN / 16; np++) {
        u32 b[4];
        fl_ldsm(b, p + np * 16 * LD + kk * 16);
#pragma unroll
        for (int mt = 0; mt < MT; mt++) {
          if (kk == 0) {
            fl_mma0<T>(tile(s, 2 * np, mt), a[mt], b[0], b[1]);
            fl_mma0<T>(tile(s, 2 * np + 1, mt), a[mt], b[2], b[3]);
          } else {
            fl_mma<T>(tile(s, 2 * np, mt), a[mt], b[0], b[1]);
            fl_mma<T>(tile(s, 2 * np + 1, mt), a[mt], b[2], b[3]);
          }
        }
      }
    }
  }
  static RT_DEVICE void pv(float (&o)[ON], const float (&s)[SN], const T* vs, u32 lane, int) {
    // transposed matrices: keys +0 / +8 (bit 0 of l / 8), columns +0 / +8 (bit 1)
    const T* p = vs + (lane % 8 + 8 * ((lane / 8) & 1)) * LD + 8 * ((lane / 16) & 1);
#pragma unroll
    for (int kk = 0; kk < BN / 16; kk++) {
      u32 a[MT][4];
#pragma unroll
      for (int mt = 0; mt < MT; mt++) {
        const float(&s0)[4] = tile(s, 2 * kk, mt);
        const float(&s1)[4] = tile(s, 2 * kk + 1, mt);
        a[mt][0] = fl_pack<T>(s0[0], s0[1]);
        a[mt][1] = fl_pack<T>(s0[2], s0[3]);
        a[mt][2] = fl_pack<T>(s1[0], s1[1]);
        a[mt][3] = fl_pack<T>(s1[2], s1[3]);
      }
#pragma unroll
      for (int dp = 0; dp < HD / 16; dp++) {
        u32 b[4];
        fl_ldsm_t(b, p + kk * 16 * LD + dp * 16);
#pragma unroll
        for (int mt = 0; mt < MT; mt++) {
          fl_mma<T>(tile(o, 2 * dp, mt), a[mt], b[0], b[1]);
          fl_mma<T>(tile(o, 2 * dp + 1, mt), a[mt], b[2], b[3]);
        }
      }
    }
  }
  static RT_DEVICE int row(u32 lane, int e) { return (e / 4 % MT) * 16 + L::acc_row((int)lane, e & 3); }
  static RT_DEVICE int col(u32 lane, int e) { return (e / 4 / MT) * 8 + L::acc_col((int)lane, e & 3); }
  static RT_DEVICE int slot(int e) { return (e / 4 % MT) * 2 + L::acc_slot(e & 3); }
  static RT_DEVICE int slot_row(u32 lane, int r) { return (r / 2) * 16 + L::acc_row((int)lane, 2 * (r % 2)); }
};
template <class T, int HD> struct FlArch<T, HD, ML_NV> : FlNv<T, HD, 1> {};
#endif

#if RT_HIP
typedef float v4f __attribute__((ext_vector_type(4)));
typedef float v8f __attribute__((ext_vector_type(8)));
typedef short v4s __attribute__((ext_vector_type(4)));
typedef short v8s __attribute__((ext_vector_type(8)));
typedef short v16s __attribute__((ext_vector_type(16)));
typedef _Float16 v4h __attribute__((ext_vector_type(4)));
typedef _Float16 v8h __attribute__((ext_vector_type(8)));
typedef _Float16 v16h __attribute__((ext_vector_type(16)));
template <int N> struct FlPack { u32 w[N / 2]; };  // N 16-bit operand values, two per word

// Keeps the LDS reads of one tile product after the previous one: scheduled freely, the fully
// unrolled loops below hoisted every fragment of a block into registers at once and spilled on
// the wave32 archs, whose lanes hold twice the accumulators of a wave64 lane.
RT_DEVICE void fl_fence() { asm volatile("" ::: "memory"); }
// Pins a product here, between the fences around it: the matrix instructions read no memory, so
// without this the compiler sank every product of qk past the block barrier after it (to their
// first use), and all the fragments they read stayed live at once (spilled on gfx11 at HD 256).
RT_DEVICE void fl_pin(v8f& c) { asm volatile("" : "+v"(c)); }

RT_DEVICE u32 fl_pack2(float lo, float hi, bf16) { return (u32)f32_to_bf16(lo).bits | ((u32)f32_to_bf16(hi).bits << 16); }
RT_DEVICE u32 fl_pack2(float lo, float hi, f16) {
  return (u32)__builtin_bit_cast(u16, (_Float16)lo) | ((u32)__builtin_bit_cast(u16, (_Float16)hi) << 16);
}

// One 16 x 16 x 16 product on the matrix cores: acc += A B, A and B as OPS 16-bit values per
// lane in the family's operand layout (mma-layout.h).
template <class T, int F> struct FlMma;
#if defined(__gfx90a__) || defined(__gfx942__) || defined(__gfx950__)
template <> struct FlMma<bf16, ML_MFMA> {
  static RT_DEVICE void run(float* acc, const FlPack<4>& a, const FlPack<4>& b) {
    v4f c = { acc[0], acc[1], acc[2], acc[3] };
    c = __builtin_amdgcn_mfma_f32_16x16x16bf16_1k(__builtin_bit_cast(v4s, a), __builtin_bit_cast(v4s, b), c, 0, 0, 0);
#pragma unroll
    for (int i = 0; i < 4; i++) acc[i] = c[i];
  }
};
template <> struct FlMma<f16, ML_MFMA> {
  static RT_DEVICE void run(float* acc, const FlPack<4>& a, const FlPack<4>& b) {
    v4f c = { acc[0], acc[1], acc[2], acc[3] };
    c = __builtin_amdgcn_mfma_f32_16x16x16f16(__builtin_bit_cast(v4h, a), __builtin_bit_cast(v4h, b), c, 0, 0, 0);
#pragma unroll
    for (int i = 0; i < 4; i++) acc[i] = c[i];
  }
};
#endif
#if defined(__gfx1100__) || defined(__gfx1101__) || defined(__gfx1102__)
template <> struct FlMma<bf16, ML_WMMA11> {
  static RT_DEVICE void run(float* acc, const FlPack<16>& a, const FlPack<16>& b) {
    v8f c;
#pragma unroll
    for (int i = 0; i < 8; i++) c[i] = acc[i];
    c = __builtin_amdgcn_wmma_f32_16x16x16_bf16_w32(__builtin_bit_cast(v16s, a), __builtin_bit_cast(v16s, b), c);
    fl_pin(c);
#pragma unroll
    for (int i = 0; i < 8; i++) acc[i] = c[i];
  }
};
template <> struct FlMma<f16, ML_WMMA11> {
  static RT_DEVICE void run(float* acc, const FlPack<16>& a, const FlPack<16>& b) {
    v8f c;
#pragma unroll
    for (int i = 0; i < 8; i++) c[i] = acc[i];
    c = __builtin_amdgcn_wmma_f32_16x16x16_f16_w32(__builtin_bit_cast(v16h, a), __builtin_bit_cast(v16h, b), c);
    fl_pin(c);
#pragma unroll
    for (int i = 0; i < 8; i++) acc[i] = c[i];
  }
};
#endif
#if defined(__gfx1200__) || defined(__gfx1201__)
template <> struct FlMma<bf16, ML_WMMA12> {
  static RT_DEVICE void run(float* acc, const FlPack<8>& a, const FlPack<8>& b) {
    v8f c;
#pragma unroll
    for (int i = 0; i < 8; i++) c[i] = acc[i];
    c = __builtin_amdgcn_wmma_f32_16x16x16_bf16_w32_gfx12(__builtin_bit_cast(v8s, a), __builtin_bit_cast(v8s, b), c);
    fl_pin(c);
#pragma unroll
    for (int i = 0; i < 8; i++) acc[i] = c[i];
  }
};
template <> struct FlMma<f16, ML_WMMA12> {
  static RT_DEVICE void run(float* acc, const FlPack<8>& a, const FlPack<8>& b) {
    v8f c;
#pragma unroll
    for (int i = 0; i < 8; i++) c[i] = acc[i];
    c = __builtin_amdgcn_wmma_f32_16x16x16_f16_w32_gfx12(__builtin_bit_cast(v8h, a), __builtin_bit_cast(v8h, b), c);
    fl_pin(c);
#pragma unroll
    for (int i = 0; i < 8; i++) acc[i] = c[i];
  }
};
#endif

// The AMD families: S^T = K Q^T and O^T += V^T P^T, a lane owning query lane % 16. V sits
// transposed in LDS ([head dim][keys], VLD apart), so the V^T operand reads along a row too.
template <class T, int HD, int F> struct FlArchAmd {
  typedef MlLayout<F> M;
  static constexpr int BN = FlCfg<HD>::BN, LD = FlCfg<HD>::LD, VLD = FlCfg<HD>::VLD;
  static constexpr int CT = FlCfg<HD>::CT, SN = BN / 16 * M::ACC, ON = CT * M::ACC;
  static constexpr int R = M::ROWS_PER_LANE, WR = 16;
  typedef FlPack<M::OPS> P;
  struct QF {};
  static RT_DEVICE void load_q(QF&, const T*, u32) {}
  // operand values k (a_k or b_k) of one LDS row, read two at a time
  template <bool IS_A> static RT_DEVICE P frag(const T* row, int lane) {
    P p;
#pragma unroll
    for (int v = 0; v < M::OPS; v += 2) p.w[v / 2] = *(const u32*)(row + (IS_A ? M::a_k(lane, v) : M::b_k(lane, v)));
    return p;
  }
  static RT_DEVICE void qk(float (&s)[SN], const QF&, const T* qs, const T* ks, u32 lane) {
    const int l = (int)lane, r = l % 16;
#pragma unroll
    for (int e = 0; e < SN; e++) s[e] = 0.f;
#pragma unroll
    for (int kk = 0; kk < HD / 16; kk++) {
      const P b = frag<false>(qs + r * LD + kk * 16, l);
#pragma unroll
      for (int kt = 0; kt < BN / 16; kt++) {
        FlMma<T, F>::run(&s[kt * M::ACC], frag<true>(ks + (kt * 16 + r) * LD + kk * 16, l), b);
        fl_fence();
      }
    }
  }
  static RT_DEVICE void pv(float (&o)[ON], const float (&s)[SN], const T* vts, u32 lane, int ct0) {
    const int l = (int)lane, r = l % 16;
#pragma unroll
    for (int kt = 0; kt < BN / 16; kt++) {
      // P^T as the B operand: key p_acc of lane p_lane (this lane, or its partner on gfx11);
      // every lane takes part in the exchange, only some keep what it brings
      P b;
#pragma unroll
      for (int v = 0; v < M::OPS; v += 2) {
        float x[2];
#pragma unroll
        for (int u = 0; u < 2; u++) {
          const float mine = s[kt * M::ACC + M::p_acc(l, v + u)];
          const float there = M::EXCHANGE ? shfl_xor(mine, 16) : mine;
          x[u] = M::p_lane(l, v + u) == l ? mine : there;
        }
        b.w[v / 2] = fl_pack2(x[0], x[1], T{});
      }
#pragma unroll
      for (int dt = 0; dt < CT; dt++) {
        // (the second half of an odd tile count has one tile fewer)
        if (ct0 + dt < HD / 16) FlMma<T, F>::run(&o[dt * M::ACC], frag<true>(vts + ((ct0 + dt) * 16 + r) * VLD + kt * 16, l), b);
        fl_fence();
      }
    }
  }
  // element e: tile e / ACC of 16 keys (or head-dim columns); the query is the row
  static RT_DEVICE int row(u32 lane, int) { return (int)lane % 16; }
  static RT_DEVICE int col(u32 lane, int e) { return (e / M::ACC) * 16 + M::acc_row((int)lane, e % M::ACC); }
  static RT_DEVICE int slot(int) { return 0; }
  static RT_DEVICE int slot_row(u32 lane, int) { return (int)lane % 16; }
};
template <class T, int HD> struct FlArch<T, HD, ML_MFMA> : FlArchAmd<T, HD, ML_MFMA> {};
template <class T, int HD> struct FlArch<T, HD, ML_WMMA11> : FlArchAmd<T, HD, ML_WMMA11> {};
template <class T, int HD> struct FlArch<T, HD, ML_WMMA12> : FlArchAmd<T, HD, ML_WMMA12> {};

// gfx1030, no matrix cores: the gfx12 accumulator layout (a lane owns query lane % 16 and keys
// or head-dim columns 8 (lane / 16) + e of each 16-wide tile), each element an FMA dot product
// read straight from LDS.
template <class T, int HD> struct FlArch<T, HD, ML_FMA> : FlArchAmd<T, HD, ML_WMMA12> {
  typedef FlArchAmd<T, HD, ML_WMMA12> B;
  static constexpr int BN = B::BN, LD = B::LD, VLD = B::VLD, SN = B::SN, ON = B::ON, CT = B::CT;
  struct QF {};
  static RT_DEVICE void load_q(QF&, const T*, u32) {}
  static RT_DEVICE void qk(float (&s)[SN], const QF&, const T* qs, const T* ks, u32 lane) {
    const int r = (int)lane % 16, h = (int)lane / 16;
#pragma unroll
    for (int e = 0; e < SN; e++) s[e] = 0.f;
    for (int c = 0; c < HD; c += 8) {
      const Vec16<T> qv = *(const Vec16<T>*)(qs + r * LD + c);
#pragma unroll
      for (int e = 0; e < SN; e++) {
        const Vec16<T> kv = *(const Vec16<T>*)(ks + ((e / 8) * 16 + 8 * h + e % 8) * LD + c);
#pragma unroll
        for (int u = 0; u < 8; u++) s[e] += fl_f(qv.v[u]) * fl_f(kv.v[u]);
        fl_fence();
      }
    }
  }
  static RT_DEVICE void pv(float (&o)[ON], const float (&s)[SN], const T* vts, u32 lane, int ct0) {
    const int h = (int)lane / 16;
#pragma unroll
    for (int kt = 0; kt < BN / 16; kt++) {
      // this query's 16 probabilities of the tile: 8 here, 8 in the partner lane
      float p[16];
#pragma unroll
      for (int e = 0; e < 8; e++) {
        const float mine = s[kt * 8 + e], other = shfl_xor(mine, 16);
        p[e] = h ? other : mine;
        p[8 + e] = h ? mine : other;
      }
#pragma unroll
      for (int e = 0; e < ON; e++) {
        if (ct0 + e / 8 >= HD / 16) continue;
        const T* vr = vts + ((ct0 + e / 8) * 16 + 8 * h + e % 8) * VLD + kt * 16;
        const Vec16<T> v0 = *(const Vec16<T>*)vr, v1 = *(const Vec16<T>*)(vr + 8);
        float acc = 0.f;
#pragma unroll
        for (int u = 0; u < 8; u++) acc += p[u] * fl_f(v0.v[u]) + p[8 + u] * fl_f(v1.v[u]);
        o[e] += acc;
        fl_fence();
      }
    }
  }
};
#endif

// ---- global -> LDS tiles ----------------------------------------------------------------------
// closes a group of asynchronous copies (NVIDIA); fl_wait<P> counts groups
RT_DEVICE void fl_commit() {
#if RT_CUDA
  asm volatile("cp.async.commit_group;");
#endif
}

// n rows of a strided [rows, d] source into LDS rows of LD (TR: transposed, into columns of rows
// VLD apart), zero past `valid` rows and past column d. vec: 16-byte pieces (d, strides and base
// 8-element aligned), asynchronous on NVIDIA (cp.async, waited by fl_wait); else one by one.
// NT: the copying threads where the kernel fixes their count (0: the block, blockDim.x); tid:
// the thread's index among them
template <class T, int HD, bool TR = false, bool WALK = false, int NT = 0>
RT_DEVICE void fl_tile(T* dst, const T* src, i64 stride, int n, int valid, u32 d, bool vec, int tid) {
  constexpr int LD = FlCfg<HD>::LD, VLD = FlCfg<HD>::VLD, CH = HD / 8;
  const int nt = NT > 0 ? NT : (int)blockDim.x;
#if RT_CUDA
  // WALK: a fixed 16-byte column a thread and rows nt / CH apart, the source walked by pointer,
  // with no division per copy: a one-warp decode group issues 64 copies of a key block (bf16,
  // d 128) per lane, a prefill block 8. Not past head dim 128, where the extra registers spilled.
  if (WALK && HD <= 128 && vec && !TR && nt % CH == 0) {
    const int c = tid % CH, step = nt / CH;
    const bool colIn = (u32)(c * 8) < d;
    const T* from = src + (i64)(tid / CH) * stride + c * 8;
    const i64 jump = (i64)step * stride;
    u32 to = fl_saddr(dst + (tid / CH) * LD + c * 8);
    const u32 toStep = (u32)(step * LD * (int)sizeof(T));
    // rows a fixed thread count covers in one pass (1 where the count is not fixed: unused then)
    constexpr bool FIXED = NT > 0 && NT % CH == 0;
    constexpr int STEP = FIXED ? NT / CH : 1;
    if (FIXED && colIn && valid >= n && n % STEP == 0) {
      // every row in and the thread count fixed: n / STEP copies a thread (the first row is below
      // STEP), unrolled, LDS addresses as offsets (a prefill block's per-copy bounds, selects
      // and loop were a tenth of its key loop's issue)
#pragma unroll 8
      for (int i = 0; i < n / STEP; i++)
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" :: "r"(to + (u32)i * toStep), "l"(from + i * jump));
    } else if (colIn && valid >= n) {
      // every row in: no bounds and no zero fill a copy
#pragma unroll 4
      for (int r = tid / CH; r < n; r += step, from += jump, to += toStep)
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" :: "r"(to), "l"(from));
    } else {
      for (int r = tid / CH; r < n; r += step, from += jump, to += toStep) {
        const bool in = colIn && r < valid;
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" :: "r"(to), "l"(in ? from : src), "r"(in ? 16 : 0));
      }
    }
    fl_commit();
    return;
  }
#endif
  if (vec) {
    for (int x = tid; x < n * CH; x += nt) {
      const int r = x / CH, c = x % CH;
      const bool in = r < valid && (u32)(c * 8) < d;
      const T* from = src + (in ? (i64)r * stride + c * 8 : 0);
      if (TR) {
        Vec16<T> z;
        if (in) z = *(const Vec16<T>*)from;
        else for (int u = 0; u < 8; u++) z.v[u] = T{ 0 };
#pragma unroll
        for (int u = 0; u < 8; u++) dst[(c * 8 + u) * VLD + r] = z.v[u];
        continue;
      }
      T* to = dst + r * LD + c * 8;
#if RT_CUDA
      asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" :: "r"(fl_saddr(to)), "l"(from), "r"(in ? 16 : 0));
#else
      Vec16<T> z;
      if (in) z = *(const Vec16<T>*)from;
      else for (int u = 0; u < 8; u++) z.v[u] = T{ 0 };
      *(Vec16<T>*)to = z;
#endif
    }
  } else {
    for (int x = tid; x < n * HD; x += nt) {
      const int r = x / HD, c = x % HD;
      dst[TR ? c * VLD + r : r * LD + c] = r < valid && (u32)c < d ? src[(i64)r * stride + c] : T{ 0 };
    }
  }
  fl_commit();
}
// a decode group's barrier: on NVIDIA a group is one warp (several share a block, each on its own
// keys and LDS), on AMD the whole block
RT_DEVICE void fl_gsync() {
#if RT_CUDA
  __syncwarp();
#else
  __syncthreads();
#endif
}
// wait until at most `pending` tile copies of this thread are in flight, then for the block (or
// with GROUP, the decode group)
template <int P, bool GROUP = false> RT_DEVICE void fl_wait() {
#if RT_CUDA
  asm volatile("cp.async.wait_group %0;" :: "n"(P));
#endif
  if (GROUP) fl_gsync();
  else __syncthreads();
}

RT_DEVICE float fl_exp2(float x) {
#if RT_CUDA
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
#else
  return __builtin_amdgcn_exp2f(x);
#endif
}

// What the key loop and the output store address memory through, one value per block.
template <class T> struct FlBase {
  const T* kb; const T* vb; T* ob;
  const void* mrow;  // the mask's (batch, head) plane, u8 or T elements
  i64 kst, vst, mst, msk;
};

// An explicit mask on scores already scaled to the log2 domain: u8 (0 hides) or additive (the
// input type, scaled alike). rowOff(e) is where the mask row of score e's row starts (elements),
// or -1 for a row past the last. Inline: out of line, the call alone slowed the unmasked loop by
// half on an H200 (the registers live across it).
template <class T, class A, int SN, class RowOff>
RT_DEVICE void fl_mask(float (&s)[SN], const void* mask, i64 msk, u32 j0, u32 lane, u32 maskKind, RowOff rowOff) {
#pragma unroll
  for (int e = 0; e < SN; e++) {
    if (s[e] == -INFINITY) continue;
    const i64 ro = rowOff(e);
    if (ro < 0) continue;
    const i64 mo = ro + (i64)(j0 + (u32)A::col(lane, e)) * msk;
    if (maskKind == 1) s[e] = ((const u8*)mask)[mo] != 0 ? s[e] : -INFINITY;
    else s[e] += fl_f(((const T*)mask)[mo]) * 1.4426950408889634f;
  }
}

// The keys of the block at j0 (BN of them) that query i sees, as block-relative bounds
// lo < key < hi clamped to [-1, BN] (32-bit: per score only two compares, which kept the masked
// path from holding 64-bit positions for every score, 40 more registers on NVIDIA): keys below
// `end` (tk, or the end of a split), and with hasDiag those up to i + diag and, with a window,
// past i + diag - window.
template <int BN>
RT_DEVICE void fl_range(i64 i, u32 j0, i64 end, u32 hasDiag, i64 diag, i64 window, int& lo, int& hi) {
  i64 h1 = end - j0, l1 = -1;
  if (hasDiag) {
    h1 = min(h1, i + diag + 1 - j0);
    if (window > 0) l1 = max(l1, i + diag - window - j0);
  }
  hi = (int)max((i64)0, min(h1, (i64)BN));
  lo = (int)max((i64)-1, min(l1, (i64)BN));
}

// the scores to the log2 domain, those outside the bounds lo < key < hi of the lane's rows hidden
template <class A, int R, int SN>
RT_DEVICE void fl_scale(float (&s)[SN], const int (&lo)[R], const int (&hi)[R], float sl2, u32 lane) {
#pragma unroll
  for (int e = 0; e < SN; e++) {
    const int kl = A::col(lane, e);
    const bool vis = kl < hi[A::slot(e)] && kl > lo[A::slot(e)];
    s[e] = vis ? s[e] * sl2 : -INFINITY;
  }
}

// op over each row's scores of the lane (slot r), in four independent chains a row (the scores
// of each quarter of s) joined at the end: one chain of SN / R dependent steps held the softmax.
// Every quarter holds scores of every row: a lane's rows repeat every 8 scores or fewer in each
// layout (NVIDIA m16n8 tiles, MFMA, WMMA), and a quarter is at least that long where K is 4.
template <class A, int R, int SN, class Op>
RT_DEVICE void fl_rows(const float (&s)[SN], float (&out)[R], Op op) {
  constexpr int K = SN / R >= 8 && SN % 4 == 0 ? 4 : 1, QS = SN / K;
  float acc[R][K];
#pragma unroll
  for (int e = 0; e < SN; e++) {
    // the first score of its row in its quarter starts that chain
    bool first = true;
#pragma unroll
    for (int f = e / QS * QS; f < e; f++) first = first && A::slot(f) != A::slot(e);
    float& a = acc[A::slot(e)][e / QS];
    a = first ? s[e] : op(a, s[e]);
  }
#pragma unroll
  for (int r = 0; r < R; r++) {
    out[r] = acc[r][0];
#pragma unroll
    for (int c = 1; c < K; c += 2) out[r] = c + 1 < K ? op(out[r], op(acc[r][c], acc[r][c + 1])) : op(out[r], acc[r][c]);
  }
}

// One key block's online-softmax step in the log2 domain: the scores s, scaled to it by `mul`
// (1 where the caller scaled and masked them already; else a positive scale, applied in the
// exponent's FMA: the maximum of scores scaled by a positive factor is the scaled maximum),
// become P, the lane's running max m and sum l take the block in, and the output accumulator is
// rescaled to the new max.
template <class A, int R, int SN, int ON>
RT_DEVICE void fl_online(float (&s)[SN], float (&m)[R], float (&l)[R], float (&oacc)[ON], float mul) {
  float mx[R], alpha[R], mu[R], ls[R];
  fl_rows<A, R, SN>(s, mx, [](float a, float b) { return max_nan(a, b); });
  bool same = true;
#pragma unroll
  for (int r = 0; r < R; r++) {
    mx[r] = max_nan(mx[r], shfl_xor(mx[r], L::XOR0));
    if (L::XOR1) mx[r] = max_nan(mx[r], shfl_xor(mx[r], L::XOR1));
    const float mn = max_nan(m[r], mx[r] * mul);
    // nothing visible yet: keep the zero sums rather than exp2(-inf - -inf)
    alpha[r] = mn == -INFINITY ? 1.f : fl_exp2(m[r] - mn);
    mu[r] = mn == -INFINITY ? 0.f : mn;
    m[r] = mn;
    same = same && alpha[r] == 1.f;
  }
#pragma unroll
  for (int e = 0; e < SN; e++) s[e] = fl_exp2(fmaf(s[e], mul, -mu[A::slot(e)]));
  fl_rows<A, R, SN>(s, ls, [](float a, float b) { return a + b; });
#pragma unroll
  for (int r = 0; r < R; r++) l[r] = l[r] * alpha[r] + ls[r];
#if RT_CUDA
  // once a row's maximum has settled its factor is exactly 1: the warp skips the multiplies
  if (__all_sync(0xffffffffu, same)) return;
#endif
#pragma unroll
  for (int e = 0; e < ON; e++) oacc[e] *= alpha[A::slot(e)];
}

// the lanes of a row hold parts of its sum: fold them
template <int R> RT_DEVICE void fl_fold(float (&l)[R]) {
#pragma unroll
  for (int r = 0; r < R; r++) {
    l[r] += shfl_xor(l[r], L::XOR0);
    if (L::XOR1) l[r] += shfl_xor(l[r], L::XOR1);
  }
}

template <class T, int HD>
RT_DEVICE void flash_fwd(T* o, const T* q, const T* k, const T* v, const void* mask,
    u32 hq, u32 hkv, u32 tq, u32 tk, u32 d,
    i64 qsb, i64 qsh, i64 qst, i64 ksb, i64 ksh, i64 kst, i64 vsb, i64 vsh, i64 vst,
    i64 msb, i64 msh, i64 mst, i64 msk, u32 maskKind, u32 hasDiag, i64 diag, i64 window, float scale,
    float* lse) {
  typedef FlCfg<HD> C;
#if RT_CUDA
  typedef FlNv<T, HD, C::WR / 16> A;
  // C::LDS_ELEMS of T, dynamic: past the 48 KiB a kernel may declare statically at head dim 96
  // and 128 (the host passes the size, gpu/flash.ts's fwdShape)
  extern __shared__ __align__(16) unsigned char fl_dyn[];
  T* const lds = (T*)fl_dyn;
#else
  typedef FlArch<T, HD, FL_FAMILY> A;
  __shared__ __attribute__((aligned(16))) T lds[C::LDS_ELEMS];
#endif
  constexpr int BN = C::BN, LD = C::LD, SN = A::SN, ON = A::ON, R = A::R, WR = A::WR;
  T* const qsm = lds;
  T* const ksm = lds + C::Q_ROWS * LD;
  T* const vsm = ksm + BN * LD;

  // Blocks start in launch order (x fastest). Taken head by head for every query block, the
  // blocks resident at once spanned all heads, so each streamed its head's K and V from HBM; now
  // FL_GROUP heads' query blocks start before the next heads', and the resident blocks share
  // those heads' K and V in L2 (b8 h16 s4096 d128: 16 MiB). Within a group the most expensive
  // query blocks (causal: the last) go first, so the tail of the grid is short.
  u32 bh, mi;
  {
    const u32 nbh = gridDim.x, lin = blockIdx.y * nbh + blockIdx.x;
    const u32 g0 = lin / (FL_GROUP * gridDim.y) * FL_GROUP, gs = min((u32)FL_GROUP, nbh - g0);
    const u32 at = lin - g0 * gridDim.y;
    mi = at / gs;
    bh = g0 + at % gs;
  }
  const u32 bi = bh / hq, h = bh % hq, kh = h / (hq / hkv);
  // rows of this block: a wave per WR rows (times the column split), at most C::BM (the LDS
  // holds that many query rows; the host never launches more)
#if RT_CUDA
  // the tile copies count on the host's block of C::NT threads; a constant count also
  // keeps the warp's index free of a division (its result was spilled and reloaded each key block)
  if (blockDim.x != (u32)C::NT) return;
  const u32 waves = C::WAVES, bm = WR * waves;
#else
  const u32 waves = blockDim.x / (u32)(L::WAVE * C::CS), bm = WR * waves;
  if (bm > (u32)C::BM) return;
#endif
  const u32 mb = gridDim.y - 1 - mi, m0 = mb * bm;
  // wave: its 16 query rows (w) and its share of the output columns (from column tile ct0)
  const u32 lane = threadIdx.x % (u32)L::WAVE, w = threadIdx.x / (u32)L::WAVE % waves;
  const int ct0 = (int)(threadIdx.x / (u32)L::WAVE / waves) * C::CT;
  const T* qb = q + (i64)bi * qsb + (i64)h * qsh + (i64)m0 * qst;
  const i64 mplane = (i64)bi * msb + (i64)h * msh;
  FlBase<T> fb = { k + (i64)bi * ksb + (i64)kh * ksh, v + (i64)bi * vsb + (i64)kh * vsh,
      o + ((u64)bh * tq + m0) * d,
      maskKind == 1 ? (const void*)((const u8*)mask + mplane)
          : maskKind == 2 ? (const void*)((const T*)mask + mplane) : mask,
      kst, vst, mst, msk };
#if RT_HIP
  // On wave64 (MFMA) the same values read back from LDS live in vector registers, which those
  // archs have to spare, where as 64-bit scalars next to the arguments they come from they
  // spilled the scalar registers of gfx90a/gfx942/gfx950 (as in attention.hip's decode kernel).
  // The wave32 archs keep them scalar: there they fit, and vector registers are the scarcer.
  __shared__ FlBase<T> sfb;
  if (L::WAVE == 64 && threadIdx.x == 0) sfb = fb;
#endif
  // uniform: the 16-byte path needs every row start 8-element aligned
  const bool vq = d % 8 == 0 && qsb % 8 == 0 && qsh % 8 == 0 && qst % 8 == 0 && aligned16(q);
  const bool vk = d % 8 == 0 && ksb % 8 == 0 && ksh % 8 == 0 && kst % 8 == 0 && aligned16(k);
  const bool vv = d % 8 == 0 && vsb % 8 == 0 && vsh % 8 == 0 && vst % 8 == 0 && aligned16(v);

  // the keys any row of this block sees: [kbeg, kend)
  const i64 qlast = (i64)min(m0 + bm, tq) - 1;
  i64 kend = tk, kbeg = 0;
  if (hasDiag) {
    kend = max((i64)0, min((i64)tk, qlast + diag + 1));
    if (window > 0) kbeg = max((i64)0, (i64)m0 + diag - window + 1);
  }
  const u32 jfirst = (u32)(kbeg / BN) * BN;

  fl_tile<T, HD, false, true, C::NT>(qsm, qb, qst, (int)bm, (int)min(bm, tq - m0), d, vq, (int)threadIdx.x);
  // Q read from LDS in the loop (NVIDIA, two m-tiles): the first key block's wait covers it too
#if RT_CUDA
  if (C::Q_ROWS == 0) fl_wait<0>();
#else
  fl_wait<0>();
#endif
#if RT_HIP
  if (L::WAVE == 64) fb = sfb;
#endif
  typename A::QF qf;
  const T* qw = qsm + w * WR * LD;
  A::load_q(qf, qw, lane);
  if (C::Q_ROWS == 0) __syncthreads();  // Q's LDS becomes K and V

  float m[R], l[R], oacc[ON], s[SN];
#pragma unroll
  for (int r = 0; r < R; r++) { m[r] = -INFINITY; l[r] = 0.f; }
#pragma unroll
  for (int e = 0; e < ON; e++) oacc[e] = 0.f;
  const float sl2 = scale * 1.4426950408889634f;

  if (jfirst < kend) fl_tile<T, HD, false, true, C::NT>(ksm, fb.kb + (i64)jfirst * fb.kst, fb.kst, BN, (int)min((i64)BN, (i64)tk - jfirst), d, vk, (int)threadIdx.x);
  for (u32 j0 = jfirst; (i64)j0 < kend; j0 += BN) {
    const int nvalid = (int)min((i64)BN, (i64)tk - j0);
    fl_tile<T, HD, C::VT, true, C::NT>(vsm, fb.vb + (i64)j0 * fb.vst, fb.vst, BN, nvalid, d, vv, (int)threadIdx.x);
    fl_wait<1>();  // K of this block is in
    A::qk(s, qf, qw, ksm, lane);
    __syncthreads();  // every wave is done with K: the next block's K may load
    if ((i64)j0 + BN < kend) fl_tile<T, HD, false, true, C::NT>(ksm, fb.kb + (i64)(j0 + BN) * fb.kst, fb.kst, BN, (int)min((i64)BN, (i64)tk - j0 - BN), d, vk, (int)threadIdx.x);
    else fl_commit();  // an empty group, so the wait for V below counts the same

    // masking only where this key block can hide something from some row of the block
    // (and for a scale that is not positive, which the unmasked path's maximum assumes)
    const bool edge = (i64)j0 + BN > (i64)tk || maskKind != 0 || !(sl2 > 0.f) ||
        (hasDiag && ((i64)j0 + BN - 1 > (i64)m0 + diag || (window > 0 && (i64)j0 <= qlast + diag - window)));
    if (edge) {
      int lo[R], hi[R];
#pragma unroll
      for (int r = 0; r < R; r++) fl_range<BN>((i64)m0 + w * WR + A::slot_row(lane, r), j0, tk, hasDiag, diag, window, lo[r], hi[r]);
      fl_scale<A, R, SN>(s, lo, hi, sl2, lane);
      if (maskKind != 0) {
        const u32 row0 = m0 + w * WR;
        fl_mask<T, A, SN>(s, fb.mrow, fb.msk, j0, lane, maskKind,
            [&](int e) { const u32 i = row0 + (u32)A::row(lane, e); return i < tq ? (i64)i * fb.mst : (i64)-1; });
      }
    }
    fl_online<A, R, SN, ON>(s, m, l, oacc, edge ? 1.f : sl2);

    fl_wait<1>();  // V of this block is in (the next K may still be loading)
    A::pv(oacc, s, vsm, lane, ct0);
    __syncthreads();  // every wave is done with V before the next block's loads into it
  }

  fl_fold<R>(l);
  T* ob = fb.ob + (u64)w * WR * d;
  const u32 rows = tq > m0 + w * WR ? min((u32)WR, tq - m0 - w * WR) : 0u;
#pragma unroll
  for (int e = 0; e < ON; e++) {
    const int r = A::row(lane, e), c = ct0 * 16 + A::col(lane, e);
    if ((u32)r < rows && (u32)c < d) {
      const float lr = l[A::slot(e)];
      ob[(u64)r * d + c] = Elem<T>::store(lr == 0.f ? 0.f : oacc[e] / lr);
    }
  }
  // each row's log-sum-exp of the scaled scores, for the gradient (m is in base 2; +inf for a row
  // that sees nothing, as flash-bwd.hip takes it), from one lane of the row's lanes (those the
  // row's sums were folded over) in the first column wave. Its own loop: inside the store loop
  // above the compiler made that loop twice, with and without it.
  if (lse != nullptr && ct0 == 0 && (lane & (u32)(L::XOR0 | L::XOR1)) == 0)
#pragma unroll
    for (int r = 0; r < R; r++) {
      const u32 row = (u32)A::slot_row(lane, r);
      if (row < rows) lse[(u64)bh * tq + m0 + w * WR + row] = l[r] == 0.f ? INFINITY : (m[r] + log2f(l[r])) * 0.6931471805599453f;
    }
}

// ---- decode: short queries over long keys, the keys split across groups and blocks -----------
// A group takes one (batch, kv head), 16 of its R = (hq / hkv) * tq query rows (row r: query head
// kh * g + r / tq, query r % tq, so a grouped-query head's group shares one pass over its K/V) and
// one split of the keys (perSplit of them, a multiple of BN); one row-wave (times the column
// split on wave32 AMD) walks the split's key blocks as flash_fwd's waves do. A block is
// blockDim.x / GT groups on consecutive splits (NVIDIA: warps, each with its own LDS, dynamic
// shared memory of ks * GE elements; AMD: one group, static LDS): with several, they combine
// their rows in LDS at the end, so a short key range needs no second kernel. With splits
// (gridDim.y) > 1 each block's unnormalized rows go to wso [rows, splits, d] and their (max,
// sum) to wsml [rows, splits, 2], max in the natural-log domain, for attention.hip's attn_merge.
template <class T, int HD>
RT_DEVICE void flash_dec(T* o, float* wso, float* wsml, const T* q, const T* k, const T* v, const void* mask,
    u32 hq, u32 hkv, u32 tq, u32 tk, u32 d,
    i64 qsb, i64 qsh, i64 qst, i64 ksb, i64 ksh, i64 kst, i64 vsb, i64 vsh, i64 vst,
    i64 msb, i64 msh, i64 mst, i64 msk, u32 maskKind, u32 hasDiag, i64 diag, i64 window, float scale,
    u32 splits, u32 perSplit) {
  typedef FlCfg<HD> C;
  typedef FlArch<T, HD, FL_FAMILY> A;
  constexpr int BN = C::BN, LD = C::LD, SN = A::SN, ON = A::ON, R = A::R, CH = HD / 8;
  // AMD keeps the 16 query rows in LDS for every product; NVIDIA holds them in registers
  constexpr int QR = C::VT ? 16 : 0;
  // a group's threads and LDS elements
  constexpr int GT = C::CS * L::WAVE, GE = (QR + BN) * LD + C::V_ELEMS;
#if RT_CUDA
  extern __shared__ __align__(16) unsigned char fl_dyn[];
  T* const lds0 = (T*)fl_dyn;
  const u32 ks = blockDim.x / GT, grp = threadIdx.x / GT, gt = threadIdx.x % GT;
  constexpr int NT = GT;
  // the end's exchange reuses a group's tiles: its rows and their (max, sum) as f32
  static_assert((16 * HD + 32) * 4 <= GE * (int)sizeof(T), "flash_dec: a group's LDS holds its rows in f32");
#else
  __shared__ __attribute__((aligned(16))) T lds0[GE];
  const u32 ks = 1, grp = 0, gt = threadIdx.x;
  constexpr int NT = 0;
#endif
  T* const lds = lds0 + grp * GE;
  T* const qsm = lds;
  T* const ksm = lds + QR * LD;
  T* const vsm = ksm + BN * LD;

  const u32 g = hq / hkv, rows = g * tq, tiles = (rows + 15) / 16;
  const u32 bh = blockIdx.x / tiles, bi = bh / hkv, kh = bh % hkv, r0 = blockIdx.x % tiles * 16;
  const u32 nr = min(16u, rows - r0);
  const u32 js = (blockIdx.y * ks + grp) * perSplit, je = min(tk, js + perSplit);
  const u32 lane = gt % (u32)L::WAVE;
  const int ct0 = (int)(gt / (u32)L::WAVE) * C::CT;
  const T* kb = k + (i64)bi * ksb + (i64)kh * ksh;
  const T* vb = v + (i64)bi * vsb + (i64)kh * vsh;
  const bool vk = d % 8 == 0 && ksb % 8 == 0 && ksh % 8 == 0 && kst % 8 == 0 && aligned16(k);
  const bool vv = d % 8 == 0 && vsb % 8 == 0 && vsh % 8 == 0 && vst % 8 == 0 && aligned16(v);

  // the split's keys any row sees (rows' queries taken as all of [0, tq)); blocks start at js
  i64 kend = je, kbeg = js;
  if (hasDiag) {
    kend = max((i64)js, min((i64)je, (i64)tq + diag));
    if (window > 0) kbeg = max((i64)js, diag - window + 1);
  }
  const u32 jfirst = js + (u32)((kbeg - js) / BN) * BN;
  // the first K block is asked for before the queries, so their loads' latencies overlap
  if ((i64)jfirst < kend) fl_tile<T, HD, false, true, NT>(ksm, kb + (i64)jfirst * kst, kst, BN, (int)min((i64)BN, (i64)tk - jfirst), d, vk, (int)gt);

  // the tile's query rows, gathered (rows of different heads need not be equally spaced), zero
  // past the last row and past column d; NVIDIA stages them in the V region, free until the loop
  T* const qst0 = QR ? qsm : vsm;
  const bool vq = d % 8 == 0 && qsb % 8 == 0 && qsh % 8 == 0 && qst % 8 == 0 && aligned16(q);
  for (u32 x = gt; x < 16u * CH; x += (u32)GT) {
    const u32 r = x / CH, c = x % CH * 8, rr = r0 + min(r, nr - 1);
    const T* src = q + (i64)bi * qsb + (i64)(kh * g + rr / tq) * qsh + (i64)(rr % tq) * qst + c;
    T* dst = qst0 + r * LD + c;
    if (vq) {
      Vec16<T> z;
#pragma unroll
      for (int u = 0; u < 8; u++) z.v[u] = T{ 0 };
      if (r < nr && c < d) z = *(const Vec16<T>*)src;
      *(Vec16<T>*)dst = z;
    } else {
#pragma unroll
      for (u32 u = 0; u < 8; u++) dst[u] = r < nr && c + u < d ? src[u] : T{ 0 };
    }
  }
  fl_gsync();
  typename A::QF qf;
  A::load_q(qf, qst0, lane);
  if (QR == 0) fl_gsync();  // the staged rows' region takes V

  // the lane's rows' queries
  i64 qi[R];
#pragma unroll
  for (int r = 0; r < R; r++) qi[r] = (r0 + (u32)A::slot_row(lane, r)) % tq;

  float m[R], l[R], oacc[ON], s[SN];
#pragma unroll
  for (int r = 0; r < R; r++) { m[r] = -INFINITY; l[r] = 0.f; }
#pragma unroll
  for (int e = 0; e < ON; e++) oacc[e] = 0.f;
  const float sl2 = scale * 1.4426950408889634f;

  for (u32 j0 = jfirst; (i64)j0 < kend; j0 += BN) {
    fl_tile<T, HD, C::VT, true, NT>(vsm, vb + (i64)j0 * vst, vst, BN, (int)min((i64)BN, (i64)tk - j0), d, vv, (int)gt);
    fl_wait<1, true>();  // K of this block is in
    A::qk(s, qf, qsm, ksm, lane);
    fl_gsync();
    if ((i64)j0 + BN < kend) fl_tile<T, HD, false, true, NT>(ksm, kb + (i64)(j0 + BN) * kst, kst, BN, (int)min((i64)BN, (i64)tk - j0 - BN), d, vk, (int)gt);
    else fl_commit();

    const bool edge = (i64)j0 + BN > (i64)je || maskKind != 0 || !(sl2 > 0.f) ||
        (hasDiag && ((i64)j0 + BN - 1 > diag || (window > 0 && (i64)j0 <= (i64)tq - 1 + diag - window)));
    if (edge) {
      int lo[R], hi[R];
#pragma unroll
      for (int r = 0; r < R; r++) fl_range<BN>(qi[r], j0, je, hasDiag, diag, window, lo[r], hi[r]);
      fl_scale<A, R, SN>(s, lo, hi, sl2, lane);
      if (maskKind != 0) {
        // where the lane's rows' mask rows start (-1 past the last row): two divisions a row
        // here, not two a score in fl_mask's element loop
        i64 mro[R];
#pragma unroll
        for (int r = 0; r < R; r++) {
          const u32 rr = r0 + (u32)A::slot_row(lane, r);
          mro[r] = rr < rows ? (i64)bi * msb + (i64)(kh * g + rr / tq) * msh + qi[r] * mst : (i64)-1;
        }
        fl_mask<T, A, SN>(s, mask, msk, j0, lane, maskKind, [&](int e) { return mro[A::slot(e)]; });
      }
    }
    fl_online<A, R, SN, ON>(s, m, l, oacc, edge ? 1.f : sl2);
    fl_wait<1, true>();  // V of this block is in
    A::pv(oacc, s, vsm, lane, ct0);
    fl_gsync();
  }

  fl_fold<R>(l);
  // row r (of the tile), column c of the block's result: unnormalized sum acc, the row's max (log2
  // domain) and sum; the output itself with one split, else this split's part for attn_merge
  auto put = [&](u32 r, u32 c, float acc, float mx, float sum) {
    const u32 rr = r0 + r;
    const u64 orow = ((u64)bi * hq + kh * g + rr / tq) * tq + rr % tq;
    if (splits == 1) {
      o[orow * d + c] = Elem<T>::store(sum == 0.f ? 0.f : acc / sum);
    } else {
      const u64 at = orow * splits + blockIdx.y;
      wso[at * d + c] = acc;
      if (c == 0) { wsml[2 * at] = mx * 0.6931471805599453f; wsml[2 * at + 1] = sum; }
    }
  };
  if (ks == 1) {
#pragma unroll
    for (int e = 0; e < ON; e++) {
      const u32 r = (u32)A::row(lane, e), c = (u32)(ct0 * 16 + A::col(lane, e));
      if (r < nr && c < d) put(r, c, oacc[e], m[A::slot(e)], l[A::slot(e)]);
    }
    return;
  }
  // The groups meet in LDS, each in its own region (its tiles are done: the loop ends on the
  // group's barrier): its 16 unnormalized rows [16][HD] and their (max, sum) after them; then
  // the block weighs every group's rows by exp2(max - the rows' maximum), skipping groups that
  // saw no key, as attn_merge weighs splits.
  float* const po = (float*)lds;
#pragma unroll
  for (int e = 0; e < ON; e++) {
    const int r = A::row(lane, e), c = ct0 * 16 + A::col(lane, e);
    po[r * HD + c] = oacc[e];
    if (c == 0) { po[16 * HD + 2 * r] = m[A::slot(e)]; po[16 * HD + 2 * r + 1] = l[A::slot(e)]; }
  }
  __syncthreads();
  for (u32 x = threadIdx.x; x < nr * d; x += blockDim.x) {
    const u32 r = x / d, c = x - r * d;
    float mx = -INFINITY;
    for (u32 w = 0; w < ks; w++) {
      const float* ml = (const float*)(lds0 + w * GE) + 16 * HD + 2 * r;
      if (ml[1] != 0.f) mx = max_nan(mx, ml[0]);
    }
    float sum = 0.f, acc = 0.f;
    for (u32 w = 0; w < ks; w++) {
      const float* pw = (const float*)(lds0 + w * GE);
      const float lw = pw[16 * HD + 2 * r + 1];
      if (lw == 0.f) continue;
      const float f = fl_exp2(pw[16 * HD + 2 * r] - mx);
      sum += lw * f;
      acc += pw[r * HD + c] * f;
    }
    put(r, c, acc, mx, sum);
  }
}

#define FLASH(DT, T, HD) \
  RT_KERNEL void flash_fwd_##DT##_##HD(T* o, const T* q, const T* k, const T* v, const void* mask, \
      i64 oOff, i64 qOff, i64 kOff, i64 vOff, i64 mOff, u32 hq, u32 hkv, u32 tq, u32 tk, u32 d, \
      i64 qsb, i64 qsh, i64 qst, i64 ksb, i64 ksh, i64 kst, i64 vsb, i64 vsh, i64 vst, \
      i64 msb, i64 msh, i64 mst, i64 msk, u32 maskKind, u32 hasDiag, i64 diag, i64 window, float scale, \
      float* lse, i64 lseOff) { RT_GRID_DEP(); \
    const void* m = maskKind == 1 ? (const void*)((const u8*)mask + mOff) \
        : maskKind == 2 ? (const void*)((const T*)mask + mOff) : mask; \
    flash_fwd<T, HD>(o + oOff, q + qOff, k + kOff, v + vOff, m, hq, hkv, tq, tk, d, qsb, qsh, qst, \
        ksb, ksh, kst, vsb, vsh, vst, msb, msh, mst, msk, maskKind, hasDiag, diag, window, scale, \
        lse == nullptr ? nullptr : lse + lseOff); }

#define FLASH_DEC(DT, T, HD) \
  RT_KERNEL void flash_dec_##DT##_##HD(T* o, float* wso, float* wsml, const T* q, const T* k, const T* v, \
      const void* mask, i64 oOff, i64 qOff, i64 kOff, i64 vOff, i64 mOff, u32 hq, u32 hkv, u32 tq, u32 tk, u32 d, \
      i64 qsb, i64 qsh, i64 qst, i64 ksb, i64 ksh, i64 kst, i64 vsb, i64 vsh, i64 vst, \
      i64 msb, i64 msh, i64 mst, i64 msk, u32 maskKind, u32 hasDiag, i64 diag, i64 window, float scale, \
      u32 splits, u32 perSplit) { RT_GRID_DEP(); \
    const void* m = maskKind == 1 ? (const void*)((const u8*)mask + mOff) \
        : maskKind == 2 ? (const void*)((const T*)mask + mOff) : mask; \
    flash_dec<T, HD>(o + oOff, wso, wsml, q + qOff, k + kOff, v + vOff, m, hq, hkv, tq, tk, d, qsb, qsh, qst, \
        ksb, ksh, kst, vsb, vsh, vst, msb, msh, mst, msk, maskKind, hasDiag, diag, window, scale, \
        splits, perSplit); }

#define FLASH_DTS(HD) FLASH(f16, f16, HD) FLASH(bf16, bf16, HD) FLASH_DEC(f16, f16, HD) FLASH_DEC(bf16, bf16, HD)
// paged-prefill.hip includes this file for its pieces, without these kernels
#ifndef FLASH_NO_KERNELS
FLASH_DTS(64) FLASH_DTS(80) FLASH_DTS(96) FLASH_DTS(128) FLASH_DTS(256)
#endif
