// flash-bwd.hip: the gradient of scaled dot-product attention recomputed tile by tile, with no
// score matrix in global memory and no atomics (every output element has one writer, so results
// do not depend on scheduling). Sums in f32.
//
// Two kernels per (dtype, head-dim bucket), run in this order:
//   flash_bwd_dq: a block owns B query rows of one (batch, query head). Pass 1 walks the visible
//     keys for the rows' log-sum-exp (online max and sum) and takes D = rowsum(dO * O); both go to
//     global memory (f32) for the second kernel. Pass 2 walks the keys again:
//     P = exp(S - lse), dP = dO V^T, dS = P (dP - D), dQ += dS K * scale.
//   flash_bwd_dkdv: a block owns B keys of one (batch, kv head) and walks the query tiles of every
//     query head of its group (GQA: dK and dV sum over them here, not through atomics):
//     dV += P^T dO, dK += dS^T Q * scale.
// A block is B x B threads; thread (i, j) turns score (query i, key j) of the tile into P and dS.
// The products run one of two ways, picked by the `mma` argument:
//   0: FMAs, thread (i, j) making its dot products from the LDS tiles (every arch, every dtype);
//   1: f16 and bf16 on the matrix cores (NVIDIA mma.sync m16n8k16, AMD MFMA 16x16x16 on
//      gfx90a/gfx942/gfx950, WMMA 16x16x16 on gfx11 and gfx12, lane layouts from mma-layout.h):
//      the waves split the head dim of S = Q K^T and dP = dO V^T (partial tiles summed in LDS),
//      then the 16-wide column tiles of dQ (or dK and dV) with P and dS rounded to the input type
//      (as FlashAttention does). Elsewhere (f32, gfx1030) the argument is ignored: FMAs.
// Visibility as flash.hip and the CPU reference: with hasDiag, query i sees key j iff
// j <= i + diag, and with window > 0 also j > i + diag - window; maskKind 1 (u8, 0 hides),
// 2 (additive, the input type, added to the scaled score, -inf hides). A row that sees no key
// has lse = +inf, so its probabilities and gradients are 0 (its forward output was zeros).
// NaN propagates.
//
// Operands are contiguous: q, dq, o, dout [b, hq, tq, d]; k, v, dk, dv [b, hkv, tk, d]; lse and
// dd [b, hq, tq] f32; the mask [b, hq, tq, tk] through strides (0 where broadcast).
//   flash_bwd_dq_<DT>_<HD>(T* dq, float* lse, float* dd, const T* q, const T* k, const T* v,
//       const T* o, const T* dout, const void* mask, i64 x9 offsets (same order),
//       u32 hq, u32 hkv, u32 tq, u32 tk, u32 d, i64 msb, i64 msh, i64 mst, i64 msk,
//       u32 maskKind, u32 hasDiag, i64 diag, i64 window, float scale, u32 mma)
//     grid (b * hq, ceil(tq / B)), block B * B threads
//   flash_bwd_dkdv_<DT>_<HD>(T* dk, T* dv, const float* lse, const float* dd, const T* q,
//       const T* k, const T* v, const T* dout, const void* mask, i64 x9 offsets, then as dq
//     grid (b * hkv, ceil(tk / B)), block B * B threads
// DT f32 f16 bf16; HD 64 80 96 128 256, d <= HD (columns past d are zeros in LDS, not stored).
#include "compat.h"
#include "mma-layout.h"

// FB_MC: the instruction family as a number the preprocessor can test (the MlFamily enum is not).
// FB_HOST_NV: the host emulator's NVIDIA build (test/emu/flash-bwd-emu.cpp defines fb_mma_nv from
// the PTX ISA's fragment layout, as inline PTX cannot run there)
#if RT_CUDA || defined(FB_HOST_NV)
#define FB_FAMILY ML_NV
#define FB_MC 1
#elif defined(__gfx90a__) || defined(__gfx942__) || defined(__gfx950__)
#define FB_FAMILY ML_MFMA
#define FB_MC 2
#elif defined(__gfx1100__) || defined(__gfx1101__) || defined(__gfx1102__)
#define FB_FAMILY ML_WMMA11
#define FB_MC 3
#elif defined(__gfx1200__) || defined(__gfx1201__)
#define FB_FAMILY ML_WMMA12
#define FB_MC 4
#else
#define FB_FAMILY ML_FMA
#define FB_MC 0
#endif
typedef MlLayout<FB_FAMILY> FbL;

// whether the matrix-core body exists for T on this arch
template <class T> struct FbHasMma { static constexpr bool v = false; };
#if FB_MC != 0
template <> struct FbHasMma<f16> { static constexpr bool v = true; };
template <> struct FbHasMma<bf16> { static constexpr bool v = true; };
#endif

