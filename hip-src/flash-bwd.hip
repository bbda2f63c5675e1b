// flash-bwd.hip: the gradient of scaled dot-product attention recomputed tile by tile, with no
// score matrix in global memory and no atomics (every output element has one writer, so results
// do not depend on scheduling). Sums in f32.
//
// Two kernels per (dtype, head-dim bucket), run in this order:
//   flash_bwd_dq: a block owns a tile of query rows of one (batch, query head). Pass 1 walks the visible
//     keys for the rows' log-sum-exp (online max and sum) and takes D = rowsum(dO * O); both go to
//     global memory (f32) for the second kernel. The tiled kernel skips pass 1 where the forward
//     (flash.hip's flash_fwd) kept the log-sum-exp already. Pass 2 walks the keys again:
//     P = exp(S - lse), dP = dO V^T, dS = P (dP - D), dQ += dS K * scale.
//   flash_bwd_dkdv: a block owns a tile of keys of one (batch, kv head) and walks the query tiles of every
//     query head of its group (GQA: dK and dV sum over them here, not through atomics):
//     dV += P^T dO, dK += dS^T Q * scale.
// Three bodies, by dtype, head dim, arch and the `mma` argument:
//   tiled matrix-core body (its own kernels, *_tc_*: f16 and bf16 up to head dim 128 with the
//     matrix cores asked for, on NVIDIA mma.sync
//     m16n8k16 and AMD MFMA 16x16x16 on gfx90a/gfx942/gfx950): a block owns 64 rows, four groups
//     of 16, each a wave (wave64) or two (NVIDIA's wave32, splitting the inner tiles); a wave holds its 16 rows' operands (Q and dO, or K and V) and its output
//     accumulators in registers, the other side is staged in LDS 64 rows at a time, and P and dS
//     go from the score accumulators straight into the next product's operand (FlashAttention-2's
//     scheme; see "the tiled matrix-core body" below). Its products need no barrier between
//     them: 16 x 16 tiles whose products the waves split, summing partials in LDS behind
//     barriers, ran slower than composed GEMMs (docs/internals/tried-not-kept.md).
//   16 x 16 matrix-core body (f16 and bf16 with mma 1 at head dim 256, whose accumulators would
//     not fit the registers of the tiled one, and on gfx11 and gfx12 (WMMA 16x16x16), where the
//     tiled body's wave32 lanes spilled): a block is 16 x 16 threads, thread (i, j) turns score
//     (query i, key j) of the tile into P and dS; the waves split the head dim of S = Q K^T and
//     dP = dO V^T (partial tiles summed in LDS), then the 16-wide column tiles of dQ (or dK, dV).
//   FMA body (f32, gfx1030, mma 0): the same 16 x 16 threads (8 x 8 for f32 at head dim 256),
//     thread (i, j) making its dot products from the LDS tiles.
// P and dS are rounded to the input type for the matrix-core products (as FlashAttention does).
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
//     grid (b * hq, ceil(tq / B)), block B * B threads (FbCfg: B 16, 256 threads; f32 at head
//     dim 256: B 8, 64 threads)
//   flash_bwd_dkdv_<DT>_<HD>(T* dk, T* dv, const float* lse, const float* dd, const T* q,
//       const T* k, const T* v, const T* dout, const void* mask, i64 x9 offsets, then as dq
//     grid (b * hkv, ceil(tk / B)), block B * B threads
//   flash_bwd_dq_tc_<DT>_<HD>, flash_bwd_dkdv_tc_<DT>_<HD>: the tiled body, the same arguments
//     (mma unread), DT f16 bf16, HD 64 80 96 128; grids over blocks of 64 rows (ceil(tq / 64),
//     ceil(tk / 64)), 256 threads. Where the body is not compiled (gfx1030, gfx11, gfx12) they
//     stop with a trap; the launcher takes the other kernels there.
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

