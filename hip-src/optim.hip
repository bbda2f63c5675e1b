// optim.hip: multi-tensor optimizer steps. One launch updates every tensor of a list in place:
// the host uploads a table of the tensors (pointers and sizes) to the device, and each block
// takes chunks of OPTIM_CHUNK elements of one tensor, grid-stride over all the chunks. The table
// holds addresses that stay the same from step to step (parameters, state and master copies are
// updated in place; gradients keep theirs when the caching allocator or a captured graph hands the
// same blocks back), so the host uploads it again only when one changes, and a captured step
// replays with its table.
//
// The table, OPTIM_WORDS u64 a tensor, tensors with no elements left out by the host:
//   [0] param (P*)  [1] grad (P*)  [2..4] state (S*: Adam exp_avg, exp_avg_sq, max_exp_avg_sq
//   (0 without amsgrad); SGD the momentum buffer, then 0)  [5] master (S*, f32 copy of a half
//   param, or 0)  [6] elements  [7] the tensor's first chunk (chunk counts summed before it).
//
// Kernels (P the parameter's dtype, S the state's: f32_f32 f64_f64 f16_f16 bf16_bf16 f16_f32
// bf16_f32; arithmetic in S's compute type, f32 for the 16-bit states):
//   optim_adam_<P>_<S>(const u64* table, u32 tensors, u64 chunks, f64 beta1, f64 omBeta1,
//       f64 beta2, f64 omBeta2, f64 eps, f64 wd, f64 decay, f64 stepSize, f64 invBc2Sqrt, u32 flags)
//     flags: 1 decoupled weight decay (AdamW: w *= decay, decay = 1 - lr wd), 2 amsgrad.
//     Without 1, g += wd w. m = beta1 m + omBeta1 g; v = beta2 v + omBeta2 g^2;
//     vmax = max(vmax, v) (amsgrad); w -= stepSize m / (sqrt(v or vmax) invBc2Sqrt + eps),
//     stepSize = lr / (1 - beta1^t), invBc2Sqrt = 1 / sqrt(1 - beta2^t): the bias corrections
//     are host numbers, so nothing is read back.
//   optim_sgd_<P>_<S>(const u64* table, u32 tensors, u64 chunks, f64 lr, f64 momentum,
//       f64 omDampening, f64 wd, u32 flags)
//     flags: 1 momentum, 2 nesterov, 4 first step (the buffer starts as d). d = g + wd w;
//     buf = momentum buf + omDampening d; d = nesterov ? d + momentum buf : buf; w -= lr d.
// The order of the operations is the op-composed update's (src/optim), one rounding to S (and
// to P) on store. A master copy, where given, is read and written as the weight, and the
// parameter gets it rounded. Any grid is correct.
#include "compat.h"

#define OPTIM_WORDS 8
#define OPTIM_CHUNK 4096

// the tensor holding chunk c: the last one whose first chunk is <= c (table[0] starts at 0)
RT_DEVICE u32 optim_find(const u64* tab, u32 n, u64 c) {
  u32 lo = 0, hi = n;
  while (hi - lo > 1u) {
    const u32 mid = (lo + hi) >> 1;
    if (tab[(u64)mid * OPTIM_WORDS + 7] <= c) lo = mid;
    else hi = mid;
  }
  return lo;
}

template <class A> RT_DEVICE A optim_max(A a, A b) { return a != a ? a : (b != b ? b : (b > a ? b : a)); }

// body(i, p, g, s0, s1, s2, master) for every element of the list, grid-stride over chunks
template <class P, class S, class F>
RT_DEVICE void optim_each(const u64* tab, u32 n, u64 chunks, F body) {
  for (u64 c = blockIdx.x; c < chunks; c += gridDim.x) {
    const u64* e = tab + (u64)optim_find(tab, n, c) * OPTIM_WORDS;
    P* p = reinterpret_cast<P*>(e[0]);
    const P* g = reinterpret_cast<const P*>(e[1]);
    S* s0 = reinterpret_cast<S*>(e[2]);
    S* s1 = reinterpret_cast<S*>(e[3]);
    S* s2 = reinterpret_cast<S*>(e[4]);
    S* ms = reinterpret_cast<S*>(e[5]);
    const u64 numel = e[6], start = (c - e[7]) * OPTIM_CHUNK;
    const u64 end = start + OPTIM_CHUNK < numel ? start + OPTIM_CHUNK : numel;
    for (u64 i = start + threadIdx.x; i < end; i += blockDim.x) body(i, p, g, s0, s1, s2, ms);
  }
}

