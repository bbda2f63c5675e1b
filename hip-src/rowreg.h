// rowreg.h: rows held in registers, for the one-pass row kernels of softmax.hip, norm.hip and
// reduce-rows.hip.
// A group of G threads takes a row of `cols` elements that the host has checked is whole
// 16-byte vectors at a 16-byte boundary (cols a multiple of the vector width, every pointer
// aligned); lane l holds vectors l, l + G, ..., l + (V-1)G (each warp-wide load is contiguous
// bytes), so the row is read from memory once, all V loads in flight before any is used, and
// written once. Softmax's and the norms' rows that do not fit G * V vectors go to their split
// kernels (a chunk of a row per block, the same machinery); rows that are not aligned go to the
// general kernels (rowreduce.h's, reduce.hip's).
//
// Groups: G a power of two up to the wave size (several rows a wave, reduced by shuffles alone,
// no barrier), or the whole block (one row a block: one barrier per reduction). A block never
// couples two rows through a barrier, so it retires as soon as its row is done.
#pragma once
#include "rowreduce.h"
#include "convert.h"

// ---- groups and the rows they take ----------------------------------------------------------
// The wave size as a constant where it is one (nvcc emits warpSize as a value that ptxas
// learns too late to turn divisions by it into shifts).
RT_DEVICE u32 wave_size() {
#if RT_CUDA
  return 32u;
#else
  return (u32)warpSize;
#endif
}

// Where a thread sits: its lane in a group of `size`, the group's index in the block, groups
// per block. `want` from the host: a power of two up to the wave size that divides the block;
// anything else means the whole block (one group, so a block of any size needs no division).
struct RegGroup {
  u32 size, lane, gid, per;
  RT_DEVICE explicit RegGroup(u32 want) {
    const u32 bd = blockDim.x;
    if (want >= 1u && (want & (want - 1u)) == 0u && want <= wave_size() && (bd & (want - 1u)) == 0u) {
      const u32 sh = (u32)(__ffs((int)want) - 1);
      size = want; lane = threadIdx.x & (want - 1u); gid = threadIdx.x >> sh; per = bd >> sh;
    } else {
      size = bd; lane = threadIdx.x; gid = 0u; per = 1u;
    }
  }
};

// body(r, live) for every row of this group: rows go `per` a block per step, grid-stride;
// every thread of a block runs the same steps (a group past the last row gets live = false
// and r = 0, and still joins the reductions). rows < 2^31.
template <class F>
RT_DEVICE void reg_rows(const RegGroup& g, u32 rows, F body) {
  for (u32 r0 = blockIdx.x * g.per; r0 < rows; r0 += gridDim.x * g.per) {
    const u32 r = r0 + g.gid;
    body(r < rows ? r : 0u, r < rows);
  }
}

// Shared slots of a whole-block reduction: one value per wave, two sets used in turn, so one
// barrier per reduction suffices (a set is written again only two reductions later, after a
// barrier that every thread reaches once its reads of the set are done).
template <class S> struct RegSlots {
  S* s;
  u32 turn;
  RT_DEVICE explicit RegSlots(S* shared) : s(shared), turn(0u) {}
};
#define RT_REG_SLOTS (2 * (RT_BLOCK_MAX / 32))

// Resident 256-thread blocks per NVIDIA multiprocessor that a kernel holding V vectors a thread
// asks of ptxas (RT_ROW_KERNEL): the register cap 65536 / (256 * MIN) leaves room for the
// vectors and what works on them without spilling (ptxas, left to itself, picks caps that
// spill), and keeps enough loads in flight per multiprocessor (threads * V * 16 bytes: 64 KiB
// and more from V = 4 on). RT_REG_MIN for kernels that hold the row alone (softmax),
// RT_NORM_MIN for those that also load a weight and a bias vector beside each of it,
// RT_FOLD_MIN for those that only fold it (reduce-rows.hip: more resident threads for the
// same vectors).
#define RT_REG_MIN(V) ((V) >= 16 ? 2 : (V) >= 8 ? 3 : (V) >= 4 ? 4 : 8)
#define RT_NORM_MIN(V) ((V) >= 4 ? 3 : 5)
#define RT_FOLD_MIN(V) ((V) >= 16 ? 3 : (V) >= 8 ? 5 : 8)