// query rows m0 .. m0 + B, B x B threads
template <class T, int HD>
RT_DEVICE void fb_dq_tile(FbLds<T, HD>& s, T* dq, float* lse, float* dd, const T* q, const T* k, const T* v,
    const T* o, const T* dout, const void* mask, u32 hq, u32 hkv, u32 tq, u32 tk, u32 d, i64 msb, i64 msh,
    i64 mst, i64 msk, u32 maskKind, u32 hasDiag, i64 diag, i64 window, float scale, u32 mma, i64 m0) {
  typedef FbCfg<T, HD> C;
  constexpr int B = C::B, LD = C::LD;
  const u32 tid = threadIdx.x, i = tid / B, j = tid % B;
  const u32 bh = blockIdx.x, bi = bh / hq, h = bh % hq, kvh = h / (hq / hkv);
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

// keys n0 .. n0 + B, B x B threads
template <class T, int HD>
RT_DEVICE void fb_dkdv_tile(FbLds<T, HD>& s, T* dk, T* dv, const float* lse, const float* dd, const T* q,
    const T* k, const T* v, const T* dout, const void* mask, u32 hq, u32 hkv, u32 tq, u32 tk, u32 d, i64 msb,
    i64 msh, i64 mst, i64 msk, u32 maskKind, u32 hasDiag, i64 diag, i64 window, float scale, u32 mma, i64 n0) {
  typedef FbCfg<T, HD> C;
  constexpr int B = C::B, LD = C::LD;
  const u32 tid = threadIdx.x, i = tid / B, j = tid % B;
  const u32 bh = blockIdx.x, bi = bh / hkv, kvh = bh % hkv, g = hq / hkv;
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

// ---- the tiled matrix-core body (f16, bf16, head dims up to 128) ----------------------------
// A block of 256 threads owns BT = 64 rows (dq: queries, dkdv: keys), 16 a group of waves: on
// wave64 a group is one wave; on wave32 two, each taking half of every inner tile (their sums meet
// in LDS once, at the end). A wave keeps its rows' operands (Q and dO, or K and V) in registers
// for the whole loop and its output rows' accumulators (f32) in registers; the other side (K and
// V tiles, or Q and dO tiles of IT rows) is staged in LDS by 16-byte loads. Per 16-row chunk of
// that tile the wave makes its 16 x 16 scores and dP, turns them into P and dS (rounded to the
// input type, as FlashAttention does) and feeds them straight from the accumulators to the next
// product as an operand: on NVIDIA the accumulators of two n8 tiles are the A operand, on AMD
// the accumulator of S (other side in rows, own rows in columns) is the B operand (gfx11's
// replicated B takes one exchange across half-waves). No LDS round trip, no barrier per chunk.
// Chunks no row of the wave sees (causal, window) are skipped.
template <class T, int HD> struct FbTc {
  // wave32 AMD (gfx11, gfx12) keeps the 16 x 16 body: a lane there holds 8 accumulators a tile
  // (gfx11 also 16 operand values), and the tiled body's registers spilled
  static constexpr bool ON = FbHasMma<T>::v && HD <= 128 && (FB_MC == 1 || FB_MC == 2);
  static constexpr int WAVE = FbL::WAVE, NW = 256 / WAVE, SPLIT = NW / 4;
  static constexpr int BT = 64, LD = HD + 8, KS = HD / 16;
  // rows of the other side staged at a time. 128 on NVIDIA (twice the products between barriers)
  // took 1.39 ms where 64 took 1.26 at head dim 64 with two blocks a multiprocessor (FB_TC_KERNEL)
  static constexpr int IT = 64;
  // 16-row chunks of an inner tile a wave takes
  static constexpr int CH = IT / SPLIT / 16;
  // 16-bit elements of the staged tiles (a stand-in where the body is not compiled)
  static constexpr int STAGE = ON ? 2 * IT * LD : 8;
};

template <class T, int HD> struct FbTcLds {
  // the staged tiles (dq: K and V; dkdv: Q and dO); also f32 scratch for the wave pairs' sums
  alignas(16) T ab[FbTc<T, HD>::STAGE];
  // dkdv: lse (in base 2) and D of the staged queries
  float x[FbTc<T, HD>::IT], y[FbTc<T, HD>::IT];
  // dq: the second wave of a pair's row maxima and sums; the block's lse and D
  float m[64], l[64], lse[64], dd[64];
};

// 16-row chunks: query rows ra .. ra + 16 against keys ka .. ka + 16, some pair visible
RT_DEVICE bool fb_chunk_sees(u32 hasDiag, i64 diag, i64 window, i64 ra, i64 ka) {
  if (!hasDiag) return true;
  if (ka > ra + 15 + diag) return false;
  return !(window > 0 && ka + 15 <= ra + diag - window);
}

// 16-row chunks that need no per-element visibility: inside both lengths, every pair visible, no mask
RT_DEVICE bool fb_chunk_plain(const FbVis& vis, i64 ra, i64 ka) {
  if (vis.maskKind != 0 || ra + 16 > (i64)vis.tq || ka + 16 > (i64)vis.tk) return false;
  if (!vis.hasDiag) return true;
  return ka + 15 <= ra + vis.diag && !(vis.window > 0 && ka <= ra + 15 + vis.diag - vis.window);
}

// 2^x (the hardware's approximation: P is rounded to 16 bits for its products anyway)
RT_DEVICE float fb_exp2(float x) {
#if RT_CUDA
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
#else
  return __builtin_amdgcn_exp2f(x);
#endif
}
#define FB_LOG2E 1.4426950408889634f

struct alignas(16) FbV16 { u32 x[4]; };

// full unrolling on the GPU (the fragments then stay in registers); the host emulator's compiler
// declines it for the fragment loads, which there changes nothing
#if defined(__HIP_DEVICE_COMPILE__) || defined(__CUDA_ARCH__)
#define FB_UNROLL_DEVICE _Pragma("unroll")
#else
#define FB_UNROLL_DEVICE
#endif

// rows r0 .. r0 + ROWS of a contiguous [rows, d] plane into LDS rows LD apart: 16 bytes a load
// where rows start 16-byte aligned, else element by element; zeros past the last row and past d
template <class T, int HD, int ROWS, int LD>
RT_DEVICE void fb_tile(T* dst, const T* src, i64 r0, i64 rows, u32 d) {
  constexpr int CPR = HD / 8;
  if (d % 8 == 0 && (u64)(size_t)src % 16 == 0) {
    for (u32 x = threadIdx.x; x < (u32)(ROWS * CPR); x += blockDim.x) {
      const u32 r = x / CPR, c = x % CPR * 8;
      FbV16* to = (FbV16*)(dst + r * LD + c);
      if (r0 + r < rows && c < d) *to = *(const FbV16*)(src + (r0 + r) * (i64)d + c);
      else *to = FbV16{{0u, 0u, 0u, 0u}};
    }
    return;
  }
  for (u32 x = threadIdx.x; x < (u32)(ROWS * HD); x += blockDim.x) {
    const u32 r = x / HD, c = x % HD;
    dst[r * LD + c] = (r0 + r < rows && c < d) ? src[(r0 + r) * (i64)d + c] : T{};
  }
}

// The next staged tile's copy, started before the current tile's products (head dims up to 64,
// 16-byte rows): its loads wait in registers while the products run, where a block of 256
// threads has at most one other beside it on its multiprocessor and would otherwise wait on each copy.
// Wider head dims have no registers to spare and copy in place (fb_tile).
template <class T, int HD> struct FbStage {
  typedef FbTc<T, HD> C;
  static constexpr bool PF = HD <= 64;
  static constexpr int CPR = HD / 8, N = PF ? C::IT * CPR / 256 : 1;
  static_assert(!PF || C::IT * CPR % 256 == 0, "the copy's pieces spread evenly over 256 threads");
  FbV16 v[N];
  // rows r0 .. r0 + IT of a [rows, d] plane whose rows start 16-byte aligned
  RT_DEVICE void fetch(const T* src, i64 r0, i64 rows, u32 d) {
#pragma unroll
    for (int i = 0; i < N; i++) {
      const u32 x = threadIdx.x + 256 * i, r = x / CPR, c = x % CPR * 8;
      if (r0 + r < rows && c < d) v[i] = *(const FbV16*)(src + (r0 + r) * (i64)d + c);
      else v[i] = FbV16{{0u, 0u, 0u, 0u}};
    }
  }
  RT_DEVICE void put(T* dst) const {
#pragma unroll
    for (int i = 0; i < N; i++) {
      const u32 x = threadIdx.x + 256 * i;
      *(FbV16*)(dst + x / CPR * C::LD + x % CPR * 8) = v[i];
    }
  }
  // whether the copies of these planes can start early
  static RT_DEVICE bool on(const void* a, const void* b, u32 d) {
    return PF && d % 8 == 0 && ((u64)(size_t)a | (u64)(size_t)b) % 16 == 0;
  }
};

// elements (row, col) and (row, col + 1) of a [rows, d] plane as one word, zeros outside
template <class T> RT_DEVICE u32 fb_gpair(const T* p, i64 row, i64 rows, u32 d, u32 col) {
  if (row >= rows) return 0u;
  const u32 lo = col < d ? (u32)p[row * (i64)d + col].bits : 0u;
  const u32 hi = col + 1 < d ? (u32)p[row * (i64)d + col + 1].bits : 0u;
  return lo | hi << 16;
}
// two adjacent 16-bit elements of LDS (at even) as one word
template <class T> RT_DEVICE u32 fb_lpair(const T* p, int at) {
  u32 w;
  __builtin_memcpy(&w, p + at, 4);
  return w;
}
template <class T> RT_DEVICE u32 fb_pack(float lo, float hi) {
  return (u32)Elem<T>::store(lo).bits | (u32)Elem<T>::store(hi).bits << 16;
}
RT_DEVICE float fb_xor(float v, int m) {
#if RT_CUDA
  return __shfl_xor_sync(0xffffffffu, v, m, 32);
#else
  return __shfl_xor(v, m, FbL::WAVE);
#endif
}

// The wave-level layer. A 16 x 16 tile of a product has its own side (the wave's 16 rows) and the
// other side (16 rows of a staged tile, or 16 head dims). Score products X = Own Oth^T: both sides
// rows of head-dim vectors (pair(r, k): elements k, k + 1 of row r). Gradient products
// G += X Y: X from score accumulators, Y (other row k, head dim n) from LDS (get(k, n)).
// Accumulator element e of a lane is (own(lane, e), oth(lane, e)); a lane's own rows are R slots.
#if FB_MC == 1
// ldmatrix .x4 of 16-bit elements: lane l gives the address of row l % 8 of matrix l / 8 (16
// bytes); register i of lane l holds matrix i's row l / 4, elements 2 (l % 4) and 2 (l % 4) + 1,
// or with TRANS its column l / 4, rows 2 (l % 4) and 2 (l % 4) + 1. The host emulator defines it
// from the PTX ISA's description.
template <int TRANS> RT_DEVICE void fb_ldsm(u32 (&r)[4], const void* p);
#endif
#if RT_CUDA
template <> RT_DEVICE void fb_ldsm<0>(u32 (&r)[4], const void* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
      : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"((u32)__cvta_generic_to_shared(p)));
}
template <> RT_DEVICE void fb_ldsm<1>(u32 (&r)[4], const void* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];"
      : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"((u32)__cvta_generic_to_shared(p)));
}
#endif

#if FB_MC == 1
struct FbW {
  static constexpr int ACC = 8, OW = 4, R = 2, XOR0 = 1, XOR1 = 2;
  static RT_DEVICE int own(u32 l, int e) { return FbL::acc_row((int)l, e & 3); }
  static RT_DEVICE int oth(u32 l, int e) { return 8 * (e >> 2) + FbL::acc_col((int)l, e & 3); }
  static RT_DEVICE int slot(int e) { return (e >> 1) & 1; }
  static RT_DEVICE int own_row(u32 l, int r) { return (int)l / 4 + 8 * r; }
  // the lanes that write a row's statistics once
  static RT_DEVICE bool first(u32 l) { return l % 4 == 0; }
  // own side: the A operand (row, k)
  template <class F> static RT_DEVICE void ld_own(u32 (&w)[OW], F pair, u32 l) {
#pragma unroll
    for (int i = 0; i < 4; i++) w[i] = pair(FbL::a_row((int)l, 2 * i), FbL::a_k((int)l, 2 * i));
  }
  // other side: the B operands (k, n) of two n8 tiles, n the other row
  template <class F> static RT_DEVICE void ld_oth(u32 (&w)[OW], F pair, u32 l) {
#pragma unroll
    for (int n8 = 0; n8 < 2; n8++)
#pragma unroll
      for (int i = 0; i < 2; i++) w[2 * n8 + i] = pair(8 * n8 + FbL::b_n((int)l, 0), FbL::b_k((int)l, 2 * i));
  }
  template <class F> static RT_DEVICE void ld_y(u32 (&w)[OW], F get, u32 l) {
#pragma unroll
    for (int n8 = 0; n8 < 2; n8++)
#pragma unroll
      for (int i = 0; i < 2; i++) {
        const int n = 8 * n8 + FbL::b_n((int)l, 0);
        w[2 * n8 + i] = get(FbL::b_k((int)l, 2 * i), n) | get(FbL::b_k((int)l, 2 * i + 1), n) << 16;
      }
  }
  // ld_oth from LDS rows ld apart (base: other row 0, k 0): one ldmatrix, matrix m the n8 tile
  // m / 2 and k half m % 2
  template <class T> static RT_DEVICE void oth_lds(u32 (&w)[OW], const T* base, int ld, u32 l) {
    const int m = (int)l / 8;
    fb_ldsm<0>(w, base + (8 * (m / 2) + (int)l % 8) * ld + 8 * (m % 2));
  }
  // ld_y from LDS rows ld apart (base: other row 0, head dim 0): one transposing ldmatrix
  template <class T> static RT_DEVICE void y_lds(u32 (&w)[OW], const T* base, int ld, u32 l) {
    const int m = (int)l / 8;
    fb_ldsm<1>(w, base + (8 * (m % 2) + (int)l % 8) * ld + 8 * (m / 2));
  }
  template <class T> static RT_DEVICE void mma_s(float (&c)[ACC], const u32 (&own)[OW], const u32 (&oth)[OW]) {
    fb_mma_nv<T>(c, own, oth[0], oth[1]);
    fb_mma_nv<T>(c + 4, own, oth[2], oth[3]);
  }
  template <class T> static RT_DEVICE void mma_g(float (&c)[ACC], const u32 (&x)[OW], const u32 (&y)[OW]) {
    mma_s<T>(c, x, y);
  }
  // accumulator element v is A operand element v (mma-layout.h)
  template <class T> static RT_DEVICE void pack_x(u32 (&w)[OW], const float (&c)[ACC], u32) {
#pragma unroll
    for (int i = 0; i < 4; i++) w[i] = fb_pack<T>(c[2 * i], c[2 * i + 1]);
  }
};
#elif FB_MC >= 2
struct FbW {
  static constexpr int ACC = FbL::ACC, OW = FbL::OPS / 2, R = 1, XOR0 = FbL::XOR0, XOR1 = FbL::XOR1;
  static RT_DEVICE int own(u32 l, int) { return (int)(l % 16); }
  static RT_DEVICE int oth(u32 l, int e) { return FbL::acc_row((int)l, e); }
  static RT_DEVICE int slot(int) { return 0; }
  static RT_DEVICE int own_row(u32 l, int) { return (int)(l % 16); }
  static RT_DEVICE bool first(u32 l) { return l < 16; }
  // own side: the B operand (k, column)
  template <class F> static RT_DEVICE void ld_own(u32 (&w)[OW], F pair, u32 l) {
#pragma unroll
    for (int i = 0; i < OW; i++) w[i] = pair((int)(l % 16), FbL::b_k((int)l, 2 * i));
  }
  // other side: the A operand (row, k)
  template <class F> static RT_DEVICE void ld_oth(u32 (&w)[OW], F pair, u32 l) {
#pragma unroll
    for (int i = 0; i < OW; i++) w[i] = pair((int)(l % 16), FbL::a_k((int)l, 2 * i));
  }
  // Y^T as the A operand: row n (head dim), k the other row
  template <class F> static RT_DEVICE void ld_y(u32 (&w)[OW], F get, u32 l) {
    const int n = (int)(l % 16);
#pragma unroll
    for (int i = 0; i < OW; i++) w[i] = get(FbL::a_k((int)l, 2 * i), n) | get(FbL::a_k((int)l, 2 * i + 1), n) << 16;
  }
  template <class T> static RT_DEVICE void oth_lds(u32 (&w)[OW], const T* base, int ld, u32 l) {
    ld_oth(w, [&](int r, int c) { return fb_lpair(base, r * ld + c); }, l);
  }
  template <class T> static RT_DEVICE void y_lds(u32 (&w)[OW], const T* base, int ld, u32 l) {
    ld_y(w, [&](int kk, int n) { return (u32)base[kk * ld + n].bits; }, l);
  }
  template <class T> static RT_DEVICE void mma_s(float (&c)[ACC], const u32 (&own)[OW], const u32 (&oth)[OW]) {
    FbPack<FbL::OPS> a, b;
#pragma unroll
    for (int i = 0; i < OW; i++) {
      a.w[i] = oth[i];
      b.w[i] = own[i];
    }
    fb_mma_amd<T>(c, a, b);
  }
  template <class T> static RT_DEVICE void mma_g(float (&c)[ACC], const u32 (&x)[OW], const u32 (&y)[OW]) {
    mma_s<T>(c, x, y);
  }
  // the accumulator (k in rows) as the B operand: element v is accumulator element v, except on
  // gfx11, whose B holds all 16 k of the column: k v sits in the half-wave of its parity
  template <class T> static RT_DEVICE void pack_x(u32 (&w)[OW], const float (&c)[ACC], u32 l) {
    if constexpr (FbL::EXCHANGE) {
      const bool hi = l >= 16;
#pragma unroll
      for (int i = 0; i < ACC; i++) {
        const float there = fb_xor(c[i], 16);
        w[i] = hi ? fb_pack<T>(there, c[i]) : fb_pack<T>(c[i], there);
      }
    } else {
#pragma unroll
      for (int i = 0; i < OW; i++) w[i] = fb_pack<T>(c[2 * i], c[2 * i + 1]);
    }
  }
};
#endif

#if FB_MC != 0
// P of a scaled score against its row's lse in base 2 (+inf for a row that sees nothing)
RT_DEVICE float fb_prob2(float s, float lse2) { return s == -INFINITY ? 0.f : fb_exp2(fmaf(s, FB_LOG2E, -lse2)); }

// the wave pairs' partial accumulators (wave32: waves g and g + 4 share rows) summed into the
// first wave of each pair through LDS scratch (cap floats), a few tiles a round
template <class T, int HD, int KS, int ACC>
RT_DEVICE void fb_pair_sum(float (&acc)[KS][ACC], float* scr, u32 grp, u32 sp, u32 lane) {
  typedef FbTc<T, HD> C;
  if constexpr (C::SPLIT > 1) {
    constexpr int TILE = ACC * C::WAVE;
    // tiles a round: the scratch is the staged tiles' LDS (IT * LD 16-bit pairs)
    constexpr int PER = C::IT * C::LD / (4 * TILE);
    static_assert(PER >= 1, "the pair sums need a tile a round");
    // rounds stay a loop (its barriers); the tiles' loops unroll, so acc keeps constant indices
    for (int r = 0; r < (KS + PER - 1) / PER; r++) {
      __syncthreads();
      if (sp == 1)
#pragma unroll
        for (int t = 0; t < KS; t++)
          if (t / PER == r)
#pragma unroll
            for (int e = 0; e < ACC; e++) scr[(grp * PER + t % PER) * TILE + e * C::WAVE + lane] = acc[t][e];
      __syncthreads();
      if (sp == 0)
#pragma unroll
        for (int t = 0; t < KS; t++)
          if (t / PER == r)
#pragma unroll
            for (int e = 0; e < ACC; e++) acc[t][e] += scr[(grp * PER + t % PER) * TILE + e * C::WAVE + lane];
    }
  }
}

// two rows' online (max, sum) merged; a zero sum (nothing visible) adds nothing, a NaN one stays
RT_DEVICE void fb_merge(float& m, float& l, float m2, float l2) {
  const float mn = fmaxf(m, m2);
  l = (l == 0.f ? 0.f : l * fb_exp2((m - mn) * FB_LOG2E)) + (l2 == 0.f ? 0.f : l2 * fb_exp2((m2 - mn) * FB_LOG2E));
  m = mn;
}

template <class T, int HD>
RT_DEVICE void fb_tc_dq(FbTcLds<T, HD>& s, T* dq, float* lse, float* dd, const T* q, const T* k, const T* v,
    const T* o, const T* dout, const void* mask, u32 hq, u32 hkv, u32 tq, u32 tk, u32 d, i64 msb, i64 msh,
    i64 mst, i64 msk, u32 maskKind, u32 hasDiag, i64 diag, i64 window, float scale, u32 lseGiven) {
  typedef FbTc<T, HD> C;
  typedef FbW W;
  constexpr int LD = C::LD, KS = C::KS, ACC = W::ACC, R = W::R;
  const u32 tid = threadIdx.x, w = tid / C::WAVE, lane = tid % C::WAVE, grp = w % 4, sp = w / 4;
  const u32 bh = blockIdx.x, bi = bh / hq, h = bh % hq, kvh = h / (hq / hkv);
  const i64 m0 = (i64)blockIdx.y * C::BT, own0 = m0 + 16 * grp;
  const i64 qp = (i64)bh * tq * d, kp = ((i64)bi * hkv + kvh) * tk * d;
  const FbVis vis{fb_plane<T>(mask, maskKind, (i64)bi * msb + (i64)h * msh), mst, msk, diag, window, tq, tk,
      maskKind, hasDiag};
  T* ks = s.ab;
  T* vs = s.ab + C::IT * LD;
  float* scr = (float*)s.ab;
#if defined(__AMDGCN__)
  // read once or twice a block: vector registers, leaving the scalar ones to the loops
  asm volatile("" : "+v"(dq), "+v"(lse), "+v"(dd), "+v"(o), "+v"(q), "+v"(dout), "+v"(hkv));
#endif
  // D = rowsum(dO * O): four threads a row, their partial sums through LDS
  {
    const u32 r = tid / 4;
    float part = 0.f;
    if (m0 + r < (i64)tq) {
      const T* a = dout + qp + (m0 + r) * d;
      const T* b = o + qp + (m0 + r) * d;
      if (d % 8 == 0 && ((u64)(size_t)(dout + qp) | (u64)(size_t)(o + qp)) % 16 == 0) {
        // 16 bytes a load where the rows allow
        for (u32 c = tid % 4 * 8; c < d; c += 32) {
          alignas(16) T x[8];
          alignas(16) T y[8];
          *(FbV16*)x = *(const FbV16*)(a + c);
          *(FbV16*)y = *(const FbV16*)(b + c);
#pragma unroll
          for (int e = 0; e < 8; e++) part = fmaf(fb_f(x[e]), fb_f(y[e]), part);
        }
      } else {
        for (u32 c = tid % 4; c < d; c += 4) part = fmaf(fb_f(a[c]), fb_f(b[c]), part);
      }
    }
    scr[tid] = part;
    __syncthreads();
    if (tid < 64) s.dd[tid] = scr[4 * tid] + scr[4 * tid + 1] + scr[4 * tid + 2] + scr[4 * tid + 3];
  }
  // the wave's rows of Q and dO as operands, for the whole loop
  u32 qf[KS][W::OW], of[KS][W::OW];
FB_UNROLL_DEVICE
  for (int x = 0; x < KS; x++) {
    W::ld_own(qf[x], [&](int r, int c) { return fb_gpair(q + qp, own0 + r, tq, d, (u32)(16 * x + c)); }, lane);
    W::ld_own(of[x], [&](int r, int c) { return fb_gpair(dout + qp, own0 + r, tq, d, (u32)(16 * x + c)); }, lane);
  }
  // the keys some row of the block may see
  i64 kbeg = 0, kend = tk;
  if (hasDiag) {
    kend = min(kend, m0 + C::BT + diag);
    if (window > 0) kbeg = max(kbeg, m0 + diag - window + 1);
  }
  FbStage<T, HD> sk, sv;
  const bool pf = FbStage<T, HD>::on(k + kp, v + kp, d);
  if (lseGiven) {
    // the forward's log-sum-exp (flash.hip): pass 1 is not needed
    if (tid < 64) {
      const bool in = m0 + tid < (i64)tq;
      s.lse[tid] = in ? lse[bh * (i64)tq + m0 + tid] : INFINITY;
      if (in) dd[bh * (i64)tq + m0 + tid] = s.dd[tid];
    }
  } else {
    // pass 1: each lane's running max and sum of its rows' scores
    float mr[R], lr[R];
#pragma unroll
    for (int r = 0; r < R; r++) {
      mr[r] = -INFINITY;
      lr[r] = 0.f;
    }
    if (pf && kbeg < kend) sk.fetch(k + kp, kbeg, tk, d);
    for (i64 n0 = kbeg; n0 < kend; n0 += C::IT) {
      __syncthreads();
      if (pf) sk.put(ks);
      else fb_tile<T, HD, C::IT, LD>(ks, k + kp, n0, tk, d);
      __syncthreads();
      if (pf && n0 + C::IT < kend) sk.fetch(k + kp, n0 + C::IT, tk, d);
#pragma unroll
      for (int ch = 0; ch < C::CH; ch++) {
        const int o0 = 16 * ((int)sp * C::CH + ch);
        const i64 ka = n0 + o0;
        if (ka >= (i64)tk || own0 >= (i64)tq || !fb_chunk_sees(hasDiag, diag, window, own0, ka)) continue;
        float sc[ACC];
#pragma unroll
        for (int e = 0; e < ACC; e++) sc[e] = 0.f;
#pragma unroll
        for (int x = 0; x < KS; x++) {
          u32 ow[W::OW];
          W::template oth_lds<T>(ow, ks + o0 * LD + 16 * x, LD, lane);
          W::template mma_s<T>(sc, qf[x], ow);
        }
        float cm[R];
#pragma unroll
        for (int r = 0; r < R; r++) cm[r] = -INFINITY;
        if (fb_chunk_plain(vis, own0, ka)) {
#pragma unroll
          for (int e = 0; e < ACC; e++) sc[e] *= scale;
        } else {
#pragma unroll
          for (int e = 0; e < ACC; e++) sc[e] = fb_score<T>(vis, sc[e], own0 + W::own(lane, e), ka + W::oth(lane, e), scale);
        }
#pragma unroll
        for (int e = 0; e < ACC; e++) cm[W::slot(e)] = fmaxf(cm[W::slot(e)], sc[e]);
#pragma unroll
        for (int r = 0; r < R; r++) {
          const float mn = fmaxf(mr[r], cm[r]);
          lr[r] = lr[r] == 0.f ? 0.f : lr[r] * fb_exp2((mr[r] - mn) * FB_LOG2E);
          mr[r] = mn;
        }
#pragma unroll
        for (int e = 0; e < ACC; e++)
          lr[W::slot(e)] += sc[e] == -INFINITY ? 0.f : fb_exp2((sc[e] - mr[W::slot(e)]) * FB_LOG2E);
      }
    }
    // the lanes of a row, then the two waves of a pair
#pragma unroll
    for (int r = 0; r < R; r++) {
      fb_merge(mr[r], lr[r], fb_xor(mr[r], W::XOR0), fb_xor(lr[r], W::XOR0));
      if (W::XOR1) fb_merge(mr[r], lr[r], fb_xor(mr[r], W::XOR1), fb_xor(lr[r], W::XOR1));
    }
    __syncthreads();
    if (C::SPLIT > 1 && sp == 1 && W::first(lane))
#pragma unroll
      for (int r = 0; r < R; r++) {
        s.m[16 * grp + W::own_row(lane, r)] = mr[r];
        s.l[16 * grp + W::own_row(lane, r)] = lr[r];
      }
    __syncthreads();
    if (sp == 0 && W::first(lane))
#pragma unroll
      for (int r = 0; r < R; r++) {
        const int row = 16 * (int)grp + W::own_row(lane, r);
        if (C::SPLIT > 1) fb_merge(mr[r], lr[r], s.m[row], s.l[row]);
        const float L = lr[r] == 0.f ? INFINITY : mr[r] + logf(lr[r]);
        s.lse[row] = L;
        if (m0 + row < (i64)tq) {
          lse[bh * (i64)tq + m0 + row] = L;
          dd[bh * (i64)tq + m0 + row] = s.dd[row];
        }
      }
  }
  __syncthreads();
  // lse in base 2 for the probabilities
  float lrow[R], drow[R];
#pragma unroll
  for (int r = 0; r < R; r++) {
    lrow[r] = s.lse[16 * grp + W::own_row(lane, r)] * FB_LOG2E;
    drow[r] = s.dd[16 * grp + W::own_row(lane, r)];
  }
  // pass 2: dQ += dS K
  float acc[KS][ACC];
#pragma unroll
  for (int x = 0; x < KS; x++)
#pragma unroll
    for (int e = 0; e < ACC; e++) acc[x][e] = 0.f;
  if (pf && kbeg < kend) {
    sk.fetch(k + kp, kbeg, tk, d);
    sv.fetch(v + kp, kbeg, tk, d);
  }
  for (i64 n0 = kbeg; n0 < kend; n0 += C::IT) {
    __syncthreads();
    if (pf) {
      sk.put(ks);
      sv.put(vs);
    } else {
      fb_tile<T, HD, C::IT, LD>(ks, k + kp, n0, tk, d);
      fb_tile<T, HD, C::IT, LD>(vs, v + kp, n0, tk, d);
    }
    __syncthreads();
    if (pf && n0 + C::IT < kend) {
      sk.fetch(k + kp, n0 + C::IT, tk, d);
      sv.fetch(v + kp, n0 + C::IT, tk, d);
    }
#pragma unroll
    for (int ch = 0; ch < C::CH; ch++) {
      const int o0 = 16 * ((int)sp * C::CH + ch);
      const i64 ka = n0 + o0;
      if (ka >= (i64)tk || own0 >= (i64)tq || !fb_chunk_sees(hasDiag, diag, window, own0, ka)) continue;
      float sc[ACC], dp[ACC];
#pragma unroll
      for (int e = 0; e < ACC; e++) sc[e] = dp[e] = 0.f;
#pragma unroll
      for (int x = 0; x < KS; x++) {
        u32 ow[W::OW];
        W::template oth_lds<T>(ow, ks + o0 * LD + 16 * x, LD, lane);
        W::template mma_s<T>(sc, qf[x], ow);
        W::template oth_lds<T>(ow, vs + o0 * LD + 16 * x, LD, lane);
        W::template mma_s<T>(dp, of[x], ow);
      }
      if (fb_chunk_plain(vis, own0, ka)) {
#pragma unroll
        for (int e = 0; e < ACC; e++) sc[e] = fb_exp2(fmaf(sc[e], scale * FB_LOG2E, -lrow[W::slot(e)]));
      } else {
#pragma unroll
        for (int e = 0; e < ACC; e++) sc[e] = fb_prob2(fb_score<T>(vis, sc[e], own0 + W::own(lane, e), ka + W::oth(lane, e), scale), lrow[W::slot(e)]);
      }
#pragma unroll
      for (int e = 0; e < ACC; e++) dp[e] = sc[e] * (dp[e] - drow[W::slot(e)]);
      u32 xw[W::OW];
      W::template pack_x<T>(xw, dp, lane);
FB_UNROLL_DEVICE
      for (int x = 0; x < KS; x++) {
        u32 yw[W::OW];
        W::template y_lds<T>(yw, ks + o0 * LD + 16 * x, LD, lane);
        W::template mma_g<T>(acc[x], xw, yw);
      }
    }
  }
  fb_pair_sum<T, HD, KS, ACC>(acc, scr, grp, sp, lane);
  if (sp != 0) return;
#pragma unroll
  for (int x = 0; x < KS; x++)
#pragma unroll
    for (int e = 0; e < ACC; e++) {
      const i64 r = own0 + W::own(lane, e);
      const u32 c = (u32)(16 * x + W::oth(lane, e));
      if (r < (i64)tq && c < d) dq[qp + r * d + c] = Elem<T>::store(acc[x][e] * scale);
    }
}

// thread tid's query of the IT-row tile at m0 (rows of a head from row0): its lse in base 2 and D
template <int IT>
RT_DEVICE void fb_rowstats(float& x, float& y, const float* lse, const float* dd, i64 row0, i64 m0, u32 tq) {
  const u32 tid = threadIdx.x;
  if (tid >= (u32)IT) return;
  const bool in = m0 + tid < (i64)tq;
  x = in ? lse[row0 + m0 + tid] * FB_LOG2E : INFINITY;
  y = in ? dd[row0 + m0 + tid] : 0.f;
}

template <class T, int HD>
RT_DEVICE void fb_tc_dkdv(FbTcLds<T, HD>& s, T* dk, T* dv, const float* lse, const float* dd, const T* q,
    const T* k, const T* v, const T* dout, const void* mask, u32 hq, u32 hkv, u32 tq, u32 tk, u32 d, i64 msb,
    i64 msh, i64 mst, i64 msk, u32 maskKind, u32 hasDiag, i64 diag, i64 window, float scale) {
  typedef FbTc<T, HD> C;
  typedef FbW W;
  constexpr int LD = C::LD, KS = C::KS, ACC = W::ACC;
  const u32 tid = threadIdx.x, w = tid / C::WAVE, lane = tid % C::WAVE, grp = w % 4, sp = w / 4;
  const u32 bh = blockIdx.x, bi = bh / hkv, kvh = bh % hkv, g = hq / hkv;
  const i64 n0 = (i64)blockIdx.y * C::BT, own0 = n0 + 16 * grp;
  const i64 kp = (i64)bh * tk * d;
  T* qs = s.ab;
  T* dos = s.ab + C::IT * LD;
#if defined(__AMDGCN__)
  asm volatile("" : "+v"(dk), "+v"(dv), "+v"(lse), "+v"(dd), "+v"(k), "+v"(v));
#endif
  // the wave's keys and values as operands, for the whole loop
  u32 kf[KS][W::OW], vf[KS][W::OW];
FB_UNROLL_DEVICE
  for (int x = 0; x < KS; x++) {
    W::ld_own(kf[x], [&](int r, int c) { return fb_gpair(k + kp, own0 + r, tk, d, (u32)(16 * x + c)); }, lane);
    W::ld_own(vf[x], [&](int r, int c) { return fb_gpair(v + kp, own0 + r, tk, d, (u32)(16 * x + c)); }, lane);
  }
  // the queries that see some key of the block
  i64 qbeg = 0, qend = tq;
  if (hasDiag) {
    qbeg = max(qbeg, n0 - diag);
    if (window > 0) qend = min(qend, n0 + C::BT - 1 - diag + window);
  }
  float ak[KS][ACC], av[KS][ACC];
#pragma unroll
  for (int x = 0; x < KS; x++)
#pragma unroll
    for (int e = 0; e < ACC; e++) ak[x][e] = av[x][e] = 0.f;
  // one loop over (query head of the group, query tile): the next copy starts a step ahead
  const i64 nt = qend > qbeg ? (qend - qbeg + C::IT - 1) / C::IT : 0, steps = (i64)g * nt;
  FbStage<T, HD> sq, so;
  const bool pf = FbStage<T, HD>::on(q, dout, d);
  const i64 rowb = ((i64)bi * hq + (i64)kvh * g) * tq;
  if (pf && steps > 0) {
    sq.fetch(q + rowb * d, qbeg, tq, d);
    so.fetch(dout + rowb * d, qbeg, tq, d);
  }
  // the staged queries' lse (base 2) and D, also a step ahead where the tiles are
  float nx = 0.f, ny = 0.f;
  if (FbStage<T, HD>::PF && steps > 0) fb_rowstats<C::IT>(nx, ny, lse, dd, rowb, qbeg, tq);
  for (i64 st = 0; st < steps; st++) {
    const u32 hg = (u32)(st / nt), h = kvh * g + hg;
    const i64 row0 = rowb + (i64)hg * tq, m0 = qbeg + st % nt * C::IT;
    const FbVis vis{fb_plane<T>(mask, maskKind, (i64)bi * msb + (i64)h * msh), mst, msk, diag, window, tq, tk, maskKind,
        hasDiag};
    __syncthreads();
    if (pf) {
      sq.put(qs);
      so.put(dos);
    } else {
      fb_tile<T, HD, C::IT, LD>(qs, q + row0 * d, m0, tq, d);
      fb_tile<T, HD, C::IT, LD>(dos, dout + row0 * d, m0, tq, d);
    }
    if (!FbStage<T, HD>::PF) fb_rowstats<C::IT>(nx, ny, lse, dd, row0, m0, tq);
    if (tid < (u32)C::IT) {
      s.x[tid] = nx;
      s.y[tid] = ny;
    }
    __syncthreads();
    if (FbStage<T, HD>::PF && st + 1 < steps) {
      const i64 r1 = rowb + (st + 1) / nt * tq, m1 = qbeg + (st + 1) % nt * C::IT;
      if (pf) {
        sq.fetch(q + r1 * d, m1, tq, d);
        so.fetch(dout + r1 * d, m1, tq, d);
      }
      fb_rowstats<C::IT>(nx, ny, lse, dd, r1, m1, tq);
    }
#pragma unroll
    for (int ch = 0; ch < C::CH; ch++) {
      const int o0 = 16 * ((int)sp * C::CH + ch);
      const i64 qa = m0 + o0;
      if (qa >= (i64)tq || own0 >= (i64)tk || !fb_chunk_sees(hasDiag, diag, window, qa, own0)) continue;
      float sc[ACC], dp[ACC];
#pragma unroll
      for (int e = 0; e < ACC; e++) sc[e] = dp[e] = 0.f;
#pragma unroll
      for (int x = 0; x < KS; x++) {
        u32 ow[W::OW];
        W::template oth_lds<T>(ow, qs + o0 * LD + 16 * x, LD, lane);
        W::template mma_s<T>(sc, kf[x], ow);
        W::template oth_lds<T>(ow, dos + o0 * LD + 16 * x, LD, lane);
        W::template mma_s<T>(dp, vf[x], ow);
      }
      if (fb_chunk_plain(vis, qa, own0)) {
#pragma unroll
        for (int e = 0; e < ACC; e++) sc[e] = fb_exp2(fmaf(sc[e], scale * FB_LOG2E, -s.x[o0 + W::oth(lane, e)]));
      } else {
#pragma unroll
        for (int e = 0; e < ACC; e++) {
          const int qi = o0 + W::oth(lane, e);
          sc[e] = fb_prob2(fb_score<T>(vis, sc[e], m0 + qi, own0 + W::own(lane, e), scale), s.x[qi]);
        }
      }
#pragma unroll
      for (int e = 0; e < ACC; e++) dp[e] = sc[e] * (dp[e] - s.y[o0 + W::oth(lane, e)]);
      u32 pw[W::OW], dw[W::OW];
      W::template pack_x<T>(pw, sc, lane);
      W::template pack_x<T>(dw, dp, lane);
FB_UNROLL_DEVICE
      for (int x = 0; x < KS; x++) {
        u32 yw[W::OW];
        W::template y_lds<T>(yw, dos + o0 * LD + 16 * x, LD, lane);
        W::template mma_g<T>(av[x], pw, yw);
        W::template y_lds<T>(yw, qs + o0 * LD + 16 * x, LD, lane);
        W::template mma_g<T>(ak[x], dw, yw);
      }
    }
  }
  float* scr = (float*)s.ab;
  fb_pair_sum<T, HD, KS, ACC>(ak, scr, grp, sp, lane);
  fb_pair_sum<T, HD, KS, ACC>(av, scr, grp, sp, lane);
  if (sp != 0) return;
#pragma unroll
  for (int x = 0; x < KS; x++)
#pragma unroll
    for (int e = 0; e < ACC; e++) {
      const i64 r = own0 + W::own(lane, e);
      const u32 c = (u32)(16 * x + W::oth(lane, e));
      if (r < (i64)tk && c < d) {
        dk[kp + r * d + c] = Elem<T>::store(ak[x][e] * scale);
        dv[kp + r * d + c] = Elem<T>::store(av[x][e]);
      }
    }
}
#endif

// The tiled body is its own kernel (flash_bwd_dq_tc_*, flash_bwd_dkdv_tc_*), so that each has
// the registers of one body (together in one kernel their scalar registers spilled). Where it is
// not compiled (FbTc::ON false: gfx1030, gfx11, gfx12) the kernel exists but stops (a trap): the
// launcher (flash-grad.ts flashGradTiled) never starts it there.
// (defined where there are matrix cores; instantiated only where FbTc::ON)
template <class T, int HD>
RT_DEVICE void fb_tc_dq(FbTcLds<T, HD>& s, T* dq, float* lse, float* dd, const T* q, const T* k, const T* v,
    const T* o, const T* dout, const void* mask, u32 hq, u32 hkv, u32 tq, u32 tk, u32 d, i64 msb, i64 msh,
    i64 mst, i64 msk, u32 maskKind, u32 hasDiag, i64 diag, i64 window, float scale, u32 lseGiven);
template <class T, int HD>
RT_DEVICE void fb_tc_dkdv(FbTcLds<T, HD>& s, T* dk, T* dv, const float* lse, const float* dd, const T* q,
    const T* k, const T* v, const T* dout, const void* mask, u32 hq, u32 hkv, u32 tq, u32 tk, u32 d, i64 msb,
    i64 msh, i64 mst, i64 msk, u32 maskKind, u32 hasDiag, i64 diag, i64 window, float scale);

RT_DEVICE void fb_stop() {
#if RT_CUDA
  __trap();
#else
  __builtin_trap();
#endif
}

template <class T, int HD>
RT_DEVICE void flash_bwd_dq(T* dq, float* lse, float* dd, const T* q, const T* k, const T* v, const T* o,
    const T* dout, const void* mask, u32 hq, u32 hkv, u32 tq, u32 tk, u32 d, i64 msb, i64 msh, i64 mst,
    i64 msk, u32 maskKind, u32 hasDiag, i64 diag, i64 window, float scale, u32 mma) {
  typedef FbCfg<T, HD> C;
  __shared__ FbLds<T, HD> s;
  // the tile mapping needs exactly B x B threads
  if (blockDim.x != (u32)C::NT) return;
  fb_dq_tile<T, HD>(s, dq, lse, dd, q, k, v, o, dout, mask, hq, hkv, tq, tk, d, msb, msh, mst, msk, maskKind, hasDiag,
      diag, window, scale, mma, (i64)blockIdx.y * C::B);
}

template <class T, int HD>
RT_DEVICE void flash_bwd_dkdv(T* dk, T* dv, const float* lse, const float* dd, const T* q, const T* k,
    const T* v, const T* dout, const void* mask, u32 hq, u32 hkv, u32 tq, u32 tk, u32 d, i64 msb, i64 msh,
    i64 mst, i64 msk, u32 maskKind, u32 hasDiag, i64 diag, i64 window, float scale, u32 mma) {
  typedef FbCfg<T, HD> C;
  __shared__ FbLds<T, HD> s;
  if (blockDim.x != (u32)C::NT) return;
  fb_dkdv_tile<T, HD>(s, dk, dv, lse, dd, q, k, v, dout, mask, hq, hkv, tq, tk, d, msb, msh, mst, msk, maskKind,
      hasDiag, diag, window, scale, mma, (i64)blockIdx.y * C::B);
}

template <class T, int HD>
RT_DEVICE void flash_bwd_dq_tc(T* dq, float* lse, float* dd, const T* q, const T* k, const T* v, const T* o,
    const T* dout, const void* mask, u32 hq, u32 hkv, u32 tq, u32 tk, u32 d, i64 msb, i64 msh, i64 mst,
    i64 msk, u32 maskKind, u32 hasDiag, i64 diag, i64 window, float scale, u32 lseGiven) {
  if constexpr (FbTc<T, HD>::ON) {
    __shared__ FbTcLds<T, HD> s;
    if (blockDim.x != 256u) return;
#if defined(__AMDGCN__)
    // what only the scores read, in vector registers: in scalar ones they spilled
    asm volatile("" : "+v"(mask), "+v"(msb), "+v"(msh), "+v"(mst), "+v"(msk), "+v"(diag), "+v"(window));
#endif
    fb_tc_dq<T, HD>(s, dq, lse, dd, q, k, v, o, dout, mask, hq, hkv, tq, tk, d, msb, msh, mst, msk, maskKind, hasDiag,
        diag, window, scale, lseGiven);
    return;
  }
  fb_stop();
}

template <class T, int HD>
RT_DEVICE void flash_bwd_dkdv_tc(T* dk, T* dv, const float* lse, const float* dd, const T* q, const T* k,
    const T* v, const T* dout, const void* mask, u32 hq, u32 hkv, u32 tq, u32 tk, u32 d, i64 msb, i64 msh,
    i64 mst, i64 msk, u32 maskKind, u32 hasDiag, i64 diag, i64 window, float scale) {
  if constexpr (FbTc<T, HD>::ON) {
    __shared__ FbTcLds<T, HD> s;
    if (blockDim.x != 256u) return;
#if defined(__AMDGCN__)
    asm volatile("" : "+v"(mask), "+v"(msb), "+v"(msh), "+v"(mst), "+v"(msk), "+v"(diag), "+v"(window));
#endif
    fb_tc_dkdv<T, HD>(s, dk, dv, lse, dd, q, k, v, dout, mask, hq, hkv, tq, tk, d, msb, msh, mst, msk, maskKind,
        hasDiag, diag, window, scale);
    return;
  }
  fb_stop();
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

// The tiled kernels on NVIDIA up to head dim 64: two blocks a multiprocessor (registers capped at
// 128, a few spilled) hide the latencies that one block of 8 warps (227 registers) left exposed:
// 1.70 -> 1.26 ms on an H200 (bench:attention-grad, d 64). At head dim 128 the cap spilled more
// and ran slower (6.24 -> 8.25 ms).
#if RT_CUDA
#define FB_TC_KERNEL(HD) extern "C" __global__ __launch_bounds__(256, (HD) <= 64 ? 2 : 1)
#else
#define FB_TC_KERNEL(HD) RT_KERNEL
#endif

// the tiled body's kernels: f16 and bf16 up to head dim 128, the same arguments; the last one of
// flash_bwd_dq_tc says lse holds the forward's log-sum-exp already (flash.hip), so the kernel reads
// it instead of recomputing it (flash_bwd_dkdv_tc ignores it)
#define FLASH_BWD_TC(DT, T, HD)                                                                                    \
  FB_TC_KERNEL(HD) void flash_bwd_dq_tc_##DT##_##HD(T* dq, float* lse, float* dd, const T* q, const T* k, const T* v,     \
      const T* o, const T* dout, const void* mask, i64 dqOff, i64 lseOff, i64 ddOff, i64 qOff, i64 kOff,           \
      i64 vOff, i64 oOff, i64 doOff, i64 mOff, u32 hq, u32 hkv, u32 tq, u32 tk, u32 d, i64 msb, i64 msh,           \
      i64 mst, i64 msk, u32 maskKind, u32 hasDiag, i64 diag, i64 window, float scale, u32 lseGiven) {              \
    RT_GRID_DEP();                                                                                                 \
    flash_bwd_dq_tc<T, HD>(dq + dqOff, lse + lseOff, dd + ddOff, q + qOff, k + kOff, v + vOff, o + oOff,           \
        dout + doOff, fb_plane<T>(mask, maskKind, mOff), hq, hkv, tq, tk, d, msb, msh, mst, msk, maskKind,         \
        hasDiag, diag, window, scale, lseGiven);                                                                   \
  }                                                                                                                \
  FB_TC_KERNEL(HD) void flash_bwd_dkdv_tc_##DT##_##HD(T* dk, T* dv, const float* lse, const float* dd, const T* q,        \
      const T* k, const T* v, const T* dout, const void* mask, i64 dkOff, i64 dvOff, i64 lseOff, i64 ddOff,        \
      i64 qOff, i64 kOff, i64 vOff, i64 doOff, i64 mOff, u32 hq, u32 hkv, u32 tq, u32 tk, u32 d, i64 msb,          \
      i64 msh, i64 mst, i64 msk, u32 maskKind, u32 hasDiag, i64 diag, i64 window, float scale, u32) {              \
    RT_GRID_DEP();                                                                                                 \
    flash_bwd_dkdv_tc<T, HD>(dk + dkOff, dv + dvOff, lse + lseOff, dd + ddOff, q + qOff, k + kOff, v + vOff,       \
        dout + doOff, fb_plane<T>(mask, maskKind, mOff), hq, hkv, tq, tk, d, msb, msh, mst, msk, maskKind,         \
        hasDiag, diag, window, scale);                                                                             \
  }

#define FLASH_BWD_TC_DTS(HD) FLASH_BWD_TC(f16, f16, HD) FLASH_BWD_TC(bf16, bf16, HD)
FLASH_BWD_TC_DTS(64) FLASH_BWD_TC_DTS(80) FLASH_BWD_TC_DTS(96) FLASH_BWD_TC_DTS(128)
