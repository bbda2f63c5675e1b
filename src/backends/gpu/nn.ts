// GPU path of the nn family. The dispatcher hands these fully validated parameters
// (normalized dim, eps, scale, output shape).
import type { Shape } from '../../core/layout.ts';
import { Tensor } from '../../tensor/tensor.ts';
import { dtypeSize } from '../../core/dtype.ts';
import { ShapeError } from '../../core/errors.ts';
import { notOnDevice, sig } from '../../ops/dispatch.ts';
import type { RopeLayout } from '../cpu/nn.ts';
import type { AttentionParams } from '../../ops/nn.ts';
import { arg, GRID_X_BLOCKS_MAX, type KernelArg } from '../../runtime/kernels.ts';
import { contiguous } from '../../ops/copy.ts';
import { dense, filled } from './fill.ts';
import { base, offsetOf, rowLaunch, ROW_LAUNCH_MAX } from './reduce.ts';
import { attentionKernel, attentionKernelApplies } from './attention.ts';
import { aligned16, normRows, regPlan, softmaxRows } from './rowreg.ts';
import { flashApplies, flashAttention, flashDecode, flashDecodeApplies } from './flash.ts';

// ---- softmax, layerNorm, rmsNorm, rope: hip-src/softmax.hip, norm.hip, rope.hip ------------
// The kernels take contiguous rows; other layouts are copied first (the copy is disposed once
// the kernel is queued: the allocator is stream-ordered). Rows of whole 16-byte vectors at
// 16-byte boundaries (f32/f16/bf16) take the register kernels (rowreg.ts: one read and one
// write of each element); the rest, f64 included, the general ones.

/** the eps argument: f64 for f64 data, f32 otherwise */
const computeArg = (t: Tensor, v: number): KernelArg => (t.dtype === 'f64' ? arg.f64(v) : arg.f32(v));

/** the row kernels index within a row with 32 bits */
function checkCols(op: string, x: Tensor, cols: number): void {
  if (cols > 0xffffffff) throw new ShapeError(`${op}: rows of ${cols} elements are too long for the GPU kernels (x ${sig(x)})`);
}

/** dim moved last (a view), made contiguous; the result comes back as the inverse view */
export function softmax(x: Tensor, dim: number, log: boolean): Tensor {
  const op = log ? 'logSoftmax' : 'softmax';
  const dev = x.device;
  const last = Math.max(x.rank - 1, 0);
  const moved = dim === last || x.rank === 0 ? x.view(x.layout) : x.transpose(dim, last);
  const c = contiguous(moved);
  moved.dispose();
  const y = Tensor.empty(c.layout.shape, x.dtype, dev);
  const cols = x.rank === 0 ? 1 : c.layout.shape[last]!;
  const rows = cols === 0 ? 0 : c.numel / cols;
  try {
    checkCols(op, x, cols);
    const plan = rows > 0 && aligned16(c, y) ? regPlan(dev, rows, cols, x.dtype, 'softmax') : null;
    if (plan) softmaxRows(y, c, rows, cols, log, plan);
    else generalSoftmax(y, c, rows, cols, log);
  } catch (e) { y.dispose(); throw e; } finally { c.dispose(); }
  if (dim === last || x.rank === 0) return y;
  const back = y.transpose(dim, last);
  y.dispose();
  return back;
}
/** softmax.hip's general kernel: any row length and alignment, every float dtype */
function generalSoftmax(y: Tensor, c: Tensor, rows: number, cols: number, log: boolean): void {
  const dev = c.device;
  const { grid, block, group } = rowLaunch(dev, Math.min(rows, ROW_LAUNCH_MAX), cols, c.dtype);
  for (let r = 0; r < rows; r += ROW_LAUNCH_MAX) {
    const n = Math.min(ROW_LAUNCH_MAX, rows - r);
    dev.kernels.launch('softmax.hip', `${log ? 'logsoftmax' : 'softmax'}_${c.dtype}`, grid, block, 0, dev.stream,
      [base(y), base(c), arg.i64(y.layout.offset + r * cols), arg.i64(c.layout.offset + r * cols), arg.u64(n), arg.u64(cols), arg.u32(group)]);
  }
}

