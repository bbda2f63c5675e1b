// attention.hip: fused attention for short queries (decode: tq 1 to 16) over long keys, with no
// score matrix in global memory. A block takes one (batch, kv head), up to ATT_RT query rows of
// that head's group (grouped-query heads read their shared K/V once, through the head mapping)
// and one split of the keys; splits run side by side so one sequence still fills the device, and
// attn_merge combines their partial results. Inside a split the keys go in chunks of ATT_CH,
// ATT_TPK threads per key for the scores, with the softmax kept online across chunks (running max m,
// running sum l, the output accumulator rescaled by exp(m_old - m_new)). Sums in f32.
//
// Visibility, as the CPU reference: with hasDiag, query i sees key j iff j <= i + diag, and with
// window > 0 also j > i + diag - window; a u8 mask (maskKind 1) hides keys where it is 0; an
// additive mask (maskKind 2, q's dtype) is added to the scaled scores and -inf hides. A row that
// sees no key gets zeros; a NaN score makes its row NaN.
//
// Kernels (DT in f32 f16 bf16; T storage; strides in elements, the head dim has unit stride):
//   attn_decode_<DT>(T* o, float* wso, float* wsml, const T* q, const T* k, const T* v,
//       const void* mask, i64 oOff, i64 qOff, i64 kOff, i64 vOff, i64 mOff,
//       u32 hq, u32 hkv, u32 tq, u32 tk, u32 d, u32 dv,
//       i64 qsb, i64 qsh, i64 qst, i64 ksb, i64 ksh, i64 kst, i64 vsb, i64 vsh, i64 vst,
//       i64 msb, i64 msh, i64 mst, i64 msk, u32 maskKind, u32 hasDiag, i64 diag, i64 window,
//       float scale, u32 splits, u32 perSplit)
//     grid (b * hkv, splits, ceil(hq / hkv * tq / ATT_RT)), block 256. o contiguous
//     [b, hq, tq, dv]; with splits > 1 the partial sums go to wso [rows, splits, dv] and (m, l)
//     to wsml [rows, splits, 2] (rows = b * hq * tq) and o is written by attn_merge.
//   attn_merge_<DT>(T* o, const float* wso, const float* wsml, i64 oOff, u32 rows, u32 splits,
//       u32 dv)
// d, dv <= ATT_DMAX.
#include "rowreduce.h"

#define ATT_RT 8
// threads per key in the score pass: each dots a quarter of the head dim, so a key's loads are
// in flight together instead of one thread reading the whole row in turn
#define ATT_TPK 4
// keys per chunk: one per ATT_TPK threads of a full block
#define ATT_CH (RT_BLOCK_MAX / ATT_TPK)
#define ATT_DMAX 256
// loads in flight per thread before any is used: 16-byte key vectors (a quarter of a d 128 bf16
// row), values of v
#define ATT_KLOADS 4
#define ATT_VLOADS 4

// Loads to f32. f16 goes through the hardware conversion: compat.h's software f16_to_f32 branches
// on the exponent and holds its constants in scalar registers, which (on wave64, where each
// divergent branch of the unrolled loops below also saves an exec mask there) spilled them on
// gfx9. Same values: every f16 is exact in f32, and the conversion is exact on both vendors.
template <class T> RT_DEVICE float att_load(T x) { return Elem<T>::load(x); }
template <> RT_DEVICE float att_load<f16>(f16 h) {
#if RT_HIP
  return (float)__builtin_bit_cast(_Float16, h.bits);
#else
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h.bits));
  return f;
#endif
}

