// The fused decode-step ops as Tensor-level functions.
import * as linearOps from '../ops/linear.ts';
import { Tensor } from './tensor.ts';
import type { QkvToCacheArgs } from './options.ts';

/**
 * One token through the fused q/k/v projection: q [1, 1, heads, headDim] (rotated) is returned,
 * k and v are written into the layer's cache at the position (one kernel on a GPU).
 */
export function qkvToCache(a: QkvToCacheArgs): Tensor {
  return Tensor.wrap(linearOps.qkvToCache(a));
}
