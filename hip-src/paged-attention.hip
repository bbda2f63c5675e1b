// paged-attention.hip: attention over a paged KV cache in one launch for a whole serving step:
// the queries of several sequences packed along one dim (prefill chunks and single decode tokens
// mixed), each sequence's keys and values read in place from shared pools of fixed-size blocks
// through its row of a block table. A block takes one query token, up to RT query heads of one
// kv head's group (grouped-query heads read their shared keys once) and one split of the keys the
// token sees; splits run side by side so a short batch still fills the device, and attention.hip's
// attn_merge combines their partial results. All rows of a block belong to one token, so they see
// the same keys: causal bottom-right (query i of a sequence with qlen queries and ctx cached
// tokens sits at position ctx - qlen + i and sees the keys up to it) and, with window > 0, only
// the keys past position - window. No score matrix in global memory; sums in f32 with the
// softmax kept online across chunks of PA_SC keys (running max m, sum l, the output accumulator
// rescaled by exp(m_old - m_new)). FMA math on every vendor and arch.
//
// The step's lengths are read on the device, from meta (u32): meta[0..seqs] the sequences' first
// query rows in q (meta[seqs] = tokens), meta[seqs + 1 + s] sequence s's cached tokens. The grid
// is fixed by the token count alone, so a captured graph replays with new lengths written there.
// A block id outside [0, nblocks) is recorded in err (bad-id.h, tag) and read as NaN.
//
// Kernels (DT in f32 f16 bf16; T storage; strides in elements, the head dim has unit stride):
//   paged_attn_r<RT>_<DT>(T* o, float* wso, float* wsml, const T* q, const T* kp, const T* vp,
//       const void* table, const u32* meta, u64* err, i64 oOff, i64 qOff, i64 kOff, i64 vOff,
//       i64 tOff, i64 mOff, u32 seqs, u32 hq, u32 hkv, u32 d, u32 dv, u32 bs, u32 nblocks,
//       u32 maxBlocks, u32 tableI64, u32 tag, u32 splits, u32 maxQ, u32 listAt, i64 qst, i64 qsh, i64 kbk, i64 kss, i64 ksh,
//       i64 vbk, i64 vss, i64 vsh, i64 tsr, i64 tsc, i64 window, float scale)
//     grid (tokens, hkv * ceil(hq / hkv / RT), splits), block 256; RT 1 (one query head a kv
//     head) or 4. q [tokens, hq, d] (strides qst, qsh), pools [blocks, bs, hkv, d] (strides kbk,
//     kss, ksh; vbk, vss, vsh for v's dv columns), table [seqs, maxBlocks] u32 or i64 (tableI64)
//     with strides tsr, tsc. o contiguous [tokens, hq, dv]; with splits > 1 the partial sums go to
//     wso [tokens * hq, splits, dv] and (m, l) to wsml [tokens * hq, splits, 2], and attn_merge
//     writes o. d, dv <= PA_DMAX. Sequences with more than maxQ queries are left to
//     paged-prefill.hip's kernel (launched after this one and attn_merge): their rows are not
//     written here, and with splits > 1 their partial sums are empty (attn_merge writes zeros).
//     listAt > 0: block x takes token meta[listAt + x] (the host's list of the others' tokens,
//     so the long chunks' tokens cost no blocks), else token x.
#include "rowreduce.h"
#include "bad-id.h"

// threads per key in the score pass: each dots a quarter of the head dim
#define PA_TPK 4
// keys a chunk: their scores are made before one online-softmax step and the P V pass
#define PA_SC 256
// keys a group of PA_TPK lanes (score pass) or a thread (output pass) loads before it sums any
// (8 in the output pass measured slower for 16 and 64 decodes on an H200). Two on CDNA, where
// four keys' unrolled loads took more scalar registers than the 102 there are (spilled)
#if defined(__gfx90a__) || defined(__gfx942__) || defined(__gfx950__)
#define PA_KU 2
#else
#define PA_KU 4
#endif
#define PA_DMAX 256

template <class T> RT_DEVICE float pa_load(T x) { return Elem<T>::load(x); }
// one exact conversion instruction rather than compat.h's branchy decoder (sums only: a NaN's
// payload does not show)
template <> RT_DEVICE float pa_load<f16>(f16 h) { return f16_widen_hw(h.bits); }