export function layerNorm(x: Tensor, w: Tensor, b: Tensor | null, eps: number): Tensor {
  return lastDimNorm('layerNorm', x, w, b, eps);
}
export function rmsNorm(x: Tensor, w: Tensor, eps: number): Tensor {
  return lastDimNorm('rmsNorm', x, w, null, eps);
}

function lastDimNorm(op: 'layerNorm' | 'rmsNorm', x: Tensor, w: Tensor, b: Tensor | null, eps: number): Tensor {
  const dev = x.device;
  const cols = x.layout.shape[x.rank - 1]!;
  const y = Tensor.empty(x.layout.shape, x.dtype, dev);
  const rows = cols === 0 ? 0 : x.numel / cols;
  if (rows === 0) return y;
  const xc = contiguous(x), wc = contiguous(w), bc = b ? contiguous(b) : null;
  try {
    checkCols(op, x, cols);
    const plan = aligned16(xc, wc, y, ...(bc ? [bc] : [])) ? regPlan(dev, rows, cols, x.dtype, 'norm') : null;
    if (plan) normRows(y, xc, wc, op === 'rmsNorm' ? 'rms' : bc, rows, cols, eps, plan);
    else generalNorm(op, y, xc, wc, bc, rows, cols, eps);
  } catch (e) { y.dispose(); throw e; } finally { xc.dispose(); wc.dispose(); bc?.dispose(); }
  return y;
}
/** norm.hip's general kernels: any row length and alignment, every float dtype */
function generalNorm(op: 'layerNorm' | 'rmsNorm', y: Tensor, xc: Tensor, wc: Tensor, bc: Tensor | null, rows: number, cols: number, eps: number): void {
  const dev = xc.device, k = dev.kernels;
  const { grid, block, group } = rowLaunch(dev, Math.min(rows, ROW_LAUNCH_MAX), cols, xc.dtype);
  for (let r = 0; r < rows; r += ROW_LAUNCH_MAX) {
    const n = Math.min(ROW_LAUNCH_MAX, rows - r);
    const yOff = arg.i64(y.layout.offset + r * cols), xOff = arg.i64(xc.layout.offset + r * cols);
    if (op === 'layerNorm') {
      k.launch('norm.hip', `layernorm_${xc.dtype}`, grid, block, 0, dev.stream, [
        base(y), base(xc), base(wc), bc ? base(bc) : base(wc), yOff, xOff, offsetOf(wc),
        bc ? offsetOf(bc) : arg.i64(0), arg.u64(n), arg.u64(cols), computeArg(xc, eps), arg.u32(bc ? 1 : 0), arg.u32(group)]);
    } else {
      k.launch('norm.hip', `rmsnorm_${xc.dtype}`, grid, block, 0, dev.stream, [
        base(y), base(xc), base(wc), yOff, xOff, offsetOf(wc), arg.u64(n), arg.u64(cols), computeArg(xc, eps), arg.u32(group)]);
    }
  }
}
/** x [b, s1, s2, d] (s1, s2 = h, t; t, h for 'thd'), cos/sin [t, d/2] */
export function rope(x: Tensor, cos: Tensor, sin: Tensor, layout: RopeLayout): Tensor {
  const dev = x.device;
  const [, s1, s2, d] = x.layout.shape as [number, number, number, number];
  const y = Tensor.empty(x.layout.shape, x.dtype, dev);
  const pairs = x.numel / 2;
  if (pairs === 0) return y;
  const xc = contiguous(x), cc = contiguous(cos), sc = contiguous(sin);
  try {
    dev.kernels.launch1d('rope.hip', `rope_${layout}_${x.dtype}`, pairs, dev.stream, [
      base(y), base(xc), base(cc), base(sc), offsetOf(y), offsetOf(xc), offsetOf(cc), offsetOf(sc),
      arg.u64(pairs), arg.u64(s1), arg.u64(s2), arg.u64(d / 2)]);
  } catch (e) { y.dispose(); throw e; } finally { xc.dispose(); cc.dispose(); sc.dispose(); }
  return y;
}
/**
 * Inference batch norm (spatial mode) in one launch of batchnorm.hip: x [n, c, ...] read as
 * [n, c, plane], contiguous. The per-channel tensors are read in x's dtype, or all in f32 for
 * half data when any of them is f32 (a mixed set is cast to that one dtype first; f64 data takes
 * f64). A missing weight is ones, a missing bias zeros.
 */
