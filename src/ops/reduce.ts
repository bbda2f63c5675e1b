// placeholder signatures: replaced by the family's real dispatcher
import type { Tensor } from '../tensor.ts';
import type { ReduceOp } from './types.ts';
export function reduce(_op: ReduceOp, _x: Tensor, _dims: number | readonly number[] | undefined, _keepdim: boolean): Tensor { throw new Error('not written yet'); }
