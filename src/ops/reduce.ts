// Reductions over any set of dims: sum, mean, min, max, and argmin/argmax over one dim.
import { normDim, numel } from '../core/layout.ts';
import { DTypeError, ShapeError, TensorError, fmtShape } from '../core/errors.ts';
import type { RawTensor } from '../device/raw-tensor.ts';
import { ALL_DTYPES, FLOATS, dtypeIn, sig } from '../backends/checks.ts';
import { REDUCE_OPS, type ReduceOp } from '../core/op-types.ts';
import * as cpu from '../backends/cpu/reduce.ts';
import * as gpu from '../backends/gpu/reduce.ts';
import { defineOp } from './registry.ts';

/**
 * dims undefined = every dim; an empty array reduces nothing (numpy's axis=()). sum/min/max keep
 * the dtype (integer sums wrap), mean is float only, argmin/argmax give u32 over exactly one dim.
 */
export const reduce = defineOp({
  name: 'reduce',
  family: 'reduce',
  summary: 'over any set of dims (argmin/argmax: one dim, u32 indices of the first extreme)',
  variants: REDUCE_OPS,
  dtypes: ALL_DTYPES,
  check: (
    op: ReduceOp,
    x: RawTensor,
    dims: number | readonly number[] | undefined,
    keepdim: boolean,
  ): [ReduceOp, RawTensor, number[], boolean, number[]] => {
    if (!(REDUCE_OPS as readonly string[]).includes(op))
      throw new TensorError(`reduce: unknown op '${String(op)}' (tensor ${sig(x)})`);
    x.check(op);
    if (op === 'mean' && !FLOATS.includes(x.dtype)) {
      throw new DTypeError(
        `mean: dtype ${x.dtype} not supported (tensor ${sig(x)}; supported: ${FLOATS.join(', ')}); cast to a float dtype first`,
      );
    }
    dtypeIn(op, x, ALL_DTYPES);
    if (typeof keepdim !== 'boolean')
      throw new TypeError(`${op}: keepdim must be a boolean, got ${typeof keepdim} (tensor ${sig(x)})`);
    const shape = x.layout.shape,
      rank = x.rank;
    const isArg = op === 'argmin' || op === 'argmax';
    let given: readonly number[];
    if (dims === undefined) {
      if (isArg) throw new ShapeError(`${op}: needs exactly one dim (tensor ${sig(x)})`);
      given = shape.map((_, i) => i);
    } else if (typeof dims === 'number') given = [dims];
    else if (Array.isArray(dims)) given = dims;
    else throw new TypeError(`${op}: dims must be a number or an array of numbers (tensor ${sig(x)})`);
    if (isArg && given.length !== 1)
      throw new ShapeError(`${op}: needs exactly one dim, got [${given.join(', ')}] (tensor ${sig(x)})`);
    const ds = given.map((d) => {
      if (typeof d !== 'number')
        throw new TypeError(`${op}: dims must be numbers, got [${given.join(', ')}] (tensor ${sig(x)})`);
      return normDim(op, d, rank);
    });
    if (new Set(ds).size !== ds.length)
      throw new ShapeError(`${op}: dim repeated in [${given.join(', ')}] (tensor ${sig(x)})`);
    ds.sort((a, b) => a - b);
    const reducedSize = numel(ds.map((d) => shape[d]!));
    if (reducedSize === 0 && op !== 'sum' && op !== 'mean') {
      throw new ShapeError(
        `${op}: cannot reduce over an empty extent (dims [${ds.join(', ')}] of shape ${fmtShape(shape)}, ${x.dtype})`,
      );
    }
    const outShape = keepdim ? shape.map((n, i) => (ds.includes(i) ? 1 : n)) : shape.filter((_, i) => !ds.includes(i));
    return [op, x, ds, keepdim, outShape];
  },
  cpu: cpu.reduce,
  gpu: gpu.reduce,
  grad: 'missing',
});
