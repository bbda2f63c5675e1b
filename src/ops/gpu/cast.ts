// GPU path for dtype casts: not written yet (the GPU agents replace these bodies).
import type { DType } from '../../dtype.ts';
import type { Tensor } from '../../tensor.ts';
import { notOnDevice } from '../dispatch.ts';

/** x -> dtype as a new contiguous tensor; dtype !== x.dtype */
export function cast(x: Tensor, _dtype: DType): Tensor { return notOnDevice('toDtype', x); }
