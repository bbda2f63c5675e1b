// GPU path of the sort family: not written yet. The dispatcher hands a normalized dim.
import type { Tensor } from '../../tensor.ts';
import { notOnDevice } from '../dispatch.ts';

export function argsort(x: Tensor, _dim: number, _descending: boolean): Tensor { return notOnDevice('argsort', x); }
export function sort(x: Tensor, _dim: number, _descending: boolean): { values: Tensor; indices: Tensor } { return notOnDevice('sort', x); }
