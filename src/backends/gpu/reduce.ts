// GPU path for reductions (hip-src/reduce.hip). The input is viewed with the kept dims first
// and the reduced dims last, as [outer, inner]: a contiguous view of rows a block's registers
// hold goes to reduce-rows.hip (rowreg.ts's foldRows: each row one round of 16-byte loads),
// another contiguous view to the _rows kernel (16-byte loads), a column reduction (the reduced
// dims outside a unit-stride kept dim) to colreduce.hip (colreduce.ts), anything else to
// _strided with the permuted shape and strides in a Geom record. Few long runs are split into
// segments so the whole GPU works on them, and a second kernel folds the per-segment partials. Also home of rowLaunch(), the launch shape of the row kernels.
import { dtypeSize, type DType } from '../../core/dtype.ts';
import { ShapeError, fmtShape } from '../../core/errors.ts';
import { numel, type Layout, type Shape } from '../../core/layout.ts';
import { RawTensor } from '../../device/raw-tensor.ts';
import type { Device } from '../../device/device.ts';
import { arg, type Dim3, type KernelArg } from '../../runtime/kernels.ts';
import { packGeom } from '../../runtime/kernel-sigs.ts';
import type { ReduceOp } from '../../core/op-types.ts';
import { ROWS32_OPS } from '../../runtime/kernel-sigs-reduce.ts';
import { constSet, contiguous } from './copy.ts';
import { colsPlan, columnView } from './colreduce.ts';
import { foldRows } from './rowreg.ts';
import { base, baseOrNull, offsetOf } from './launch.ts';

const FILE = 'reduce.hip';
const COLS_FILE = 'colreduce.hip';
/** runs up to this long take a warp each; longer ones a block, unless there are enough of them
 *  to give every multiprocessor WARP_ROWS_PER_SM warps (then a warp each: no block barriers) */
export const WARP_ROW_MAX = 1024;
const WARP_ROWS_PER_SM = 32;
/** a segment's length must fit the kernels' 32-bit in-row index */
const MAX_SEG = 2 ** 31;

/**
 * The dtypes whose one-warp-per-row reductions go to the lean _rows32 kernels (32-bit row
 * indexing, no workspace: 32 registers instead of 48 on NVIDIA, twice the warps in flight).
 * f32 has kernels too (reduce.hip), but was already at parity with the _rows kernel.
 */
const ROWS32_DTYPES: readonly DType[] = ['f16', 'bf16'];
/** the _rows32 kernels take rows and the row length as u32, rows below 2^31 */
const ROWS32_MAX = 2 ** 31 - 1;

/** mode 0 one thread a task, 1 one warp, 2 one block (reduce.hip) */
type Mode = 0 | 1 | 2;
interface Plan {
  readonly mode: Mode;
  readonly segLen: number;
  readonly segs: number;
  readonly grid: Dim3;
  readonly block: Dim3;
}

/**
 * How to spread `outer` runs of `inner` elements: `threadFriendly` when neighbouring outputs
 * are neighbours in memory and the run is not (a column reduction), so one thread per output
 * gives coalesced loads. Runs are split into segments until there is work for every SM.
 */
function plan(dev: Device, outer: number, inner: number, threadFriendly: boolean): Plan {
  const info = dev.runtime.info;
  const sms = Math.max(1, info.multiprocessors);
  const block = dev.kernels.preferredBlockSize;
  let mode: Mode,
    segs = 1;
  if (threadFriendly || inner <= 16) {
    mode = 0;
    const want = sms * 1024;
    if (outer < want && inner > 256) segs = Math.min(Math.ceil(want / outer), Math.ceil(inner / 64));
  } else if (inner <= WARP_ROW_MAX || outer >= sms * WARP_ROWS_PER_SM) {
    mode = 1;
  } else {
    mode = 2;
    const want = sms * 8;
    if (outer < want) segs = Math.min(Math.ceil(want / outer), Math.ceil(inner / 2048));
  }
  segs = Math.max(segs, Math.ceil(inner / MAX_SEG), 1);
  // whole 16-element multiples keep every segment at the same 16-byte phase
  let segLen = Math.max(1, Math.ceil(inner / segs));
  if (segs > 1) segLen = Math.min(MAX_SEG, Math.ceil(segLen / 16) * 16);
  segs = inner === 0 ? 1 : Math.ceil(inner / segLen);
  const tasks = outer * segs;
  const perBlock = mode === 0 ? block : mode === 1 ? Math.max(1, Math.floor(block / info.warpSize)) : 1;
  const cap = Math.min(info.maxGridDim[0], sms * 32);
  return {
    mode,
    segLen,
    segs,
    grid: [Math.max(1, Math.min(cap, Math.ceil(tasks / perBlock))), 1, 1],
    block: [block, 1, 1],
  };
}