// This lane's share (sub of ATT_TPK) of the dots of key row kr with every query row: 16-byte
// vectors sub, sub + ATT_TPK, ... of the row, ATT_KLOADS of them loaded before any is used.
template <class T>
RT_DEVICE void att_dot(const T* kr, const float (*qs)[ATT_DMAX], u32 d, u32 nr, bool vec, u32 sub, float (&s)[ATT_RT]) {
  typedef Vec16<T> V;
  constexpr u32 VN = V::N, STEP = ATT_TPK * VN;
  if (vec) {
    u32 e = sub * VN;
    for (; e + (ATT_KLOADS - 1) * STEP < d; e += ATT_KLOADS * STEP) {
      V kv[ATT_KLOADS];
#pragma unroll
      for (u32 w = 0; w < ATT_KLOADS; w++) kv[w] = *(const V*)(kr + e + w * STEP);
#pragma unroll
      for (u32 w = 0; w < ATT_KLOADS; w++) {
#pragma unroll
        for (u32 u = 0; u < VN; u++) {
          const float kx = att_load(kv[w].v[u]);
#pragma unroll
          for (u32 r = 0; r < ATT_RT; r++) if (r < nr) s[r] += qs[r][e + w * STEP + u] * kx;
        }
      }
    }
    for (; e < d; e += STEP) {
      const V kv = *(const V*)(kr + e);
#pragma unroll
      for (u32 u = 0; u < VN; u++) {
        const float kx = att_load(kv.v[u]);
#pragma unroll
        for (u32 r = 0; r < ATT_RT; r++) if (r < nr) s[r] += qs[r][e + u] * kx;
      }
    }
  } else {
    for (u32 e = sub; e < d; e += ATT_TPK) {
      const float kx = att_load(kr[e]);
#pragma unroll
      for (u32 r = 0; r < ATT_RT; r++) if (r < nr) s[r] += qs[r][e] * kx;
    }
  }
}

