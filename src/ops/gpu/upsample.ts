// GPU resampling: replaced by the GPU agents.
import type { Tensor } from '../../tensor.ts';
import { notOnDevice } from '../dispatch.ts';

/** x [n, c, h, w] any strides, non-empty h and w; outH, outW >= 1; checked by the dispatcher */
export function upsampleNearest2d(x: Tensor, _outH: number, _outW: number): Tensor { return notOnDevice('upsampleNearest2d', x); }
export function upsampleBilinear2d(x: Tensor, _outH: number, _outW: number, _alignCorners: boolean): Tensor { return notOnDevice('upsampleBilinear2d', x); }
