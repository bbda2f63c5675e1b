// paged-decode.hip: the decode tokens (and chunks of up to 16 queries) of a serving step on the
// matrix cores, reading keys and values in place from the paged KV pools. It is flash.hip's decode
// kernel (flash_dec: its arch layer, LDS budget, warp groups on NVIDIA, online softmax and
// masking, included from there) with the sequence's lengths read from meta and the key and value
// tiles loaded through the block table (paged-table.h), so the pools must be slot-linear. A block
// takes one entry of the host's list, 16 rows of one sequence's short chunk times one kv head's
// group (row r: query head kh * g + r / qlen, query r % qlen, so grouped-query heads read their
// shared keys once), and one split of the keys those rows see: causal bottom-right (query i of a
// chunk of qlen queries after ctx - qlen cached tokens sees the keys up to ctx - qlen + i) and,
// with window > 0, only those past that - window. A sequence's visible key blocks are shared out
// evenly over the splits (gridDim.y times the block's groups), so mixed lengths balance; a split
// past a short sequence's keys sees none. With gridDim.y > 1 each block's unnormalized rows go to
// wso [tokens * hq, splits, d] and their (max, sum) to wsml [tokens * hq, splits, 2] (max in the
// natural-log domain) for attention.hip's attn_merge, as flash_dec and paged-attention.hip do.
//
// meta (u32): meta[0..seqs] the sequences' first query rows in q, meta[seqs + 1 + s] sequence
// s's cached tokens, and from meta[listAt] a (sequence, first row) pair per entry, the host's
// list of this launch's row tiles (gridDim.x / hkv of them). A block id outside [0, nblocks) is
// recorded in err (bad-id.h, tag) and its keys and values read as NaN.
//
// Kernels (DT f16 bf16, HD the head-dim bucket 64 or 128, as paged-prefill.hip; d <= HD, v's
// head dim d too):
//   paged_dec_<DT>_<HD>(T* o, float* wso, float* wsml, const T* q, const T* kp, const T* vp,
//       const void* table, const u32* meta, u64* err, i64 oOff, i64 qOff, i64 kOff, i64 vOff,
//       i64 tOff, i64 mOff, u32 seqs, u32 hq, u32 hkv, u32 d, u32 bs, u32 nblocks,
//       u32 maxBlocks, u32 tableI64, u32 tag, u32 splits, u32 listAt, i64 qst, i64 qsh, i64 kss,
//       i64 ksh, i64 vss, i64 vsh, i64 tsr, i64 tsc, i64 window, float scale)
//     grid (entries * hkv, splits), block, groups and dynamic LDS as flash_dec's (gpu/flash.ts
//     decodePlan). q [tokens, hq, d] (strides qst, qsh), pools' slot and head strides kss, ksh,
//     vss, vsh, table strides tsr, tsc; o contiguous [tokens, hq, d], only the entries' rows
//     written (with splits > 1, by attn_merge).
#define FLASH_NO_KERNELS
#include "flash.hip"
#include "paged-table.h"

