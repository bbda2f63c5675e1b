// Neural-network building blocks: softmax / logSoftmax, layerNorm, rmsNorm, rotary embeddings,
// inference batch norm. Float dtypes only; every tensor of one
// call shares the dtype and the device.
import { normDim } from '../core/layout.ts';
import { DTypeError, ShapeError, TensorError } from '../core/errors.ts';
import type { RawTensor } from '../device/raw-tensor.ts';
import type { BatchNormOptions } from '../backends/options.ts';
import { FLOATS, dtypeIn, sameDType, sameDevice, sig } from '../backends/checks.ts';
import * as cpu from '../backends/cpu/nn.ts';
import * as gpu from '../backends/gpu/nn.ts';
import { defineOp } from './registry.ts';

/** normDim, with the tensor named in the error */
function dimOf(op: string, dim: number, x: RawTensor, rank = x.rank): number {
  try {
    return normDim(op, dim, rank);
  } catch (e) {
    if (e instanceof ShapeError) throw new ShapeError(`${e.message} (x ${sig(x)})`);
    throw e;
  }
}

type RopeLayout = cpu.RopeLayout;

export function floats(op: string, ...ts: RawTensor[]): void {
  sameDevice(op, ...ts);
  dtypeIn(op, ts[0]!, FLOATS);
  sameDType(op, ...ts);
}

export function checkEps(op: string, eps: number): void {
  if (typeof eps !== 'number' || !Number.isFinite(eps) || eps < 0)
    throw new RangeError(`${op}: eps must be a finite number >= 0, got ${String(eps)}`);
}

/** a [n] tensor whose length must be n */
export function vec(op: string, name: string, t: RawTensor, n: number, x: RawTensor): void {
  if (t.rank !== 1 || t.layout.shape[0] !== n)
    throw new ShapeError(`${op}: ${name} must be [${n}], got ${sig(t)} (x ${sig(x)})`);
}

export const softmax = defineOp({
  name: 'softmax',
  family: 'nn',
  summary: 'softmax (logSoftmax: its log, computed stably) along one dim',
  variants: ['softmax', 'logSoftmax'],
  dtypes: FLOATS,
  check: (x: RawTensor, dim: number, log: boolean): [RawTensor, number, boolean] => {
    const op = log ? 'logSoftmax' : 'softmax';
    floats(op, x);
    // a 0-d tensor is one element along dim 0 (or -1), like PyTorch
    return [x, dimOf(op, dim, x, Math.max(x.rank, 1)), log];
  },
  cpu: cpu.softmax,
  gpu: gpu.softmax,
  grad: 'missing',
});

function lastDimNorm(op: string, x: RawTensor, w: RawTensor, b: RawTensor | null, eps: number): void {
  floats(op, ...(b ? [x, w, b] : [x, w]));
  checkEps(op, eps);
  if (x.rank < 1) throw new ShapeError(`${op}: x must have at least 1 dim, got ${sig(x)}`);
  const h = x.layout.shape[x.rank - 1]!;
  vec(op, 'weight', w, h, x);
  if (b) vec(op, 'bias', b, h, x);
}

export const layerNorm = defineOp({
  name: 'layerNorm',
  family: 'nn',
  summary: 'over the last dim, with weight and optional bias [hidden]',
  dtypes: FLOATS,
  check: (
    x: RawTensor,
    w: RawTensor,
    b: RawTensor | null,
    eps: number,
  ): [RawTensor, RawTensor, RawTensor | null, number] => {
    lastDimNorm('layerNorm', x, w, b, eps);
    return [x, w, b, eps];
  },
  cpu: cpu.layerNorm,
  gpu: gpu.layerNorm,
  grad: 'missing',
});

export const rmsNorm = defineOp({
  name: 'rmsNorm',
  family: 'nn',
  summary: 'RMS normalisation over the last dim, with weight [hidden]',
  dtypes: FLOATS,
  check: (x: RawTensor, w: RawTensor, eps: number): [RawTensor, RawTensor, number] => {
    lastDimNorm('rmsNorm', x, w, null, eps);
    return [x, w, eps];
  },
  cpu: cpu.rmsNorm,
  gpu: gpu.rmsNorm,
  grad: 'missing',
});

