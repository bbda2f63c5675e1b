// argsort and sort along one dim: stable, NaN as the largest value, u32 indices, every dtype.
import { normDim } from '../layout.ts';
import { ShapeError, TensorError } from '../errors.ts';
import type { Tensor } from '../tensor.ts';
import { ALL_DTYPES, dtypeIn, sig } from './dispatch.ts';
import * as cpu from './cpu/sort.ts';
import * as gpu from './gpu/sort.ts';

/** normDim, with the tensor named in the error */
function dimOf(op: string, dim: number, x: Tensor, rank = x.rank): number {
  try { return normDim(op, dim, rank); } catch (e) {
    if (e instanceof ShapeError) throw new ShapeError(`${e.message} (x ${sig(x)})`);
    throw e;
  }
}

function check(op: string, x: Tensor, dim: number, descending: boolean): number {
  dtypeIn(op, x, ALL_DTYPES);
  if (typeof descending !== 'boolean') throw new TensorError(`${op}: descending must be a boolean, got ${String(descending)} (x ${sig(x)})`);
  // a 0-d tensor is one element along dim 0 (or -1), like PyTorch
  const d = dimOf(op, dim, x, Math.max(x.rank, 1));
  const n = x.rank === 0 ? 1 : x.layout.shape[d]!;
  // the indices are u32
  if (n > 2 ** 32) throw new ShapeError(`${op}: dim ${d} of size ${n} does not fit u32 indices (x ${sig(x)})`);
  return d;
}

export function argsort(x: Tensor, dim: number, descending: boolean): Tensor {
  const d = check('argsort', x, dim, descending);
  return x.device.isCpu ? cpu.argsort(x, d, descending) : gpu.argsort(x, d, descending);
}

export function sort(x: Tensor, dim: number, descending: boolean): { values: Tensor; indices: Tensor } {
  const d = check('sort', x, dim, descending);
  return x.device.isCpu ? cpu.sort(x, d, descending) : gpu.sort(x, d, descending);
}