// Vectors a thread holds in the split kernels (a chunk of a row per block): softmax's part and
// fin kernels, the norms' (which also load a weight and a bias vector beside each). The host's
// chunk plan (src/ops/gpu/rowreg.ts) mirrors them.
#define RT_SOFTMAX_SPLIT_V 8
#define RT_NORM_SPLIT_V 4

// The group's fold of v by op (commutative bit for bit, as warp_all needs): every lane of the
// group ends with the same value. All threads of a block call it the same number of times.
template <class S, class Op>
RT_DEVICE S reg_all(S v, Op op, u32 G, RegSlots<S>& slots) {
  const u32 ws = wave_size();
  for (u32 m = (G < ws ? G : ws) >> 1; m > 0u; m >>= 1) v = op(v, op.shfl(v, (int)m));
  if (G <= ws) return v;
  S* set = slots.s + slots.turn * (RT_BLOCK_MAX / 32);
  slots.turn ^= 1u;
  if (threadIdx.x % ws == 0u) set[threadIdx.x / ws] = v;
  __syncthreads();
  v = set[0];
  const u32 nw = blockDim.x / ws;
  for (u32 w = 1; w < nw; w++) v = op(v, set[w]);
  return v;
}

// ---- vectors to and from f32 -----------------------------------------------------------------
// f16 widens by compat.h's f16_widen_hw: no result here shows a NaN's payload (stores canonicalize).

// A row's 16-byte vectors travel as uint4 words whatever T is: copies and selects of a struct
// of eight 16-bit fields cost the compiler a permute per field.
// RegVec<T>: the N elements of such a vector to f32 (unpack) and back (pack, rounded by
// convert.h's rules); the vector of -inf, of +inf, of NaN (dtype.ts's pattern).
template <class T> struct RegVec;
RT_DEVICE uint4 splat4(u32 w) { return make_uint4(w, w, w, w); }
template <> struct RegVec<float> {
  static constexpr int N = 4;
  static RT_DEVICE void unpack(const uint4& v, float (&f)[4]) {
    f[0] = bits_f32(v.x); f[1] = bits_f32(v.y); f[2] = bits_f32(v.z); f[3] = bits_f32(v.w);
  }
  template <bool> static RT_DEVICE uint4 pack(const float (&f)[4]) {
    return make_uint4(f32_bits(f[0]), f32_bits(f[1]), f32_bits(f[2]), f32_bits(f[3]));
  }
  static RT_DEVICE uint4 neg_inf() { return splat4(0xff800000u); }
  static RT_DEVICE uint4 pos_inf() { return splat4(0x7f800000u); }
  static RT_DEVICE uint4 nan() { return splat4(0x7fc00000u); }
};

// The 16-bit types, two a word (the low half first, as memory has them). pack<false> is for
// values known not to be NaN: on NVIDIA one hardware conversion a pair, which matches
// convert.h's software rule on every value but NaN (its NaN pattern is not dtype.ts's);
// pack<true> is round_pair, right for any value (a branch per pair on NVIDIA). AMD rounds in
// software either way.
template <class T, u32 INF2, u32 NAN2> struct RegVec16 {
  static constexpr int N = 8;
  static RT_DEVICE uint4 neg_inf() { return splat4(INF2 | 0x80008000u); }
  static RT_DEVICE uint4 pos_inf() { return splat4(INF2); }
  static RT_DEVICE uint4 nan() { return splat4(NAN2); }
  template <bool CHECKED> static RT_DEVICE u32 pair(float lo, float hi) {
#if RT_CUDA
    if (!CHECKED) {
      u32 w;
      if (INF2 == 0x7f807f80u) asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(w) : "f"(hi), "f"(lo));
      else asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(w) : "f"(hi), "f"(lo));
      return w;
    }
