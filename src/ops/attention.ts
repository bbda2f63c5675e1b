// Scaled dot-product attention: the checks, then the CPU reference, a GPU kernel, or (where no
// GPU kernel applies) attention composed from other ops.
import { DTypeError, ShapeError, TensorError } from '../core/errors.ts';
import type { RawTensor } from '../device/raw-tensor.ts';
import { CAUSAL_ALIGNS } from '../core/op-types.ts';
import type { AttentionOptions, AttentionParams } from '../backends/options.ts';
import { FLOATS, sameDevice, sig } from '../backends/checks.ts';
import * as cpu from '../backends/cpu/nn.ts';
import * as gpu from '../backends/gpu/nn.ts';
import { floats } from './nn.ts';
import { composedAttention } from './attention-composed.ts';
import { defineOp, recordsGradOf } from './registry.ts';

export const attention = defineOp({
  name: 'scaledDotProductAttention',
  family: 'attention',
  summary: 'q [b, hq, tq, d], k/v [b, hkv, tk, d]: causal (either alignment), sliding window, masks, GQA',
  dtypes: FLOATS,
  check: (
    q: RawTensor,
    k: RawTensor,
    v: RawTensor,
    o: AttentionOptions,
  ): [RawTensor, RawTensor, RawTensor, AttentionParams] => {
    const op = 'scaledDotProductAttention';
    floats(op, q, k, v);
    // the operands' description, built only for an error (formatting them costs every call)
    const all = (): string => `q ${sig(q)}, k ${sig(k)}, v ${sig(v)}`;
    if (q.rank !== 4 || k.rank !== 4 || v.rank !== 4)
      throw new ShapeError(`${op}: q, k, v must be 4-d [b, heads, t, d], got ${all()}`);
    const [b, hq, tq, d] = q.layout.shape as [number, number, number, number];
    const [kb, hkv, tk, kd] = k.layout.shape as [number, number, number, number];
    const [vb, vh, vt, dv] = v.layout.shape as [number, number, number, number];
    if (kb !== b || vb !== b) throw new ShapeError(`${op}: batch sizes differ (${all()})`);
    if (vh !== hkv || vt !== tk) throw new ShapeError(`${op}: k and v must have the same heads and length (${all()})`);
    if (kd !== d) throw new ShapeError(`${op}: q and k head dims differ (${all()})`);
    if (hkv === 0 ? hq !== 0 : hq % hkv !== 0)
      throw new ShapeError(`${op}: query heads ${hq} are not a multiple of kv heads ${hkv} (${all()})`);
    const causal = o.causal ?? false;
    if (typeof causal !== 'boolean' && !CAUSAL_ALIGNS.includes(causal)) {
      throw new TensorError(`${op}: causal must be a boolean, 'top-left' or 'bottom-right', got ${String(causal)}`);
    }
    const diag = causal === false ? null : causal === 'bottom-right' ? tk - tq : 0;
    const scale = o.scale ?? 1 / Math.sqrt(d);
    if (typeof scale !== 'number' || !Number.isFinite(scale))
      throw new RangeError(`${op}: scale must be a finite number, got ${String(scale)} (${all()})`);
    const window = o.window ?? null;
    if (window !== null) {
      if (!Number.isInteger(window) || window < 1)
        throw new RangeError(`${op}: window must be a positive integer, got ${String(window)} (${all()})`);
      if (diag === null)
        throw new TensorError(`${op}: a sliding window needs causal set ('top-left' or 'bottom-right') (${all()})`);
    }
    const mask = o.mask ?? null;
    if (mask !== null) {
      mask.check(op);
      sameDevice(op, q, mask);
      if (mask.dtype !== 'u8' && mask.dtype !== q.dtype) {
        throw new DTypeError(
          `${op}: mask must be u8 (nonzero = attend) or q's dtype ${q.dtype} (added to the scores), got mask ${sig(mask)} (${all()})`,
        );
      }
      const full = [b, hq, tq, tk];
      const extra = full.length - mask.rank;
      if (extra < 0 || !mask.layout.shape.every((n, i) => n === 1 || n === full[i + extra])) {
        throw new ShapeError(
          `${op}: mask ${sig(mask)} does not broadcast to [b, hq, tq, tk] = [${full.join(', ')}] (${all()})`,
        );
      }
    }
    // the gradient's kernels read the forward's log-sum-exp where it kept one
    return [q, k, v, { scale, diag, window, mask, outShape: [b, hq, tq, dv], saveLse: recordsGradOf(q, k, v) }];
  },
  cpu: cpu.attention,
  gpu: (q, k, v, p) => gpu.attention(q, k, v, p) ?? composedAttention(q, k, v, p),
  grad: 'missing',
});