/** the dtype of the partial results: the kernels' accumulator A (i64 sums run in u64, same bits) */
function accDType(d: DType): DType {
  switch (d) {
    case 'f64':
    case 'i64':
      return d;
    case 'u8':
    case 'u32':
      return 'u32';
    default:
      return 'f32';
  }
}

/** true when the last kept dim is unit-stride and the innermost reduced dim is not */
function columnLike(l: Layout, nKept: number): boolean {
  const sizeOk = (i: number) => l.shape[i]! > 1;
  let lastKept = -1,
    lastRed = -1;
  for (let i = 0; i < l.rank; i++)
    if (sizeOk(i)) {
      if (i < nKept) lastKept = i;
      else lastRed = i;
    }
  if (lastKept < 0 || lastRed < 0) return false;
  return Math.abs(l.strides[lastKept]!) === 1 && Math.abs(l.strides[lastRed]!) !== 1;
}

/**
 * dims: sorted, distinct, in range (may be empty: nothing reduced); outShape has keepdim applied.
 * min/max/argmin/argmax are never called with an empty reduced extent.
 */
export function reduce(
  op: ReduceOp,
  x: RawTensor,
  dims: readonly number[],
  _keepdim: boolean,
  outShape: Shape,
): RawTensor {
  const dev = x.device;
  const isArg = op === 'argmin' || op === 'argmax';
  const shape = x.layout.shape;
  const inner = numel(dims.map((d) => shape[d]!));
  if (isArg && inner > 0xffffffff) {
    throw new ShapeError(
      `${op}: the reduced extent ${inner} (dims [${dims.join(', ')}] of ${fmtShape(shape)} ${x.dtype}) does not fit the u32 index`,
    );
  }
  const out = RawTensor.empty(outShape, isArg ? 'u32' : x.dtype, dev);
  const outer = out.numel;
  if (outer === 0) return out;
  // an empty extent (only sum and mean get here): 0, and mean's 0 / 0, as on the CPU
  if (inner === 0) {
    constSet(out, op === 'mean' ? Number.NaN : 0);
    return out;
  }
  const kept = shape.map((_, i) => i).filter((i) => !dims.includes(i));
  const permuted = x.layout.permute([...kept, ...dims]);

  if (!permuted.isContiguous() && reduceColumns(op, x, out, permuted, kept.length)) return out;
  if (permuted.isContiguous() && foldRows(op, out, x, permuted.offset, outer, inner)) return out;

  let src = x,
    geom: Uint8Array | null = null,
    p: Plan;
  if (permuted.isContiguous()) {
    p = plan(dev, outer, inner, false);
  } else {
    try {
      geom = packGeom(op, permuted.shape, [{ strides: permuted.strides, offset: permuted.offset }]);
      p = plan(dev, outer, inner, columnLike(permuted, kept.length));
    } catch (e) {
      // more than the Geom's 8 dims after merging: reduce a contiguous copy of the permuted view
      if (!(e instanceof ShapeError)) throw e;
      const view = x.view(permuted);
      src = contiguous(view);
      view.dispose();
      p = plan(dev, outer, inner, false);
    }
  }

  const k = dev.kernels,
    stream = dev.stream;
  const tail = [arg.u64(outer), arg.u64(inner), arg.u64(p.segLen), arg.u32(p.mode)];
  try {
    withPartials(op, x.dtype, out, p.segs, inner, (pv, pi) => {
      if (geom) {
        k.launch(FILE, `reduce_${op}_${x.dtype}_strided`, p.grid, p.block, 0, stream, [
          base(out),
          pv,
          pi,
          base(src),
          offsetOf(out),
          arg.bytes(geom),
          ...tail,
        ]);
      } else if (leanRows(op, src.dtype, p, outer, inner)) {
        k.launch(FILE, `reduce_${op}_${x.dtype}_rows32`, p.grid, p.block, 0, stream, [
          base(out),
          base(src),
          offsetOf(out),
          offsetOf(src),
          arg.u32(outer),
          arg.u32(inner),
        ]);
      } else {
        k.launch(FILE, `reduce_${op}_${x.dtype}_rows`, p.grid, p.block, 0, stream, [
          base(out),
          pv,
          pi,
          base(src),
          offsetOf(out),
          offsetOf(src),
          ...tail,
        ]);
      }
    });
  } finally {
    if (src !== x) src.dispose();
  }
  return out;
}