template <class T, u32 RT>
RT_DEVICE void paged_attn(T* o, float* wso, float* wsml, const T* q, const T* kp, const T* vp,
    const void* table, const u32* meta, u64* err, u32 seqs, u32 hq, u32 hkv, u32 d, u32 dv, u32 bs,
    u32 nblocks, u32 maxBlocks, u32 tableI64, u32 tag, u32 splits, u32 maxQ, u32 listAt, i64 qst, i64 qsh, i64 kbk, i64 kss, i64 ksh,
    i64 vbk, i64 vss, i64 vsh, i64 tsr, i64 tsc, i64 window, float scale) {
  typedef Elem<T> E;
  typedef Vec16<T> V;
  constexpr u32 VN = V::N;
  __shared__ __attribute__((aligned(16))) float qs[RT][PA_DMAX];
  __shared__ float sc[RT][PA_SC];
  // where each key of the chunk starts in the value pool
  __shared__ i64 svoff[PA_SC];
  // one output row's partial sums at a time: parts * dv <= blockDim.x * VN values
  __shared__ float red[RT_BLOCK_MAX * VN];
  // the running max is read by a whole wave and then rewritten by its lane 0: two buffers, one
  // per parity of the chunk, so no lane rewrites a value another may still be reading
  __shared__ float mrow[2][RT], lrow[RT], fac[RT];
  // the block's sequence, its block-table row, and the keys [js, je) of this split
  __shared__ u32 sseq, sskip;
  __shared__ i64 sjs, sje;
  const u32 tid = threadIdx.x, nt = blockDim.x, ws = (u32)warpSize, lane = tid % ws;
  const u32 t = listAt ? meta[listAt + blockIdx.x] : blockIdx.x, split = blockIdx.z;
  const u32 g = hq / hkv, hc = (g + RT - 1) / RT;
  const u32 kh = blockIdx.y / hc, h0 = kh * g + blockIdx.y % hc * RT;
  const u32 nr = min(RT, kh * g + g - h0);
  if (tid == 0) {
    // the sequence of token t: the last s with meta[s] <= t (empty sequences share their start)
    u32 lo = 0, hi = seqs;
    while (hi - lo > 1) {
      const u32 mid = (lo + hi) / 2;
      if (meta[mid] <= t) lo = mid;
      else hi = mid;
    }
    const u32 qlen = meta[lo + 1] - meta[lo], ctx = meta[seqs + 1 + lo];
    // lengths that break the rules (checked on the host for the host arrays) see no key
    const bool ok = t >= meta[lo] && t < meta[lo + 1] && qlen <= ctx;
    const i64 pos = (i64)ctx - qlen + (t - meta[lo]);
    const i64 kend = ok ? pos + 1 : 0, kbeg = ok && window > 0 ? max((i64)0, pos - window + 1) : 0;
    const i64 per = (kend - kbeg + splits - 1) / splits;
    sseq = lo;
    sskip = qlen > maxQ;
    sjs = min(kend, kbeg + (i64)split * per);
    sje = min(kend, sjs + per);
  }
  for (u32 x = tid; x < RT * d; x += nt) {
    const u32 r = x / d, e = x % d;
    qs[r][e] = r < nr ? pa_load(q[(i64)t * qst + (i64)(h0 + r) * qsh + e]) * scale : 0.f;
  }
  if (tid < RT) { mrow[0][tid] = -INFINITY; lrow[tid] = 0.f; }
  __syncthreads();
  if (sskip) {
    if (splits > 1 && tid < nr) {
      const u64 at = ((u64)t * hq + h0 + tid) * splits + split;
      wsml[2 * at] = -INFINITY;
      wsml[2 * at + 1] = 0.f;
    }
    return;
  }
  const u32 s = sseq;
  const u32 js = (u32)sjs, je = (u32)sje;
  const u8* trow = (const u8*)table + (i64)s * tsr * (tableI64 ? 8 : 4);
  const T* kh0 = kp + (i64)kh * ksh;
  const T* vh0 = vp + (i64)kh * vsh;
  const bool kvec = aligned16(kp) && d % VN == 0 && kbk % VN == 0 && kss % VN == 0 && ksh % VN == 0;
  const bool vvec = aligned16(vp) && dv % VN == 0 && vbk % VN == 0 && vss % VN == 0 && vsh % VN == 0;
  // the output pass: thread -> a group of VN columns of v (one column without vvec), and one of
  // `parts` interleaved slices of the chunk's keys
  const u32 width = vvec ? VN : 1u, groups = dv / width;
  const u32 parts = nt / groups, part = tid / groups, col = tid % groups * width;
  const bool active = part < parts;
  float acc[RT][VN];
#pragma unroll
  for (u32 r = 0; r < RT; r++) {
#pragma unroll
    for (u32 u = 0; u < VN; u++) acc[r][u] = 0.f;
  }

  u32 cur = 0;
  const u32 kg = nt / PA_TPK, sub = tid % PA_TPK;
  for (u32 j0 = js; j0 < je; j0 += PA_SC, cur ^= 1u) {
    const u32 nj = min((u32)PA_SC, je - j0);
    for (u32 b0 = 0; b0 < nj; b0 += kg * PA_KU) {
      // PA_KU keys a thread group: their table entries, then their rows' loads, go out together
      // (one key at a time left a table read and a row read in series per key; measured at a
      // third of the memory bandwidth). Every lane runs every pass (the shuffles below need the
      // whole wave); keys past the chunk repeat its last one and are dropped.
      // each key's row offsets in the pools, made once: the loads below need no pool strides
      u32 kk[PA_KU];
      i64 koff[PA_KU], voff[PA_KU];
      bool bad[PA_KU];
#pragma unroll
      for (u32 u = 0; u < PA_KU; u++) {
        kk[u] = b0 + u * kg + tid / PA_TPK;
        const u32 j = j0 + min(kk[u], nj - 1), bi = j / bs;
        const i64 id = tableI64 ? ((const i64*)trow)[(i64)bi * tsc] : (i64)((const u32*)trow)[(i64)bi * tsc];
        bad[u] = id < 0 || id >= (i64)nblocks;
        if (bad[u] && sub == 0 && kk[u] < nj) record_bad_id(err, tag, (u64)id, (u64)s * maxBlocks + bi, nblocks);
        const i64 blk = bad[u] ? 0 : id, slot = j - bi * bs;
        koff[u] = blk * kbk + slot * kss;
        voff[u] = blk * vbk + slot * vss;
      }
      float sv[PA_KU][RT];
#pragma unroll
      for (u32 u = 0; u < PA_KU; u++) {
#pragma unroll
        for (u32 r = 0; r < RT; r++) sv[u][r] = 0.f;
      }
      if (kvec) {
        for (u32 e = sub * VN; e < d; e += PA_TPK * VN) {
          V kv[PA_KU];
#pragma unroll
          for (u32 u = 0; u < PA_KU; u++) kv[u] = *(const V*)(kh0 + koff[u] + e);
#pragma unroll
          for (u32 u = 0; u < PA_KU; u++) {
#pragma unroll
            for (u32 w = 0; w < VN; w++) {
              const float kx = pa_load(kv[u].v[w]);
#pragma unroll
              for (u32 r = 0; r < RT; r++) sv[u][r] += qs[r][e + w] * kx;
            }
          }
        }
      } else {
        for (u32 e = sub; e < d; e += PA_TPK) {
          float kx[PA_KU];
#pragma unroll
          for (u32 u = 0; u < PA_KU; u++) kx[u] = pa_load(kh0[koff[u] + e]);
#pragma unroll
          for (u32 u = 0; u < PA_KU; u++) {
#pragma unroll
            for (u32 r = 0; r < RT; r++) sv[u][r] += qs[r][e] * kx[u];
          }
        }
      }
      // the key's PA_TPK lanes are adjacent: a butterfly leaves the whole dot on each
#pragma unroll
      for (u32 m = 1; m < PA_TPK; m <<= 1) {
#pragma unroll
        for (u32 u = 0; u < PA_KU; u++) {
#pragma unroll
          for (u32 r = 0; r < RT; r++) sv[u][r] += shfl_xor(sv[u][r], (int)m);
        }
      }
#pragma unroll
      for (u32 u = 0; u < PA_KU; u++) {
        if (sub == 0 && kk[u] < nj) {
#pragma unroll
          for (u32 r = 0; r < RT; r++) sc[r][kk[u]] = bad[u] ? NAN : sv[u][r];
          svoff[kk[u]] = voff[u];
        }
      }
    }
    __syncthreads();
    // a wave per row: the chunk's max, the new running max, probabilities, their sum
    for (u32 r = tid / ws; r < RT; r += nt / ws) {
      float mx = -INFINITY;
      for (u32 x = lane; x < nj; x += ws) mx = max_nan(mx, sc[r][x]);
      mx = warp_all(mx, MaxOp<float>());
      const float mold = mrow[cur][r], mnew = max_nan(mold, mx);
      // nothing seen yet: keep the (zero) sums as they are rather than exp(-inf - -inf)
      const float f = mnew == -INFINITY ? 1.f : expf(mold - mnew);
      float sum = 0.f;
      for (u32 x = lane; x < nj; x += ws) {
        const float sv = sc[r][x];
        const float p = sv == -INFINITY ? 0.f : expf(sv - mnew);
        sc[r][x] = p;
        sum += p;
      }
      sum = warp_all(sum, SumOp<float>());
      if (lane == 0) { mrow[cur ^ 1u][r] = mnew; lrow[r] = lrow[r] * f + sum; fac[r] = f; }
    }
    __syncthreads();
    if (active) {
#pragma unroll
      for (u32 r = 0; r < RT; r++) {
        const float f = fac[r];
#pragma unroll
        for (u32 u = 0; u < VN; u++) acc[r][u] *= f;
      }
      u32 x = part;
      if (vvec) {
        // PA_KU rows' loads in flight before their sums, as the score pass
        for (; x + (PA_KU - 1) * parts < nj; x += PA_KU * parts) {
          V vv[PA_KU];
#pragma unroll
          for (u32 u = 0; u < PA_KU; u++) vv[u] = *(const V*)(vh0 + svoff[x + u * parts] + col);
#pragma unroll
          for (u32 u = 0; u < PA_KU; u++) {
#pragma unroll
            for (u32 w = 0; w < VN; w++) {
              const float vx = pa_load(vv[u].v[w]);
#pragma unroll
              for (u32 r = 0; r < RT; r++) acc[r][w] += sc[r][x + u * parts] * vx;
            }
          }
        }
      }
      for (; x < nj; x += parts) {
        const T* vr = vh0 + svoff[x] + col;
        if (vvec) {
          const V vv = *(const V*)vr;
#pragma unroll
          for (u32 u = 0; u < VN; u++) {
            const float vx = pa_load(vv.v[u]);
#pragma unroll
            for (u32 r = 0; r < RT; r++) acc[r][u] += sc[r][x] * vx;
          }
        } else {
          const float vx = pa_load(*vr);
#pragma unroll
          for (u32 r = 0; r < RT; r++) acc[r][0] += sc[r][x] * vx;
        }
      }
    }
    __syncthreads();
  }

  // the parts' sums, a row at a time, always from acc[0]: the rows shift down after each, so the
  // loop needs no dynamic index into acc
#pragma unroll 1
  for (u32 r = 0; r < nr; r++) {
    if (active) {
#pragma unroll
      for (u32 u = 0; u < VN; u++) if (u < width) red[part * dv + col + u] = acc[0][u];
    }
    __syncthreads();
    const u64 row = (u64)t * hq + h0 + r;
    for (u32 cc = tid; cc < dv; cc += nt) {
      float sum = 0.f;
      for (u32 p = 0; p < parts; p++) sum += red[p * dv + cc];
      if (splits == 1) {
        const float l = lrow[r];
        o[row * dv + cc] = E::store(l == 0.f ? 0.f : sum / l);
      } else {
        const u64 at = row * splits + split;
        wso[at * dv + cc] = sum;
        if (cc == 0) { wsml[2 * at] = mrow[cur][r]; wsml[2 * at + 1] = lrow[r]; }
      }
    }
    __syncthreads();
#pragma unroll
    for (u32 i = 0; i + 1 < RT; i++) {
#pragma unroll
      for (u32 u = 0; u < VN; u++) acc[i][u] = acc[i + 1][u];
    }
  }
}

