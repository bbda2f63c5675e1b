// argsort, sort and topk along one dim: stable, NaN as the largest value, u32 indices, every dtype.
import { normDim } from '../core/layout.ts';
import { ShapeError, TensorError } from '../core/errors.ts';
import type { RawTensor } from '../device/raw-tensor.ts';
import { ALL_DTYPES, dtypeIn, sig } from '../backends/checks.ts';
import * as cpu from '../backends/cpu/sort.ts';
import * as gpu from '../backends/gpu/sort.ts';
import * as gpuTopk from '../backends/gpu/topk.ts';
import { defineOp } from './registry.ts';

export interface TopkOptions {
  /** the dim to select along (default -1) */
  dim?: number;
  /** the k largest (default) or the k smallest */
  largest?: boolean;
  /**
   * accepted for PyTorch's signature: the results come in order either way (largest first, or
   * smallest first), which is one of the orders `sorted: false` allows
   */
  sorted?: boolean;
}

/** normDim, with the tensor named in the error */
function dimOf(op: string, dim: number, x: RawTensor, rank = x.rank): number {
  try {
    return normDim(op, dim, rank);
  } catch (e) {
    if (e instanceof ShapeError) throw new ShapeError(`${e.message} (x ${sig(x)})`);
    throw e;
  }
}

function flag(op: string, name: string, v: unknown, x: RawTensor): boolean {
  if (typeof v !== 'boolean') throw new TensorError(`${op}: ${name} must be a boolean, got ${String(v)} (x ${sig(x)})`);
  return v;
}

/** the dim (normalized) and its length */
function check(op: string, x: RawTensor, dim: number): { d: number; n: number } {
  dtypeIn(op, x, ALL_DTYPES);
  // a 0-d tensor is one element along dim 0 (or -1), like PyTorch
  const d = dimOf(op, dim, x, Math.max(x.rank, 1));
  const n = x.rank === 0 ? 1 : x.layout.shape[d]!;
  // the indices are u32
  if (n > 2 ** 32) throw new ShapeError(`${op}: dim ${d} of size ${n} does not fit u32 indices (x ${sig(x)})`);
  return { d, n };
}

/** the arguments of a full sort along dim */
function checkSort(op: string, x: RawTensor, dim: number, descending: boolean): [RawTensor, number, boolean] {
  const { d } = check(op, x, dim);
  return [x, d, flag(op, 'descending', descending, x)];
}

export const argsort = defineOp({
  name: 'argsort',
  family: 'sorting',
  summary: 'u32 indices that sort along dim (stable; NaN largest)',
  dtypes: ALL_DTYPES,
  check: (x: RawTensor, dim: number, descending: boolean) => checkSort('argsort', x, dim, descending),
  cpu: cpu.argsort,
  gpu: gpu.argsort,
  grad: 'none',
});

export const sort = defineOp({
  name: 'sort',
  family: 'sorting',
  summary: 'values and u32 indices, stable, along dim',
  dtypes: ALL_DTYPES,
  check: (x: RawTensor, dim: number, descending: boolean) => checkSort('sort', x, dim, descending),
  cpu: cpu.sort,
  gpu: gpu.sort,
  grad: 'missing',
});

/**
 * The k largest (or smallest) elements along a dim and their u32 indices, largest first (or
 * smallest first). Ties: the lower index first; NaN counts as larger than every number. The
 * result is the first k of the stable sort (descending for largest). k may be 0 (empty
 * results); a 0-d tensor takes k = 1 only.
 */
export const topk = defineOp({
  name: 'topk',
  family: 'sorting',
  summary: 'the k largest (or smallest) along a dim with u32 indices; ties: lower index first',
  dtypes: ALL_DTYPES,
  check: (x: RawTensor, k: number, opts: TopkOptions = {}): [RawTensor, number, number, boolean] => {
    const op = 'topk';
    const { d, n } = check(op, x, opts.dim ?? -1);
    const largest = flag(op, 'largest', opts.largest ?? true, x);
    flag(op, 'sorted', opts.sorted ?? true, x);
    if (typeof k !== 'number' || !Number.isInteger(k) || k < 0)
      throw new TensorError(`${op}: k must be an integer >= 0, got ${String(k)} (x ${sig(x)})`);
    if (k > n) throw new ShapeError(`${op}: k = ${k} is larger than dim ${d} of size ${n} (x ${sig(x)})`);
    if (x.rank === 0 && k !== 1)
      throw new ShapeError(
        `${op}: a 0-d tensor has one element and its results keep its shape, so k must be 1, got ${k} (x ${sig(x)})`,
      );
    return [x, d, k, largest];
  },
  cpu: cpu.topk,
  gpu: gpuTopk.topk,
  grad: 'missing',
});
