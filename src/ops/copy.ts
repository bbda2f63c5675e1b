// Copies: contiguous(), cat, sliceSet, copy2d, constSet, and moves between devices. They all
// reduce to one primitive, a strided-to-strided copy between two views of the same shape.
import { Layout, normDim, numel, sameShape } from '../core/layout.ts';
import { DTypeError, ShapeError, TensorError, fmtShape } from '../core/errors.ts';
import { RawTensor, contiguousVia, reshapeVia } from '../device/raw-tensor.ts';
import type { Device } from '../device/device.ts';
import { Storage } from '../device/storage.ts';
import { DTYPES, roundTo, type HostArray } from '../core/dtype.ts';
import { sameDevice, sameDType, sig } from '../backends/checks.ts';
import * as cpu from '../backends/cpu/copy.ts';
import * as gpu from '../backends/gpu/copy.ts';
import { catRows, type CatPart } from '../backends/gpu/cat.ts';
import { toHostArray } from './readback.ts';
import { defineOp } from './registry.ts';

/** dst (any view) <- src (any view, same shape and dtype, the same device); the ops below check
 *  their arguments and reduce to it */
export const copyInto = defineOp({
  name: 'copy',
  family: 'copy',
  summary: 'dst (any view) <- src (any view of the same shape and dtype): what every copy op reduces to',
  variants: [],
  dtypes: DTYPES,
  check: (dst: RawTensor, src: RawTensor): [RawTensor, RawTensor] => [dst, src],
  writes: (dst) => dst,
  cpu: (dst, src) => {
    if (dst.numel > 0) cpu.copyInto(dst, src);
  },
  gpu: (dst, src) => {
    if (dst.numel > 0) gpu.copyInto(dst, src);
  },
  grad: 'missing',
});

const contiguousCopy = (x: RawTensor): RawTensor => contiguousVia(x, copyInto);
export const contiguous = defineOp({
  name: 'contiguous',
  family: 'copy',
  summary: 'a contiguous tensor with the same values (a view when already so)',
  dtypes: DTYPES,
  check: (x: RawTensor): [RawTensor] => [x.check('contiguous')],
  cpu: contiguousCopy,
  gpu: contiguousCopy,
  grad: 'missing',
});

const reshapeCopy = (x: RawTensor, shape: readonly number[]): RawTensor => reshapeVia(x, shape, copyInto);
/** x with another shape (the same element count, no -1): a view where the layout allows, else a copy */
export const reshape = defineOp({
  name: 'reshape',
  family: 'copy',
  summary: 'another shape of the same elements: a view where the layout allows, else a copy',
  dtypes: DTYPES,
  check: (x: RawTensor, shape: readonly number[]): [RawTensor, readonly number[]] => {
    x.check('reshape');
    if (numel(shape) !== x.numel) throw new ShapeError(`reshape: cannot reshape ${sig(x)} to ${fmtShape(shape)}`);
    return [x, shape];
  },
  cpu: reshapeCopy,
  gpu: reshapeCopy,
  grad: 'missing',
});

/** the parts' shared shape checked; the output's shape */
function catShape(ts: readonly RawTensor[], dim: number): [readonly RawTensor[], number, number[]] {
  if (ts.length === 0) throw new ShapeError('cat: no tensors given');
  const first = ts[0]!;
  for (const t of ts) t.check('cat');
  sameDevice('cat', ...ts);
  sameDType('cat', ...ts);
  const d = normDim('cat', dim, first.rank);
  for (const t of ts) {
    const ok = t.rank === first.rank && t.layout.shape.every((n, i) => i === d || n === first.layout.shape[i]);
    if (!ok)
      throw new ShapeError(`cat: shapes ${ts.map((x) => fmtShape(x.layout.shape)).join(', ')} differ outside dim ${d}`);
  }
  const shape = [...first.layout.shape];
  shape[d] = ts.reduce((a, t) => a + t.layout.shape[d]!, 0);
  return [ts, d, shape];
}

/** each part copied into its region of the output; on a GPU the parts that are rows go in one
 *  launch (catRows), the rest one copy each */
function catInto(ts: readonly RawTensor[], d: number, shape: number[], rows: boolean): RawTensor {
  const first = ts[0]!;
  const out = RawTensor.empty(shape, first.dtype, first.device);
  const parts: CatPart[] = [];
  let off = 0;
  for (const t of ts) {
    const n = t.layout.shape[d]!;
    if (n > 0) parts.push({ t, at: off });
    off += n;
  }
  try {
    const rest = rows ? catRows(out, parts, d) : parts;
    for (const { t, at } of rest) {
      const region = out.view(out.layout.narrow(d, at, t.layout.shape[d]!));
      try {
        copyInto(region, t);
      } finally {
        region.dispose();
      }
    }
  } catch (e) {
    out.dispose();
    throw e;
  }
  return out;
}

export const cat = defineOp({
  name: 'cat',
  family: 'copy',
  summary: 'tensors joined along one dim',
  dtypes: DTYPES,
  check: catShape,
  device: (ts) => ts[0]!.device,
  cpu: (ts, d, shape) => catInto(ts, d, shape, false),
  gpu: (ts, d, shape) => catInto(ts, d, shape, true),
  grad: 'missing',
});

