// attention.hip: fused attention for short queries (decode: tq 1 to 16) over long keys, with no
// score matrix in global memory. A block takes one (batch, kv head), up to RT query rows of
// that head's group (grouped-query heads read their shared K/V once, through the head mapping)
// and one split of the keys; splits run side by side so one sequence still fills the device, and
// attn_merge combines their partial results. Inside a split the keys go in chunks of ATT_SC,
// ATT_TPK threads per key for the scores, with the softmax kept online across chunks (running max m,
// running sum l, the output accumulator rescaled by exp(m_old - m_new)). Sums in f32.
//
// Visibility, as the CPU reference: with hasDiag, query i sees key j iff j <= i + diag, and with
// window > 0 also j > i + diag - window; a u8 mask (maskKind 1) hides keys where it is 0; an
// additive mask (maskKind 2, q's dtype) is added to the scaled scores and -inf hides. A row that
// sees no key gets zeros; a NaN score makes its row NaN.
//
// Kernels (DT in f32 f16 bf16; T storage; strides in elements, the head dim has unit stride):
//   attn_decode_r<RT>_<DT>(T* o, float* wso, float* wsml, const T* q, const T* k, const T* v,
//       const void* mask, i64 oOff, i64 qOff, i64 kOff, i64 vOff, i64 mOff,
//       u32 hq, u32 hkv, u32 tq, u32 tk, u32 d, u32 dv,
//       i64 qsb, i64 qsh, i64 qst, i64 ksb, i64 ksh, i64 kst, i64 vsb, i64 vsh, i64 vst,
//       i64 msb, i64 msh, i64 mst, i64 msk, u32 maskKind, u32 hasDiag, i64 diag, i64 window,
//       float scale, u32 splits, u32 perSplit)
//     grid (b * hkv * ceil(hq / hkv * tq / RT), splits), block 256; RT (1 or 4) query rows a
//     block: 4 holds a grouped-query head's group of 4 (Llama, Mistral) in one tile, 8 rows
//     spilled scalar registers on gfx90a and vector ones on gfx11/12. o contiguous
//     [b, hq, tq, dv]; with splits > 1 the partial sums go to wso [rows, splits, dv] and (m, l)
//     to wsml [rows, splits, 2] (rows = b * hq * tq) and o is written by attn_merge.
//   attn_merge_<DT>(T* o, const float* wso, const float* wsml, i64 oOff, u32 splits, u32 dv)
//     grid (rows, ceil(dv / ATT_MCOLS)), block 32 to 256 threads (a multiple of ATT_MCOLS);
//     splits <= ATT_MAX_SPLITS
// d, dv <= ATT_DMAX.
#include "rowreduce.h"

// threads per key in the score pass: each dots a quarter of the head dim, so a key's loads are
// in flight together instead of one thread reading the whole row in turn
#define ATT_TPK 4
// keys a chunk: the scores of all of them are made (ATT_NK keys a key group at a time) before one
// online-softmax step and the P V pass over them. One key a group (64-key chunks) waited on a load
// round per 64 keys behind three barriers: 74.2 us where this takes 63.7 (ncu, H200, bf16 32/8
// heads d 128, 32768 keys). What is left is issue-bound, not load-bound: 16 warps a multiprocessor
// issue about 86 instructions per 16-byte load (the FMAs of 4 query rows, the widening, shared
// reads), and 4 keys a group (spills at 128 registers), 8 v loads in flight, a pipelined v pass,
// 1024-key chunks and three blocks a multiprocessor (80 registers, spills) were all 67.8-89 us.
#define ATT_SC 512
#define ATT_NK 2
#define ATT_DMAX 256
// loads in flight per thread before any is used: 16-byte key vectors (a quarter of a d 128 bf16
// row), vectors of v
#define ATT_KLOADS 4
#define ATT_VLOADS 4

// Loads to f32. f16 goes through the hardware conversion (f16_widen_hw): compat.h's software
// f16_to_f32 holds its constants in scalar registers, which (on wave64, where each divergent
// branch of the unrolled loops below also saves an exec mask there) spilled them on gfx9.
template <class T> RT_DEVICE float att_load(T x) { return Elem<T>::load(x); }
template <> RT_DEVICE float att_load<f16>(f16 h) { return f16_widen_hw(h.bits); }

