// GPU path of the nn family. The dispatcher hands these fully validated parameters
// (normalized dim, eps, scale, output shape).
import { RawTensor } from '../../device/raw-tensor.ts';
import { dtypeSize } from '../../core/dtype.ts';
import { ShapeError } from '../../core/errors.ts';
import { sig } from '../checks.ts';
import type { RopeLayout } from '../cpu/nn.ts';
import type { AttentionParams } from '../options.ts';
import { arg, GRID_X_BLOCKS_MAX, type KernelArg } from '../../runtime/kernels.ts';
import { contiguous } from './copy.ts';
import { cast } from './cast.ts';
import { dense, filled } from './fill.ts';
import { base, offsetOf, rowLaunch, ROW_LAUNCH_MAX } from './launch.ts';
import { attentionKernel, attentionKernelApplies } from './attention.ts';
import { aligned16, normRows, regPlan, softmaxRows } from './rowreg.ts';
import { flashApplies, flashAttention, flashDecode, flashDecodeApplies } from './flash.ts';

// ---- softmax, layerNorm, rmsNorm, rope: hip-src/softmax.hip, norm.hip, rope.hip ------------
// The kernels take contiguous rows; other layouts are copied first (the copy is disposed once
// the kernel is queued: the allocator is stream-ordered). Rows of whole 16-byte vectors at
// 16-byte boundaries (f32/f16/bf16) take the register kernels (rowreg.ts: one read and one
// write of each element); the rest, f64 included, the general ones.

/** the eps argument: f64 for f64 data, f32 otherwise */
const computeArg = (t: RawTensor, v: number): KernelArg => (t.dtype === 'f64' ? arg.f64(v) : arg.f32(v));

/** the row kernels index within a row with 32 bits */
function checkCols(op: string, x: RawTensor, cols: number): void {
  if (cols > 0xffffffff)
    throw new ShapeError(`${op}: rows of ${cols} elements are too long for the GPU kernels (x ${sig(x)})`);
}

/** dim moved last (a view), made contiguous; the result comes back as the inverse view */
export function softmax(x: RawTensor, dim: number, log: boolean): RawTensor {
  const op = log ? 'logSoftmax' : 'softmax';
  const dev = x.device;
  const last = Math.max(x.rank - 1, 0);
  const moved = dim === last || x.rank === 0 ? x.view(x.layout) : x.transpose(dim, last);
  const c = contiguous(moved);
  moved.dispose();
  const y = RawTensor.empty(c.layout.shape, x.dtype, dev);
  const cols = x.rank === 0 ? 1 : c.layout.shape[last]!;
  const rows = cols === 0 ? 0 : c.numel / cols;
  try {
    checkCols(op, x, cols);
    const plan = rows > 0 && aligned16(c, y) ? regPlan(dev, rows, cols, x.dtype, 'softmax') : null;
    if (plan) softmaxRows(y, c, rows, cols, log, plan);
    else generalSoftmax(y, c, rows, cols, log);
  } catch (e) {
    y.dispose();
    throw e;
  } finally {
    c.dispose();
  }
  if (dim === last || x.rank === 0) return y;
  const back = y.transpose(dim, last);
  y.dispose();
  return back;
}
/** softmax.hip's general kernel: any row length and alignment, every float dtype */
function generalSoftmax(y: RawTensor, c: RawTensor, rows: number, cols: number, log: boolean): void {
  const dev = c.device;
  const { grid, block, group } = rowLaunch(dev, Math.min(rows, ROW_LAUNCH_MAX), cols, c.dtype);
  for (let r = 0; r < rows; r += ROW_LAUNCH_MAX) {
    const n = Math.min(ROW_LAUNCH_MAX, rows - r);
    dev.kernels.launch('softmax.hip', `${log ? 'logsoftmax' : 'softmax'}_${c.dtype}`, grid, block, 0, dev.stream, [
      base(y),
      base(c),
      arg.i64(y.layout.offset + r * cols),
      arg.i64(c.layout.offset + r * cols),
      arg.u64(n),
      arg.u64(cols),
      arg.u32(group),
    ]);
  }
}

export function layerNorm(x: RawTensor, w: RawTensor, b: RawTensor | null, eps: number): RawTensor {
  return lastDimNorm('layerNorm', x, w, b, eps);
}
export function rmsNorm(x: RawTensor, w: RawTensor, eps: number): RawTensor {
  return lastDimNorm('rmsNorm', x, w, null, eps);
}