template <class T>
RT_DEVICE void attn_decode(T* o, float* wso, float* wsml, const T* q, const T* k, const T* v, const void* mask,
    u32 hq, u32 hkv, u32 tq, u32 tk, u32 d, u32 dv,
    i64 qsb, i64 qsh, i64 qst, i64 ksb, i64 ksh, i64 kst, i64 vsb, i64 vsh, i64 vst,
    i64 msb, i64 msh, i64 mst, i64 msk, u32 maskKind, u32 hasDiag, i64 diag, i64 window,
    float scale, u32 splits, u32 perSplit) {
  typedef Elem<T> E;
  __shared__ float qs[ATT_RT][ATT_DMAX];
  __shared__ float sc[ATT_RT][ATT_CH];
  __shared__ float red[ATT_RT * RT_BLOCK_MAX];
  // the running max is read by a whole wave and then rewritten by its lane 0: two buffers, one
  // per parity of the chunk, so no lane rewrites a value another may still be reading
  __shared__ float mrow[2][ATT_RT], lrow[ATT_RT], fac[ATT_RT];
  const u32 g = hq / hkv, R = g * tq;
  const u32 bi = blockIdx.x / hkv, kh = blockIdx.x % hkv;
  const u32 split = blockIdx.y, r0 = blockIdx.z * ATT_RT;
  const u32 nr = min((u32)ATT_RT, R - r0);
  const u32 js = split * perSplit, je = min(tk, js + perSplit);
  const u32 tid = threadIdx.x, nt = blockDim.x, ws = (u32)warpSize, lane = tid % ws;
  // per row of the tile (query head kh * g + rr / tq, query rr % tq): where its mask row starts,
  // its visible key range and its output row, parked in shared memory rather than held in scalar
  // registers for every row (which spilled them on AMD)
  __shared__ i64 smo[ATT_RT], shi[ATT_RT], slo[ATT_RT];
  __shared__ u64 srow[ATT_RT];
  if (tid < ATT_RT) {
    const u32 rr = r0 + min(tid, nr - 1), h = kh * g + rr / tq, i = rr % tq;
    smo[tid] = (i64)bi * msb + (i64)h * msh + (i64)i * mst;
    // keys lo < j <= hi are visible: the whole range without a diagonal
    const i64 hi = (i64)i + diag;
    shi[tid] = hasDiag ? hi : (i64)tk;
    slo[tid] = hasDiag && window > 0 ? hi - window : -1;
    srow[tid] = ((u64)bi * hq + h) * tq + i;
  }
  for (u32 x = tid; x < ATT_RT * d; x += nt) {
    const u32 r = x / d, e = x % d, rr = r0 + r;
    qs[r][e] = r < nr ? att_load(q[(i64)bi * qsb + (i64)(kh * g + rr / tq) * qsh + (i64)(rr % tq) * qst + e]) * scale : 0.f;
  }
  if (tid < ATT_RT) { mrow[0][tid] = -INFINITY; lrow[tid] = 0.f; }
  // the output pass: thread -> column c of v, and one of `parts` interleaved slices of the keys
  const u32 parts = nt / dv, part = tid / dv, c = tid % dv;
  const bool active = part < parts;
  float acc[ATT_RT];
#pragma unroll
  for (u32 r = 0; r < ATT_RT; r++) acc[r] = 0.f;
  // the key and value rows' base and stride go through shared memory: read back from there
  // they live in vector registers, which the loop has to spare, where the scalar registers
  // holding every argument spilled on gfx9 (wave64)
  __shared__ const T* sbase[2];
  __shared__ i64 sstride[2];
  __shared__ u32 svec;
  constexpr u32 VN = Vec16<T>::N;
  if (tid == 0) {
    svec = aligned16(k) && d % VN == 0 && ksb % VN == 0 && ksh % VN == 0 && kst % VN == 0;
    sbase[0] = k + (i64)bi * ksb + (i64)kh * ksh; sbase[1] = v + (i64)bi * vsb + (i64)kh * vsh;
    sstride[0] = kst; sstride[1] = vst;
  }
  __syncthreads();
  const T* kb = sbase[0];
  const T* vb = sbase[1];
  const i64 kstride = sstride[0], vstride = sstride[1];
  const bool vec = svec != 0;

  u32 cur = 0;
  const u32 chunk = nt / ATT_TPK;
  for (u32 j0 = js; j0 < je; j0 += chunk, cur ^= 1u) {
    const u32 nj = min(chunk, je - j0);
    {
      const u32 kk = tid / ATT_TPK, sub = tid % ATT_TPK, j = j0 + kk;
      float s[ATT_RT];
#pragma unroll
      for (u32 r = 0; r < ATT_RT; r++) s[r] = 0.f;
      if (kk < nj) att_dot(kb + (i64)j * kstride, qs, d, nr, vec, sub, s);
      // the key's ATT_TPK lanes are adjacent: a butterfly leaves the whole dot on each
#pragma unroll
      for (u32 m = 1; m < ATT_TPK; m <<= 1) {
#pragma unroll
        for (u32 r = 0; r < ATT_RT; r++) s[r] += shfl_xor(s[r], (int)m);
      }
      // branch-free per lane (only uniform branches): on wave64 every divergent branch of these
      // unrolled rows saved an exec mask in scalar registers, which spilled them on gfx9. Lanes
      // past the chunk read the last key's mask entry and discard it.
      const i64 jm = (i64)min(j, tk - 1) * msk;
#pragma unroll
      for (u32 r = 0; r < ATT_RT; r++) {
        bool vis = kk < nj && r < nr;
        float val = s[r];
        vis = vis & ((i64)j <= shi[r]) & ((i64)j > slo[r]);
        if (maskKind == 1) vis = vis & (((const u8*)mask)[smo[r] + jm] != 0);
        else if (maskKind == 2) val += att_load(((const T*)mask)[smo[r] + jm]);
        s[r] = vis ? val : -INFINITY;
      }
      if (sub == 0) {
#pragma unroll
        for (u32 r = 0; r < ATT_RT; r++) sc[r][kk] = s[r];
      }
    }
    __syncthreads();
    // a wave per row: the chunk's max, the new running max, probabilities, their sum
    for (u32 r = tid / ws; r < ATT_RT; r += nt / ws) {
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
      for (u32 r = 0; r < ATT_RT; r++) acc[r] *= fac[r];
      // ATT_VLOADS values of v in flight per thread before any is used (see att_dot)
      u32 x = part;
      for (; x + (ATT_VLOADS - 1) * parts < nj; x += ATT_VLOADS * parts) {
        float vx[ATT_VLOADS];
#pragma unroll
        for (u32 w = 0; w < ATT_VLOADS; w++) vx[w] = att_load(vb[(i64)(j0 + x + w * parts) * vstride + c]);
#pragma unroll
        for (u32 w = 0; w < ATT_VLOADS; w++) {
#pragma unroll
          for (u32 r = 0; r < ATT_RT; r++) acc[r] += sc[r][x + w * parts] * vx[w];
        }
      }
      for (; x < nj; x += parts) {
        const float vx = att_load(vb[(i64)(j0 + x) * vstride + c]);
#pragma unroll
        for (u32 r = 0; r < ATT_RT; r++) acc[r] += sc[r][x] * vx;
      }
    }
    __syncthreads();
  }

  if (active) {
#pragma unroll
    for (u32 r = 0; r < ATT_RT; r++) red[(part * ATT_RT + r) * dv + c] = acc[r];
  }
  __syncthreads();
  for (u32 x = tid; x < nr * dv; x += nt) {
    const u32 r = x / dv, cc = x % dv;
    float sum = 0.f;
    for (u32 p = 0; p < parts; p++) sum += red[(p * ATT_RT + r) * dv + cc];
    const u64 row = srow[r];
    if (splits == 1) {
      const float l = lrow[r];
      o[row * dv + cc] = E::store(l == 0.f ? 0.f : sum / l);
    } else {
      wso[(row * splits + split) * dv + cc] = sum;
      if (cc == 0) { wsml[(row * splits + split) * 2] = mrow[cur][r]; wsml[(row * splits + split) * 2 + 1] = lrow[r]; }
    }
  }
}

