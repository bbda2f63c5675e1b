// GPU pooling: replaced by the GPU agents.
import type { Shape } from '../../layout.ts';
import type { Tensor } from '../../tensor.ts';
import type { Pool2dParams } from '../types.ts';
import { notOnDevice } from '../dispatch.ts';

/** x [n, c, h, w] any strides; params normalized and outShape [n, c, oh, ow] computed by the dispatcher */
export function avgPool2d(x: Tensor, _p: Pool2dParams, _outShape: Shape): Tensor { return notOnDevice('avgPool2d', x); }
export function maxPool2d(x: Tensor, _p: Pool2dParams, _outShape: Shape): Tensor { return notOnDevice('maxPool2d', x); }
