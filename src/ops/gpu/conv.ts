// GPU convolutions: replaced by the GPU agents.
import type { Shape } from '../../layout.ts';
import type { Tensor } from '../../tensor.ts';
import type { Conv2dParams, ConvTranspose2dParams } from '../types.ts';
import { notOnDevice } from '../dispatch.ts';

/**
 * x [n, cIn, h, w], w [cOut, cIn/groups, kh, kw], bias [cOut] or null, all the same dtype and
 * device, any strides; params normalized and outShape [n, cOut, oh, ow] computed by the
 * dispatcher (1-d convs arrive as h = 1).
 */
export function conv2d(x: Tensor, _w: Tensor, _bias: Tensor | null, _p: Conv2dParams, _outShape: Shape): Tensor {
  return notOnDevice('conv2d', x);
}
/** x [n, cIn, h, w], w [cIn, cOut/groups, kh, kw], bias [cOut] or null; as conv2d */
export function convTranspose2d(x: Tensor, _w: Tensor, _bias: Tensor | null, _p: ConvTranspose2dParams, _outShape: Shape): Tensor {
  return notOnDevice('convTranspose2d', x);
}
