// placeholder signatures: replaced by the family's real dispatcher
import type { Tensor } from '../tensor.ts';

export function upsampleNearest1d(_x: Tensor, _n: number): Tensor { throw new Error('not written yet'); }
export function upsampleNearest2d(_x: Tensor, _h: number, _w: number): Tensor { throw new Error('not written yet'); }
export function upsampleBilinear2d(_x: Tensor, _h: number, _w: number, _a: boolean): Tensor { throw new Error('not written yet'); }
