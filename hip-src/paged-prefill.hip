// paged-prefill.hip: the prefill chunks of a serving step on the matrix cores, reading keys and
// values in place from the paged KV pools. It is flash.hip's forward kernel (its arch layer,
// tile loader for the queries, online softmax and masking, included from there) with the key and
// value tiles loaded through the block table: key j of a sequence is row (id * bs + j % bs) of its
// kv head's plane, id = the table's entry j / bs, so the pools must be slot-linear (a block's
// stride bs times a slot's, as a contiguous [blocks, bs, heads, d] pool is). A block takes BM
// query rows of one sequence's chunk and one query head; causal bottom-right (the chunk's query
// i sees the keys up to ctx - qlen + i) and, with window > 0, only the keys past that - window.
// The decode tokens and short chunks of the step go to paged-attention.hip's kernel instead.
//
// meta (u32): meta[0..seqs] the sequences' first query rows in q, meta[seqs + 1 + s] sequence
// s's cached tokens, then from meta[2 * seqs + 1] a (sequence, first row) pair per query tile,
// the host's list of this launch's tiles (gridDim.x of them). A block id outside [0, nblocks)
// is recorded in err (bad-id.h, tag) and its keys and values read as NaN.
//
// Kernels (DT f16 bf16, HD the head-dim bucket 64 or 128; d <= HD, v's head dim d too). Only the
// buckets of the common models (Llama, Qwen2, Mistral): the others' code would cost the package
// as much again, and their prefill chunks take paged-attention.hip's kernel.
//   paged_fwd_<DT>_<HD>(T* o, const T* q, const T* kp, const T* vp, const void* table,
//       const u32* meta, u64* err, i64 oOff, i64 qOff, i64 kOff, i64 vOff, i64 tOff, i64 mOff,
//       u32 seqs, u32 hq, u32 hkv, u32 d, u32 bs, u32 nblocks, u32 maxBlocks, u32 tableI64,
//       u32 tag, i64 qst, i64 qsh, i64 kss, i64 ksh, i64 vss, i64 vsh, i64 tsr, i64 tsc,
//       i64 window, float scale)
//     grid (tiles, hq), block and dynamic LDS as flash_fwd's (gpu/flash.ts, the tunings'
//     flashFwd). q [tokens, hq, d] (strides qst, qsh), pools' slot and head strides kss, ksh,
//     vss, vsh, table strides tsr, tsc; o contiguous [tokens, hq, d], only the tiles' rows written.
#define FLASH_NO_KERNELS
#include "flash.hip"
#include "paged-table.h"

