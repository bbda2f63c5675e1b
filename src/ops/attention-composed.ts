// Scaled dot-product attention composed from other ops, like PyTorch's math path (half types keep
// the scores in their dtype), for the GPU cases no attention kernel takes: f64, head dims past
// 256, long queries with d != dv.
import type { DType } from '../core/dtype.ts';
import type { RawTensor } from '../device/raw-tensor.ts';
import type { AttentionParams } from '../backends/options.ts';
import { binary, compare, paramUnary, where } from './elementwise.ts';
import { matmul } from './matmul.ts';
import { softmax } from './nn.ts';
import { reduce } from './reduce.ts';
import { arange, full } from './creation.ts';
import { cumsum } from './scan.ts';
import { reshape } from './copy.ts';

/** each dtype's lowest finite value: a hidden key's score */
const LOWEST: Record<DType, number> = {
  f32: -3.4028234663852886e38,
  f64: -Number.MAX_VALUE,
  f16: -65504,
  bf16: -3.3895313892515355e38,
  u8: 0,
  u32: 0,
  i64: 0,
};

/**
 * The probabilities of queries q0 .. q0 + bq (of tq) from their scores [b, hq, bq, tk]: the
 * causal diagonal, the window and a u8 mask make one visibility mask; a float mask is added.
 * Hidden keys get the dtype's lowest finite score, not -Infinity: exp() of it against any real
 * score is exactly 0, and a row with no visible key stays finite. Where a query can end up seeing
 * no key, its probabilities are zeroed, so its output row is zeros as the CPU reference says (the
 * softmax of a row of -Infinity would be NaN). Temporaries go to keep; the result too.
 */
export function attentionProbs(
  scores: RawTensor,
  q0: number,
  tq: number,
  p: AttentionParams,
  keep: (t: RawTensor) => RawTensor,
): RawTensor {
  const dev = scores.device;
  const [, , bq, tk] = scores.layout.shape as [number, number, number, number];
  const { diag, window } = p;
  const affine = (t: RawTensor, a: number, c: number): RawTensor => keep(paramUnary(t, { op: 'affine', a, b: c }));
  // a mask spanning every query is narrowed to this block's
  let mask = p.mask;
  if (mask !== null && bq !== tq && mask.layout.shape[mask.rank - 2] === tq)
    mask = keep(mask.narrow(mask.rank - 2, q0, bq));
  // scores over the leading keys only (a causal block's gradient skips those no query of it sees)
  if (mask !== null && mask.layout.shape[mask.rank - 1]! > tk) mask = keep(mask.narrow(mask.rank - 1, 0, tk));
  // the keys each query may see: one u8 mask broadcast over [b, hq, bq, tk] (null: all of them)
  let visible: RawTensor | null = null;
  if (diag !== null) {
    // f32 positions: exact below 2^24, and the diagonal may be negative. Made on the device (a
    // running sum of ones; exact, as every partial sum is an integer below 2^24), not uploaded:
    // a gradient recorded into a graph capture runs this too
    const positions = (start: number, n: number): RawTensor =>
      n === 0
        ? keep(arange(start, start, 1, 'f32', dev))
        : affine(keep(cumsum(keep(full([n], 1, 'f32', dev)), 0)), 1, start - 1);
    const qi = keep(positions(q0, bq).unsqueeze(1));
    const kj = positions(0, tk);
    const lim = affine(qi, 1, diag);
    visible = keep(compare('le', kj, lim));
    if (window !== null) visible = keep(binary('minimum', visible, keep(compare('gt', kj, affine(lim, 1, -window)))));
  }
  if (mask !== null && mask.dtype === 'u8') visible = visible ? keep(binary('minimum', visible, mask)) : mask;
  if (visible) scores = keep(where(visible, scores, LOWEST[scores.dtype]));
  const additive = mask !== null && mask.dtype !== 'u8' ? mask : null;
  if (additive) scores = keep(binary('add', scores, additive));
  let probs = keep(softmax(scores, -1, false));
  // query i sees no key at all only under a mask, a window, or where i + diag < 0
  const canEmpty = mask !== null || window !== null || (diag !== null && q0 + diag < 0);
  if (visible && canEmpty) probs = keep(where(visible, probs, 0));
  if (additive) {
    // an additive -Infinity can still hide a whole row: it sees something when any score is not
    // -Infinity (NaN counts: it must show)
    const seen = keep(reduce('max', keep(compare('ne', scores, -Infinity)), -1, true));
    probs = keep(where(seen, probs, 0));
  }
  return probs;
}

/**
 * The g = hq / hkv query heads that share a kv head are stacked along the query length, q as
 * [b, hkv, g*tq, d], so each kv head is one GEMM of a batched matmul and k and v are never copied
 * per query head. Scaling q first gives it that (contiguous) layout.
 */
export function composedAttention(q: RawTensor, k: RawTensor, v: RawTensor, p: AttentionParams): RawTensor {
  const [b, hq, tq, d] = q.layout.shape as [number, number, number, number];
  const [, hkv, tk] = k.layout.shape as [number, number, number];
  const rows = (hq / hkv) * tq;
  const temps: RawTensor[] = [];
  const keep = (t: RawTensor): RawTensor => {
    temps.push(t);
    return t;
  };
  try {
    const qs = keep(reshape(keep(paramUnary(q, { op: 'affine', a: p.scale, b: 0 })), [b, hkv, rows, d]));
    const s = keep(matmul(qs, keep(k.transpose(2, 3))));
    const probs = attentionProbs(keep(reshape(s, [b, hq, tq, tk])), 0, tq, p, keep);
    return reshape(keep(matmul(keep(reshape(probs, [b, hkv, rows, tk])), v)), p.outShape);
  } finally {
    for (const t of temps) t.dispose();
  }
}
