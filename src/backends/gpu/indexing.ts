// GPU path of the indexing family (hip-src/indexing.hip). Each op is one walk over an
// iteration shape with a Geom of four operands, so every layout of x, src and ids works without
// copies: the indexed dim gets stride 0 in the operand it indexes and the kernel adds
// id * that dim's stride. Ids are range-checked by the kernels, which skip a bad id and record
// it for src/runtime/device-errors.ts (an IndexError at the next readback): checking them here
// would need a sync. Element moves go by width, so one kernel serves every dtype of a width.
// indexSelect, embedding, gather and indexAdd try the row kernels of index-rows.ts first: where
// the data runs along rows they move it in wide units (or add it in whole lines) with no
// per-element index division.
import type { DType } from '../../core/dtype.ts';
import { DTYPE_INFO } from '../../core/dtype.ts';
import { ShapeError } from '../../core/errors.ts';
import { contiguousStrides, type Shape } from '../../core/layout.ts';
import { RawTensor } from '../../device/raw-tensor.ts';
import type { Device } from '../../device/device.ts';
import { arg, type KernelArg } from '../../runtime/kernels.ts';
import { copyWidth, type StridedOperand } from '../../runtime/kernel-sigs.ts';
import type { IdDType } from '../../runtime/kernel-sigs-indexing.ts';
import { withDeviceErrors, type ErrorOp } from '../../runtime/device-errors.ts';
import { sig } from '../checks.ts';
import { cast } from './cast.ts';
import { constSet, copyInto, eachGeom } from './copy.ts';
import { embeddingRows, launchGatherRows, launchIndexAddRows, launchSelectRows, selectRows } from './index-rows.ts';

const FILE = 'indexing.hip';

const ptrOf = (t: RawTensor): KernelArg => arg.ptr(t.storage.ptrAt(0));
const operand = (strides: readonly number[], offset: number): StridedOperand => ({ strides, offset });
/** `strides` with the indexed dim's stride replaced by 0 */
const without = (strides: readonly number[], d: number): number[] => strides.map((s, i) => (i === d ? 0 : s));
/** stride `s` on dim d, 0 on the other dims of a rank-r shape */
const only = (r: number, d: number, s: number): number[] => Array.from({ length: r }, (_, i) => (i === d ? s : 0));
const idType = (ids: RawTensor): IdDType => ids.dtype as IdDType;

interface Walk {
  readonly op: ErrorOp;
  /** the iteration shape the Geom covers */
  readonly shape: Shape;
  readonly ids: RawTensor;
  /** ids and pos operands over `shape` */
  readonly idsOp: StridedOperand;
  readonly posOp: StridedOperand;
  readonly limit: number;
  readonly what: string;
}

function site(w: Walk) {
  return { op: w.op, idsShape: w.ids.layout.shape, idsDType: w.ids.dtype, what: w.what };
}

/** y (new, contiguous over w.shape) <- x at the ids; xOp: x over w.shape with 0 on the indexed
 *  dim, whose stride is dimStride */
function gatherWalk(y: RawTensor, x: RawTensor, xOp: StridedOperand, dimStride: number, w: Walk): RawTensor {
  if (y.numel === 0) return y;
  const dev = y.device;
  const name = `gather_${copyWidth(x.dtype)}_${idType(w.ids)}`;
  const yOp = operand(contiguousStrides(w.shape), y.layout.offset);
  try {
    withDeviceErrors(dev, site(w), (err, tag) => {
      eachGeom(w.op, w.shape, [yOp, xOp, w.idsOp, w.posOp], (g, work) => {
        dev.kernels.launch1d(FILE, name, work, dev.stream, [
          ptrOf(y),
          ptrOf(x),
          ptrOf(w.ids),
          arg.bytes(g),
          arg.i64(dimStride),
          arg.u64(w.limit),
          arg.ptr(err),
          arg.u32(tag),
        ]);
      });
    });
  } catch (e) {
    y.dispose();
    throw e;
  }
  return y;
}

/** the row kernels of index-rows.ts first (they return false where the layout does not suit
 *  them), else the per-element walk */
function viaRows(
  y: RawTensor,
  x: RawTensor,
  xOp: StridedOperand,
  dimStride: number,
  w: Walk,
  rows: () => boolean,
): RawTensor {
  if (y.numel === 0) return y;
  try {
    if (rows()) return y;
  } catch (e) {
    y.dispose();
    throw e;
  }
  return gatherWalk(y, x, xOp, dimStride, w);
}

