// The linear layers of a transformer step with their neighbours folded in:
//   linear     y = act(rmsNorm(x) W^T + bias) + residual      (every part but W optional)
//   qkvToCache the fused q/k/v projection of one token, rotary embedding on q and k, and k, v
//              written into a KV cache at a position that may live on the device
// On a GPU, one row of x (a batch-1 decode step) is one kernel (hip-src/gemv-fused.hip): the
// norm, bias, SwiGLU, residual, rotary and cache write cost no launch of their own. Anywhere
// else (the CPU, several rows, f64, layouts the kernel does not read) the same result is
// composed from the separate ops, rounding to the dtype between them as they do.
import type { Tensor } from '../tensor/tensor.ts';
import { DTypeError, ShapeError, TensorError } from '../core/errors.ts';
import { tidy } from '../core/scope.ts';
import { FLOATS, dtypeIn, sameDType, sameDevice, sig } from './dispatch.ts';
import * as gpu from '../backends/gpu/gemv-fused.ts';

export interface RmsNormSpec { readonly weight: Tensor; readonly eps: number }

export interface LinearOptions {
  readonly bias?: Tensor | null;
  /** RMS-normalise x (over its last dim, with this weight) before the product */
  readonly norm?: RmsNormSpec | null;
  /** 'swiglu': W stacks [gate; up] as [2n, k] and y = silu(gate) * up, n outputs */
  readonly act?: 'swiglu' | null;
  /** added to the result: the residual stream, shaped like y */
  readonly residual?: Tensor | null;
}

function vector(op: string, name: string, t: Tensor, n: number): void {
  if (t.rank !== 1 || t.dim(0) !== n) throw new ShapeError(`${op}: ${name} must be [${n}], got ${sig(t)}`);
}

function checkNorm(op: string, norm: RmsNormSpec, k: number): void {
  vector(op, 'norm weight', norm.weight, k);
  if (typeof norm.eps !== 'number' || !Number.isFinite(norm.eps) || norm.eps < 0) {
    throw new RangeError(`${op}: norm eps must be a finite number >= 0, got ${String(norm.eps)}`);
  }
}

/** the operands of one call, checked */
function linearArgs(x: Tensor, w: Tensor, o: LinearOptions): { n: number; k: number; outShape: number[] } {
  const op = 'linear';
  // the optional operands by hand: this runs for every projection of every decode step
  const extra: Tensor[] = [];
  if (o.bias) extra.push(o.bias.check(op));
  if (o.norm) extra.push(o.norm.weight.check(op));
  if (o.residual) extra.push(o.residual.check(op));
  sameDevice(op, x, w, ...extra);
  dtypeIn(op, x, FLOATS);
  sameDType(op, x, w, ...extra);
  if (x.rank < 1) throw new ShapeError(`${op}: x must have at least 1 dim, got ${sig(x)}`);
  if (w.rank !== 2) throw new ShapeError(`${op}: weight must be [out, in], got ${sig(w)} (x ${sig(x)})`);
  const k = x.dim(-1);
  if (w.dim(1) !== k) throw new ShapeError(`${op}: x ${sig(x)} has ${k} features, weight ${sig(w)} takes ${w.dim(1)}`);
  const rows = w.dim(0);
  if (o.act && o.act !== 'swiglu') throw new TensorError(`${op}: unknown activation '${String(o.act)}' (known: swiglu)`);
  if (o.act === 'swiglu' && rows % 2 !== 0) throw new ShapeError(`${op}: swiglu needs a stacked [gate; up] weight with an even row count, got ${sig(w)}`);
  const n = o.act === 'swiglu' ? rows / 2 : rows;
  if (o.bias) vector(op, 'bias', o.bias, rows);
  if (o.norm) checkNorm(op, o.norm, k);
  const outShape = x.layout.shape.slice(0, -1);
  outShape.push(n);
  if (o.residual && (o.residual.rank !== outShape.length || o.residual.shape.some((s, i) => s !== outShape[i]))) {
    throw new ShapeError(`${op}: residual must be [${outShape.join(', ')}] like the output, got ${sig(o.residual)}`);
  }
  return { n, k, outShape };
}

/** the composed reference: every step a separate op */
function composedLinear(x: Tensor, w: Tensor, o: LinearOptions, outShape: number[]): Tensor {
  return tidy(() => {
    const xn = o.norm ? x.rmsNorm(o.norm.weight, o.norm.eps) : x;
    const x2 = xn.reshape([-1, xn.dim(-1)]);
    let y = x2.matmul(w.T);
    if (o.bias) y = y.add(o.bias);
    if (o.act === 'swiglu') {
      const n = y.dim(1) / 2;
      y = y.narrow(1, 0, n).silu().mul(y.narrow(1, n, n));
    }
    y = y.reshape(outShape);
    return o.residual ? y.add(o.residual) : y;
  });
}

export function linear(x: Tensor, w: Tensor, o: LinearOptions = {}): Tensor {
  const { n, k, outShape } = linearArgs(x, w, o);
  if (!x.device.isCpu && x.numel === k) {
    const y = gpu.linearRow(x, w, o, n, k, outShape);
    if (y) return y;
  }
  return composedLinear(x, w, o, outShape);
}

export interface QkvToCacheArgs {
  /** one token's hidden state: [1, 1, hidden] (or [1, hidden]) */
  readonly x: Tensor;
  /** the stacked q, k, v projections [(heads + 2 kvHeads) headDim, hidden], and their bias */
  readonly weight: Tensor;
  readonly bias?: Tensor | null;
  readonly norm?: RmsNormSpec | null;
  /** rotary tables [positions, headDim / 2] (the halves pairing) */
  readonly cos: Tensor;
  readonly sin: Tensor;
  /** the token's position: a number, or a u32 [1] on the device (read when the work runs) */
  readonly pos: number | Tensor;
  /** one layer's cache [1, kvHeads, maxLen, headDim]: written at pos */
  readonly keys: Tensor;
  readonly values: Tensor;
  readonly heads: number;
  readonly kvHeads: number;
  readonly headDim: number;
}