#endif
    return round_pair<T>(lo, hi);
  }
  template <bool CHECKED> static RT_DEVICE uint4 pack(const float (&f)[8]) {
    return make_uint4(pair<CHECKED>(f[0], f[1]), pair<CHECKED>(f[2], f[3]), pair<CHECKED>(f[4], f[5]), pair<CHECKED>(f[6], f[7]));
  }
};
template <> struct RegVec<bf16> : RegVec16<bf16, 0x7f807f80u, 0x7fc07fc0u> {
  static RT_DEVICE void unpack(const uint4& w, float (&f)[8]) {
    const u32 q[4] = { w.x, w.y, w.z, w.w };
#pragma unroll
    for (int i = 0; i < 4; i++) { f[2 * i] = bits_f32(q[i] << 16); f[2 * i + 1] = bits_f32(q[i] & 0xffff0000u); }
  }
};
template <> struct RegVec<f16> : RegVec16<f16, 0x7c007c00u, 0x7e007e00u> {
  static RT_DEVICE void unpack(const uint4& w, float (&f)[8]) {
    const u32 q[4] = { w.x, w.y, w.z, w.w };
#pragma unroll
    for (int i = 0; i < 4; i++) { f[2 * i] = f16_widen_hw((u16)(q[i] & 0xffffu)); f[2 * i + 1] = f16_widen_hw((u16)(q[i] >> 16)); }
  }
};