// B: rows and keys of a tile. 16 (256 threads) keeps the four LDS tiles near 33 KB for 16-bit
// types up to head dim 256 and for f32 up to 128; f32 at 256 takes 8 (64 threads) for the same.
// Rows are padded by one 32-bit word, so the 16 rows a column read touches fall in 16 banks.
template <class T, int HD> struct FbCfg {
  static constexpr int B = sizeof(T) == 4 && HD > 128 ? 8 : 16;
  static constexpr int NT = B * B;
  static constexpr int LD = HD + (int)(4 / sizeof(T));
  // output columns a thread accumulates in the FMA body (c = lane-in-row + B * u)
  static constexpr int CU = (HD + B - 1) / B;
  static constexpr bool MMA = FbHasMma<T>::v;
  // the matrix-core body: waves a block, 16-wide column tiles of the head dim, those a wave owns
  static constexpr int NW = NT / FbL::WAVE;
  static constexpr int CT = HD / 16;
  static constexpr int CTW = (CT + NW - 1) / NW;
  // P and dS tiles in the input type (matrix-core operands), rows padded by 8 elements
  static constexpr int LDP = B + 8;
  // f32 scratch: the FMA body's score tiles (two), or the matrix-core body's partial products
  // (one B x B tile a wave)
  static constexpr int SF = (MMA && NW > 2 ? NW : 2) * B * (B + 1);
};

// a block's LDS, shared by both bodies
template <class T, int HD> struct FbLds {
  typedef FbCfg<T, HD> C;
  T q[C::B * C::LD], dout[C::B * C::LD], k[C::B * C::LD], v[C::B * C::LD];
  T p[C::MMA ? C::B * C::LDP : 1], ds[C::MMA ? C::B * C::LDP : 1];
  float part[C::SF];
  float m[C::B], l[C::B], dd[C::B];
};

// 16-bit storage to f32; f16 in one exact hardware conversion (compat.h f16_widen_hw: only NaN
// payloads differ from the software decoder, and every use here is a sum)
template <class T> RT_DEVICE float fb_f(T x) { return Elem<T>::load(x); }
template <> RT_DEVICE float fb_f<f16>(f16 x) { return f16_widen_hw(x.bits); }

// rows r0 .. r0 + B of a contiguous [rows, d] plane into LDS, zeros past the last row and past d
template <class T, int HD>
RT_DEVICE void fb_load(T* dst, const T* src, i64 r0, i64 rows, u32 d) {
  typedef FbCfg<T, HD> C;
  for (u32 x = threadIdx.x; x < (u32)(C::B * HD); x += blockDim.x) {
    const u32 r = x / HD, c = x % HD;
    dst[r * C::LD + c] = (r0 + r < rows && c < d) ? src[(r0 + r) * (i64)d + c] : T{};
  }
}

template <class T, int HD> RT_DEVICE float fb_dot(const T* a, const T* b) {
  float s0 = 0.f, s1 = 0.f;
#pragma unroll 8
  for (int c = 0; c < HD; c += 2) {
    s0 = fmaf(fb_f(a[c]), fb_f(b[c]), s0);
    s1 = fmaf(fb_f(a[c + 1]), fb_f(b[c + 1]), s1);
  }
  return s0 + s1;
}

// ---- one 16 x 16 tile product on the matrix cores ------------------------------------------
// C += A B over the k-steps ks0, ks0 + kstep, ... below nks (16 k each): A (r, k) at
// a[r * ar + k * ak], B (k, c) at b[k * bk + c * bc], 16-bit elements in LDS. Each lane gathers
// its operand elements where mma-layout.h places them; accumulator element e of a lane is
// C (row(lane, e), col(lane, e)).
template <class T> RT_DEVICE u32 fb_bits(const T* p, int at) { return (u32)p[at].bits; }

template <class T, int F> struct FbMma;

#if FB_MC == 1
// c += A B for one m16n8k16: A as a0..a7 in 4 words, B as b0..b3 in 2, c as c0..c3
template <class T> RT_DEVICE void fb_mma_nv(float* c, const u32 (&a)[4], u32 b0, u32 b1);
#endif
#if RT_CUDA
#define FB_MMA_NV(TY)                                                                                              \
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32." TY "." TY ".f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "    \
               "{%0,%1,%2,%3};"                                                                                    \
               : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])                                                    \
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1))
template <> RT_DEVICE void fb_mma_nv<f16>(float* c, const u32 (&a)[4], u32 b0, u32 b1) { FB_MMA_NV("f16"); }
template <> RT_DEVICE void fb_mma_nv<bf16>(float* c, const u32 (&a)[4], u32 b0, u32 b1) { FB_MMA_NV("bf16"); }
#undef FB_MMA_NV
#endif