template <class P, class S>
RT_DEVICE void adam_list(const u64* tab, u32 n, u64 chunks, double beta1, double omBeta1, double beta2, double omBeta2, double eps,
                         double wd, double decay, double stepSize, double invBc2Sqrt, u32 flags) {
  typedef typename Elem<S>::C C;
  const C b1 = (C)beta1, ob1 = (C)omBeta1, b2 = (C)beta2, ob2 = (C)omBeta2, ep = (C)eps, wdc = (C)wd, dc = (C)decay,
          ss = (C)stepSize, ib = (C)invBc2Sqrt;
  const bool decoupled = (flags & 1u) != 0u, ams = (flags & 2u) != 0u, hasWd = wd != 0.0;
  optim_each<P, S>(tab, n, chunks, [&](u64 i, P* p, const P* g, S* m, S* v, S* vm, S* ms) {
    const C w = ms ? Elem<S>::load(ms[i]) : (C)Elem<P>::load(p[i]);
    C gr = (C)Elem<P>::load(g[i]);
    if (!decoupled && hasWd) gr = gr + w * wdc;
    const C mm = Elem<S>::load(m[i]) * b1 + gr * ob1;
    const C vv = Elem<S>::load(v[i]) * b2 + (gr * gr) * ob2;
    C vu = vv;
    if (ams) {
      vu = optim_max(Elem<S>::load(vm[i]), vv);
      vm[i] = Elem<S>::store(vu);
    }
    m[i] = Elem<S>::store(mm);
    v[i] = Elem<S>::store(vv);
    const C base = decoupled && hasWd ? w * dc : w;
    const C nw = base - (mm / (sqrt(vu) * ib + ep)) * ss;
    if (ms) ms[i] = Elem<S>::store(nw);
    p[i] = Elem<P>::store((typename Elem<P>::C)nw);
  });
}

template <class P, class S>
RT_DEVICE void sgd_list(const u64* tab, u32 n, u64 chunks, double lr, double momentum, double omDampening, double wd, u32 flags) {
  typedef typename Elem<S>::C C;
  const C lrc = (C)lr, mo = (C)momentum, od = (C)omDampening, wdc = (C)wd;
  const bool mom = (flags & 1u) != 0u, nesterov = (flags & 2u) != 0u, first = (flags & 4u) != 0u, hasWd = wd != 0.0;
  optim_each<P, S>(tab, n, chunks, [&](u64 i, P* p, const P* g, S* buf, S*, S*, S* ms) {
    const C w = ms ? Elem<S>::load(ms[i]) : (C)Elem<P>::load(p[i]);
    C d = (C)Elem<P>::load(g[i]);
    if (hasWd) d = d + w * wdc;
    if (mom) {
      const C b = first ? d : Elem<S>::load(buf[i]) * mo + d * od;
      // the buffer as stored (rounded to S) is what the composed update goes on with
      const S bs = Elem<S>::store(b);
      buf[i] = bs;
      d = nesterov ? d + Elem<S>::load(bs) * mo : Elem<S>::load(bs);
    }
    const C nw = w - d * lrc;
    if (ms) ms[i] = Elem<S>::store(nw);
    p[i] = Elem<P>::store((typename Elem<P>::C)nw);
  });
}

#define OPTIM_PAIR(PD, P, SD, S) \
  RT_KERNEL void optim_adam_##PD##_##SD(const u64* table, u32 tensors, u64 chunks, double beta1, double omBeta1, double beta2, \
      double omBeta2, double eps, double wd, double decay, double stepSize, double invBc2Sqrt, u32 flags) { RT_GRID_DEP(); \
    adam_list<P, S>(table, tensors, chunks, beta1, omBeta1, beta2, omBeta2, eps, wd, decay, stepSize, invBc2Sqrt, flags); } \
  RT_KERNEL void optim_sgd_##PD##_##SD(const u64* table, u32 tensors, u64 chunks, double lr, double momentum, double omDampening, \
      double wd, u32 flags) { RT_GRID_DEP(); \
    sgd_list<P, S>(table, tensors, chunks, lr, momentum, omDampening, wd, flags); }

OPTIM_PAIR(f32, float, f32, float)
OPTIM_PAIR(f64, double, f64, double)
OPTIM_PAIR(f16, f16, f16, f16)
OPTIM_PAIR(bf16, bf16, bf16, bf16)
OPTIM_PAIR(f16, f16, f32, float)
OPTIM_PAIR(bf16, bf16, f32, float)
