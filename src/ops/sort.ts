// placeholder signatures: replaced by the family's real dispatcher
import type { Tensor } from '../tensor.ts';

export function argsort(_x: Tensor, _d: number, _desc: boolean): Tensor { throw new Error('not written yet'); }
export function sort(_x: Tensor, _d: number, _desc: boolean): { values: Tensor; indices: Tensor } { throw new Error('not written yet'); }