#if FB_MC == 1
// m16n8k16: a 16-wide tile is two n8 tiles, accumulator elements 0-3 and 4-7
template <class T> struct FbMma<T, ML_NV> {
  static constexpr int ACC = 8;
  static RT_DEVICE int row(u32 lane, int e) { return FbL::acc_row((int)lane, e & 3); }
  static RT_DEVICE int col(u32 lane, int e) { return 8 * (e >> 2) + FbL::acc_col((int)lane, e & 3); }
  static RT_DEVICE void run(float (&acc)[ACC], const T* a, int ar, int ak, const T* b, int bk, int bc, int ks0, int nks,
      int kstep, u32 lane) {
    const int l = (int)lane;
    for (int ks = ks0; ks < nks; ks += kstep) {
      const int k0 = 16 * ks;
      u32 aw[4];
#pragma unroll
      for (int w = 0; w < 4; w++)
        aw[w] = fb_bits(a, FbL::a_row(l, 2 * w) * ar + (k0 + FbL::a_k(l, 2 * w)) * ak) |
            fb_bits(a, FbL::a_row(l, 2 * w + 1) * ar + (k0 + FbL::a_k(l, 2 * w + 1)) * ak) << 16;
#pragma unroll
      for (int n8 = 0; n8 < 2; n8++) {
        u32 bw[2];
#pragma unroll
        for (int w = 0; w < 2; w++)
          bw[w] = fb_bits(b, (k0 + FbL::b_k(l, 2 * w)) * bk + (8 * n8 + FbL::b_n(l, 2 * w)) * bc) |
              fb_bits(b, (k0 + FbL::b_k(l, 2 * w + 1)) * bk + (8 * n8 + FbL::b_n(l, 2 * w + 1)) * bc) << 16;
        fb_mma_nv<T>(acc + 4 * n8, aw, bw[0], bw[1]);
      }
    }
  }
};
#endif

#if RT_HIP && FB_MC >= 2
typedef float fb_v4f __attribute__((ext_vector_type(4)));
typedef float fb_v8f __attribute__((ext_vector_type(8)));
typedef short fb_v4s __attribute__((ext_vector_type(4)));
typedef short fb_v8s __attribute__((ext_vector_type(8)));
typedef short fb_v16s __attribute__((ext_vector_type(16)));
typedef _Float16 fb_v4h __attribute__((ext_vector_type(4)));
typedef _Float16 fb_v8h __attribute__((ext_vector_type(8)));
typedef _Float16 fb_v16h __attribute__((ext_vector_type(16)));
template <int N> struct FbPack { u32 w[N / 2]; };  // N 16-bit operand values, two per word

// acc += A B, A and B as OPS values a lane in the family's operand layout
template <class T> RT_DEVICE void fb_mma_amd(float* acc, const FbPack<FbL::OPS>& a, const FbPack<FbL::OPS>& b);
#if FB_MC == 2
template <> RT_DEVICE void fb_mma_amd<f16>(float* acc, const FbPack<4>& a, const FbPack<4>& b) {
  fb_v4f c = {acc[0], acc[1], acc[2], acc[3]};
  c = __builtin_amdgcn_mfma_f32_16x16x16f16(__builtin_bit_cast(fb_v4h, a), __builtin_bit_cast(fb_v4h, b), c, 0, 0, 0);
  for (int i = 0; i < 4; i++) acc[i] = c[i];
}
template <> RT_DEVICE void fb_mma_amd<bf16>(float* acc, const FbPack<4>& a, const FbPack<4>& b) {
  fb_v4f c = {acc[0], acc[1], acc[2], acc[3]};
  c = __builtin_amdgcn_mfma_f32_16x16x16bf16_1k(__builtin_bit_cast(fb_v4s, a), __builtin_bit_cast(fb_v4s, b), c, 0, 0, 0);
  for (int i = 0; i < 4; i++) acc[i] = c[i];
}
#elif FB_MC == 3
template <> RT_DEVICE void fb_mma_amd<f16>(float* acc, const FbPack<16>& a, const FbPack<16>& b) {
  fb_v8f c;
  for (int i = 0; i < 8; i++) c[i] = acc[i];
  c = __builtin_amdgcn_wmma_f32_16x16x16_f16_w32(__builtin_bit_cast(fb_v16h, a), __builtin_bit_cast(fb_v16h, b), c);
  for (int i = 0; i < 8; i++) acc[i] = c[i];
}
template <> RT_DEVICE void fb_mma_amd<bf16>(float* acc, const FbPack<16>& a, const FbPack<16>& b) {
  fb_v8f c;
  for (int i = 0; i < 8; i++) c[i] = acc[i];
  c = __builtin_amdgcn_wmma_f32_16x16x16_bf16_w32(__builtin_bit_cast(fb_v16s, a), __builtin_bit_cast(fb_v16s, b), c);
  for (int i = 0; i < 8; i++) acc[i] = c[i];
}
#elif FB_MC == 4
template <> RT_DEVICE void fb_mma_amd<f16>(float* acc, const FbPack<8>& a, const FbPack<8>& b) {
  fb_v8f c;
  for (int i = 0; i < 8; i++) c[i] = acc[i];
  c = __builtin_amdgcn_wmma_f32_16x16x16_f16_w32_gfx12(__builtin_bit_cast(fb_v8h, a), __builtin_bit_cast(fb_v8h, b), c);
  for (int i = 0; i < 8; i++) acc[i] = c[i];
}
template <> RT_DEVICE void fb_mma_amd<bf16>(float* acc, const FbPack<8>& a, const FbPack<8>& b) {
  fb_v8f c;
  for (int i = 0; i < 8; i++) c[i] = acc[i];
  c = __builtin_amdgcn_wmma_f32_16x16x16_bf16_w32_gfx12(__builtin_bit_cast(fb_v8s, a), __builtin_bit_cast(fb_v8s, b), c);
  for (int i = 0; i < 8; i++) acc[i] = c[i];
}
#endif