// Four floats of the query rows in shared memory, read with one 16-byte load: the score pass
// reads q once per key element per row, and scalar reads made the shared-memory pipe the limit
// (ncu on an H200, bf16 d 128, 32768 keys: L1 throughput 78%, 2.5 instructions a cycle, DRAM 25%).
typedef Vec16<float> F4;

// This lane's share (sub of ATT_TPK) of the dots of NK key rows kr[] with the tile's RT query
// rows: 16-byte vectors sub, sub + ATT_TPK, ... of each row, ATT_KLOADS of them a key loaded
// (for all NK keys) before any is used, so NK * ATT_KLOADS loads are in flight. Rows past the
// tile's last have zero queries, so every row is computed (no per-row branch).
template <class T, u32 RT, u32 NK>
RT_DEVICE void att_dot(const T* const (&kr)[NK], const float (*qs)[ATT_DMAX], u32 d, bool vec, u32 sub, float (&s)[NK][RT]) {
  typedef Vec16<T> V;
  constexpr u32 VN = V::N, STEP = ATT_TPK * VN, KL = ATT_KLOADS;
  if (vec) {
    u32 e = sub * VN;
    for (; e + (KL - 1) * STEP < d; e += KL * STEP) {
      V kv[NK][KL];
#pragma unroll
      for (u32 n = 0; n < NK; n++) {
#pragma unroll
        for (u32 w = 0; w < KL; w++) kv[n][w] = *(const V*)(kr[n] + e + w * STEP);
      }
#pragma unroll
      for (u32 w = 0; w < KL; w++) {
#pragma unroll
        for (u32 u4 = 0; u4 < VN; u4 += 4) {
#pragma unroll
          for (u32 r = 0; r < RT; r++) {
            const F4 qv = *(const F4*)&qs[r][e + w * STEP + u4];
#pragma unroll
            for (u32 n = 0; n < NK; n++) {
#pragma unroll
              for (u32 i = 0; i < 4; i++) s[n][r] += qv.v[i] * att_load(kv[n][w].v[u4 + i]);
            }
          }
        }
      }
    }
    for (; e < d; e += STEP) {
      V kv[NK];
#pragma unroll
      for (u32 n = 0; n < NK; n++) kv[n] = *(const V*)(kr[n] + e);
#pragma unroll
      for (u32 u4 = 0; u4 < VN; u4 += 4) {
#pragma unroll
        for (u32 r = 0; r < RT; r++) {
          const F4 qv = *(const F4*)&qs[r][e + u4];
#pragma unroll
          for (u32 n = 0; n < NK; n++) {
#pragma unroll
            for (u32 i = 0; i < 4; i++) s[n][r] += qv.v[i] * att_load(kv[n].v[u4 + i]);
          }
        }
      }
    }
  } else {
    for (u32 e = sub; e < d; e += ATT_TPK) {
      float kx[NK];
#pragma unroll
      for (u32 n = 0; n < NK; n++) kx[n] = att_load(kr[n][e]);
#pragma unroll
      for (u32 r = 0; r < RT; r++) {
#pragma unroll
        for (u32 n = 0; n < NK; n++) s[n][r] += qs[r][e] * kx[n];
      }
    }
  }
}

