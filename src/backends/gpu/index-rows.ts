// The fast paths of indexSelect, embedding and gather (hip-src/index-rows.hip), taken when the
// layout lets data move along rows; indexing.ts falls back to the per-element walk otherwise.
//  - indexSelect and embedding copy whole rows: the id of a row is read and range-checked once,
//    and the row moves in the widest unit its starts are aligned to (16-byte vectors for
//    contiguous rows of the usual sizes), with no index division per element.
//  - gather walks rows of the ids' last dim: one Geom lookup per row, then consecutive
//    elements of y and ids go to consecutive threads.
//  - indexSetDistinct writes whole rows of src at their (distinct) ids, the mirror of indexSelect.
//  - indexAdd adds whole rows of src: the id of a row is read and range-checked once, and
//    consecutive threads add consecutive elements (each wave's atomics cover whole lines).
// Bad ids are still caught on the device (the kernels record them like indexing.hip's).
import { ShapeError } from '../../core/errors.ts';
import { numel } from '../../core/layout.ts';
import type { RawTensor } from '../../device/raw-tensor.ts';
import { arg } from '../../runtime/kernels.ts';
import { copyWidth, packGeom } from '../../runtime/kernel-sigs.ts';
import { withDeviceErrors, type ErrorSite } from '../../runtime/device-errors.ts';
import { ROW_LEN_MAX, mergedRuns, rowLaunch, rowPlan, unitName } from './rows.ts';

const FILE = 'index-rows.hip';
/** rows shorter than this go through the per-element kernel unless no row needs a division */
const SHORT_ROW = 8;
/** gather rows shorter than this: the per-row Geom lookup would cost more than it saves */
const GATHER_MIN_COLS = 16;

/** y [pre, n, len] (contiguous) <- the x rows at xOff + p*xPre + ids[j]*xDim, in elements */
export interface RowSelect {
  readonly pre: number;
  readonly n: number;
  readonly len: number;
  readonly xPre: number;
  readonly xDim: number;
  readonly idsStride: number;
  readonly limit: number;
}

/**
 * indexSelect of x along dim as row copies, or null: the dims before dim must merge into one
 * (any stride), the dims after it into one unit-stride run (the rows).
 */
export function selectRows(x: RawTensor, ids: RawTensor, dim: number): RowSelect | null {
  const { shape, strides } = x.layout;
  const before = mergedRuns(shape.slice(0, dim), strides.slice(0, dim));
  const after = mergedRuns(shape.slice(dim + 1), strides.slice(dim + 1));
  if (before.length > 1 || after.length > 1 || (after[0] && after[0].s !== 1)) return null;
  return {
    pre: before[0]?.n ?? 1,
    n: ids.layout.shape[0]!,
    len: after[0]?.n ?? 1,
    xPre: before[0]?.s ?? 0,
    xDim: strides[dim]!,
    idsStride: ids.layout.strides[0]!,
    limit: shape[dim]!,
  };
}

/** embedding as row copies, or null: the ids' dims must merge into one run (their row-major
 *  order is then the order of the output rows) and the table's rows must be unit-stride */
export function embeddingRows(ids: RawTensor, table: RawTensor): RowSelect | null {
  const il = ids.layout,
    tl = table.layout;
  const run = mergedRuns(il.shape, il.strides);
  if (run.length > 1 || (tl.shape[1]! > 1 && tl.strides[1] !== 1)) return null;
  return {
    pre: 1,
    n: ids.numel,
    len: tl.shape[1]!,
    xPre: 0,
    xDim: tl.strides[0]!,
    idsStride: run[0]?.s ?? 0,
    limit: tl.shape[0]!,
  };
}

/** y (new, contiguous) <- the rows `p` picks; false (nothing launched) when the rows do not
 *  suit the row kernel and the caller should take the per-element one */
export function launchSelectRows(y: RawTensor, x: RawTensor, ids: RawTensor, p: RowSelect, site: ErrorSite): boolean {
  const rows = p.pre * p.n;
  if (p.pre > 1 && p.len < SHORT_ROW) return false;
  const plan = rowPlan(y, x, rows, p.len, [p.xPre, p.xDim]);
  if (!plan) return false;
  launchRowKernel(
    `index_rows_${unitName(plan.unit)}_${ids.dtype}`,
    y,
    x,
    ids,
    plan,
    rows,
    p.n,
    p.idsStride,
    p.limit,
    site,
  );
  return true;
}

/**
 * gather along dim as a walk over rows of the ids' last dim (y [rows, cols] contiguous); false
 * (nothing launched) when the rows are short or the row geometry does not fit a Geom.
 */
export function launchGatherRows(y: RawTensor, x: RawTensor, ids: RawTensor, dim: number, site: ErrorSite): boolean {
  const xl = x.layout,
    il = ids.layout,
    r = il.rank;
  if (r === 0) return false;
  const cols = il.shape[r - 1]!,
    lead = il.shape.slice(0, r - 1);
  if (cols < GATHER_MIN_COLS || cols > ROW_LEN_MAX) return false;
  let geom: Uint8Array;
  try {
    // operand 0: the x row start (stride 0 on the gathered dim); operand 1: the ids row start
    geom = packGeom('gather', lead, [
      { strides: xl.strides.slice(0, r - 1).map((s, i) => (i === dim ? 0 : s)), offset: xl.offset },
      { strides: il.strides.slice(0, r - 1), offset: il.offset },
    ]);
  } catch (e) {
    if (e instanceof ShapeError) return false;
    throw e;
  }
  const dev = y.device,
    rows = numel(lead);
  const xCol = dim === r - 1 ? 0 : xl.strides[r - 1]!;
  const { grid, block, group } = rowLaunch(dev, rows, cols);
  const name = `gather_rows_${copyWidth(x.dtype)}_${ids.dtype}`;
  withDeviceErrors(dev, site, (err, tag) => {
    dev.kernels.launch(FILE, name, grid, block, 0, dev.stream, [
      arg.ptr(y.storage.ptrAt(0)),
      arg.ptr(x.storage.ptrAt(0)),
      arg.ptr(ids.storage.ptrAt(0)),
      arg.ptr(err),
      arg.i64(y.layout.offset),
      arg.bytes(geom),
      arg.u64(rows),
      arg.u64(cols),
      arg.i64(xCol),
      arg.i64(il.strides[r - 1]!),
      arg.i64(xl.strides[dim]!),
      arg.u64(xl.shape[dim]!),
      arg.u32(group),
      arg.u32(tag),
    ]);
  });
  return true;
}