// AMD: A (row lane % 16, k a_k), B (k b_k, column lane % 16), C (acc_row, lane % 16)
template <class T, int F> struct FbMma {
  static constexpr int ACC = MlLayout<F>::ACC, OPS = MlLayout<F>::OPS;
  static RT_DEVICE int row(u32 lane, int e) { return MlLayout<F>::acc_row((int)lane, e); }
  static RT_DEVICE int col(u32 lane, int) { return (int)(lane % 16); }
  static RT_DEVICE void run(float (&acc)[ACC], const T* a, int ar, int ak, const T* b, int bk, int bc, int ks0, int nks,
      int kstep, u32 lane) {
    const int l = (int)lane, rc = l % 16;
    for (int ks = ks0; ks < nks; ks += kstep) {
      const int k0 = 16 * ks;
      FbPack<OPS> pa, pb;
#pragma unroll
      for (int w = 0; w < OPS / 2; w++) {
        pa.w[w] = fb_bits(a, rc * ar + (k0 + MlLayout<F>::a_k(l, 2 * w)) * ak) |
            fb_bits(a, rc * ar + (k0 + MlLayout<F>::a_k(l, 2 * w + 1)) * ak) << 16;
        pb.w[w] = fb_bits(b, (k0 + MlLayout<F>::b_k(l, 2 * w)) * bk + rc * bc) |
            fb_bits(b, (k0 + MlLayout<F>::b_k(l, 2 * w + 1)) * bk + rc * bc) << 16;
      }
      fb_mma_amd<T>(acc, pa, pb);
    }
  }
};
#endif

// The dot products of thread (i, j) over the head dim for NP (1 or 2) products: x0 row i
// against y0 row j (out0), and x1 against y1 (out1), rows LD apart in LDS. FMA body: the thread's
// own loops. Matrix-core body: the waves split into NP groups, one a product, each wave taking
// every G-th k-step of its product's 16 x 16 tile; the partial tiles meet in LDS (part) and
// thread (i, j) adds its element up. (Operands as separate pointers, not an array: an array
// indexed by the wave's group went to local memory on NVIDIA.)
template <class T, int HD, int NP>
RT_DEVICE void fb_dots(float& out0, float& out1, const T* x0, const T* y0, const T* x1, const T* y1, float* part,
    bool mma) {
  typedef FbCfg<T, HD> C;
  constexpr int B = C::B, LD = C::LD;
  const u32 tid = threadIdx.x, i = tid / B, j = tid % B;
  if constexpr (C::MMA) {
    if (mma) {
      typedef FbMma<T, FB_FAMILY> M;
      constexpr int G = C::NW / NP;
      const u32 w = tid / FbL::WAVE, lane = tid % FbL::WAVE;
      const int g = (int)w % G;
      const bool second = NP == 2 && (int)w >= G;
      float acc[M::ACC];
#pragma unroll
      for (int e = 0; e < M::ACC; e++) acc[e] = 0.f;
      // A: x rows (r, dim); B (dim, key): y rows read down
      M::run(acc, second ? x1 : x0, LD, 1, second ? y1 : y0, 1, LD, g, HD / 16, G, lane);
      float* mine = part + w * B * (B + 1);
#pragma unroll
      for (int e = 0; e < M::ACC; e++) mine[M::row(lane, e) * (B + 1) + M::col(lane, e)] = acc[e];
      __syncthreads();
      const float* at = part + i * (B + 1) + j;
      float s0 = 0.f, s1 = 0.f;
      for (int h = 0; h < G; h++) s0 += at[h * B * (B + 1)];
      if (NP == 2)
        for (int h = G; h < 2 * G; h++) s1 += at[h * B * (B + 1)];
      out0 = s0;
      out1 = s1;
      return;
    }
  }
  out0 = fb_dot<T, HD>(x0 + i * LD, y0 + j * LD);
  if (NP == 2) out1 = fb_dot<T, HD>(x1 + i * LD, y1 + j * LD);
}