/**
 * Runs `launch` with the workspace for `segs` partial results per output (null pointers when
 * segs is 1: the kernel writes out itself), then folds the partials into out with the _final
 * kernel. `count` is what mean divides by.
 */
function withPartials(
  op: ReduceOp,
  dtype: DType,
  out: RawTensor,
  segs: number,
  count: number,
  launch: (pv: KernelArg, pi: KernelArg) => void,
): void {
  const dev = out.device,
    outer = out.numel;
  const split = segs > 1;
  const isArg = op === 'argmin' || op === 'argmax';
  const pv = split ? RawTensor.empty([segs * outer], accDType(dtype), dev) : null;
  const pi = split && isArg ? RawTensor.empty([segs * outer], 'u32', dev) : null;
  const pvArg = baseOrNull(pv);
  const piArg = baseOrNull(pi);
  try {
    launch(pvArg, piArg);
    if (split) {
      const f = finalPlan(dev, outer, segs);
      dev.kernels.launch(FILE, `reduce_${op}_${dtype}_final`, f.grid, f.block, 0, dev.stream, [
        base(out),
        pvArg,
        piArg,
        offsetOf(out),
        arg.u64(outer),
        arg.u64(segs),
        arg.u64(count),
        arg.u32(f.mode),
      ]);
    }
  } finally {
    // the allocator is stream-ordered: freed now, reused only by work queued after these kernels
    pv?.dispose();
    pi?.dispose();
  }
}

/** a column reduction (colreduce.ts) when the view is one and its plan fits; false otherwise */
function reduceColumns(op: ReduceOp, x: RawTensor, out: RawTensor, permuted: Layout, nKept: number): boolean {
  const v = columnView(permuted, nKept);
  if (!v) return false;
  const dev = x.device;
  const c = colsPlan(dev, op, dtypeSize(x.dtype), x.storage.ptrAt(0), permuted.offset, v);
  if (!c) return false;
  withPartials(op, x.dtype, out, c.segs, c.rows, (pv, pi) => {
    dev.kernels.launch(COLS_FILE, `reduce_${op}_${x.dtype}_cols`, c.grid, c.block, 0, dev.stream, [
      base(out),
      pv,
      pi,
      base(x),
      offsetOf(out),
      arg.i64(permuted.offset),
      arg.u64(c.rows),
      arg.u64(c.cols),
      arg.i64(c.xBatch),
      arg.i64(c.xRow),
      arg.u64(c.segLen),
      arg.u32(c.batch),
      arg.u32(c.segs),
      arg.u32(c.tiles),
      arg.u32(c.tx),
      arg.u32(c.vec),
    ]);
  });
  return true;
}

/** a contiguous reduction the plan gives one warp per row and one segment, in u32 range */
function leanRows(op: ReduceOp, dtype: DType, p: Plan, outer: number, inner: number): boolean {
  return (
    p.mode === 1 &&
    p.segs === 1 &&
    outer <= ROWS32_MAX &&
    inner <= ROWS32_MAX &&
    ROWS32_OPS.includes(op) &&
    ROWS32_DTYPES.includes(dtype)
  );
}

/** the fold of the partials: a thread per output when there are many, else a warp or block */
function finalPlan(dev: Device, outer: number, segs: number): { mode: Mode; grid: Dim3; block: Dim3 } {
  const info = dev.runtime.info;
  const block = dev.kernels.preferredBlockSize;
  const mode: Mode = outer >= Math.max(1, info.multiprocessors) * 64 ? 0 : segs <= 4 * info.warpSize ? 1 : 2;
  const perBlock = mode === 0 ? block : mode === 1 ? Math.max(1, Math.floor(block / info.warpSize)) : 1;
  const cap = Math.min(info.maxGridDim[0], Math.max(1, info.multiprocessors) * 32);
  return { mode, grid: [Math.max(1, Math.min(cap, Math.ceil(outer / perBlock))), 1, 1], block: [block, 1, 1] };
}