export function indexSelect(x: RawTensor, ids: RawTensor, dim: number, outShape: Shape): RawTensor {
  const r = outShape.length,
    xl = x.layout,
    il = ids.layout;
  const y = RawTensor.empty(outShape, x.dtype, x.device);
  const w: Walk = {
    op: 'indexSelect',
    shape: outShape,
    ids,
    idsOp: operand(only(r, dim, il.strides[0]!), il.offset),
    posOp: operand(only(r, dim, 1), 0),
    limit: xl.shape[dim]!,
    what: `dim ${dim} of x ${sig(x)}`,
  };
  return viaRows(y, x, operand(without(xl.strides, dim), xl.offset), xl.strides[dim]!, w, () => {
    const p = selectRows(x, ids, dim);
    return p !== null && launchSelectRows(y, x, ids, p, site(w));
  });
}

export function gather(x: RawTensor, ids: RawTensor, dim: number): RawTensor {
  const xl = x.layout,
    il = ids.layout;
  const y = RawTensor.empty(il.shape, x.dtype, x.device);
  const w: Walk = {
    op: 'gather',
    shape: il.shape,
    ids,
    idsOp: operand(il.strides, il.offset),
    posOp: operand(contiguousStrides(il.shape), 0),
    limit: xl.shape[dim]!,
    what: `dim ${dim} of x ${sig(x)}`,
  };
  return viaRows(y, x, operand(without(xl.strides, dim), xl.offset), xl.strides[dim]!, w, () =>
    launchGatherRows(y, x, ids, dim, site(w)),
  );
}

export function embedding(ids: RawTensor, table: RawTensor, outShape: Shape): RawTensor {
  const tl = table.layout,
    il = ids.layout;
  const y = RawTensor.empty(outShape, table.dtype, table.device);
  const lead = new Array<number>(il.rank).fill(0);
  const w: Walk = {
    op: 'embedding',
    shape: outShape,
    ids,
    idsOp: operand([...il.strides, 0], il.offset),
    posOp: operand([...contiguousStrides(il.shape), 0], 0),
    limit: tl.shape[0]!,
    what: `the rows of table ${sig(table)}`,
  };
  return viaRows(y, table, operand([...lead, tl.strides[1]!], tl.offset), tl.strides[0]!, w, () => {
    const p = embeddingRows(ids, table);
    return p !== null && launchSelectRows(y, table, ids, p, site(w));
  });
}

/** the dtype scatterAdd/indexAdd accumulate in: f32 for the half types, the dtype otherwise */
const accDType = (d: DType): DType => (d === 'f16' || d === 'bf16' ? 'f32' : d);

/** x copied into a new contiguous tensor of dtype `to` */
function copyAs(x: RawTensor, to: DType): RawTensor {
  if (to !== x.dtype) return cast(x, to);
  const y = RawTensor.empty(x.layout.shape, to, x.device);
  try {
    copyInto(y, x);
  } catch (e) {
    y.dispose();
    throw e;
  }
  return y;
}

/**
 * The scatter family over w.shape: a copy of x, then src written (or added) at the ids. srcOp
 * is src over w.shape. The output operand is the copy with 0 on the indexed dim.
 */