// What both kernels read the visibility from.
struct FbVis {
  const void* mp;  // the mask's (batch, head) plane, u8 or T elements
  i64 mst, msk, diag, window;
  u32 tq, tk, maskKind, hasDiag;
};

// the scaled (and masked) score of query i and key j from their dot product; -inf where hidden
template <class T> RT_DEVICE float fb_score(const FbVis& vis, float dot, i64 i, i64 j, float scale) {
  if (i >= (i64)vis.tq || j >= (i64)vis.tk) return -INFINITY;
  if (vis.hasDiag) {
    const i64 lim = i + vis.diag;
    if (j > lim || (vis.window > 0 && j <= lim - vis.window)) return -INFINITY;
  }
  float s = dot * scale;
  if (vis.maskKind != 0) {
    const i64 mo = i * vis.mst + j * vis.msk;
    if (vis.maskKind == 1) {
      if (((const u8*)vis.mp)[mo] == 0) return -INFINITY;
    } else {
      s += fb_f(((const T*)vis.mp)[mo]);
    }
  }
  return s;
}

// P of a score against its row's lse (+inf for a row that sees nothing)
RT_DEVICE float fb_prob(float s, float lse) { return s == -INFINITY ? 0.f : expf(s - lse); }

template <class T> RT_DEVICE const void* fb_plane(const void* mask, u32 maskKind, i64 off) {
  return maskKind == 1 ? (const void*)((const u8*)mask + off)
      : maskKind == 2 ? (const void*)((const T*)mask + off) : mask;
}

