// GPU matmul: replaced by the GPU agents.
import type { Shape } from '../../layout.ts';
import type { Tensor } from '../../tensor.ts';
import { notOnDevice } from '../dispatch.ts';

/**
 * a [...batchA, m, k], b [...batchB, k, n] (any strides, batch dims broadcastable), out
 * [...batch, m, n] contiguous; checked by the dispatcher.
 */
export function matmul(a: Tensor, _b: Tensor, _outShape: Shape): Tensor { return notOnDevice('matmul', a); }