function scatterWalk(
  x: RawTensor,
  src: RawTensor,
  srcOp: StridedOperand,
  dim: number,
  add: boolean,
  w: Walk,
  inPlace = false,
  addRows?: (acc: RawTensor) => boolean,
): RawTensor {
  const dev = x.device,
    stream = dev.stream;
  const work = w.shape.reduce((a, b) => a * b, 1);
  if (work === 0) return inPlace ? x : copyAs(x, x.dtype);
  if (!add && work >= 2 ** 32 - 1) {
    throw new ShapeError(
      `${w.op}: ids ${sig(w.ids)} has ${work} elements; the GPU scatter orders duplicate targets by a 32-bit position, so it takes fewer than 2^32 - 1 (x ${sig(x)}, src ${sig(src)})`,
    );
  }
  // in place (indexSet): x is contiguous, checked by the dispatcher, and is its own output
  const acc = inPlace ? x : copyAs(x, add ? accDType(x.dtype) : x.dtype);
  const accStrides = contiguousStrides(acc.layout.shape);
  const operands = [operand(without(accStrides, dim), acc.layout.offset), w.idsOp, w.posOp, srcOp];
  const dimStride = accStrides[dim]!;
  const tail = [arg.i64(dimStride), arg.u64(w.limit)];
  const ids = ptrOf(w.ids),
    srcP = ptrOf(src),
    accP = ptrOf(acc),
    it = idType(w.ids);
  try {
    if (add) {
      if (addRows?.(acc)) return acc.dtype === x.dtype ? acc : finish(acc, x.dtype);
      const name = `scatter_add_${x.dtype}_${it}`;
      withDeviceErrors(dev, site(w), (err, tag) => {
        eachGeom(w.op, w.shape, operands, (g, n) => {
          dev.kernels.launch1d(FILE, name, n, stream, [
            accP,
            srcP,
            ids,
            arg.bytes(g),
            ...tail,
            arg.ptr(err),
            arg.u32(tag),
          ]);
        });
      });
      return acc.dtype === x.dtype ? acc : finish(acc, x.dtype);
    }
    // win[t] = 1 + the last position (row-major in ids) aimed at target t; only that one writes.
    // Targets are indexed like acc's storage (its offset included). With one id there is one
    // position: a buffer of ones already says "position 0 wins" everywhere (the marks leave
    // it so), which spares a replayed decode step a memset of the whole cache per write.
    const span = acc.layout.offset + acc.numel;
    const ones = inPlace && w.ids.numel === 1 ? onesFor(dev, span) : null;
    const win = ones ?? RawTensor.empty([span], 'u32', dev);
    try {
      if (!ones) dev.runtime.memsetAsync(win.storage.ptrAt(0), 0, win.numel * DTYPE_INFO.u32.size, stream);
      const winP = ptrOf(win);
      withDeviceErrors(dev, site(w), (err, tag) => {
        eachGeom(w.op, w.shape, operands, (g, n) => {
          dev.kernels.launch1d(FILE, `scatter_mark_${it}`, n, stream, [
            winP,
            ids,
            arg.bytes(g),
            ...tail,
            arg.ptr(err),
            arg.u32(tag),
          ]);
        });
      });
      const name = `scatter_write_${copyWidth(x.dtype)}_${it}`;
      eachGeom(w.op, w.shape, operands, (g, n) => {
        dev.kernels.launch1d(FILE, name, n, stream, [accP, srcP, ids, winP, arg.bytes(g), ...tail]);
      });
    } finally {
      if (!ones) win.dispose();
    }
    return acc;
  } catch (e) {
    if (!inPlace) acc.dispose();
    throw e;
  }
}

// per device, u32 ones covering the largest in-place single-id write so far; grown outside
// graph captures only (a capture would record the fill instead of running it)
const onesCache = new WeakMap<Device, RawTensor>();
function onesFor(dev: Device, n: number): RawTensor | null {
  const have = onesCache.get(dev);
  if (have && have.numel >= n) return have;
  if (dev.isCapturing) return null;
  have?.dispose();
  const t = RawTensor.empty([n], 'u32', dev);
  constSet(t, 1);
  onesCache.set(dev, t);
  return t;
}

/** the f32 accumulator rounded once to the half type; the accumulator is freed */
function finish(acc: RawTensor, to: DType): RawTensor {
  try {
    return cast(acc, to);
  } finally {
    acc.dispose();
  }
}

export function scatter(x: RawTensor, ids: RawTensor, src: RawTensor, dim: number, add: boolean): RawTensor {
  const il = ids.layout,
    sl = src.layout;
  return scatterWalk(x, src, operand(sl.strides, sl.offset), dim, add, {
    op: add ? 'scatterAdd' : 'scatter',
    shape: il.shape,
    ids,
    idsOp: operand(il.strides, il.offset),
    posOp: operand(contiguousStrides(il.shape), 0),
    limit: x.layout.shape[dim]!,
    what: `dim ${dim} of x ${sig(x)}`,
  });
}

export function indexSet(x: RawTensor, ids: RawTensor, src: RawTensor, dim: number): void {
  const il = ids.layout,
    sl = src.layout,
    r = sl.rank;
  scatterWalk(
    x,
    src,
    operand(sl.strides, sl.offset),
    dim,
    false,
    {
      op: 'indexSet',
      shape: sl.shape,
      ids,
      idsOp: operand(only(r, dim, il.strides[0]!), il.offset),
      posOp: operand(only(r, dim, 1), 0),
      limit: x.layout.shape[dim]!,
      what: `dim ${dim} of x ${sig(x)}`,
    },
    true,
  );
}

export function indexAdd(x: RawTensor, ids: RawTensor, src: RawTensor, dim: number): RawTensor {
  const il = ids.layout,
    sl = src.layout,
    r = sl.rank;
  const w: Walk = {
    op: 'indexAdd',
    shape: sl.shape,
    ids,
    idsOp: operand(only(r, dim, il.strides[0]!), il.offset),
    posOp: operand(only(r, dim, 1), 0),
    limit: x.layout.shape[dim]!,
    what: `dim ${dim} of x ${sig(x)}`,
  };
  return scatterWalk(x, src, operand(sl.strides, sl.offset), dim, true, w, false, (acc) =>
    launchIndexAddRows(acc, src, ids, dim, site(w)),
  );
}