export function batchNorm(x: Tensor, mean: Tensor, variance: Tensor, weight: Tensor | null, bias: Tensor | null, eps: number): Tensor {
  const dev = x.device, shape = x.layout.shape;
  const y = Tensor.empty(shape, x.dtype, dev);
  if (y.numel === 0) return y;
  const n = shape[0]!, c = shape[1]!;
  let plane = 1;
  for (let i = 2; i < shape.length; i++) plane *= shape[i]!;
  const given = [mean, variance, weight, bias].filter((t): t is Tensor => t !== null);
  const pd = x.dtype === 'f64' ? 'f64' : given.every((t) => t.dtype === x.dtype) ? x.dtype : 'f32';
  return filled(y, (temps) => {
    const perChannel = (t: Tensor): Tensor => {
      if (t.dtype === pd) return dense(t, temps);
      const p = t.toDtype(pd);
      temps.push(p);
      return p;
    };
    const xc = dense(x, temps);
    const mu = perChannel(mean), v = perChannel(variance);
    const w = weight ? perChannel(weight) : mu, b = bias ? perChannel(bias) : mu;
    const planes = n * c;
    const { multiprocessors, maxGridDim } = dev.runtime.info;
    const block = dev.kernels.preferredBlockSize;
    // a block a plane along x (grid-stride past the limit), and y splitting planes longer than a
    // block's worth of vectors, so a few large images still fill the device
    const perBlock = block * (16 / dtypeSize(x.dtype));
    const gridY = Math.max(1, Math.min(maxGridDim[1], Math.ceil(plane / perBlock), Math.ceil((8 * multiprocessors) / planes)));
    const gridX = Math.max(1, Math.min(planes, maxGridDim[0], GRID_X_BLOCKS_MAX));
    dev.kernels.launch('batchnorm.hip', `batchnorm_${x.dtype}_${pd}`, [gridX, gridY, 1], [block, 1, 1], 0, dev.stream, [
      base(y), base(xc), base(mu), base(v), base(w), base(b), offsetOf(y), offsetOf(xc), offsetOf(mu), offsetOf(v),
      offsetOf(w), offsetOf(b), arg.u64(planes), arg.u32(c), arg.u64(plane), computeArg(x, eps),
      arg.u32((weight ? 1 : 0) | (bias ? 2 : 0))]);
  });
}
/** the lowest finite value of each float dtype */
const LOWEST: Record<string, number> = { f32: -3.4028234663852886e38, f64: -Number.MAX_VALUE, f16: -65504, bf16: -3.3895313892515355e38 };

/**
 * f16/bf16 with d = dv <= 256 take the matrix-core kernels (gpu/flash.ts): short queries
 * (decode) split across blocks over the keys, long ones by query blocks. Other short queries
 * (f32, d != dv) take the split-KV FMA kernel (gpu/attention.ts), as do long f32 queries, which
 * then have no O(tq * tk) memory either. The composed path below is left for f64, head dims past
 * 256 and long queries with d != dv.
 */
