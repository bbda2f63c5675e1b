// The gradient of scaled dot-product attention. On the GPU, where they apply (f32, f16, bf16,
// head dims up to 256 with d = dv), two dedicated kernels recompute the probabilities tile by
// tile from q, k, v, the output and its gradient (backends/gpu/flash-grad.ts): no score matrix,
// masks, windows, both causal alignments and GQA included. Elsewhere (the CPU, f64, wider or
// unequal head dims, empty operands) the composed rule below, which recomputes the scores block
// by block of queries through the library GEMMs: for each block the scores and probabilities are
// made again (masks, window and both causal alignments as in the forward), then
//   dV += Pᵀ dO,  dP = dO Vᵀ,  dS = P ∘ (dP − rowsum(dP ∘ P)),  dQ = dS K · scale,  dK += dSᵀ Q · scale.
// Memory is one block's [b, hq, rows, tk] scores, never the whole [tq, tk] square: the block's
// rows are chosen so its scores stay near attentionGradTuning.blockElements. Under a causal
// diagonal a block takes only the leading keys its last query sees (blocks of at most a quarter
// of the queries, so most of the masked half of the square is skipped), and dS comes from the
// fused softmax backward. The query heads sharing a kv head are stacked like the forward's
// composed path, so GQA's dK and dV sum over them inside the GEMM. dK and dV add up across blocks
// in f32 (f64 for f64 inputs), the last block (every key) first.
import { TensorError } from '../core/errors.ts';
import type { RawTensor } from '../device/raw-tensor.ts';
import type { AttentionParams } from '../backends/options.ts';
import { sig } from '../backends/checks.ts';
import { flashGrad, flashGradRefusal, flashGradTiled } from '../backends/gpu/flash-grad.ts';
import { attentionProbs } from './attention-composed.ts';
import { cast } from './cast.ts';
import { cat, reshape } from './copy.ts';
import { full } from './creation.ts';
import { binary, paramUnary } from './elementwise.ts';
import { matmul } from './matmul.ts';
import { reduce } from './reduce.ts';
import { softmaxBackward } from './train.ts';
import { scoped } from './scoped.ts';
import { defineGrad } from './registry.ts';

/** which GPU path attention's gradient takes */
export type AttentionGradPath = 'auto' | 'kernel' | 'composed';

/**
 * blockElements: the composed path's scores of one block of queries stay near this many (f32:
 * 256 MiB); tests shrink it to run many blocks on small inputs. path: 'auto' takes the tiled
 * matrix-core kernels where they run (f16 and bf16; NVIDIA, gfx90a, gfx942, gfx950) up to head
 * dim autoKernelMaxHeadDim, else the composed path; 'kernel' and 'composed' force one (for tests
 * and measurements), 'kernel' throwing where the kernels do not take the operands.
 * matrixCores: the kernels' f16/bf16 products on the matrix cores where the arch has them;
 * false runs them as FMAs (for tests and measurements). forwardLse: the tiled kernels read the
 * rows' log-sum-exp the forward kept (flash_fwd, while autograd records); false recomputes it
 * (for tests and measurements).
 */
export const attentionGradTuning: {
  blockElements: number;
  path: AttentionGradPath;
  matrixCores: boolean;
  forwardLse: boolean;
  autoKernelMaxHeadDim: number;
} = {
  blockElements: 1 << 26,
  path: 'auto',
  matrixCores: true,
  forwardLse: true,
  // on an H200 (bench:attention-grad, causal bf16, the forward's log-sum-exp kept) the tiled
  // kernels took 1.10 ms against the composed path's 2.81 at d 64, and 5.26 against 5.80 at d 128
  // (GQA, t 2048); with the log-sum-exp recomputed they took 6.17 there
  autoKernelMaxHeadDim: 128,
};

defineGrad(
  'scaledDotProductAttention',
  (g, [q, k, v, p]: [RawTensor, RawTensor, RawTensor, AttentionParams], out): [RawTensor, RawTensor][] => {
    const path = attentionGradTuning.path;
    if (!q.device.isCpu && (path === 'kernel' || (path === 'auto' && autoTakesKernels(q)))) {
      const refusal = flashGradRefusal(q, k, v, out, g);
      if (refusal === null) {
        const r = flashGrad(q, k, v, out, g, p, {
          matrixCores: attentionGradTuning.matrixCores,
          forwardLse: attentionGradTuning.forwardLse,
        });
        return [
          [q, r.dq],
          [k, r.dk],
          [v, r.dv],
        ];
      }
      if (path === 'kernel')
        throw new TensorError(
          `scaledDotProductAttention gradient: the kernel path was asked for, but it does not take ${refusal} (q ${sig(q)}, k ${sig(k)}, v ${sig(v)}, grad ${sig(g)})`,
        );
    }
    return composedGrad(g, q, k, v, p);
  },
);

/** 'auto' on a GPU: the tiled kernels where they run, up to autoKernelMaxHeadDim */
function autoTakesKernels(q: RawTensor): boolean {
  const d = q.layout.shape[3]!;
  return (
    d <= attentionGradTuning.autoKernelMaxHeadDim &&
    flashGradTiled(q.device.runtime.info, q.dtype, d, attentionGradTuning.matrixCores)
  );
}

