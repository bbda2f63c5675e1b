// Neural-network building blocks: softmax / logSoftmax, layerNorm, rmsNorm, rotary embeddings,
// inference batch norm and scaled dot-product attention. Float dtypes only; every tensor of one
// call shares the dtype and the device.
import { normDim, type Shape } from '../core/layout.ts';
import { DTypeError, ShapeError, TensorError } from '../core/errors.ts';
import type { Tensor } from '../tensor/tensor.ts';
import { CAUSAL_ALIGNS, type AttentionOptions } from '../core/op-types.ts';
import type { BatchNormOptions } from '../backends/options.ts';
import { FLOATS, dtypeIn, sameDType, sameDevice, sig } from './dispatch.ts';
import * as cpu from '../backends/cpu/nn.ts';
import * as gpu from '../backends/gpu/nn.ts';

/** normDim, with the tensor named in the error */
function dimOf(op: string, dim: number, x: Tensor, rank = x.rank): number {
  try { return normDim(op, dim, rank); } catch (e) {
    if (e instanceof ShapeError) throw new ShapeError(`${e.message} (x ${sig(x)})`);
    throw e;
  }
}

type RopeLayout = cpu.RopeLayout;

function floats(op: string, ...ts: Tensor[]): void {
  sameDevice(op, ...ts);
  dtypeIn(op, ts[0]!, FLOATS);
  sameDType(op, ...ts);
}

function checkEps(op: string, eps: number): void {
  if (typeof eps !== 'number' || !Number.isFinite(eps) || eps < 0) throw new RangeError(`${op}: eps must be a finite number >= 0, got ${String(eps)}`);
}

/** a [n] tensor whose length must be n */
function vec(op: string, name: string, t: Tensor, n: number, x: Tensor): void {
  if (t.rank !== 1 || t.layout.shape[0] !== n) throw new ShapeError(`${op}: ${name} must be [${n}], got ${sig(t)} (x ${sig(x)})`);
}

export function softmax(x: Tensor, dim: number, log: boolean): Tensor {
  const op = log ? 'logSoftmax' : 'softmax';
  floats(op, x);
  // a 0-d tensor is one element along dim 0 (or -1), like PyTorch
  const d = dimOf(op, dim, x, Math.max(x.rank, 1));
  return x.device.isCpu ? cpu.softmax(x, d, log) : gpu.softmax(x, d, log);
}

function lastDimNorm(op: string, x: Tensor, w: Tensor, b: Tensor | null, eps: number): void {
  floats(op, ...(b ? [x, w, b] : [x, w]));
  checkEps(op, eps);
  if (x.rank < 1) throw new ShapeError(`${op}: x must have at least 1 dim, got ${sig(x)}`);
  const h = x.layout.shape[x.rank - 1]!;
  vec(op, 'weight', w, h, x);
  if (b) vec(op, 'bias', b, h, x);
}

export function layerNorm(x: Tensor, w: Tensor, b: Tensor | null, eps: number): Tensor {
  lastDimNorm('layerNorm', x, w, b, eps);
  return x.device.isCpu ? cpu.layerNorm(x, w, b, eps) : gpu.layerNorm(x, w, b, eps);
}

export function rmsNorm(x: Tensor, w: Tensor, eps: number): Tensor {
  lastDimNorm('rmsNorm', x, w, null, eps);
  return x.device.isCpu ? cpu.rmsNorm(x, w, eps) : gpu.rmsNorm(x, w, eps);
}

const ROPE_NAMES: Record<RopeLayout, string> = { halves: 'rope', interleaved: 'ropeI', thd: 'ropeThd' };

export function rope(x: Tensor, cos: Tensor, sin: Tensor, layout: RopeLayout): Tensor {
  const op = ROPE_NAMES[layout];
  if (op === undefined) throw new TensorError(`rope: unknown layout '${String(layout)}' (halves, interleaved or thd)`);
  floats(op, x, cos, sin);
  const dims = layout === 'thd' ? '[b, t, h, d]' : '[b, h, t, d]';
  if (x.rank !== 4) throw new ShapeError(`${op}: x must be ${dims}, got ${sig(x)}`);
  const t = x.layout.shape[layout === 'thd' ? 1 : 2]!, d = x.layout.shape[3]!;
  if (d % 2 !== 0) throw new ShapeError(`${op}: the last dim of x ${sig(x)} must be even`);
  for (const [name, c] of [['cos', cos], ['sin', sin]] as const) {
    if (c.rank !== 2 || c.layout.shape[0] !== t || c.layout.shape[1] !== d / 2) {
      throw new ShapeError(`${op}: ${name} must be [${t}, ${d / 2}] for x ${sig(x)} ${dims}, got ${sig(c)}`);
    }
  }
  return x.device.isCpu ? cpu.rope(x, cos, sin, layout) : gpu.rope(x, cos, sin, layout);
}