template <class T, int HD>
RT_DEVICE void flash_bwd_dq(T* dq, float* lse, float* dd, const T* q, const T* k, const T* v, const T* o,
    const T* dout, const void* mask, u32 hq, u32 hkv, u32 tq, u32 tk, u32 d, i64 msb, i64 msh, i64 mst,
    i64 msk, u32 maskKind, u32 hasDiag, i64 diag, i64 window, float scale, u32 mma) {
  typedef FbCfg<T, HD> C;
  constexpr int B = C::B, LD = C::LD;
  __shared__ FbLds<T, HD> s;
  // the tile mapping needs exactly B x B threads
  if (blockDim.x != (u32)C::NT) return;
  const u32 tid = threadIdx.x, i = tid / B, j = tid % B;
  const u32 bh = blockIdx.x, bi = bh / hq, h = bh % hq, kvh = h / (hq / hkv);
  const i64 m0 = (i64)blockIdx.y * B;
  const i64 qp = (i64)bh * tq * d, kp = ((i64)bi * hkv + kvh) * tk * d;
  const FbVis vis{fb_plane<T>(mask, maskKind, (i64)bi * msb + (i64)h * msh), mst, msk, diag, window, tq, tk,
      maskKind, hasDiag};
  fb_load<T, HD>(s.q, q + qp, m0, tq, d);
  fb_load<T, HD>(s.dout, dout + qp, m0, tq, d);
  float* ss = s.part;
  // D = rowsum(dO * O): the B threads of row i take every B-th column
  float part = 0.f;
  if (m0 + i < (i64)tq)
    for (u32 c = j; c < d; c += B) part = fmaf(fb_f(dout[qp + (m0 + i) * d + c]), fb_f(o[qp + (m0 + i) * d + c]), part);
  ss[i * (B + 1) + j] = part;
  __syncthreads();
  if (j == 0) {
    float t = 0.f;
    for (int x = 0; x < B; x++) t += ss[i * (B + 1) + x];
    s.dd[i] = t;
    s.m[i] = -INFINITY;
    s.l[i] = 0.f;
  }
  // the keys some row of the tile may see
  i64 kbeg = 0, kend = tk;
  if (hasDiag) {
    kend = min(kend, m0 + B + diag);
    if (window > 0) kbeg = max(kbeg, m0 + diag - window + 1);
  }
  // pass 1: each row's running max and sum (kept by the row's thread j == 0)
  for (i64 n0 = kbeg; n0 < kend; n0 += B) {
    __syncthreads();
    fb_load<T, HD>(s.k, k + kp, n0, tk, d);
    __syncthreads();
    float dot = 0.f, unused = 0.f;
    fb_dots<T, HD, 1>(dot, unused, s.q, s.k, s.q, s.k, s.part, mma != 0);
    const float sc = fb_score<T>(vis, dot, m0 + i, n0 + j, scale);
    // the matrix-core body read its partial tiles from part: wait before the scores go there
    __syncthreads();
    ss[i * (B + 1) + j] = sc;
    __syncthreads();
    if (j == 0) {
      float mx = s.m[i];
      for (int x = 0; x < B; x++) mx = fmaxf(mx, ss[i * (B + 1) + x]);
      // hidden scores add nothing; a NaN score makes the sum NaN
      float l = s.m[i] == -INFINITY ? 0.f : s.l[i] * expf(s.m[i] - mx);
      for (int x = 0; x < B; x++) l += ss[i * (B + 1) + x] == -INFINITY ? 0.f : expf(ss[i * (B + 1) + x] - mx);
      s.m[i] = mx;
      s.l[i] = l;
    }
  }
  __syncthreads();
  if (j == 0) {
    const float L = s.m[i] == -INFINITY ? INFINITY : s.m[i] + logf(s.l[i]);
    s.m[i] = L;
    if (m0 + i < (i64)tq) {
      lse[bh * (i64)tq + m0 + i] = L;
      dd[bh * (i64)tq + m0 + i] = s.dd[i];
    }
  }
  // pass 2: dQ
  bool mc = false;
  if constexpr (C::MMA) mc = mma != 0;
  if (mc) {
    if constexpr (C::MMA) {
      typedef FbMma<T, FB_FAMILY> M;
      const u32 w = tid / FbL::WAVE, lane = tid % FbL::WAVE;
      float acc[C::CTW][M::ACC];
#pragma unroll
      for (int u = 0; u < C::CTW; u++)
#pragma unroll
        for (int e = 0; e < M::ACC; e++) acc[u][e] = 0.f;
      for (i64 n0 = kbeg; n0 < kend; n0 += B) {
        __syncthreads();
        fb_load<T, HD>(s.k, k + kp, n0, tk, d);
        fb_load<T, HD>(s.v, v + kp, n0, tk, d);
        __syncthreads();
        float sd = 0.f, dp = 0.f;
        fb_dots<T, HD, 2>(sd, dp, s.q, s.k, s.dout, s.v, s.part, true);
        const float p = fb_prob(fb_score<T>(vis, sd, m0 + i, n0 + j, scale), s.m[i]);
        s.ds[i * C::LDP + j] = Elem<T>::store(p * (dp - s.dd[i]));
        __syncthreads();
        // dQ tile ct += dS (query, key) K (key, dim)
#pragma unroll
        for (int u = 0; u < C::CTW; u++) {
          const int ct = (int)w + C::NW * u;
          if (ct < C::CT) M::run(acc[u], s.ds, C::LDP, 1, s.k + 16 * ct, LD, 1, 0, 1, 1, lane);
        }
      }
#pragma unroll
      for (int u = 0; u < C::CTW; u++) {
        const int ct = (int)w + C::NW * u;
        if (ct >= C::CT) continue;
#pragma unroll
        for (int e = 0; e < M::ACC; e++) {
          const i64 r = m0 + M::row(lane, e);
          const u32 c = (u32)(16 * ct + M::col(lane, e));
          if (r < (i64)tq && c < d) dq[qp + r * d + c] = Elem<T>::store(acc[u][e] * scale);
        }
      }
    }
    return;
  }
  float acc[C::CU];
#pragma unroll
  for (int u = 0; u < C::CU; u++) acc[u] = 0.f;
  for (i64 n0 = kbeg; n0 < kend; n0 += B) {
    __syncthreads();
    fb_load<T, HD>(s.k, k + kp, n0, tk, d);
    fb_load<T, HD>(s.v, v + kp, n0, tk, d);
    __syncthreads();
    const float p = fb_prob(fb_score<T>(vis, fb_dot<T, HD>(s.q + i * LD, s.k + j * LD), m0 + i, n0 + j, scale), s.m[i]);
    const float dp = fb_dot<T, HD>(s.dout + i * LD, s.v + j * LD);
    ss[i * (B + 1) + j] = p * (dp - s.dd[i]);
    __syncthreads();
#pragma unroll
    for (int u = 0; u < C::CU; u++) {
      const u32 c = j + B * u;
      if (c < (u32)HD)
        for (int x = 0; x < B; x++) acc[u] = fmaf(ss[i * (B + 1) + x], fb_f(s.k[x * LD + c]), acc[u]);
    }
  }
  if (m0 + i < (i64)tq) {
#pragma unroll
    for (int u = 0; u < C::CU; u++) {
      const u32 c = j + B * u;
      if (c < d) dq[qp + (m0 + i) * d + c] = Elem<T>::store(acc[u] * scale);
    }
  }
}

