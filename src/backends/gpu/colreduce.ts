// Reductions down columns (hip-src/colreduce.hip): the reduced dims are not the innermost and
// the innermost kept dim is unit-stride, as in a sum over dim 0 of [rows, cols]. The strided
// kernel of reduce.hip gives each output a thread and divides a Geom index per element; here
// a block takes a tile of neighbouring columns and threads read neighbouring 16-byte vectors of
// each row, and the rows are split into segments until every multiprocessor has blocks (the
// segments' partials fold in reduce.hip's _final kernel, in a fixed order: deterministic).
import type { Layout } from '../../core/layout.ts';
import type { Device } from '../../device/device.ts';
import type { Dim3 } from '../../runtime/kernels.ts';
import type { ReduceOp } from '../../core/op-types.ts';
import { mergedRuns } from './rows.ts';

/** x[b, r, c] = x[xOff + b*xBatch + r*xRow + c]: output b*cols + c reduces over r */
export interface ColsView {
  readonly batch: number;
  readonly rows: number;
  readonly cols: number;
  readonly xBatch: number;
  readonly xRow: number;
}

export interface ColsPlan extends ColsView {
  /** 1: each thread's V columns are one aligned load a row */
  readonly vec: number;
  /** threads across a tile's columns (a power of two dividing the block) */
  readonly tx: number;
  readonly tiles: number;
  readonly segs: number;
  readonly segLen: number;
  readonly grid: Dim3;
  readonly block: Dim3;
}

/** the kernels' task counts are 32-bit (below 2^31) */
const TASKS_MAX = 2 ** 31 - 1;
/** blocks of 256 threads per multiprocessor the split aims for: few enough that the grid is one
 *  wave on every arch (an H200 SM holds 6 of these at 34 registers; 8 a SM left a tail wave of
 *  37%: 22.0 us against 19.9 us for sum over dim 1 of [32, 2048, 512] bf16, ncu) */
const BLOCKS_PER_SM = 4;
/** rows each thread of a segment reads at least, so the fold through shared memory is amortized */
const ROWS_PER_THREAD = 8;

/**
 * The permuted view (kept dims first, then the reduced ones) as a column reduction, or null:
 * the kept dims must merge into [batch, cols] with cols unit-stride, the reduced dims into one
 * run of more than one element.
 */
export function columnView(permuted: Layout, nKept: number): ColsView | null {
  const { shape, strides } = permuted;
  const kept = mergedRuns(shape.slice(0, nKept), strides.slice(0, nKept));
  const red = mergedRuns(shape.slice(nKept), strides.slice(nKept));
  if (red.length !== 1 || kept.length === 0 || kept.length > 2 || kept[kept.length - 1]!.s !== 1) return null;
  const c = kept[kept.length - 1]!,
    b = kept.length === 2 ? kept[0]! : { n: 1, s: 0 };
  return { batch: b.n, rows: red[0]!.n, cols: c.n, xBatch: b.s, xRow: red[0]!.s };
}

/** columns a thread takes: colreduce.hip's ColsV (16 bytes, at most 8; 4 for argmin/argmax) */
export function colsPerThread(op: ReduceOp, elemBytes: number): number {
  return Math.min(16 / elemBytes, op === 'argmin' || op === 'argmax' ? 4 : 8);
}

/** how to run a column reduction of x (base address `basePtr`, offset xOff) on dev, or null
 *  when its task counts would not fit the kernel's 32 bits */
export function colsPlan(
  dev: Device,
  op: ReduceOp,
  elemBytes: number,
  basePtr: bigint,
  xOff: number,
  v: ColsView,
): ColsPlan | null {
  const info = dev.runtime.info;
  const block = dev.kernels.preferredBlockSize;
  const V = colsPerThread(op, elemBytes);
  const vec =
    basePtr % BigInt(V * elemBytes) === 0n && xOff % V === 0 && v.xBatch % V === 0 && v.xRow % V === 0 ? 1 : 0;
  // a warp's worth of threads across the columns (fewer when the columns are few), more when
  // there are too few rows to give every thread of a column tile one; tx stays a power of two
  // dividing the block
  let tx = 1;
  while (tx < 32 && tx * V < v.cols && tx * 2 <= block && block % (tx * 2) === 0) tx *= 2;
  while (block / tx > v.rows && tx * V < v.cols && tx * 2 <= block && block % (tx * 2) === 0) tx *= 2;
  const ty = Math.max(1, Math.floor(block / tx));
  const tiles = Math.ceil(v.cols / (tx * V)),
    perSeg = v.batch * tiles;
  const sms = Math.max(1, info.multiprocessors);
  let segs = Math.max(
    1,
    Math.min(Math.ceil((sms * BLOCKS_PER_SM) / perSeg), Math.floor(v.rows / (ty * ROWS_PER_THREAD))),
  );
  const segLen = Math.ceil(v.rows / segs);
  segs = Math.ceil(v.rows / segLen);
  if (perSeg * segs > TASKS_MAX) return null;
  const cap = Math.min(info.maxGridDim[0], sms * 32);
  // fields spelled out: V8 (Node 20) builds `{ ...v, more }` on a slow path (5.8 us for this one
  // in a loop, more than the rest of the plan)
  return {
    batch: v.batch,
    rows: v.rows,
    cols: v.cols,
    xBatch: v.xBatch,
    xRow: v.xRow,
    vec,
    tx,
    tiles,
    segs,
    segLen,
    grid: [Math.max(1, Math.min(cap, perSeg * segs)), 1, 1],
    block: [block, 1, 1],
  };
}