// This thread's part of P V for the chunk: keys part, part + parts, ... of it, ATT_VLOADS rows
// of v in flight before any is used. With vvec a thread owns a 16-byte group of columns (one
// vector load a key); otherwise one column (acc[r][0]). Scalar 2-byte loads here held too few
// bytes in flight for a long cache (the same ncu run).
template <class T, u32 RT>
RT_DEVICE void att_pv(const T* vcol, i64 vstride, u32 j0, u32 nj, u32 part, u32 parts, bool vvec,
    const float (*sc)[ATT_SC], float (&acc)[RT][Vec16<T>::N]) {
  typedef Vec16<T> V;
  constexpr u32 VN = V::N, VL = ATT_VLOADS;
  if (vvec) {
    u32 x = part;
    for (; x + (VL - 1) * parts < nj; x += VL * parts) {
      V vv[VL];
#pragma unroll
      for (u32 w = 0; w < VL; w++) vv[w] = *(const V*)(vcol + (i64)(j0 + x + w * parts) * vstride);
#pragma unroll
      for (u32 w = 0; w < VL; w++) {
#pragma unroll
        for (u32 u = 0; u < VN; u++) {
          const float vx = att_load(vv[w].v[u]);
#pragma unroll
          for (u32 r = 0; r < RT; r++) acc[r][u] += sc[r][x + w * parts] * vx;
        }
      }
    }
    for (; x < nj; x += parts) {
      const V vv = *(const V*)(vcol + (i64)(j0 + x) * vstride);
#pragma unroll
      for (u32 u = 0; u < VN; u++) {
        const float vx = att_load(vv.v[u]);
#pragma unroll
        for (u32 r = 0; r < RT; r++) acc[r][u] += sc[r][x] * vx;
      }
    }
  } else {
    u32 x = part;
    for (; x + (VL - 1) * parts < nj; x += VL * parts) {
      float vx[VL];
#pragma unroll
      for (u32 w = 0; w < VL; w++) vx[w] = att_load(vcol[(i64)(j0 + x + w * parts) * vstride]);
#pragma unroll
      for (u32 w = 0; w < VL; w++) {
#pragma unroll
        for (u32 r = 0; r < RT; r++) acc[r][0] += sc[r][x + w * parts] * vx[w];
      }
    }
    for (; x < nj; x += parts) {
      const float vx = att_load(vcol[(i64)(j0 + x) * vstride]);
#pragma unroll
      for (u32 r = 0; r < RT; r++) acc[r][0] += sc[r][x] * vx;
    }
  }
}