// flash_bwd_dkdv's step: query tile m0 of a head (its rows of q and dout from qh and doh, of lse
// and dd from lseh and ddh) into LDS, then P and dS of the tile against the block's keys
// n0 .. n0 + B, left in LDS for the products (the FMA body's as f32 in part, the matrix-core
// body's as T in p and ds)
template <class T, int HD>
RT_DEVICE void fb_pds(FbLds<T, HD>& s, const FbVis& vis, const T* qh, const T* doh, const float* lseh, const float* ddh,
    u32 d, float scale, i64 m0, i64 n0, bool mc) {
  typedef FbCfg<T, HD> C;
  constexpr int B = C::B;
  const u32 tid = threadIdx.x, i = tid / B, j = tid % B;
  __syncthreads();
  fb_load<T, HD>(s.q, qh, m0, vis.tq, d);
  fb_load<T, HD>(s.dout, doh, m0, vis.tq, d);
  if (tid < (u32)B) {
    const bool in = m0 + tid < (i64)vis.tq;
    s.m[tid] = in ? lseh[m0 + tid] : INFINITY;
    s.dd[tid] = in ? ddh[m0 + tid] : 0.f;
  }
  __syncthreads();
  float sd = 0.f, dp = 0.f;
  fb_dots<T, HD, 2>(sd, dp, s.q, s.k, s.dout, s.v, s.part, mc);
  const float p = fb_prob(fb_score<T>(vis, sd, m0 + i, n0 + j, scale), s.m[i]);
  const float ds = p * (dp - s.dd[i]);
  if constexpr (C::MMA) {
    if (mc) {
      s.p[i * C::LDP + j] = Elem<T>::store(p);
      s.ds[i * C::LDP + j] = Elem<T>::store(ds);
      __syncthreads();
      return;
    }
  }
  s.part[i * (B + 1) + j] = p;
  s.part[B * (B + 1) + i * (B + 1) + j] = ds;
  __syncthreads();
}

template <class T, int HD>
RT_DEVICE void flash_bwd_dkdv(T* dk, T* dv, const float* lse, const float* dd, const T* q, const T* k,
    const T* v, const T* dout, const void* mask, u32 hq, u32 hkv, u32 tq, u32 tk, u32 d, i64 msb, i64 msh,
    i64 mst, i64 msk, u32 maskKind, u32 hasDiag, i64 diag, i64 window, float scale, u32 mma) {
  typedef FbCfg<T, HD> C;
  constexpr int B = C::B, LD = C::LD;
  __shared__ FbLds<T, HD> s;
  if (blockDim.x != (u32)C::NT) return;
  const u32 tid = threadIdx.x, i = tid / B, j = tid % B;
  const u32 bh = blockIdx.x, bi = bh / hkv, kvh = bh % hkv, g = hq / hkv;
  const i64 n0 = (i64)blockIdx.y * B;
  const i64 kp = (i64)bh * tk * d;
  fb_load<T, HD>(s.k, k + kp, n0, tk, d);
  fb_load<T, HD>(s.v, v + kp, n0, tk, d);
  // the queries that see some key of the tile
  i64 qbeg = 0, qend = tq;
  if (hasDiag) {
    qbeg = max(qbeg, n0 - diag);
    if (window > 0) qend = min(qend, n0 + B - 1 - diag + window);
  }
#if defined(__AMDGCN__)
  // what only the scores read, in vector registers: the loops below keep many uniform values
  // live, and in scalar registers they spilled on the wave64 archs
  asm volatile("" : "+v"(mask), "+v"(msb), "+v"(msh), "+v"(mst), "+v"(msk), "+v"(diag), "+v"(window));
#endif
  bool mc = false;
  if constexpr (C::MMA) mc = mma != 0;
  if (mc) {
    if constexpr (C::MMA) {
      typedef FbMma<T, FB_FAMILY> M;
      const u32 w = tid / FbL::WAVE, lane = tid % FbL::WAVE;
      float ak[C::CTW][M::ACC], av[C::CTW][M::ACC];
#pragma unroll
      for (int u = 0; u < C::CTW; u++)
#pragma unroll
        for (int e = 0; e < M::ACC; e++) ak[u][e] = av[u][e] = 0.f;
      for (u32 hg = 0; hg < g; hg++) {
        const u32 h = kvh * g + hg;
        const i64 row0 = ((i64)bi * hq + h) * tq;
        const FbVis vis{fb_plane<T>(mask, maskKind, (i64)bi * msb + (i64)h * msh), mst, msk, diag, window, tq, tk, maskKind,
        hasDiag};
        for (i64 m0 = qbeg; m0 < qend; m0 += B) {
          fb_pds<T, HD>(s, vis, q + row0 * d, dout + row0 * d, lse + row0, dd + row0, d, scale, m0, n0, true);
          // dV tile ct += P^T (key, query) dO (query, dim); dK alike with dS and Q
#pragma unroll
          for (int u = 0; u < C::CTW; u++) {
            const int ct = (int)w + C::NW * u;
            if (ct < C::CT) {
              M::run(av[u], s.p, 1, C::LDP, s.dout + 16 * ct, LD, 1, 0, 1, 1, lane);
              M::run(ak[u], s.ds, 1, C::LDP, s.q + 16 * ct, LD, 1, 0, 1, 1, lane);
            }
          }
        }
      }
#pragma unroll
      for (int u = 0; u < C::CTW; u++) {
        const int ct = (int)w + C::NW * u;
        if (ct >= C::CT) continue;
#pragma unroll
        for (int e = 0; e < M::ACC; e++) {
          const i64 r = n0 + M::row(lane, e);
          const u32 c = (u32)(16 * ct + M::col(lane, e));
          if (r < (i64)tk && c < d) {
            dk[kp + r * d + c] = Elem<T>::store(ak[u][e] * scale);
            dv[kp + r * d + c] = Elem<T>::store(av[u][e]);
          }
        }
      }
    }
    return;
  }
  // FMA body: the accumulators' owner is key row i, columns j + B * u
  float ak[C::CU], av[C::CU];
#pragma unroll
  for (int u = 0; u < C::CU; u++) ak[u] = av[u] = 0.f;
  const float* sp = s.part;
  const float* sds = s.part + B * (B + 1);
  for (u32 hg = 0; hg < g; hg++) {
    const u32 h = kvh * g + hg;
    const i64 row0 = ((i64)bi * hq + h) * tq;
    const FbVis vis{fb_plane<T>(mask, maskKind, (i64)bi * msb + (i64)h * msh), mst, msk, diag, window, tq, tk, maskKind,
        hasDiag};
    for (i64 m0 = qbeg; m0 < qend; m0 += B) {
      fb_pds<T, HD>(s, vis, q + row0 * d, dout + row0 * d, lse + row0, dd + row0, d, scale, m0, n0, false);
#pragma unroll
      for (int u = 0; u < C::CU; u++) {
        const u32 c = j + B * u;
        if (c < (u32)HD) {
          for (int x = 0; x < B; x++) {
            av[u] = fmaf(sp[x * (B + 1) + i], fb_f(s.dout[x * LD + c]), av[u]);
            ak[u] = fmaf(sds[x * (B + 1) + i], fb_f(s.q[x * LD + c]), ak[u]);
          }
        }
      }
    }
  }
  if (n0 + i < (i64)tk) {
#pragma unroll
    for (int u = 0; u < C::CU; u++) {
      const u32 c = j + B * u;
      if (c < d) {
        dk[kp + (n0 + i) * d + c] = Elem<T>::store(ak[u] * scale);
        dv[kp + (n0 + i) * d + c] = Elem<T>::store(av[u]);
      }
    }
  }
}