export function batchNorm(x: Tensor, o: BatchNormOptions): Tensor {
  const op = 'batchNorm';
  if (!o || !o.mean || !o.variance) throw new TensorError(`${op}: options need mean and variance tensors (x ${sig(x)})`);
  const weight = o.weight ?? null, bias = o.bias ?? null;
  for (const t of [o.mean, o.variance, weight, bias]) t?.check(op);
  const ts = [x, o.mean, o.variance, ...(weight ? [weight] : []), ...(bias ? [bias] : [])];
  sameDevice(op, ...ts);
  dtypeIn(op, x, FLOATS);
  // the per-channel tensors in x's dtype, or in f32 beside half data (running statistics kept in
  // f32, as PyTorch allows)
  const half = x.dtype === 'f16' || x.dtype === 'bf16';
  for (const t of ts.slice(1)) {
    if (t.dtype !== x.dtype && !(half && t.dtype === 'f32')) {
      throw new DTypeError(`${op}: the per-channel tensors must be ${x.dtype}${half ? ' or f32' : ''} (${ts.map(sig).join(', ')})`);
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
  return x.device.isCpu ? cpu.batchNorm(x, o.mean, o.variance, weight, bias, eps) : gpu.batchNorm(x, o.mean, o.variance, weight, bias, eps);
}

/** validated attention parameters, as the CPU and GPU paths take them */
export interface AttentionParams {
  readonly scale: number;
  /** null: no causal mask; else the diagonal's offset: query i sees keys j <= i + diag */
  readonly diag: number | null;
  /** with diag: query i sees only keys j > i + diag - window */
  readonly window: number | null;
  readonly mask: Tensor | null;
  readonly outShape: Shape;
}

export function attention(q: Tensor, k: Tensor, v: Tensor, o: AttentionOptions): Tensor {
  const op = 'scaledDotProductAttention';
  floats(op, q, k, v);
  // the operands' description, built only for an error (formatting them costs every call)
  const all = (): string => `q ${sig(q)}, k ${sig(k)}, v ${sig(v)}`;
  if (q.rank !== 4 || k.rank !== 4 || v.rank !== 4) throw new ShapeError(`${op}: q, k, v must be 4-d [b, heads, t, d], got ${all()}`);
  const [b, hq, tq, d] = q.layout.shape as [number, number, number, number];
  const [kb, hkv, tk, kd] = k.layout.shape as [number, number, number, number];
  const [vb, vh, vt, dv] = v.layout.shape as [number, number, number, number];
  if (kb !== b || vb !== b) throw new ShapeError(`${op}: batch sizes differ (${all()})`);
  if (vh !== hkv || vt !== tk) throw new ShapeError(`${op}: k and v must have the same heads and length (${all()})`);
  if (kd !== d) throw new ShapeError(`${op}: q and k head dims differ (${all()})`);
  if (hkv === 0 ? hq !== 0 : hq % hkv !== 0) throw new ShapeError(`${op}: query heads ${hq} are not a multiple of kv heads ${hkv} (${all()})`);
  const causal = o.causal ?? false;
  if (typeof causal !== 'boolean' && !CAUSAL_ALIGNS.includes(causal)) {
    throw new TensorError(`${op}: causal must be a boolean, 'top-left' or 'bottom-right', got ${String(causal)}`);
  }
  const diag = causal === false ? null : causal === 'bottom-right' ? tk - tq : 0;
  const scale = o.scale ?? 1 / Math.sqrt(d);
  if (typeof scale !== 'number' || !Number.isFinite(scale)) throw new RangeError(`${op}: scale must be a finite number, got ${String(scale)} (${all()})`);
  const window = o.window ?? null;
  if (window !== null) {
    if (!Number.isInteger(window) || window < 1) throw new RangeError(`${op}: window must be a positive integer, got ${String(window)} (${all()})`);
    if (diag === null) throw new TensorError(`${op}: a sliding window needs causal set ('top-left' or 'bottom-right') (${all()})`);
  }
  const mask = o.mask ?? null;
  if (mask !== null) {
    mask.check(op);
    sameDevice(op, q, mask);
    if (mask.dtype !== 'u8' && mask.dtype !== q.dtype) {
      throw new DTypeError(`${op}: mask must be u8 (nonzero = attend) or q's dtype ${q.dtype} (added to the scores), got mask ${sig(mask)} (${all()})`);
    }
    const full = [b, hq, tq, tk];
    const extra = full.length - mask.rank;
    if (extra < 0 || !mask.layout.shape.every((n, i) => n === 1 || n === full[i + extra])) {
      throw new ShapeError(`${op}: mask ${sig(mask)} does not broadcast to [b, hq, tq, tk] = [${full.join(', ')}] (${all()})`);
    }
  }
  const p: AttentionParams = { scale, diag, window, mask, outShape: [b, hq, tq, dv] };
  return q.device.isCpu ? cpu.attention(q, k, v, p) : gpu.attention(q, k, v, p);
}