/** a view of dst's region at start along dim, for src */
function sliceRegion(dst: RawTensor, src: RawTensor, dim: number, start: number): [RawTensor, RawTensor, RawTensor] {
  sameDevice('sliceSet', dst, src);
  sameDType('sliceSet', dst, src);
  const d = normDim('sliceSet', dim, dst.rank);
  const n = src.layout.shape[d];
  const shapeOk = src.rank === dst.rank && src.layout.shape.every((x, i) => i === d || x === dst.layout.shape[i]);
  if (!shapeOk || n === undefined || !Number.isInteger(start) || start < 0 || start + n > dst.layout.shape[d]!) {
    throw new ShapeError(`sliceSet: cannot write ${sig(src)} into ${sig(dst)} at ${start} along dim ${d}`);
  }
  return [dst.view(dst.layout.narrow(d, start, n)), src, dst];
}
function copyToRegion(region: RawTensor, src: RawTensor, _dst: RawTensor): void {
  try {
    copyInto(region, src);
  } finally {
    region.dispose();
  }
}
/** writes src into dst (in place) at start along dim */
export const sliceSet = defineOp({
  name: 'sliceSet',
  family: 'copy',
  summary: 'writes a tensor into a region of another, in place',
  dtypes: DTYPES,
  check: sliceRegion,
  writes: (_region, _src, dst) => dst,
  cpu: copyToRegion,
  gpu: copyToRegion,
  grad: 'missing',
});

export interface Copy2dParams {
  rows: number;
  cols: number;
  /** elements between row starts */
  srcStride: number;
  dstStride: number;
  /** elements from the start of each (contiguous) tensor's data */
  srcOffset?: number;
  dstOffset?: number;
}

function checkBlock(src: RawTensor, dst: RawTensor, p: Copy2dParams): [RawTensor, RawTensor, Copy2dParams] {
  sameDevice('copy2d', src, dst);
  sameDType('copy2d', src, dst);
  if (!src.isContiguous() || !dst.isContiguous())
    throw new ShapeError(`copy2d: src ${sig(src)} and dst ${sig(dst)} must be contiguous`);
  const so = p.srcOffset ?? 0,
    dOff = p.dstOffset ?? 0;
  const ints = [p.rows, p.cols, p.srcStride, p.dstStride, so, dOff];
  if (!ints.every((x) => Number.isInteger(x) && x >= 0))
    throw new RangeError(`copy2d: rows, cols, strides and offsets must be integers >= 0, got ${JSON.stringify(p)}`);
  if (p.rows === 0 || p.cols === 0) return [src, dst, p];
  const need = (off: number, stride: number) => off + (p.rows - 1) * stride + p.cols;
  if (
    need(so, p.srcStride) > src.numel ||
    need(dOff, p.dstStride) > dst.numel ||
    (p.cols > Math.min(p.srcStride, p.dstStride) && p.rows > 1)
  ) {
    throw new ShapeError(
      `copy2d: ${p.rows}x${p.cols} block (strides ${p.srcStride}/${p.dstStride}, offsets ${so}/${dOff}) does not fit src ${sig(src)} / dst ${sig(dst)}`,
    );
  }
  return [src, dst, p];
}
function copyBlock(src: RawTensor, dst: RawTensor, p: Copy2dParams): void {
  if (p.rows === 0 || p.cols === 0) return;
  const s = src.view(new Layout([p.rows, p.cols], [p.srcStride, 1], src.layout.offset + (p.srcOffset ?? 0)));
  const d = dst.view(new Layout([p.rows, p.cols], [p.dstStride, 1], dst.layout.offset + (p.dstOffset ?? 0)));
  try {
    copyInto(d, s);
  } finally {
    s.dispose();
    d.dispose();
  }
}
/** rows x cols block between two contiguous tensors viewed as flat arrays */
export const copy2d = defineOp({
  name: 'copy2d',
  family: 'copy',
  summary: 'a rows x cols block between two contiguous tensors seen as flat arrays, in place',
  dtypes: DTYPES,
  check: checkBlock,
  writes: (_src, dst) => dst,
  cpu: copyBlock,
  gpu: copyBlock,
  grad: 'missing',
});

/** every element of the view x := value (rounded to x's dtype) */
export const constSet = defineOp({
  name: 'constSet',
  family: 'copy',
  summary: 'every element of a view set to a number, in place',
  dtypes: DTYPES,
  check: (x: RawTensor, value: number): [RawTensor, number] => {
    if (typeof value !== 'number') throw new TensorError(`constSet: value must be a number, got ${typeof value}`);
    return [x, value];
  },
  writes: (x) => x,
  cpu: (x, value) => {
    if (x.numel > 0) cpu.constSet(x, roundTo(x.dtype, value));
  },
  gpu: (x, value) => {
    if (x.numel > 0) gpu.constSet(x, value);
  },
  grad: 'none',
});

/** a copy on another device (a view when already there) */
export const toDevice = defineOp({
  name: 'to',
  family: 'copy',
  summary: 'a copy on another device (a view when already there)',
  dtypes: DTYPES,
  check: (x: RawTensor, device: Device): [RawTensor, Device] => [x, device],
  cpu: (x, device) => (x.device === device ? x.view(x.layout) : upload(cpu.rawContiguous(x), x, device)),
  gpu: (x, device) => (x.device === device ? x.view(x.layout) : upload(toHostArray(x, true), x, device)),
  grad: 'missing',
});
function upload(raw: HostArray, x: RawTensor, device: Device): RawTensor {
  return new RawTensor(Storage.fromHost(device, x.dtype, raw), Layout.contiguous(x.layout.shape), x.dtype);
}

export function assertSameShape(op: string, a: RawTensor, b: RawTensor): void {
  if (!sameShape(a.layout.shape, b.layout.shape)) throw new ShapeError(`${op}: shapes differ (${sig(a)} vs ${sig(b)})`);
  if (a.dtype !== b.dtype) throw new DTypeError(`${op}: dtypes differ (${sig(a)} vs ${sig(b)})`);
}