template <class T, int HD>
RT_DEVICE void paged_dec(T* o, float* wso, float* wsml, const T* q, const T* kp, const T* vp, const void* table,
    const u32* meta, u64* err, u32 seqs, u32 hq, u32 hkv, u32 d, u32 bs, u32 nblocks, u32 maxBlocks, u32 tableI64,
    u32 tag, u32 splits, u32 listAt, i64 qst, i64 qsh, i64 kss, i64 ksh, i64 vss, i64 vsh, i64 tsr, i64 tsc,
    i64 window, float scale) {
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
  static_assert((16 * HD + 32) * 4 <= GE * (int)sizeof(T), "paged_dec: a group's LDS holds its rows in f32");
#else
  __shared__ __attribute__((aligned(16))) T lds0[GE];
  const u32 ks = 1, grp = 0, gt = threadIdx.x;
  constexpr int NT = 0;
#endif
  T* const lds = lds0 + grp * GE;
  T* const qsm = lds;
  T* const ksm = lds + QR * LD;
  T* const vsm = ksm + BN * LD;

  // the entry's sequence, its queries [q0, q0 + tq) and cached tokens tk, and its 16-row tile
  const u32 entry = blockIdx.x / hkv, kh = blockIdx.x % hkv;
  const u32 sq = meta[listAt + 2 * entry], r0 = meta[listAt + 2 * entry + 1];
  const u32 q0 = meta[sq], tq = meta[sq + 1] - q0, tk = meta[seqs + 1 + sq];
  const u32 g = hq / hkv, rows = g * tq;
  const u32 nr = min(16u, rows - r0);
  const i64 diag = (i64)tk - tq;
  // the sequence's visible keys from a key block's start, shared out by whole key blocks over
  // every split (gridDim.y blocks of ks groups)
  const i64 vbeg = window > 0 ? max((i64)0, diag - window + 1) / BN * BN : 0;
  const u32 nsplit = gridDim.y * ks, kblocks = tk > vbeg ? (u32)(((i64)tk - vbeg + BN - 1) / BN) : 0u;
  const u32 perSplit = (kblocks + nsplit - 1) / nsplit * BN;
  const i64 js = min((i64)tk, vbeg + (i64)(blockIdx.y * ks + grp) * perSplit), je = min((i64)tk, js + perSplit);
  const u32 lane = gt % (u32)L::WAVE;
  const int ct0 = (int)(gt / (u32)L::WAVE) * C::CT;
  const T* kb = kp + (i64)kh * ksh;
  const T* vb = vp + (i64)kh * vsh;
  PaTab tb = { (const u8*)table + (i64)sq * tsr * (tableI64 ? 8 : 4), tsc, err, (u64)sq * maxBlocks, bs, nblocks, tableI64, tag };
#if RT_HIP
  // On wave64 (MFMA) the table's fields, read back from LDS after the first K block's loads,
  // live in vector registers: as scalars next to the lengths they come from they spilled the
  // scalar registers of gfx90a (as flash_fwd's FlBase). The wave32 archs keep them scalar.
  __shared__ PaTab stb;
  if (L::WAVE == 64 && threadIdx.x == 0) stb = tb;
#endif
  const bool vk = d % 8 == 0 && kss % 8 == 0 && ksh % 8 == 0 && aligned16(kp);
  const bool vv = d % 8 == 0 && vss % 8 == 0 && vsh % 8 == 0 && aligned16(vp);

  // the split's keys any row sees (rows' queries taken as all of [0, tq)); blocks start at js
  const i64 kend = je, kbeg = window > 0 ? max(js, diag - window + 1) : js;
  const u32 jfirst = (u32)(js + (kbeg - js) / BN * BN);
  // the first K block is asked for before the queries, so their loads' latencies overlap
  if ((i64)jfirst < kend) pa_tile<T, HD, false, NT>(ksm, kb, kss, tb, jfirst, BN, (int)min((i64)BN, (i64)tk - jfirst), d, vk, (int)gt);

  // the tile's query rows, gathered (rows of different heads need not be equally spaced), zero
  // past the last row and past column d; NVIDIA stages them in the V region, free until the loop
  T* const qst0 = QR ? qsm : vsm;
  const bool vq = d % 8 == 0 && qst % 8 == 0 && qsh % 8 == 0 && aligned16(q);
  for (u32 x = gt; x < 16u * CH; x += (u32)GT) {
    const u32 r = x / CH, c = x % CH * 8, rr = r0 + min(r, nr - 1);
    const T* src = q + (i64)(q0 + rr % tq) * qst + (i64)(kh * g + rr / tq) * qsh + c;
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
#if RT_HIP
  if (L::WAVE == 64) tb = stb;
#endif
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
    pa_tile<T, HD, C::VT, NT>(vsm, vb, vss, tb, j0, BN, (int)min((i64)BN, (i64)tk - j0), d, vv, (int)gt);
    fl_wait<1, true>();  // K of this block is in
    A::qk(s, qf, qsm, ksm, lane);
    fl_gsync();
    if ((i64)j0 + BN < kend) pa_tile<T, HD, false, NT>(ksm, kb, kss, tb, j0 + BN, BN, (int)min((i64)BN, (i64)tk - j0 - BN), d, vk, (int)gt);
    else fl_commit();

    const bool edge = (i64)j0 + BN > je || !(sl2 > 0.f) ||
        (i64)j0 + BN - 1 > diag || (window > 0 && (i64)j0 <= (i64)tq - 1 + diag - window);
    if (edge) {
      int lo[R], hi[R];
#pragma unroll
      for (int r = 0; r < R; r++) fl_range<BN>(qi[r], j0, je, 1u, diag, window, lo[r], hi[r]);
      fl_scale<A, R, SN>(s, lo, hi, sl2, lane);
    }
    fl_online<A, R, SN, ON>(s, m, l, oacc, edge ? 1.f : sl2);
    fl_wait<1, true>();  // V of this block is in
    A::pv(oacc, s, vsm, lane, ct0);
    fl_gsync();
  }

  fl_fold<R>(l);
  // row r (of the tile), column c of the block's result: unnormalized sum acc, the row's max (log2
  // domain) and sum; the output itself with one split, else this split's part for attn_merge.
  // o's rows are tokens, hq * d apart
  auto put = [&](u32 r, u32 c, float acc, float mx, float sum) {
    const u32 rr = r0 + r;
    const u64 orow = (u64)(q0 + rr % tq) * hq + kh * g + rr / tq;
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
  // The groups meet in LDS as flash_dec's do: each group's 16 unnormalized rows [16][HD] and
  // their (max, sum) in its own region, weighed by exp2(max - the rows' maximum), groups that saw
  // no key skipped.
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

#define PAGED_DEC(DT, T, HD) \
  RT_KERNEL void paged_dec_##DT##_##HD(T* o, float* wso, float* wsml, const T* q, const T* kp, const T* vp, \
      const void* table, const u32* meta, u64* err, i64 oOff, i64 qOff, i64 kOff, i64 vOff, i64 tOff, i64 mOff, \
      u32 seqs, u32 hq, u32 hkv, u32 d, u32 bs, u32 nblocks, u32 maxBlocks, u32 tableI64, u32 tag, u32 splits, \
      u32 listAt, i64 qst, i64 qsh, i64 kss, i64 ksh, i64 vss, i64 vsh, i64 tsr, i64 tsc, i64 window, \
      float scale) { RT_GRID_DEP(); \
    const void* tb = tableI64 ? (const void*)((const i64*)table + tOff) : (const void*)((const u32*)table + tOff); \
    paged_dec<T, HD>(o + oOff, wso, wsml, q + qOff, kp + kOff, vp + vOff, tb, meta + mOff, err, seqs, hq, hkv, d, bs, \
        nblocks, maxBlocks, tableI64, tag, splits, listAt, qst, qsh, kss, ksh, vss, vsh, tsr, tsc, window, scale); }
#define PAGED_DEC_DTS(HD) PAGED_DEC(f16, f16, HD) PAGED_DEC(bf16, bf16, HD)
PAGED_DEC_DTS(64) PAGED_DEC_DTS(128)
