// GPU path for reductions: not written yet (the GPU agents replace this body).
import type { Shape } from '../../layout.ts';
import type { Tensor } from '../../tensor.ts';
import type { ReduceOp } from '../types.ts';
import { notOnDevice } from '../dispatch.ts';

/**
 * dims: sorted, distinct, in range (may be empty: nothing reduced); outShape has keepdim applied.
 * min/max/argmin/argmax are never called with an empty reduced extent.
 */
export function reduce(op: ReduceOp, x: Tensor, _dims: readonly number[], _keepdim: boolean, _outShape: Shape): Tensor {
  return notOnDevice(op, x);
}
