// Copies: contiguous(), cat, sliceSet, copy2d, constSet, and moves between devices. They all
// reduce to one primitive, a strided-to-strided copy between two views of the same shape.
import { Layout, normDim, sameShape } from '../core/layout.ts';
import { DTypeError, ShapeError, TensorError, fmtShape } from '../core/errors.ts';
import { RawTensor } from '../device/raw-tensor.ts';
import type { Device } from '../device/device.ts';
import { Storage } from '../device/storage.ts';
import { roundTo } from '../core/dtype.ts';
import { sameDevice, sameDType, sig } from '../backends/checks.ts';
import * as cpu from '../backends/cpu/copy.ts';
import * as gpu from '../backends/gpu/copy.ts';
import { catRows, type CatPart } from '../backends/gpu/cat.ts';
import { toHostArray } from './readback.ts';

/** dst (any view) <- src (any view, same shape and dtype) */
export function copyInto(dst: RawTensor, src: RawTensor): void {
  if (dst.numel === 0) return;
  if (dst.device.isCpu) cpu.copyInto(dst, src); else gpu.copyInto(dst, src);
}

export function contiguous(x: RawTensor): RawTensor {
  if (x.isContiguous()) return x.view(x.layout);
  const out = RawTensor.empty(x.layout.shape, x.dtype, x.device);
  copyInto(out, x);
  return out;
}

/** x with another shape (same element count): a view where the layout allows, else a copy */
export function reshape(x: RawTensor, shape: readonly number[]): RawTensor {
  const l = x.layout.reshapeView(shape);
  if (l) return x.view(l);
  const c = contiguous(x);
  try { return c.viewAs(shape); } finally { c.dispose(); }
}

export function cat(ts: readonly RawTensor[], dim: number): RawTensor {
  if (ts.length === 0) throw new ShapeError('cat: no tensors given');
  const first = ts[0]!;
  for (const t of ts) t.check('cat');
  sameDevice('cat', ...ts);
  sameDType('cat', ...ts);
  const d = normDim('cat', dim, first.rank);
  for (const t of ts) {
    const ok = t.rank === first.rank && t.layout.shape.every((n, i) => i === d || n === first.layout.shape[i]);
    if (!ok) throw new ShapeError(`cat: shapes ${ts.map((x) => fmtShape(x.layout.shape)).join(', ')} differ outside dim ${d}`);
  }
  const shape = [...first.layout.shape];
  shape[d] = ts.reduce((a, t) => a + t.layout.shape[d]!, 0);
  const out = RawTensor.empty(shape, first.dtype, first.device);
  const parts: CatPart[] = [];
  let off = 0;
  for (const t of ts) {
    const n = t.layout.shape[d]!;
    if (n > 0) parts.push({ t, at: off });
    off += n;
  }
  // on a GPU the inputs that are rows go in one launch; the rest, one copy each
  const rest = out.device.isCpu ? parts : catRows(out, parts, d);
  for (const { t, at } of rest) {
    const region = out.view(out.layout.narrow(d, at, t.layout.shape[d]!));
    copyInto(region, t);
    region.dispose();
  }
  return out;
}

export function sliceSet(dst: RawTensor, src: RawTensor, dim: number, start: number): void {
  sameDevice('sliceSet', dst, src);
  sameDType('sliceSet', dst, src);
  const d = normDim('sliceSet', dim, dst.rank);
  const n = src.layout.shape[d];
  const shapeOk = src.rank === dst.rank && src.layout.shape.every((x, i) => i === d || x === dst.layout.shape[i]);
  if (!shapeOk || n === undefined || !Number.isInteger(start) || start < 0 || start + n > dst.layout.shape[d]!) {
    throw new ShapeError(`sliceSet: cannot write ${sig(src)} into ${sig(dst)} at ${start} along dim ${d}`);
  }
  const region = dst.view(dst.layout.narrow(d, start, n));
  try { copyInto(region, src); } finally { region.dispose(); }
}

export interface Copy2dParams {
  rows: number; cols: number;
  /** elements between row starts */
  srcStride: number; dstStride: number;
  /** elements from the start of each (contiguous) tensor's data */
  srcOffset?: number; dstOffset?: number;
}

/** rows x cols block between two contiguous tensors viewed as flat arrays */
export function copy2d(src: RawTensor, dst: RawTensor, p: Copy2dParams): void {
  sameDevice('copy2d', src, dst);
  sameDType('copy2d', src, dst);
  if (!src.isContiguous() || !dst.isContiguous()) throw new ShapeError(`copy2d: src ${sig(src)} and dst ${sig(dst)} must be contiguous`);
  const so = p.srcOffset ?? 0, dOff = p.dstOffset ?? 0;
  const ints = [p.rows, p.cols, p.srcStride, p.dstStride, so, dOff];
  if (!ints.every((x) => Number.isInteger(x) && x >= 0)) throw new RangeError(`copy2d: rows, cols, strides and offsets must be integers >= 0, got ${JSON.stringify(p)}`);
  if (p.rows === 0 || p.cols === 0) return;
  const need = (off: number, stride: number) => off + (p.rows - 1) * stride + p.cols;
  if (need(so, p.srcStride) > src.numel || need(dOff, p.dstStride) > dst.numel || p.cols > Math.min(p.srcStride, p.dstStride) && p.rows > 1) {
    throw new ShapeError(`copy2d: ${p.rows}x${p.cols} block (strides ${p.srcStride}/${p.dstStride}, offsets ${so}/${dOff}) does not fit src ${sig(src)} / dst ${sig(dst)}`);
  }
  const s = src.view(new Layout([p.rows, p.cols], [p.srcStride, 1], src.layout.offset + so));
  const d = dst.view(new Layout([p.rows, p.cols], [p.dstStride, 1], dst.layout.offset + dOff));
  try { copyInto(d, s); } finally { s.dispose(); d.dispose(); }
}

/** every element of the view x := value (rounded to x's dtype) */
export function constSet(x: RawTensor, value: number): void {
  if (typeof value !== 'number') throw new TensorError(`constSet: value must be a number, got ${typeof value}`);
  if (x.numel === 0) return;
  if (x.device.isCpu) cpu.constSet(x, roundTo(x.dtype, value)); else gpu.constSet(x, value);
}

export function toDevice(x: RawTensor, device: Device): RawTensor {
  if (x.device === device) return x.view(x.layout);
  const raw = x.device.isCpu ? cpu.rawContiguous(x) : toHostArray(x, true);
  return new RawTensor(Storage.fromHost(device, x.dtype, raw), Layout.contiguous(x.layout.shape), x.dtype);
}

export function assertSameShape(op: string, a: RawTensor, b: RawTensor): void {
  if (!sameShape(a.layout.shape, b.layout.shape)) throw new ShapeError(`${op}: shapes differ (${sig(a)} vs ${sig(b)})`);
  if (a.dtype !== b.dtype) throw new DTypeError(`${op}: dtypes differ (${sig(a)} vs ${sig(b)})`);
}