function lastDimNorm(
  op: 'layerNorm' | 'rmsNorm',
  x: RawTensor,
  w: RawTensor,
  b: RawTensor | null,
  eps: number,
): RawTensor {
  const dev = x.device;
  const cols = x.layout.shape[x.rank - 1]!;
  const y = RawTensor.empty(x.layout.shape, x.dtype, dev);
  const rows = cols === 0 ? 0 : x.numel / cols;
  if (rows === 0) return y;
  const xc = contiguous(x),
    wc = contiguous(w),
    bc = b ? contiguous(b) : null;
  try {
    checkCols(op, x, cols);
    const plan = aligned16(xc, wc, y, ...(bc ? [bc] : [])) ? regPlan(dev, rows, cols, x.dtype, 'norm') : null;
    if (plan) normRows(y, xc, wc, op === 'rmsNorm' ? 'rms' : bc, rows, cols, eps, plan);
    else generalNorm(op, y, xc, wc, bc, rows, cols, eps);
  } catch (e) {
    y.dispose();
    throw e;
  } finally {
    xc.dispose();
    wc.dispose();
    bc?.dispose();
  }
  return y;
}
/** norm.hip's general kernels: any row length and alignment, every float dtype */
function generalNorm(
  op: 'layerNorm' | 'rmsNorm',
  y: RawTensor,
  xc: RawTensor,
  wc: RawTensor,
  bc: RawTensor | null,
  rows: number,
  cols: number,
  eps: number,
): void {
  const dev = xc.device,
    k = dev.kernels;
  const { grid, block, group } = rowLaunch(dev, Math.min(rows, ROW_LAUNCH_MAX), cols, xc.dtype);
  for (let r = 0; r < rows; r += ROW_LAUNCH_MAX) {
    const n = Math.min(ROW_LAUNCH_MAX, rows - r);
    const yOff = arg.i64(y.layout.offset + r * cols),
      xOff = arg.i64(xc.layout.offset + r * cols);
    if (op === 'layerNorm') {
      k.launch('norm.hip', `layernorm_${xc.dtype}`, grid, block, 0, dev.stream, [
        base(y),
        base(xc),
        base(wc),
        bc ? base(bc) : base(wc),
        yOff,
        xOff,
        offsetOf(wc),
        bc ? offsetOf(bc) : arg.i64(0),
        arg.u64(n),
        arg.u64(cols),
        computeArg(xc, eps),
        arg.u32(bc ? 1 : 0),
        arg.u32(group),
      ]);
    } else {
      k.launch('norm.hip', `rmsnorm_${xc.dtype}`, grid, block, 0, dev.stream, [
        base(y),
        base(xc),
        base(wc),
        yOff,
        xOff,
        offsetOf(wc),
        arg.u64(n),
        arg.u64(cols),
        computeArg(xc, eps),
        arg.u32(group),
      ]);
    }
  }
}
/** x [b, s1, s2, d] (s1, s2 = h, t; t, h for 'thd'), cos/sin [t, d/2] */
export function rope(x: RawTensor, cos: RawTensor, sin: RawTensor, layout: RopeLayout): RawTensor {
  const dev = x.device;
  const [, s1, s2, d] = x.layout.shape as [number, number, number, number];
  const y = RawTensor.empty(x.layout.shape, x.dtype, dev);
  const pairs = x.numel / 2;
  if (pairs === 0) return y;
  // x is read through its strides where its last dim is unit-stride (q and k as head views of
  // a fused projection): no copy first
  const xc = x.layout.strides[3] === 1 ? x.view(x.layout) : contiguous(x),
    cc = contiguous(cos),
    sc = contiguous(sin);
  const [xs0, xs1, xs2] = xc.layout.strides as [number, number, number, number];
  try {
    dev.kernels.launch1d('rope.hip', `rope_${layout}_${x.dtype}`, pairs, dev.stream, [
      base(y),
      base(xc),
      base(cc),
      base(sc),
      offsetOf(y),
      offsetOf(xc),
      offsetOf(cc),
      offsetOf(sc),
      arg.u64(pairs),
      arg.u64(s1),
      arg.u64(s2),
      arg.u64(d / 2),
      arg.i64(xs0),
      arg.i64(xs1),
      arg.i64(xs2),
    ]);
  } catch (e) {
    y.dispose();
    throw e;
  } finally {
    xc.dispose();
    cc.dispose();
    sc.dispose();
  }
  return y;
}
/**
 * Inference batch norm (spatial mode) in one launch of batchnorm.hip: x [n, c, ...] read as
 * [n, c, plane], contiguous. The per-channel tensors are read in x's dtype, or all in f32 for
 * half data when any of them is f32 (a mixed set is cast to that one dtype first; f64 data takes
 * f64). A missing weight is ones, a missing bias zeros.
 */