function composedGrad(
  g: RawTensor,
  q: RawTensor,
  k: RawTensor,
  v: RawTensor,
  p: AttentionParams,
): [RawTensor, RawTensor][] {
  const [b, hq, tq, d] = q.layout.shape as [number, number, number, number];
  const [, hkv, tk] = k.layout.shape as [number, number, number];
  const dv = v.layout.shape[3]!;
  const groups = hkv === 0 ? 1 : hq / hkv;
  const accType = q.dtype === 'f64' ? 'f64' : 'f32';
  let block = Math.max(1, Math.min(tq, Math.floor(attentionGradTuning.blockElements / Math.max(1, b * hq * tk))));
  if (p.diag !== null) block = Math.min(block, Math.max(1, Math.ceil(tq / 4)));
  /** the keys a block of queries [q0, q0 + bq) needs: the leading ones up to its last query's diagonal */
  const keysOf = (q0: number, bq: number): number => {
    if (p.diag === null) return tk;
    const hi = q0 + bq + p.diag;
    return hi >= 1 && hi < tk ? hi : tk;
  };
  // dK and dV: running sums over the blocks (each step frees the previous sum), over every key;
  // a block's part covers the leading `n` (keys past every query's diagonal get zeros)
  let dK: RawTensor | null = null;
  let dV: RawTensor | null = null;
  const addInto = (acc: RawTensor | null, part: RawTensor, n: number): RawTensor =>
    scoped((keep) => {
      const wide = part.dtype === accType ? part : keep(cast(part, accType));
      if (acc === null) {
        if (n === tk) return wide.view(wide.layout);
        const rest = [...wide.layout.shape];
        rest[2] = tk - n;
        return cat([wide, keep(full(rest, 0, accType, wide.device))], 2);
      }
      const sum =
        n === tk
          ? binary('add', acc, wide)
          : cat([keep(binary('add', keep(acc.narrow(2, 0, n)), wide)), keep(acc.narrow(2, n, tk - n))], 2);
      acc.dispose();
      return sum;
    });
  const dQs: RawTensor[] = [];
  // dS = P (dP - rowsum(P dP)) is the same when every key's value moves by one vector c (each
  // row's probabilities add up to 1), but dP = dO Vᵀ, kept in a half dtype, loses what is left
  // of it after the common part dO·c to rounding when c is large against the values' spread. So
  // half types take dP from the values centred on their mean over the keys (in f32)
  const half = v.dtype === 'f16' || v.dtype === 'bf16';
  const vc = half && tk > 0 ? centredOverKeys(v) : v;
  try {
    const starts: number[] = [];
    for (let q0 = 0; q0 < tq; q0 += block) starts.push(q0);
    for (const q0 of starts.reverse()) {
      const bq = Math.min(block, tq - q0);
      const rows = groups * bq;
      const n = keysOf(q0, bq);
      scoped((keep) => {
        const kb = n === tk ? k : keep(k.narrow(2, 0, n));
        const vb = n === tk ? vc : keep(vc.narrow(2, 0, n));
        // the block's queries, scaled, stacked per kv head: [b, hkv, g*bq, d]
        const qb = keep(q.narrow(2, q0, bq));
        const qs = keep(reshape(keep(paramUnary(qb, { op: 'affine', a: p.scale, b: 0 })), [b, hkv, rows, d]));
        const s = keep(matmul(qs, keep(kb.transpose(2, 3))));
        const probs = attentionProbs(keep(reshape(s, [b, hq, bq, n])), q0, tq, p, keep);
        const P = keep(reshape(probs, [b, hkv, rows, n]));
        const dO = keep(reshape(keep(g.narrow(2, q0, bq)), [b, hkv, rows, dv]));
        dV = addInto(dV, keep(matmul(keep(P.transpose(2, 3)), dO)), n);
        const dP = keep(matmul(dO, keep(vb.transpose(2, 3))));
        const dS = keep(softmaxBackward(dP, P, 3, false));
        const dQb = keep(paramUnary(keep(matmul(dS, kb)), { op: 'affine', a: p.scale, b: 0 }));
        dQs.unshift(reshape(dQb, [b, hq, bq, d]));
        // qs carries the scale already
        dK = addInto(dK, keep(matmul(keep(dS.transpose(2, 3)), qs)), n);
      });
    }
    const dQ = dQs.length === 1 ? dQs[0]!.view(dQs[0]!.layout) : cat(dQs, 2);
    // tq = 0: no query, no gradient
    const back = (t: RawTensor | null, like: RawTensor): RawTensor =>
      t === null
        ? full(like.layout.shape, 0, like.dtype, like.device)
        : t.dtype === like.dtype
          ? t.view(t.layout)
          : cast(t, like.dtype);
    return [
      [q, dQ],
      [k, back(dK, k)],
      [v, back(dV, v)],
    ];
  } finally {
    for (const t of [...dQs, dK, dV]) t?.dispose();
    if (vc !== v) vc.dispose();
  }
}

/** v [b, h, tk, dv] less its mean over the keys, computed in f32, in v's dtype */
function centredOverKeys(v: RawTensor): RawTensor {
  return scoped((keep) => {
    const wide = keep(cast(v, 'f32'));
    const mean = keep(reduce('mean', wide, [2], true));
    return cast(keep(binary('sub', wide, mean)), v.dtype);
  });
}