export function attention(q: Tensor, k: Tensor, v: Tensor, p: AttentionParams): Tensor {
  if (p.outShape.some((n) => n === 0)) return Tensor.empty(p.outShape, q.dtype, q.device);
  if (k.layout.shape[2]! > 0) {
    if (flashDecodeApplies(q, k, v)) return flashDecode(q, k, v, p);
    if (attentionKernelApplies(q, k, v)) return attentionKernel(q, k, v, p);
    if (flashApplies(q, k, v)) return flashAttention(q, k, v, p);
    if (attentionKernelApplies(q, k, v, true)) return attentionKernel(q, k, v, p);
  }
  return composedAttention(q, k, v, p);
}

/**
 * Scaled dot-product attention from GPU ops, like PyTorch's math path (half types keep the
 * scores in their dtype). The g = hq / hkv query heads that share a kv head are stacked along
 * the query length, q as [b, hkv, g*tq, d], so each kv head is one GEMM of a batched matmul and
 * k and v are never copied per query head. Scaling q first gives it that (contiguous) layout.
 * The causal diagonal, the window and a u8 mask make one visibility mask; a float mask is added.
 * Where a query can end up seeing no key, its probabilities are zeroed, so its output row is
 * zeros as the CPU reference says (the softmax of a row of -Infinity would be NaN).
 * Taken for f64, head dims past 256 and d != dv.
 */
function composedAttention(q: Tensor, k: Tensor, v: Tensor, p: AttentionParams): Tensor {
  const dev = q.device;
  const [b, hq, tq, d] = q.layout.shape as [number, number, number, number];
  const [, hkv, tk] = k.layout.shape as [number, number, number];
  const { diag, window, mask } = p;
  const rows = (hq / hkv) * tq;
  const temps: Tensor[] = [];
  const keep = (t: Tensor): Tensor => { temps.push(t); return t; };
  try {
    const qs = keep(keep(q.affine(p.scale, 0)).reshape([b, hkv, rows, d]));
    const s = keep(qs.matmul(keep(k.transpose(2, 3))));
    let scores = keep(s.reshape([b, hq, tq, tk]));
    // the keys each query may see: one u8 mask broadcast over [b, hq, tq, tk] (null: all of them)
    let visible: Tensor | null = null;
    if (diag !== null) {
      // f32 positions: exact below 2^24, and the diagonal may be negative
      const qi = keep(keep(Tensor.arange(0, tq, 1, { dtype: 'f32', device: dev })).unsqueeze(1));
      const kj = keep(Tensor.arange(0, tk, 1, { dtype: 'f32', device: dev }));
      const lim = keep(qi.affine(1, diag));
      visible = keep(kj.le(lim));
      if (window !== null) visible = keep(visible.minimum(keep(kj.gt(keep(lim.affine(1, -window))))));
    }
    if (mask !== null && mask.dtype === 'u8') visible = visible ? keep(visible.minimum(mask)) : mask;
    // hidden keys get the dtype's lowest finite score, not -Infinity: exp() of it against any
    // real score is exactly 0, and a row with no visible key stays finite (zeroed below)
    if (visible) scores = keep(Tensor.where(visible, scores, LOWEST[q.dtype]));
    const additive = mask !== null && mask.dtype !== 'u8';
    if (additive) scores = keep(scores.add(mask));
    let probs = keep(scores.softmax(-1));
    const canEmpty = mask !== null || window !== null || (diag !== null && diag < 0);
    if (visible && canEmpty) probs = keep(Tensor.where(visible, probs, 0));
    const o = keep(keep(keep(probs.reshape([b, hkv, rows, tk])).matmul(v)).reshape(p.outShape));
    if (!additive) { temps.pop(); return o; }
    // an additive -Infinity can still hide a whole row: it sees something when any score is not
    // -Infinity (NaN counts: it must show)
    const seen = keep(keep(scores.ne(-Infinity)).max(-1, true));
    return Tensor.where(seen, o, 0);
  } finally {
    for (const t of temps) t.dispose();
  }
}
