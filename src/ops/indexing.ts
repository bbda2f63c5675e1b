// placeholder signatures: replaced by the family's real dispatcher
import type { Tensor } from '../tensor.ts';

export function indexSelect(_x: Tensor, _i: Tensor, _d: number): Tensor { throw new Error('not written yet'); }
export function gather(_x: Tensor, _i: Tensor, _d: number): Tensor { throw new Error('not written yet'); }
export function scatter(_x: Tensor, _i: Tensor, _s: Tensor, _d: number, _add: boolean): Tensor { throw new Error('not written yet'); }
export function indexAdd(_x: Tensor, _i: Tensor, _s: Tensor, _d: number): Tensor { throw new Error('not written yet'); }
export function embedding(_i: Tensor, _t: Tensor): Tensor { throw new Error('not written yet'); }