// A split that saw nothing has l = 0 and takes no part; a NaN anywhere makes the row NaN. The
// splits' values are loaded ATT_MLOADS at a time before any is used: one at a time, each
// iteration waited on its load, and the merge took longer than the attention itself.
#define ATT_MLOADS 8
template <class T>
RT_DEVICE void attn_merge(T* o, const float* wso, const float* wsml, u32 rows, u32 splits, u32 dv) {
  grid_loop64((u64)rows * dv, [&](u64 i) {
    const u64 row = i / dv, c = i % dv;
    const float* ml = wsml + row * splits * 2;
    const float* po = wso + row * splits * dv + c;
    float m = -INFINITY;
    for (u32 s0 = 0; s0 < splits; s0 += ATT_MLOADS) {
      float ms[ATT_MLOADS], ls[ATT_MLOADS];
#pragma unroll
      for (u32 u = 0; u < ATT_MLOADS; u++) {
        const bool in = s0 + u < splits;
        ms[u] = in ? ml[2 * (s0 + u)] : -INFINITY;
        ls[u] = in ? ml[2 * (s0 + u) + 1] : 0.f;
      }
#pragma unroll
      for (u32 u = 0; u < ATT_MLOADS; u++) if (ls[u] != 0.f) m = max_nan(m, ms[u]);
    }
    float l = 0.f, acc = 0.f;
    for (u32 s0 = 0; s0 < splits; s0 += ATT_MLOADS) {
      float ms[ATT_MLOADS], ls[ATT_MLOADS], os[ATT_MLOADS];
#pragma unroll
      for (u32 u = 0; u < ATT_MLOADS; u++) {
        const bool in = s0 + u < splits;
        ms[u] = in ? ml[2 * (s0 + u)] : 0.f;
        ls[u] = in ? ml[2 * (s0 + u) + 1] : 0.f;
        os[u] = in ? po[(u64)(s0 + u) * dv] : 0.f;
      }
#pragma unroll
      for (u32 u = 0; u < ATT_MLOADS; u++) {
        if (ls[u] == 0.f) continue;
        const float f = expf(ms[u] - m);
        l += ls[u] * f;
        acc += os[u] * f;
      }
    }
    o[i] = Elem<T>::store(l == 0.f ? 0.f : acc / l);
  });
}

#define ATTN(DT, T) \
  RT_KERNEL void attn_decode_##DT(T* o, float* wso, float* wsml, const T* q, const T* k, const T* v, \
      const void* mask, i64 oOff, i64 qOff, i64 kOff, i64 vOff, i64 mOff, u32 hq, u32 hkv, u32 tq, u32 tk, \
      u32 d, u32 dv, i64 qsb, i64 qsh, i64 qst, i64 ksb, i64 ksh, i64 kst, i64 vsb, i64 vsh, i64 vst, \
      i64 msb, i64 msh, i64 mst, i64 msk, u32 maskKind, u32 hasDiag, i64 diag, i64 window, float scale, \
      u32 splits, u32 perSplit) { \
    const void* m = maskKind == 1 ? (const void*)((const u8*)mask + mOff) \
        : maskKind == 2 ? (const void*)((const T*)mask + mOff) : mask; \
    attn_decode<T>(o + oOff, wso, wsml, q + qOff, k + kOff, v + vOff, m, hq, hkv, tq, tk, d, dv, \
        qsb, qsh, qst, ksb, ksh, kst, vsb, vsh, vst, msb, msh, mst, msk, maskKind, hasDiag, diag, window, \
        scale, splits, perSplit); } \
  RT_KERNEL void attn_merge_##DT(T* o, const float* wso, const float* wsml, i64 oOff, u32 rows, u32 splits, \
      u32 dv) { \
    attn_merge<T>(o + oOff, wso, wsml, rows, splits, dv); }

ATTN(f32, float) ATTN(f16, f16) ATTN(bf16, bf16)