const ROPE_NAMES: Record<RopeLayout, string> = { halves: 'rope', interleaved: 'ropeI', thd: 'ropeThd' };

export const rope = defineOp({
  name: 'rope',
  family: 'nn',
  summary:
    'rotary embedding with cos/sin [t, d/2]: halves on [b, h, t, d], interleaved pairs, or halves on [b, t, h, d]',
  variants: ['rope', 'ropeI', 'ropeThd'],
  dtypes: FLOATS,
  check: (
    x: RawTensor,
    cos: RawTensor,
    sin: RawTensor,
    layout: RopeLayout,
  ): [RawTensor, RawTensor, RawTensor, RopeLayout] => {
    const op = ROPE_NAMES[layout];
    if (op === undefined)
      throw new TensorError(`rope: unknown layout '${String(layout)}' (halves, interleaved or thd)`);
    floats(op, x, cos, sin);
    const dims = layout === 'thd' ? '[b, t, h, d]' : '[b, h, t, d]';
    if (x.rank !== 4) throw new ShapeError(`${op}: x must be ${dims}, got ${sig(x)}`);
    const t = x.layout.shape[layout === 'thd' ? 1 : 2]!,
      d = x.layout.shape[3]!;
    if (d % 2 !== 0) throw new ShapeError(`${op}: the last dim of x ${sig(x)} must be even`);
    for (const [name, c] of [
      ['cos', cos],
      ['sin', sin],
    ] as const) {
      if (c.rank !== 2 || c.layout.shape[0] !== t || c.layout.shape[1] !== d / 2) {
        throw new ShapeError(`${op}: ${name} must be [${t}, ${d / 2}] for x ${sig(x)} ${dims}, got ${sig(c)}`);
      }
    }
    return [x, cos, sin, layout];
  },
  cpu: cpu.rope,
  gpu: gpu.rope,
  grad: 'missing',
});

type BatchNormArgs = [RawTensor, RawTensor, RawTensor, RawTensor | null, RawTensor | null, number];
export const batchNorm = defineOp({
  name: 'batchNorm',
  family: 'nn',
  summary: 'inference batch norm over dim 1 with running mean and variance',
  dtypes: FLOATS,
  check: (x: RawTensor, o: BatchNormOptions): BatchNormArgs => {
    const op = 'batchNorm';
    if (!o || !o.mean || !o.variance)
      throw new TensorError(`${op}: options need mean and variance tensors (x ${sig(x)})`);
    const weight = o.weight ?? null,
      bias = o.bias ?? null;
    for (const t of [o.mean, o.variance, weight, bias]) t?.check(op);
    const ts = [x, o.mean, o.variance, ...(weight ? [weight] : []), ...(bias ? [bias] : [])];
    sameDevice(op, ...ts);
    dtypeIn(op, x, FLOATS);
    // the per-channel tensors in x's dtype, or in f32 beside half data (running statistics kept in
    // f32, as PyTorch allows)
    const half = x.dtype === 'f16' || x.dtype === 'bf16';
    for (const t of ts.slice(1)) {
      if (t.dtype !== x.dtype && !(half && t.dtype === 'f32')) {
        throw new DTypeError(
          `${op}: the per-channel tensors must be ${x.dtype}${half ? ' or f32' : ''} (${ts.map(sig).join(', ')})`,
        );
      }
    }
    const eps = o.eps ?? 1e-5;
    checkEps(op, eps);
    if (x.rank < 2) throw new ShapeError(`${op}: x must be [n, c, ...], got ${sig(x)}`);
    const c = x.layout.shape[1]!;
    vec(op, 'mean', o.mean, c, x);
    vec(op, 'variance', o.variance, c, x);
    if (weight) vec(op, 'weight', weight, c, x);
    if (bias) vec(op, 'bias', bias, c, x);
    return [x, o.mean, o.variance, weight, bias, eps];
  },
  cpu: cpu.batchNorm,
  gpu: gpu.batchNorm,
  grad: 'missing',
});