template <class T, u32 RT>
RT_DEVICE void attn_decode(T* o, float* wso, float* wsml, const T* q, const T* k, const T* v, const void* mask,
    u32 hq, u32 hkv, u32 tq, u32 tk, u32 d, u32 dv,
    i64 qsb, i64 qsh, i64 qst, i64 ksb, i64 ksh, i64 kst, i64 vsb, i64 vsh, i64 vst,
    i64 msb, i64 msh, i64 mst, i64 msk, u32 maskKind, u32 hasDiag, i64 diag, i64 window,
    float scale, u32 splits, u32 perSplit) {
  typedef Elem<T> E;
  constexpr u32 VN = Vec16<T>::N;
  __shared__ alignas(16) float qs[RT][ATT_DMAX];
  __shared__ float sc[RT][ATT_SC];
  // one output row's partial sums at a time: parts * dv <= blockDim.x * VN values
  __shared__ float red[RT_BLOCK_MAX * VN];
  // the running max is read by a whole wave and then rewritten by its lane 0: two buffers, one
  // per parity of the chunk, so no lane rewrites a value another may still be reading
  __shared__ float mrow[2][RT], lrow[RT], fac[RT];
  const u32 g = hq / hkv, R = g * tq;
  // a (batch, kv head)'s row tiles are neighbours in x, so they read its keys close in time (L2)
  const u32 tiles = (R + RT - 1) / RT, bh = blockIdx.x / tiles;
  const u32 bi = bh / hkv, kh = bh % hkv;
  const u32 split = blockIdx.y, r0 = blockIdx.x % tiles * RT;
  const u32 nr = min(RT, R - r0);
  const u32 js = split * perSplit, je = min(tk, js + perSplit);
  const u32 tid = threadIdx.x, nt = blockDim.x, ws = (u32)warpSize, lane = tid % ws;
  // per row of the tile (query head kh * g + rr / tq, query rr % tq): where its mask row starts,
  // its visible key range and its output row, parked in shared memory rather than held in scalar
  // registers for every row (which spilled them on AMD). Rows past the tile's last repeat it.
  __shared__ i64 smo[RT], shi[RT], slo[RT];
  __shared__ u64 srow[RT];
  if (tid < RT) {
    const u32 rr = r0 + min(tid, nr - 1), h = kh * g + rr / tq, i = rr % tq;
    smo[tid] = (i64)bi * msb + (i64)h * msh + (i64)i * mst;
    // keys lo < j <= hi are visible: the whole range without a diagonal
    const i64 hi = (i64)i + diag;
    shi[tid] = hasDiag ? hi : (i64)tk;
    slo[tid] = hasDiag && window > 0 ? hi - window : -1;
    srow[tid] = ((u64)bi * hq + h) * tq + i;
  }
  for (u32 x = tid; x < RT * d; x += nt) {
    const u32 r = x / d, e = x % d, rr = r0 + r;
    qs[r][e] = r < nr ? att_load(q[(i64)bi * qsb + (i64)(kh * g + rr / tq) * qsh + (i64)(rr % tq) * qst + e]) * scale : 0.f;
  }
  if (tid < RT) { mrow[0][tid] = -INFINITY; lrow[tid] = 0.f; }
  // the key and value rows' base and stride go through shared memory: read back from there
  // they live in vector registers, which the loop has to spare, where the scalar registers
  // holding every argument spilled on gfx9 (wave64)
  __shared__ const T* sbase[2];
  __shared__ i64 sstride[2];
  __shared__ u32 svec[2];
  if (tid == 0) {
    svec[0] = aligned16(k) && d % VN == 0 && ksb % VN == 0 && ksh % VN == 0 && kst % VN == 0;
    svec[1] = aligned16(v) && dv % VN == 0 && vsb % VN == 0 && vsh % VN == 0 && vst % VN == 0;
    sbase[0] = k + (i64)bi * ksb + (i64)kh * ksh; sbase[1] = v + (i64)bi * vsb + (i64)kh * vsh;
    sstride[0] = kst; sstride[1] = vst;
  }
  __syncthreads();
  const T* kb = sbase[0];
  const i64 kstride = sstride[0], vstride = sstride[1];
  const bool vec = svec[0] != 0, vvec = svec[1] != 0;
  // the output pass: thread -> a group of VN columns of v (one column without vvec), and one of
  // `parts` interleaved slices of the chunk's keys
  const u32 width = vvec ? VN : 1u, groups = dv / width;
  const u32 parts = nt / groups, part = tid / groups, col = tid % groups * width;
  const bool active = part < parts;
  const T* vcol = sbase[1] + col;
  float acc[RT][VN];
#pragma unroll
  for (u32 r = 0; r < RT; r++) {
#pragma unroll
    for (u32 u = 0; u < VN; u++) acc[r][u] = 0.f;
  }

  u32 cur = 0;
  // keys a pass of the score loop takes: ATT_NK per ATT_TPK lanes (a key group)
  const u32 kg = nt / ATT_TPK, sub = tid % ATT_TPK;
  for (u32 j0 = js; j0 < je; j0 += ATT_SC, cur ^= 1u) {
    const u32 nj = min((u32)ATT_SC, je - j0);
    // the scores of the whole chunk, ATT_NK keys a key group at a time: a stream of key loads
    // with no barrier, where a chunk of one key a group waited on a load round per 64 keys
    for (u32 b0 = 0; b0 < nj; b0 += ATT_NK * kg) {
      // every lane runs every pass (the shuffles below need the whole wave); keys past the chunk
      // repeat its last one (in cache) and are hidden
      u32 kk[ATT_NK];
      const T* kr[ATT_NK];
      float s[ATT_NK][RT];
#pragma unroll
      for (u32 n = 0; n < ATT_NK; n++) {
        kk[n] = b0 + n * kg + tid / ATT_TPK;
        kr[n] = kb + (i64)(j0 + min(kk[n], nj - 1)) * kstride;
#pragma unroll
        for (u32 r = 0; r < RT; r++) s[n][r] = 0.f;
      }
      att_dot<T, RT, ATT_NK>(kr, qs, d, vec, sub, s);
#pragma unroll
      for (u32 n = 0; n < ATT_NK; n++) {
        // the key's ATT_TPK lanes are adjacent: a butterfly leaves the whole dot on each
#pragma unroll
        for (u32 m = 1; m < ATT_TPK; m <<= 1) {
#pragma unroll
          for (u32 r = 0; r < RT; r++) s[n][r] += shfl_xor(s[n][r], (int)m);
        }
        // branch-free per lane (only uniform branches): on wave64 every divergent branch of these
        // unrolled rows saved an exec mask in scalar registers, which spilled them on gfx9. Lanes
        // past the chunk read the last key's mask entry and discard it.
        const u32 j = j0 + kk[n];
        const i64 jm = (i64)min(j, tk - 1) * msk;
#pragma unroll
        for (u32 r = 0; r < RT; r++) {
          bool vis = kk[n] < nj && r < nr;
          float val = s[n][r];
          vis = vis & ((i64)j <= shi[r]) & ((i64)j > slo[r]);
          if (maskKind == 1) vis = vis & (((const u8*)mask)[smo[r] + jm] != 0);
          else if (maskKind == 2) val += att_load(((const T*)mask)[smo[r] + jm]);
          s[n][r] = vis ? val : -INFINITY;
        }
        if (sub == 0 && kk[n] < nj) {
#pragma unroll
          for (u32 r = 0; r < RT; r++) sc[r][kk[n]] = s[n][r];
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
      att_pv<T, RT>(vcol, vstride, j0, nj, part, parts, vvec, sc, acc);
    }
    __syncthreads();
  }

  // Parts in one wave hold the same columns `groups` lanes apart: where groups is a power of two
  // below the wave size they fold together with shuffles first, so the sums below read a value a
  // wave instead of one a part (32 parts at d 64 made a short cache's split slower than before).
  u32 nsum = parts, slot = part;
  bool writer = active;
  if (groups < ws && (groups & (groups - 1)) == 0) {
    for (u32 m = groups; m < ws; m <<= 1) {
#pragma unroll
      for (u32 r = 0; r < RT; r++) {
#pragma unroll
        for (u32 u = 0; u < VN; u++) acc[r][u] += shfl_xor(acc[r][u], (int)m);
      }
    }
    nsum = nt / ws; slot = tid / ws; writer = lane < groups;
  }
  // the sums, a row at a time, always from acc[0]: the rows shift down after each, so the loop is
  // not unrolled (eight unrolled copies of it spilled scalar registers on gfx90a)
#pragma unroll 1
  for (u32 r = 0; r < nr; r++) {
    if (writer) {
#pragma unroll
      for (u32 u = 0; u < VN; u++) if (u < width) red[slot * dv + col + u] = acc[0][u];
    }
    __syncthreads();
    const u64 row = srow[r];
    for (u32 cc = tid; cc < dv; cc += nt) {
      float sum = 0.f;
      for (u32 p = 0; p < nsum; p++) sum += red[p * dv + cc];
      if (splits == 1) {
        const float l = lrow[r];
        o[row * dv + cc] = E::store(l == 0.f ? 0.f : sum / l);
      } else {
        wso[(row * splits + split) * dv + cc] = sum;
        if (cc == 0) { wsml[(row * splits + split) * 2] = mrow[cur][r]; wsml[(row * splits + split) * 2 + 1] = lrow[r]; }
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

// A block per (row, ATT_MCOLS columns). A split that saw nothing has l = 0 and takes no part; a
// NaN anywhere makes the row NaN. Each column is summed by blockDim / ATT_MCOLS threads, each
// over an interleaved share of the splits, ATT_MLOADS of them (their partial row and (m, l)) in
// flight at a time, folded with the online-softmax rescale; the shares then combine through
// shared memory behind one barrier. A version that first reduced the splits' maximum and then
// their weighted sum across the block (two block reductions, five barriers) took 5.7-6.0 us for
// 32 rows of 64 splits on an H100 (ncu), against 4.4-4.6 for cuDNN's combine kernel.
#define ATT_MCOLS 32
#define ATT_MLOADS 8
// the most splits the host makes (it caps them here)
#define ATT_MAX_SPLITS 1024
template <class T>
RT_DEVICE void attn_merge(T* o, const float* wso, const float* wsml, u32 splits, u32 dv) {
  __shared__ float sm[RT_BLOCK_MAX], sl[RT_BLOCK_MAX], sa[RT_BLOCK_MAX];
  const u32 tid = threadIdx.x, nt = blockDim.x;
  const u64 row = blockIdx.x;
  // thread -> column c of the block's ATT_MCOLS and share gi of G; a column past dv reads the
  // last one (in bounds) and stores nothing
  const u32 G = nt / ATT_MCOLS, gi = tid / ATT_MCOLS, c = tid % ATT_MCOLS, cc = blockIdx.y * ATT_MCOLS + c;
  const float* po = wso + row * splits * dv + min(cc, dv - 1);
  const float* ml = wsml + row * splits * 2;
  // this share's running max m (over splits with l > 0), sum l and output acc, both scaled by
  // exp(-m); m stays -inf until a split counts
  float m = -INFINITY, l = 0.f, acc = 0.f;
  for (u32 s0 = gi; s0 < splits; s0 += ATT_MLOADS * G) {
    float os[ATT_MLOADS], ms[ATT_MLOADS], ls[ATT_MLOADS];
#pragma unroll
    for (u32 u = 0; u < ATT_MLOADS; u++) {
      const u32 s = s0 + u * G;
      const bool in = s < splits;
      os[u] = in ? po[(u64)s * dv] : 0.f;
      ms[u] = in ? ml[2 * s] : 0.f;
      ls[u] = in ? ml[2 * s + 1] : 0.f;
    }
    float mr = m;
#pragma unroll
    for (u32 u = 0; u < ATT_MLOADS; u++) if (ls[u] != 0.f) mr = max_nan(mr, ms[u]);
    if (mr == -INFINITY) continue;  // nothing counted yet
    const float sc = expf(m - mr);  // 0 while m is -inf; NaN carries on
    acc *= sc; l *= sc;
#pragma unroll
    for (u32 u = 0; u < ATT_MLOADS; u++) if (ls[u] != 0.f) {
      const float w = expf(ms[u] - mr);
      acc += os[u] * w; l += ls[u] * w;
    }
    m = mr;
  }
  sm[tid] = m; sl[tid] = l; sa[tid] = acc;
  __syncthreads();
  // The shares' combine takes their maximum first, then the weighted sums, rather than the
  // online fold above: with that fold (a helper over the shares padded to ATT_MLOADS) the kernel
  // took 4.58-4.61 us against 4.42-4.54 (ncu, H200, 32 rows of 64 splits) and decode attention at
  // 32768 keys 42.34-42.35 us a call in a graph against 41.34-41.56; a share at a time, 5.12-5.25.
  if (gi == 0 && cc < dv) {
    float mx = -INFINITY;
    for (u32 h = 0; h < G; h++) if (sl[h * ATT_MCOLS + c] != 0.f) mx = max_nan(mx, sm[h * ATT_MCOLS + c]);
    float L = 0.f, A = 0.f;
    for (u32 h = 0; h < G; h++) {
      const u32 t = h * ATT_MCOLS + c;
      if (sl[t] == 0.f) continue;
      const float w = expf(sm[t] - mx);
      L += sl[t] * w; A += sa[t] * w;
    }
    o[row * dv + cc] = Elem<T>::store(L == 0.f ? 0.f : A / L);
  }
}

// No occupancy bound: capped at three blocks a multiprocessor (85 registers, 49 splits for 32768
// keys) the kernel took 78.6 us where ptxas's own 128 registers (two blocks, 64 splits) took 74.2
// (ncu, H200, bf16 32/8 heads d 128).
#define ATTN_RT(DT, T, RT) \
  RT_KERNEL void attn_decode_r##RT##_##DT(T* o, float* wso, float* wsml, const T* q, const T* k, const T* v, \
      const void* mask, i64 oOff, i64 qOff, i64 kOff, i64 vOff, i64 mOff, u32 hq, u32 hkv, u32 tq, u32 tk, \
      u32 d, u32 dv, i64 qsb, i64 qsh, i64 qst, i64 ksb, i64 ksh, i64 kst, i64 vsb, i64 vsh, i64 vst, \
      i64 msb, i64 msh, i64 mst, i64 msk, u32 maskKind, u32 hasDiag, i64 diag, i64 window, float scale, \
      u32 splits, u32 perSplit) { RT_GRID_DEP(); \
    const void* m = maskKind == 1 ? (const void*)((const u8*)mask + mOff) \
        : maskKind == 2 ? (const void*)((const T*)mask + mOff) : mask; \
    attn_decode<T, RT>(o + oOff, wso, wsml, q + qOff, k + kOff, v + vOff, m, hq, hkv, tq, tk, d, dv, \
        qsb, qsh, qst, ksb, ksh, kst, vsb, vsh, vst, msb, msh, mst, msk, maskKind, hasDiag, diag, window, \
        scale, splits, perSplit); }
#define ATTN(DT, T) \
  ATTN_RT(DT, T, 1) ATTN_RT(DT, T, 4) \
  RT_KERNEL void attn_merge_##DT(T* o, const float* wso, const float* wsml, i64 oOff, u32 splits, u32 dv) { RT_GRID_DEP(); \
    attn_merge<T>(o + oOff, wso, wsml, splits, dv); }

ATTN(f32, float) ATTN(f16, f16) ATTN(bf16, bf16)
