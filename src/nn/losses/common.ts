// What every loss shares: the reduction and the argument checks.
import { isFloatDType } from '../../core/dtype.ts';
import { DTypeError, ShapeError, TensorError } from '../../core/errors.ts';
import { sameShape } from '../../core/layout.ts';
import { Tensor } from '../../tensor/tensor.ts';
import { describeValue } from '../../ops/args.ts';

/** 'mean' (default): the average over elements; 'sum'; 'none': the loss per element */
export type Reduction = 'mean' | 'sum' | 'none';

export function checkReduction(loss: string, r: Reduction | undefined): Reduction {
  const v = r ?? 'mean';
  if (v !== 'mean' && v !== 'sum' && v !== 'none')
    throw new TensorError(`${loss}: reduction must be 'mean', 'sum' or 'none', got ${describeValue(v)}`);
  return v;
}

export function reduceLoss(loss: Tensor, r: Reduction): Tensor {
  if (r === 'none') return loss;
  return r === 'sum' ? loss.sum() : loss.mean();
}

/** a float tensor argument */
export function floatArg(loss: string, name: string, t: unknown): Tensor {
  if (!(t instanceof Tensor)) throw new TensorError(`${loss}: ${name} must be a Tensor, got ${describeValue(t)}`);
  if (!isFloatDType(t.dtype)) throw new DTypeError(`${loss}: ${name} must have a float dtype, got ${t.describe()}`);
  return t;
}

/** input and target of one shape and dtype, as the elementwise losses take them */
export function samePair(loss: string, input: unknown, target: unknown): [Tensor, Tensor] {
  const x = floatArg(loss, 'input', input),
    y = floatArg(loss, 'target', target);
  if (!sameShape(x.shape, y.shape))
    throw new ShapeError(`${loss}: input ${x.describe()} and target ${y.describe()} must have the same shape`);
  if (x.dtype !== y.dtype)
    throw new DTypeError(`${loss}: input ${x.describe()} and target ${y.describe()} must have the same dtype`);
  return [x, y];
}