// ---- the NaN-propagating max (min) of a vector ------------------------------------------------
// On NVIDIA the 16-bit types fold in their own type, two lanes an instruction (sm_80's
// {max,min}.NaN.{bf16x2,f16x2}; a max is exact in the storage type), then one pair widens.
template <bool MAX, class T> RT_DEVICE float vec_ext(const uint4& v) {
  float f[RegVec<T>::N];
  RegVec<T>::unpack(v, f);
  float m = f[0];
#pragma unroll
  for (int e = 1; e < RegVec<T>::N; e++) m = MAX ? max_nan(m, f[e]) : min_nan(m, f[e]);
  return m;
}
#if RT_CUDA
#define RT_EXT_X2(NAME, INSN) \
  RT_DEVICE u32 NAME(u32 a, u32 b) { u32 d; asm(INSN " %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b)); return d; }
RT_EXT_X2(max_nan_x2_bf16, "max.NaN.bf16x2") RT_EXT_X2(min_nan_x2_bf16, "min.NaN.bf16x2")
RT_EXT_X2(max_nan_x2_f16, "max.NaN.f16x2") RT_EXT_X2(min_nan_x2_f16, "min.NaN.f16x2")
#undef RT_EXT_X2
template <> RT_DEVICE float vec_ext<true, bf16>(const uint4& w) {
  const u32 p = max_nan_x2_bf16(max_nan_x2_bf16(w.x, w.y), max_nan_x2_bf16(w.z, w.w));
  return max_nan(bits_f32(p << 16), bits_f32(p & 0xffff0000u));
}
template <> RT_DEVICE float vec_ext<false, bf16>(const uint4& w) {
  const u32 p = min_nan_x2_bf16(min_nan_x2_bf16(w.x, w.y), min_nan_x2_bf16(w.z, w.w));
  return min_nan(bits_f32(p << 16), bits_f32(p & 0xffff0000u));
}
template <> RT_DEVICE float vec_ext<true, f16>(const uint4& w) {
  const u32 p = max_nan_x2_f16(max_nan_x2_f16(w.x, w.y), max_nan_x2_f16(w.z, w.w));
  return max_nan(f16_widen_hw((u16)(p & 0xffffu)), f16_widen_hw((u16)(p >> 16)));
}
template <> RT_DEVICE float vec_ext<false, f16>(const uint4& w) {
  const u32 p = min_nan_x2_f16(min_nan_x2_f16(w.x, w.y), min_nan_x2_f16(w.z, w.w));
  return min_nan(f16_widen_hw((u16)(p & 0xffffu)), f16_widen_hw((u16)(p >> 16)));
}
#endif
template <class T> RT_DEVICE float vec_max(const uint4& v) { return vec_ext<true, T>(v); }

// The sum of a vector's elements, pairwise (a chain of log2(N) + 1 adds, not N): each batch of
// loads is consumed, and the lane's next row reached, sooner.
template <class T> RT_DEVICE float vec_sum(const uint4& v) {
  float f[RegVec<T>::N];
  RegVec<T>::unpack(v, f);
#pragma unroll
  for (int w = RegVec<T>::N / 2; w > 0; w /= 2) {
#pragma unroll
    for (int e = 0; e < w; e++) f[e] = f[2 * e] + f[2 * e + 1];
  }
  return f[0];
}

// ---- fast math for the 16-bit types, whose outputs round far above these errors ---------------
// 2^t in one hardware instruction (about 2 ulp; -inf gives 0, NaN gives NaN; results below
// 2^-126 flush to 0)
RT_DEVICE float ex2_fast(float t) {
#if RT_CUDA
  float r;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(t));
  return r;
#else
  return __builtin_amdgcn_exp2f(t);
#endif
}
#define RT_LOG2E 1.4426950408889634f

// 1 / x in one hardware instruction (about 1 ulp); the correctly rounded division's slow path
// costs registers and a call frame on NVIDIA
RT_DEVICE float rcp_fast(float x) {
#if RT_CUDA
  return __fdividef(1.0f, x);
#else
  return __builtin_amdgcn_rcpf(x);
#endif
}

// ---- a row's vectors in and out ----------------------------------------------------------------
// A lane's vectors of a row: vectors lane, lane + G, ... of row q; those at or past nv are
// missing.
struct RegSpan {
  const uint4* q;
  u32 lane, G, nv;
  RT_DEVICE u32 idx(int c) const { return lane + (u32)c * G; }
  RT_DEVICE bool has(int c) const { return idx(c) < nv; }
};
template <class T> RT_DEVICE RegSpan reg_span(const T* row, u32 lane, u32 G, u32 nv) {
  return RegSpan{ reinterpret_cast<const uint4*>(row), lane, G, nv };
}

// a[c] = the lane's vector c, or `fill` where it is missing; all loads issue before any is used.
// A missing vector loads the row's first instead (the caller's row always has one) and takes
// the fill after: a load under a condition becomes, in LLVM, a load through a pointer selected
// between the row and a stack copy of the fill, dword by dword through flat memory.
template <int V>
RT_DEVICE void reg_load(uint4 (&a)[V], const RegSpan& s, uint4 fill) {
#pragma unroll
  for (int c = 0; c < V; c++) {
    const uint4 v = s.q[s.has(c) ? s.idx(c) : 0u];
    a[c] = s.has(c) ? v : fill;
  }
}

// f(c, e, value) for every element of the vectors this lane holds (missing ones included: the
// callers' fills make them neutral, or they test has(c) themselves)
template <class T, int V, class F>
RT_DEVICE void reg_each(const uint4 (&a)[V], F f) {
#pragma unroll
  for (int c = 0; c < V; c++) {
    float v[RegVec<T>::N];
    RegVec<T>::unpack(a[c], v);
#pragma unroll
    for (int e = 0; e < RegVec<T>::N; e++) f(c, e, v[e]);
  }
}

// the lane's vector c of the output row y (laid out as the span s) = g(c, e, element e of a[c])
// rounded, where it is not missing; CHECKED: g may give NaN (RegVec16::pack)
template <bool CHECKED, class T, int V, class G_>
RT_DEVICE void reg_store(T* y, const RegSpan& s, const uint4 (&a)[V], G_ g) {
  constexpr int N = RegVec<T>::N;
  uint4* q = reinterpret_cast<uint4*>(y);
#pragma unroll
  for (int c = 0; c < V; c++) {
    float v[N];
    RegVec<T>::unpack(a[c], v);
#pragma unroll
    for (int e = 0; e < N; e++) v[e] = g(c, e, v[e]);
    if (s.has(c)) q[s.idx(c)] = RegVec<T>::template pack<CHECKED>(v);
  }
}

// the lane's vectors of the output row y = `fill`, where they are not missing
template <int V>
RT_DEVICE void reg_fill(void* y, const RegSpan& s, const uint4& fill) {
  uint4* q = reinterpret_cast<uint4*>(y);
#pragma unroll
  for (int c = 0; c < V; c++) if (s.has(c)) q[s.idx(c)] = fill;
}
