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

/** normDim, with the tensor named in the error */
function dimOf(op: string, dim: number, x: RawTensor, rank = x.rank): number {
  try { return normDim(op, dim, rank); } catch (e) {
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

function checkEps(op: string, eps: number): void {
  if (typeof eps !== 'number' || !Number.isFinite(eps) || eps < 0) throw new RangeError(`${op}: eps must be a finite number >= 0, got ${String(eps)}`);
}

/** a [n] tensor whose length must be n */
function vec(op: string, name: string, t: RawTensor, n: number, x: RawTensor): void {
  if (t.rank !== 1 || t.layout.shape[0] !== n) throw new ShapeError(`${op}: ${name} must be [${n}], got ${sig(t)} (x ${sig(x)})`);
}

export function softmax(x: RawTensor, dim: number, log: boolean): RawTensor {
  const op = log ? 'logSoftmax' : 'softmax';
  floats(op, x);
  // a 0-d tensor is one element along dim 0 (or -1), like PyTorch
  const d = dimOf(op, dim, x, Math.max(x.rank, 1));
  return x.device.isCpu ? cpu.softmax(x, d, log) : gpu.softmax(x, d, log);
}

function lastDimNorm(op: string, x: RawTensor, w: RawTensor, b: RawTensor | null, eps: number): void {
  floats(op, ...(b ? [x, w, b] : [x, w]));
  checkEps(op, eps);
  if (x.rank < 1) throw new ShapeError(`${op}: x must have at least 1 dim, got ${sig(x)}`);
  const h = x.layout.shape[x.rank - 1]!;
  vec(op, 'weight', w, h, x);
  if (b) vec(op, 'bias', b, h, x);
}

export function layerNorm(x: RawTensor, w: RawTensor, b: RawTensor | null, eps: number): RawTensor {
  lastDimNorm('layerNorm', x, w, b, eps);
  return x.device.isCpu ? cpu.layerNorm(x, w, b, eps) : gpu.layerNorm(x, w, b, eps);
}

export function rmsNorm(x: RawTensor, w: RawTensor, eps: number): RawTensor {
  lastDimNorm('rmsNorm', x, w, null, eps);
  return x.device.isCpu ? cpu.rmsNorm(x, w, eps) : gpu.rmsNorm(x, w, eps);
}

const ROPE_NAMES: Record<RopeLayout, string> = { halves: 'rope', interleaved: 'ropeI', thd: 'ropeThd' };

export function rope(x: RawTensor, cos: RawTensor, sin: RawTensor, layout: RopeLayout): RawTensor {
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

export function batchNorm(x: RawTensor, o: BatchNormOptions): RawTensor {
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