export function batchNorm(
  x: RawTensor,
  mean: RawTensor,
  variance: RawTensor,
  weight: RawTensor | null,
  bias: RawTensor | null,
  eps: number,
): RawTensor {
  const dev = x.device,
    shape = x.layout.shape;
  const y = RawTensor.empty(shape, x.dtype, dev);
  if (y.numel === 0) return y;
  const n = shape[0]!,
    c = shape[1]!;
  let plane = 1;
  for (let i = 2; i < shape.length; i++) plane *= shape[i]!;
  const given = [mean, variance, weight, bias].filter((t): t is RawTensor => t !== null);
  const pd = x.dtype === 'f64' ? 'f64' : given.every((t) => t.dtype === x.dtype) ? x.dtype : 'f32';
  return filled(y, (temps) => {
    const perChannel = (t: RawTensor): RawTensor => {
      if (t.dtype === pd) return dense(t, temps);
      const p = cast(t, pd);
      temps.push(p);
      return p;
    };
    const xc = dense(x, temps);
    const mu = perChannel(mean),
      v = perChannel(variance);
    const w = weight ? perChannel(weight) : mu,
      b = bias ? perChannel(bias) : mu;
    const planes = n * c;
    const { multiprocessors, maxGridDim } = dev.runtime.info;
    const block = dev.kernels.preferredBlockSize;
    // a block a plane along x (grid-stride past the limit), and y splitting planes longer than a
    // block's worth of vectors, so a few large images still fill the device
    const perBlock = block * (16 / dtypeSize(x.dtype));
    const gridY = Math.max(
      1,
      Math.min(maxGridDim[1], Math.ceil(plane / perBlock), Math.ceil((8 * multiprocessors) / planes)),
    );
    const gridX = Math.max(1, Math.min(planes, maxGridDim[0], GRID_X_BLOCKS_MAX));
    dev.kernels.launch('batchnorm.hip', `batchnorm_${x.dtype}_${pd}`, [gridX, gridY, 1], [block, 1, 1], 0, dev.stream, [
      base(y),
      base(xc),
      base(mu),
      base(v),
      base(w),
      base(b),
      offsetOf(y),
      offsetOf(xc),
      offsetOf(mu),
      offsetOf(v),
      offsetOf(w),
      offsetOf(b),
      arg.u64(planes),
      arg.u32(c),
      arg.u64(plane),
      computeArg(x, eps),
      arg.u32((weight ? 1 : 0) | (bias ? 2 : 0)),
    ]);
  });
}
/** the lowest finite value of each float dtype */

/**
 * f16/bf16 with d = dv <= 256 take the matrix-core kernels (gpu/flash.ts): short queries
 * (decode) split across blocks over the keys, long ones by query blocks. Other short queries
 * (f32, d != dv) take the split-KV FMA kernel (gpu/attention.ts), as do long f32 queries, which
 * then have no O(tq * tk) memory either. null: no kernel applies (f64, head dims past 256, long
 * queries with d != dv), and the op composes attention from other ops (ops/attention-composed.ts).
 */
export function attention(q: RawTensor, k: RawTensor, v: RawTensor, p: AttentionParams): RawTensor | null {
  if (p.outShape.some((n) => n === 0)) return RawTensor.empty(p.outShape, q.dtype, q.device);
  if (k.layout.shape[2]! > 0) {
    if (flashDecodeApplies(q, k, v)) return flashDecode(q, k, v, p);
    if (attentionKernelApplies(q, k, v)) return attentionKernel(q, k, v, p);
    if (flashApplies(q, k, v)) return flashAttention(q, k, v, p);
    if (attentionKernelApplies(q, k, v, true)) return attentionKernel(q, k, v, p);
  }
  return null;
}
