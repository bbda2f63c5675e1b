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
import { arg, type KernelArg } from '../../runtime/kernels.ts';
import { NULL_PTR } from '../../runtime/gpu.ts';
import { copyWidth, type StridedOperand } from '../../runtime/kernel-sigs.ts';
import type { IdDType } from '../../runtime/kernel-sigs-indexing.ts';
import { withDeviceErrors, type ErrorOp } from '../../runtime/device-errors.ts';
import { sig } from '../checks.ts';
import { cast } from './cast.ts';
import { copyInto, eachGeom } from './copy.ts';
import {
  embeddingRows,
  launchGatherRows,
  launchIndexAddRows,
  launchPutRows,
  launchSelectRows,
  selectRows,
} from './index-rows.ts';

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

/** the indexed dim, as errors name it */
const dimOf = (x: RawTensor, dim: number): string => `dim ${dim} of x ${sig(x)}`;

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
    what: dimOf(x, dim),
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
    what: dimOf(x, dim),
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
  addRows?: (acc: RawTensor) => boolean,
): RawTensor {
  const dev = x.device,
    stream = dev.stream;
  const work = w.shape.reduce((a, b) => a * b, 1);
  if (work === 0) return copyAs(x, x.dtype);
  if (!add && work >= 2 ** 32 - 1) {
    throw new ShapeError(
      `${w.op}: ids ${sig(w.ids)} has ${work} elements; the GPU scatter orders duplicate targets by a 32-bit position, so it takes fewer than 2^32 - 1 (x ${sig(x)}, src ${sig(src)})`,
    );
  }
  const acc = copyAs(x, add ? accDType(x.dtype) : x.dtype);
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
    // win[t] = 1 + the last position (row-major in ids) aimed at target t; only that one writes
    const win = RawTensor.empty([acc.layout.offset + acc.numel], 'u32', dev);
    try {
      dev.runtime.memsetAsync(win.storage.ptrAt(0), 0, win.numel * DTYPE_INFO.u32.size, stream);
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
      win.dispose();
    }
    return acc;
  } catch (e) {
    acc.dispose();
    throw e;
  }
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
    what: dimOf(x, dim),
  });
}

/**
 * x (contiguous, checked by the dispatcher) written in place: src's rows along dim at the 1-d
 * ids. A source row goes whole to its id's row, so duplicates are ordered per id: the winner
 * buffer has x.shape[dim] entries, not one per element of x (a KV cache pool is gigabytes, its
 * slots a few hundred thousand). With one id there is nothing to order and no buffer at all,
 * so a captured decode step replays no memset.
 */
export function indexSet(x: RawTensor, ids: RawTensor, src: RawTensor, dim: number): void {
  const il = ids.layout,
    sl = src.layout;
  if (src.numel === 0) return;
  const dev = x.device,
    stream = dev.stream;
  const n = il.shape[0]!,
    limit = x.layout.shape[dim]!;
  if (n >= 2 ** 32 - 1)
    throw new ShapeError(
      `indexSet: ids ${sig(ids)} has ${n} elements; the GPU orders duplicate ids by a 32-bit position, so it takes fewer than 2^32 - 1 (x ${sig(x)}, src ${sig(src)})`,
    );
  const xs = contiguousStrides(x.layout.shape);
  const w = rowsWalk('indexSet', x, ids, src, dim);
  const operands = [operand(without(xs, dim), x.layout.offset), w.idsOp, w.posOp, operand(sl.strides, sl.offset)];
  const it = idType(ids);
  const win = n > 1 ? RawTensor.empty([limit], 'u32', dev) : null;
  try {
    withDeviceErrors(dev, site(w), (err, tag) => {
      if (win) {
        dev.runtime.memsetAsync(win.storage.ptrAt(0), 0, limit * DTYPE_INFO.u32.size, stream);
        const marks = [operand([0], 0), operand([il.strides[0]!], il.offset), operand([1], 0)];
        eachGeom('indexSet', [n], marks, (g, m) => {
          dev.kernels.launch1d(FILE, `scatter_mark_${it}`, m, stream, [
            ptrOf(win),
            ptrOf(ids),
            arg.bytes(g),
            arg.i64(1),
            arg.u64(limit),
            arg.ptr(err),
            arg.u32(tag),
          ]);
        });
      }
      const name = `index_set_${copyWidth(x.dtype)}_${it}`;
      eachGeom('indexSet', sl.shape, operands, (g, m) => {
        dev.kernels.launch1d(FILE, name, m, stream, [
          ptrOf(x),
          ptrOf(src),
          ptrOf(ids),
          arg.ptr(win ? win.storage.ptrAt(0) : NULL_PTR),
          arg.bytes(g),
          arg.i64(xs[dim]!),
          arg.u64(limit),
          arg.ptr(err),
          arg.u32(tag),
        ]);
      });
    });
  } finally {
    win?.dispose();
  }
}

/**
 * indexSet for ids the caller knows to be distinct: src's rows go straight to their ids' rows
 * in one launch (index-rows.hip put_rows), no winner buffer; a layout the row kernel does not
 * take goes through indexSet, whose order for repeated ids is one allowed outcome.
 */
export function indexSetDistinct(x: RawTensor, ids: RawTensor, src: RawTensor, dim: number): void {
  if (src.numel === 0) return;
  // the row kernel needs no walk, only the site its bad ids name (a serving step's hot path)
  const at = { op: 'indexSetDistinct' as const, idsShape: ids.layout.shape, idsDType: ids.dtype, what: dimOf(x, dim) };
  if (!launchPutRows(x, src, ids, dim, at)) indexSet(x, ids, src, dim);
}

/** the walk of indexSet and indexAdd: over src, each row along dim taking the id at its place */
function rowsWalk(op: 'indexSet' | 'indexAdd', x: RawTensor, ids: RawTensor, src: RawTensor, dim: number): Walk {
  const il = ids.layout,
    r = src.rank;
  return {
    op,
    shape: src.layout.shape,
    ids,
    idsOp: operand(only(r, dim, il.strides[0]!), il.offset),
    posOp: operand(only(r, dim, 1), 0),
    limit: x.layout.shape[dim]!,
    what: dimOf(x, dim),
  };
}

export function indexAdd(x: RawTensor, ids: RawTensor, src: RawTensor, dim: number): RawTensor {
  const sl = src.layout;
  const w = rowsWalk('indexAdd', x, ids, src, dim);
  return scatterWalk(x, src, operand(sl.strides, sl.offset), dim, true, w, (acc) =>
    launchIndexAddRows(acc, src, ids, dim, site(w)),
  );
}
