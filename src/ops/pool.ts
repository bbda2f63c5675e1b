// placeholder signatures: replaced by the family's real dispatcher
import type { Tensor } from '../tensor.ts';
import type { PoolOptions } from './options.ts';
export function avgPool2d(_x: Tensor, _o: PoolOptions): Tensor { throw new Error('not written yet'); }
export function maxPool2d(_x: Tensor, _o: PoolOptions): Tensor { throw new Error('not written yet'); }