function qkvArgs(a: QkvToCacheArgs): void {
  const op = 'qkvToCache';
  const { x, weight: w, heads, kvHeads, headDim: d } = a;
  const extra = [a.bias, a.norm?.weight].filter((t): t is Tensor => !!t).map((t) => t.check(op));
  for (const t of [x, w, a.cos, a.sin, a.keys, a.values, ...(typeof a.pos === 'number' ? [] : [a.pos])]) t.check(op);
  sameDevice(op, x, w, a.cos, a.sin, a.keys, a.values, ...extra, ...(typeof a.pos === 'number' ? [] : [a.pos]));
  dtypeIn(op, x, FLOATS);
  sameDType(op, x, w, a.cos, a.sin, a.keys, a.values, ...extra);
  for (const [name, v] of [['heads', heads], ['kvHeads', kvHeads], ['headDim', d]] as const) {
    if (!Number.isInteger(v) || v < 1) throw new RangeError(`${op}: ${name} must be a positive integer, got ${v}`);
  }
  if (d % 2 !== 0) throw new ShapeError(`${op}: the rotary halves pairing needs an even headDim, got ${d}`);
  if (heads % kvHeads !== 0) throw new ShapeError(`${op}: ${heads} query heads do not group over ${kvHeads} kv heads`);
  const hidden = x.dim(-1);
  if (x.numel !== hidden) throw new ShapeError(`${op}: x must be one token ([1, 1, hidden]), got ${sig(x)}`);
  const rows = (heads + 2 * kvHeads) * d;
  if (w.rank !== 2 || w.dim(0) !== rows || w.dim(1) !== hidden) {
    throw new ShapeError(`${op}: weight must be [${rows}, ${hidden}] for ${heads}/${kvHeads} heads of ${d}, got ${sig(w)}`);
  }
  if (a.bias) vector(op, 'bias', a.bias, rows);
  if (a.norm) checkNorm(op, a.norm, hidden);
  for (const [name, t] of [['cos', a.cos], ['sin', a.sin]] as const) {
    if (t.rank !== 2 || t.dim(1) !== d / 2) throw new ShapeError(`${op}: ${name} must be [positions, ${d / 2}], got ${sig(t)}`);
  }
  for (const [name, t] of [['keys', a.keys], ['values', a.values]] as const) {
    if (t.rank !== 4 || t.dim(0) !== 1 || t.dim(1) !== kvHeads || t.dim(3) !== d) {
      throw new ShapeError(`${op}: ${name} must be [1, ${kvHeads}, maxLen, ${d}], got ${sig(t)}`);
    }
  }
  if (a.keys.dim(2) !== a.values.dim(2)) throw new ShapeError(`${op}: keys ${sig(a.keys)} and values ${sig(a.values)} differ in length`);
  if (typeof a.pos === 'number') {
    const limit = Math.min(a.keys.dim(2), a.cos.dim(0), a.sin.dim(0));
    if (!Number.isInteger(a.pos) || a.pos < 0 || a.pos >= limit) {
      throw new RangeError(`${op}: position ${a.pos} outside the cache and rotary tables (${limit} positions)`);
    }
  } else {
    if (a.pos.dtype !== 'u32' || a.pos.numel !== 1) throw new DTypeError(`${op}: a device-held position must be u32 [1], got ${sig(a.pos)}`);
    // written at ids on the device, as indexSet does: whole caches, not views into them
    for (const [name, t] of [['keys', a.keys], ['values', a.values]] as const) {
      if (!t.layout.isContiguous()) throw new ShapeError(`${op}: with a device-held position, ${name} ${sig(t)} must be contiguous (written in place at the position)`);
    }
  }
}

function composedQkv(a: QkvToCacheArgs): Tensor {
  const { heads, kvHeads, headDim: d } = a;
  return tidy(() => {
    const x = a.x.reshape([1, 1, a.x.dim(-1)]);
    const qkv = linear(x, a.weight, { bias: a.bias ?? null, norm: a.norm ?? null });
    const split = (start: number, count: number) => qkv.narrow(2, start * d, count * d).reshape([1, 1, count, d]);
    const at = (t: Tensor) => (typeof a.pos === 'number' ? t.narrow(0, a.pos, 1) : t.indexSelect(a.pos, 0));
    const qk = split(0, heads + kvHeads).ropeThd(at(a.cos), at(a.sin));
    const k = qk.narrow(2, heads, kvHeads).transpose(1, 2), v = split(heads + kvHeads, kvHeads).transpose(1, 2);
    if (typeof a.pos === 'number') {
      a.keys.sliceSet(k, 2, a.pos);
      a.values.sliceSet(v, 2, a.pos);
    } else {
      a.keys.indexSet(a.pos, k, 2);
      a.values.indexSet(a.pos, v, 2);
    }
    return qk.narrow(2, 0, heads).contiguous();
  });
}

/**
 * One token through the fused q/k/v projection: q [1, 1, heads, headDim] (rotated) is returned,
 * k (rotated) and v go into the caches at `pos`. A device-held position must be inside the
 * cache and the tables when the work runs; it is not checked on the host.
 */
export function qkvToCache(a: QkvToCacheArgs): Tensor {
  qkvArgs(a);
  if (!a.x.device.isCpu) {
    const q = gpu.qkvRow(a);
    if (q) return q;
  }
  return composedQkv(a);
}
