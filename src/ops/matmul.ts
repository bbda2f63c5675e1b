// placeholder signatures: replaced by the family's real dispatcher
import type { Tensor } from '../tensor.ts';

export function matmul(_a: Tensor, _b: Tensor): Tensor { throw new Error('not written yet'); }