/**
 * src's rows along dim for the row kernels, or null: the dims before dim merge into one run
 * (any stride, preStride), the dims after it into one unit-stride run (the rows, len long);
 * rows short enough to cost a division each only without leading dims
 */
function sourceRows(
  src: RawTensor,
  dim: number,
): { pre: number; n: number; len: number; preStride: number; dimStride: number } | null {
  const { shape, strides } = src.layout;
  const before = mergedRuns(shape.slice(0, dim), strides.slice(0, dim));
  const after = mergedRuns(shape.slice(dim + 1), strides.slice(dim + 1));
  if (before.length > 1 || after.length > 1 || (after[0] && after[0].s !== 1)) return null;
  const pre = before[0]?.n ?? 1,
    len = after[0]?.n ?? 1;
  if (pre > 1 && len < SHORT_ROW) return null;
  return { pre, n: shape[dim]!, len, preStride: before[0]?.s ?? 0, dimStride: strides[dim]! };
}

/**
 * indexAdd of src into acc (the new contiguous accumulator, x's shape) along dim as row adds, or
 * false (nothing launched): src's dims before dim must merge into one run (any stride), the dims
 * after it into one unit-stride run (the rows).
 */
export function launchIndexAddRows(
  acc: RawTensor,
  src: RawTensor,
  ids: RawTensor,
  dim: number,
  site: ErrorSite,
): boolean {
  const r = sourceRows(src, dim);
  if (!r) return false;
  const { pre, n, len } = r;
  if (len > ROW_LEN_MAX) return false;
  const limit = acc.layout.shape[dim]!,
    rows = pre * n;
  const dev = acc.device;
  const { grid, block, group } = rowLaunch(dev, rows, len);
  const name = `index_add_rows_${src.dtype}_${ids.dtype}`;
  withDeviceErrors(dev, site, (err, tag) => {
    dev.kernels.launch(FILE, name, grid, block, 0, dev.stream, [
      arg.ptr(acc.storage.ptrAt(0)),
      arg.ptr(src.storage.ptrAt(0)),
      arg.ptr(ids.storage.ptrAt(0)),
      arg.ptr(err),
      arg.i64(acc.layout.offset),
      arg.i64(src.layout.offset),
      arg.i64(ids.layout.offset),
      arg.u64(rows),
      arg.u64(n),
      arg.u64(len),
      arg.i64(limit * len),
      arg.i64(len),
      arg.i64(r.preStride),
      arg.i64(r.dimStride),
      arg.i64(ids.layout.strides[0]!),
      arg.u64(limit),
      arg.u32(group),
      arg.u32(tag),
    ]);
  });
  return true;
}

/**
 * indexSetDistinct of src into x (contiguous) along dim as row copies, or false (nothing
 * launched): src's dims before dim must merge into one run (any stride), the dims after it into
 * one unit-stride run (the rows).
 */
export function launchPutRows(x: RawTensor, src: RawTensor, ids: RawTensor, dim: number, site: ErrorSite): boolean {
  const r = sourceRows(src, dim);
  if (!r) return false;
  const { pre, n, len } = r;
  const limit = x.layout.shape[dim]!,
    rows = pre * n;
  // x's rows: [pre, limit, len] contiguous; src's at its strides
  const plan = rowPlan(x, src, rows, len, [limit * len, len, r.preStride, r.dimStride]);
  if (!plan) return false;
  launchRowKernel(
    `put_rows_${unitName(plan.unit)}_${ids.dtype}`,
    x,
    src,
    ids,
    plan,
    rows,
    n,
    ids.layout.strides[0]!,
    limit,
    site,
  );
  return true;
}

/** index_rows and put_rows: y, x, ids, err, the plan's offsets, rows, n, len, the plan's
 *  strides (in units), the ids' stride, the limit, the group, the error tag */
function launchRowKernel(
  name: string,
  y: RawTensor,
  x: RawTensor,
  ids: RawTensor,
  plan: NonNullable<ReturnType<typeof rowPlan>>,
  rows: number,
  n: number,
  idsStride: number,
  limit: number,
  site: ErrorSite,
): void {
  const dev = y.device;
  withDeviceErrors(dev, site, (err, tag) => {
    dev.kernels.launch(FILE, name, plan.grid, plan.block, 0, dev.stream, [
      arg.ptr(y.storage.ptrAt(0)),
      arg.ptr(x.storage.ptrAt(0)),
      arg.ptr(ids.storage.ptrAt(0)),
      arg.ptr(err),
      arg.i64(plan.yOff),
      arg.i64(plan.xOff),
      arg.i64(ids.layout.offset),
      arg.u64(rows),
      arg.u64(n),
      arg.u64(plan.len),
      ...plan.strides.map((st) => arg.i64(st)),
      arg.i64(idsStride),
      arg.u64(limit),
      arg.u32(plan.group),
      arg.u32(tag),
    ]);
  });
}