#define PAGED_RT(DT, T, RT) \
  RT_KERNEL void paged_attn_r##RT##_##DT(T* o, float* wso, float* wsml, const T* q, const T* kp, const T* vp, \
      const void* table, const u32* meta, u64* err, i64 oOff, i64 qOff, i64 kOff, i64 vOff, i64 tOff, i64 mOff, \
      u32 seqs, u32 hq, u32 hkv, u32 d, u32 dv, u32 bs, u32 nblocks, u32 maxBlocks, u32 tableI64, u32 tag, u32 splits, u32 maxQ, u32 listAt, \
      i64 qst, i64 qsh, i64 kbk, i64 kss, i64 ksh, i64 vbk, i64 vss, i64 vsh, i64 tsr, i64 tsc, \
      i64 window, float scale) { RT_GRID_DEP(); \
    const void* tb = tableI64 ? (const void*)((const i64*)table + tOff) : (const void*)((const u32*)table + tOff); \
    paged_attn<T, RT>(o + oOff, wso, wsml, q + qOff, kp + kOff, vp + vOff, tb, meta + mOff, err, seqs, hq, hkv, \
        d, dv, bs, nblocks, maxBlocks, tableI64, tag, splits, maxQ, listAt, qst, qsh, kbk, kss, ksh, vbk, vss, vsh, tsr, tsc, window, scale); }
#define PAGED(DT, T) PAGED_RT(DT, T, 1) PAGED_RT(DT, T, 4)

PAGED(f32, float) PAGED(f16, f16) PAGED(bf16, bf16)
