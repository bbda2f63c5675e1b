// The linear layers of a transformer step with their neighbours folded in:
//   linear     y = act(rmsNorm(x) W^T + bias) + residual      (every part but W optional)
//   qkvToCache the fused q/k/v projection of one token, rotary embedding on q and k, and k, v
//              written into a KV cache at a position that may live on the device
// On a GPU, one row of x (a batch-1 decode step) is one kernel (hip-src/gemv-fused.hip): the
// norm, bias, SwiGLU, residual, rotary and cache write cost no launch of their own. Anywhere
// else (the CPU, several rows, f64, layouts the kernel does not read) the same result is
// composed from the separate ops, rounding to the dtype between them as they do.
import { RawTensor } from '../device/raw-tensor.ts';
import { numel } from '../core/layout.ts';
import { DTypeError, ShapeError, TensorError } from '../core/errors.ts';
import { FLOATS, dtypeIn, sameDType, sameDevice, sig } from '../backends/checks.ts';
import * as gpu from '../backends/gpu/gemv-fused.ts';
import { binary } from './elementwise.ts';
import { matmul } from './matmul.ts';
import { rmsNorm, rope } from './nn.ts';
import { swiglu } from './swiglu.ts';
import { contiguous, reshape, sliceSet } from './copy.ts';
import { indexSelect, indexSet } from './indexing.ts';
import { defineOp } from './registry.ts';
import type { LinearOptions, QkvToCacheArgs, RmsNormSpec } from '../backends/options.ts';
export type { LinearOptions, QkvToCacheArgs, RmsNormSpec };

function vector(op: string, name: string, t: RawTensor, n: number): void {
  if (t.rank !== 1 || t.dim(0) !== n) throw new ShapeError(`${op}: ${name} must be [${n}], got ${sig(t)}`);
}

function checkNorm(op: string, norm: RmsNormSpec, k: number): void {
  vector(op, 'norm weight', norm.weight, k);
  if (typeof norm.eps !== 'number' || !Number.isFinite(norm.eps) || norm.eps < 0) {
    throw new RangeError(`${op}: norm eps must be a finite number >= 0, got ${String(norm.eps)}`);
  }
}