#define FLASH_BWD(DT, T, HD)                                                                                       \
  RT_KERNEL void flash_bwd_dq_##DT##_##HD(T* dq, float* lse, float* dd, const T* q, const T* k, const T* v,        \
      const T* o, const T* dout, const void* mask, i64 dqOff, i64 lseOff, i64 ddOff, i64 qOff, i64 kOff,           \
      i64 vOff, i64 oOff, i64 doOff, i64 mOff, u32 hq, u32 hkv, u32 tq, u32 tk, u32 d, i64 msb, i64 msh,           \
      i64 mst, i64 msk, u32 maskKind, u32 hasDiag, i64 diag, i64 window, float scale, u32 mma) {                   \
    RT_GRID_DEP();                                                                                                 \
    flash_bwd_dq<T, HD>(dq + dqOff, lse + lseOff, dd + ddOff, q + qOff, k + kOff, v + vOff, o + oOff,              \
        dout + doOff, fb_plane<T>(mask, maskKind, mOff), hq, hkv, tq, tk, d, msb, msh, mst, msk, maskKind,         \
        hasDiag, diag, window, scale, mma);                                                                        \
  }                                                                                                                \
  RT_KERNEL void flash_bwd_dkdv_##DT##_##HD(T* dk, T* dv, const float* lse, const float* dd, const T* q,           \
      const T* k, const T* v, const T* dout, const void* mask, i64 dkOff, i64 dvOff, i64 lseOff, i64 ddOff,        \
      i64 qOff, i64 kOff, i64 vOff, i64 doOff, i64 mOff, u32 hq, u32 hkv, u32 tq, u32 tk, u32 d, i64 msb,          \
      i64 msh, i64 mst, i64 msk, u32 maskKind, u32 hasDiag, i64 diag, i64 window, float scale, u32 mma) {          \
    RT_GRID_DEP();                                                                                                 \
    flash_bwd_dkdv<T, HD>(dk + dkOff, dv + dvOff, lse + lseOff, dd + ddOff, q + qOff, k + kOff, v + vOff,          \
        dout + doOff, fb_plane<T>(mask, maskKind, mOff), hq, hkv, tq, tk, d, msb, msh, mst, msk, maskKind,         \
        hasDiag, diag, window, scale, mma);                                                                        \
  }

#define FLASH_BWD_DTS(HD) FLASH_BWD(f32, float, HD) FLASH_BWD(f16, f16, HD) FLASH_BWD(bf16, bf16, HD)
FLASH_BWD_DTS(64) FLASH_BWD_DTS(80) FLASH_BWD_DTS(96) FLASH_BWD_DTS(128) FLASH_BWD_DTS(256)