template <class T, int HD>
RT_DEVICE void paged_fwd(T* o, const T* q, const T* kp, const T* vp, const void* table, const u32* meta, u64* err,
    u32 seqs, u32 hq, u32 hkv, u32 d, u32 bs, u32 nblocks, u32 maxBlocks, u32 tableI64, u32 tag,
    i64 qst, i64 qsh, i64 kss, i64 ksh, i64 vss, i64 vsh, i64 tsr, i64 tsc, i64 window, float scale) {
  typedef FlCfg<HD> C;
#if RT_CUDA
  typedef FlNv<T, HD, C::WR / 16> A;
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

  const u32 sq = meta[2 * seqs + 1 + 2 * blockIdx.x], m0 = meta[2 * seqs + 2 + 2 * blockIdx.x];
  const u32 h = blockIdx.y, kh = h / (hq / hkv);
  const u32 q0 = meta[sq], tq = meta[sq + 1] - q0, tk = meta[seqs + 1 + sq];
#if RT_CUDA
  if (blockDim.x != (u32)C::NT) return;
  const u32 waves = C::WAVES, bm = WR * waves;
#else
  const u32 waves = blockDim.x / (u32)(L::WAVE * C::CS), bm = WR * waves;
  if (bm > (u32)C::BM) return;
#endif
  const u32 lane = threadIdx.x % (u32)L::WAVE, w = threadIdx.x / (u32)L::WAVE % waves;
  const int ct0 = (int)(threadIdx.x / (u32)L::WAVE / waves) * C::CT;
  const T* qb = q + (i64)(q0 + m0) * qst + (i64)h * qsh;
  const T* kb = kp + (i64)kh * ksh;
  const T* vb = vp + (i64)kh * vsh;
  const PaTab tb = { (const u8*)table + (i64)sq * tsr * (tableI64 ? 8 : 4), tsc, err, (u64)sq * maxBlocks, bs, nblocks, tableI64, tag };
  const bool vq = d % 8 == 0 && qst % 8 == 0 && qsh % 8 == 0 && aligned16(q);
  const bool vk = d % 8 == 0 && kss % 8 == 0 && ksh % 8 == 0 && aligned16(kp);
  const bool vv = d % 8 == 0 && vss % 8 == 0 && vsh % 8 == 0 && aligned16(vp);

  // bottom-right: query i of the chunk sees the keys up to i + diag; the keys any row of this
  // block sees: [kbeg, kend)
  const i64 diag = (i64)tk - tq;
  const i64 qlast = (i64)min(m0 + bm, tq) - 1;
  const i64 kend = max((i64)0, min((i64)tk, qlast + diag + 1));
  const i64 kbeg = window > 0 ? max((i64)0, (i64)m0 + diag - window + 1) : 0;
  const u32 jfirst = (u32)(kbeg / BN) * BN;

  fl_tile<T, HD, false, true, C::NT>(qsm, qb, qst, (int)bm, (int)min(bm, tq - m0), d, vq, (int)threadIdx.x);
#if RT_CUDA
  if (C::Q_ROWS == 0) fl_wait<0>();
#else
  fl_wait<0>();
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

  if (jfirst < kend) pa_tile<T, HD, false, C::NT>(ksm, kb, kss, tb, jfirst, BN, (int)min((i64)BN, (i64)tk - jfirst), d, vk, (int)threadIdx.x);
  for (u32 j0 = jfirst; (i64)j0 < kend; j0 += BN) {
    const int nvalid = (int)min((i64)BN, (i64)tk - j0);
    pa_tile<T, HD, C::VT, C::NT>(vsm, vb, vss, tb, j0, BN, nvalid, d, vv, (int)threadIdx.x);
    fl_wait<1>();  // K of this block is in
    A::qk(s, qf, qw, ksm, lane);
    __syncthreads();  // every wave is done with K: the next block's K may load
    if ((i64)j0 + BN < kend) pa_tile<T, HD, false, C::NT>(ksm, kb, kss, tb, j0 + BN, BN, (int)min((i64)BN, (i64)tk - j0 - BN), d, vk, (int)threadIdx.x);
    else fl_commit();  // an empty group, so the wait for V below counts the same

    // masking only where this key block can hide something from some row of the block
    const bool edge = (i64)j0 + BN > (i64)tk || !(sl2 > 0.f) ||
        (i64)j0 + BN - 1 > (i64)m0 + diag || (window > 0 && (i64)j0 <= qlast + diag - window);
    if (edge) {
      int lo[R], hi[R];
#pragma unroll
      for (int r = 0; r < R; r++) fl_range<BN>((i64)m0 + w * WR + A::slot_row(lane, r), j0, tk, 1u, diag, window, lo[r], hi[r]);
      fl_scale<A, R, SN>(s, lo, hi, sl2, lane);
    }
    fl_online<A, R, SN, ON>(s, m, l, oacc, edge ? 1.f : sl2);

    fl_wait<1>();  // V of this block is in (the next K may still be loading)
    A::pv(oacc, s, vsm, lane, ct0);
    __syncthreads();  // every wave is done with V before the next block's loads into it
  }

  fl_fold<R>(l);
  // o's rows are tokens, hq * d apart
  T* ob = o + ((u64)(q0 + m0 + w * WR) * hq + h) * d;
  const u32 rows = tq > m0 + w * WR ? min((u32)WR, tq - m0 - w * WR) : 0u;
#pragma unroll
  for (int e = 0; e < ON; e++) {
    const int r = A::row(lane, e), c = ct0 * 16 + A::col(lane, e);
    if ((u32)r < rows && (u32)c < d) {
      const float lr = l[A::slot(e)];
      ob[(u64)r * hq * d + c] = Elem<T>::store(lr == 0.f ? 0.f : oacc[e] / lr);
    }
  }
}

#define PAGED_FWD(DT, T, HD) \
  RT_KERNEL void paged_fwd_##DT##_##HD(T* o, const T* q, const T* kp, const T* vp, const void* table, const u32* meta, \
      u64* err, i64 oOff, i64 qOff, i64 kOff, i64 vOff, i64 tOff, i64 mOff, u32 seqs, u32 hq, u32 hkv, u32 d, u32 bs, \
      u32 nblocks, u32 maxBlocks, u32 tableI64, u32 tag, i64 qst, i64 qsh, i64 kss, i64 ksh, i64 vss, i64 vsh, \
      i64 tsr, i64 tsc, i64 window, float scale) { RT_GRID_DEP(); \
    const void* tb = tableI64 ? (const void*)((const i64*)table + tOff) : (const void*)((const u32*)table + tOff); \
    paged_fwd<T, HD>(o + oOff, q + qOff, kp + kOff, vp + vOff, tb, meta + mOff, err, seqs, hq, hkv, d, bs, nblocks, \
        maxBlocks, tableI64, tag, qst, qsh, kss, ksh, vss, vsh, tsr, tsc, window, scale); }
#define PAGED_FWD_DTS(HD) PAGED_FWD(f16, f16, HD) PAGED_FWD(bf16, bf16, HD)
PAGED_FWD_DTS(64) PAGED_FWD_DTS(128)