/** the operands of one call, checked */
function linearArgs(x: RawTensor, w: RawTensor, o: LinearOptions): { n: number; k: number; outShape: number[] } {
  const op = 'linear';
  // the optional operands by hand: this runs for every projection of every decode step
  const extra: RawTensor[] = [];
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
  if (o.act && o.act !== 'swiglu')
    throw new TensorError(`${op}: unknown activation '${String(o.act)}' (known: swiglu)`);
  if (o.act === 'swiglu' && rows % 2 !== 0)
    throw new ShapeError(`${op}: swiglu needs a stacked [gate; up] weight with an even row count, got ${sig(w)}`);
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
function composedLinear(x: RawTensor, w: RawTensor, o: LinearOptions, outShape: number[]): RawTensor {
  const temps: RawTensor[] = [];
  const keep = (t: RawTensor): RawTensor => {
    temps.push(t);
    return t;
  };
  try {
    const xn = o.norm ? keep(rmsNorm(x, o.norm.weight, o.norm.eps)) : x;
    const k = xn.dim(-1);
    const x2 = keep(reshape(xn, [numel(xn.layout.shape.slice(0, -1)), k]));
    let y = keep(matmul(x2, keep(w.T)));
    if (o.bias) y = keep(binary('add', y, o.bias));
    if (o.act === 'swiglu') y = keep(swiglu(y));
    y = keep(reshape(y, outShape));
    if (o.residual) return binary('add', y, o.residual);
    temps.pop();
    return y;
  } finally {
    for (const t of temps) t.dispose();
  }
}

type LinearArgs = [RawTensor, RawTensor, LinearOptions, number, number, number[]];
/** x W^T (+ bias, an RMSNorm of x before, SwiGLU or a residual after): on a GPU, one kernel for
 *  a single row; otherwise, and on the CPU, the composed ops */
export const linear = defineOp({
  name: 'linear',
  family: 'linear algebra',
  summary:
    'x W^T with W [out, in]; optional bias, RMSNorm before, SwiGLU or residual after (one kernel for a row on a GPU)',
  dtypes: FLOATS,
  check: (x: RawTensor, w: RawTensor, o: LinearOptions = {}): LinearArgs => {
    // a bias passed where the options go would otherwise be ignored, and take no gradient
    if (o === null || typeof o !== 'object' || o instanceof RawTensor || Array.isArray(o))
      throw new TensorError(
        `linear: options must be { bias, residual, ... }, got ${o instanceof RawTensor ? `a tensor ${sig(o)} (pass a bias as { bias })` : String(o)} (x ${sig(x)}, w ${sig(w)})`,
      );
    const { n, k, outShape } = linearArgs(x, w, o);
    return [x, w, o, n, k, outShape];
  },
  cpu: (x, w, o, _n, _k, outShape) => composedLinear(x, w, o, outShape),
  gpu: (x, w, o, n, k, outShape) =>
    (k > 0 && x.numel === k ? gpu.linearRow(x, w, o, n, k, outShape) : null) ?? composedLinear(x, w, o, outShape),
  grad: 'missing',
});

function qkvArgs(a: QkvToCacheArgs): void {
  const op = 'qkvToCache';
  const { x, weight: w, heads, kvHeads, headDim: d } = a;
  const extra = [a.bias, a.norm?.weight].filter((t): t is RawTensor => !!t).map((t) => t.check(op));
  for (const t of [x, w, a.cos, a.sin, a.keys, a.values, ...(typeof a.pos === 'number' ? [] : [a.pos])]) t.check(op);
  sameDevice(op, x, w, a.cos, a.sin, a.keys, a.values, ...extra, ...(typeof a.pos === 'number' ? [] : [a.pos]));
  dtypeIn(op, x, FLOATS);
  sameDType(op, x, w, a.cos, a.sin, a.keys, a.values, ...extra);
  for (const [name, v] of [
    ['heads', heads],
    ['kvHeads', kvHeads],
    ['headDim', d],
  ] as const) {
    if (!Number.isInteger(v) || v < 1) throw new RangeError(`${op}: ${name} must be a positive integer, got ${v}`);
  }
  if (d % 2 !== 0) throw new ShapeError(`${op}: the rotary halves pairing needs an even headDim, got ${d}`);
  if (heads % kvHeads !== 0) throw new ShapeError(`${op}: ${heads} query heads do not group over ${kvHeads} kv heads`);
  const hidden = x.dim(-1);
  if (x.numel !== hidden) throw new ShapeError(`${op}: x must be one token ([1, 1, hidden]), got ${sig(x)}`);
  const rows = (heads + 2 * kvHeads) * d;
  if (w.rank !== 2 || w.dim(0) !== rows || w.dim(1) !== hidden) {
    throw new ShapeError(
      `${op}: weight must be [${rows}, ${hidden}] for ${heads}/${kvHeads} heads of ${d}, got ${sig(w)}`,
    );
  }
  if (a.bias) vector(op, 'bias', a.bias, rows);
  if (a.norm) checkNorm(op, a.norm, hidden);
  for (const [name, t] of [
    ['cos', a.cos],
    ['sin', a.sin],
  ] as const) {
    if (t.rank !== 2 || t.dim(1) !== d / 2)
      throw new ShapeError(`${op}: ${name} must be [positions, ${d / 2}], got ${sig(t)}`);
  }
  for (const [name, t] of [
    ['keys', a.keys],
    ['values', a.values],
  ] as const) {
    if (t.rank !== 4 || t.dim(0) !== 1 || t.dim(1) !== kvHeads || t.dim(3) !== d) {
      throw new ShapeError(`${op}: ${name} must be [1, ${kvHeads}, maxLen, ${d}], got ${sig(t)}`);
    }
  }
  if (a.keys.dim(2) !== a.values.dim(2))
    throw new ShapeError(`${op}: keys ${sig(a.keys)} and values ${sig(a.values)} differ in length`);
  if (typeof a.pos === 'number') {
    const limit = Math.min(a.keys.dim(2), a.cos.dim(0), a.sin.dim(0));
    if (!Number.isInteger(a.pos) || a.pos < 0 || a.pos >= limit) {
      throw new RangeError(`${op}: position ${a.pos} outside the cache and rotary tables (${limit} positions)`);
    }
  } else {
    if (a.pos.dtype !== 'u32' || a.pos.numel !== 1)
      throw new DTypeError(`${op}: a device-held position must be u32 [1], got ${sig(a.pos)}`);
    // written at ids on the device, as indexSet does: whole caches, not views into them
    for (const [name, t] of [
      ['keys', a.keys],
      ['values', a.values],
    ] as const) {
      if (!t.layout.isContiguous())
        throw new ShapeError(
          `${op}: with a device-held position, ${name} ${sig(t)} must be contiguous (written in place at the position)`,
        );
    }
  }
}

function composedQkv(a: QkvToCacheArgs): RawTensor {
  const { heads, kvHeads, headDim: d } = a;
  const temps: RawTensor[] = [];
  const keep = (t: RawTensor): RawTensor => {
    temps.push(t);
    return t;
  };
  try {
    const x = keep(reshape(a.x, [1, 1, a.x.dim(-1)]));
    const qkv = keep(linear(x, a.weight, { bias: a.bias ?? null, norm: a.norm ?? null }));
    const split = (start: number, count: number) =>
      keep(reshape(keep(qkv.narrow(2, start * d, count * d)), [1, 1, count, d]));
    const at = (t: RawTensor) => keep(typeof a.pos === 'number' ? t.narrow(0, a.pos, 1) : indexSelect(t, a.pos, 0));
    const qk = keep(rope(split(0, heads + kvHeads), at(a.cos), at(a.sin), 'thd'));
    const k = keep(keep(qk.narrow(2, heads, kvHeads)).transpose(1, 2)),
      v = keep(split(heads + kvHeads, kvHeads).transpose(1, 2));
    if (typeof a.pos === 'number') {
      sliceSet(a.keys, k, 2, a.pos);
      sliceSet(a.values, v, 2, a.pos);
    } else {
      indexSet(a.keys, a.pos, k, 2);
      indexSet(a.values, a.pos, v, 2);
    }
    return contiguous(keep(qk.narrow(2, 0, heads)));
  } finally {
    for (const t of temps) t.dispose();
  }
}

/**
 * One token through the fused q/k/v projection: q [1, 1, heads, headDim] (rotated) is returned,
 * k (rotated) and v go into the caches at `pos`. A device-held position must be inside the
 * cache and the tables when the work runs; it is not checked on the host.
 */
export const qkvToCache = defineOp({
  name: 'qkvToCache',
  family: 'linear algebra',
  summary: 'one token through the stacked q/k/v projection, rotary and the KV-cache write (one kernel on a GPU)',
  dtypes: FLOATS,
  check: (a: QkvToCacheArgs): [QkvToCacheArgs] => {
    qkvArgs(a);
    return [a];
  },
  device: (a) => a.x.device,
  cpu: composedQkv,
  gpu: (a) => gpu.qkvRow(a) ?? composedQkv(a),
  grad: 'none',
});
