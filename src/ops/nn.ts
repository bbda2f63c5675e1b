// placeholder signatures: replaced by the family's real dispatcher
import type { Tensor } from '../tensor.ts';
import type { AttentionOptions } from './types.ts'; import type { BatchNormOptions } from './options.ts';
export function softmax(_x: Tensor, _d: number, _log: boolean): Tensor { throw new Error('not written yet'); }
export function layerNorm(_x: Tensor, _w: Tensor, _b: Tensor | null, _eps: number): Tensor { throw new Error('not written yet'); }
export function rmsNorm(_x: Tensor, _w: Tensor, _eps: number): Tensor { throw new Error('not written yet'); }
export function rope(_x: Tensor, _c: Tensor, _s: Tensor, _layout: 'halves' | 'interleaved' | 'thd'): Tensor { throw new Error('not written yet'); }
export function batchNorm(_x: Tensor, _o: BatchNormOptions): Tensor { throw new Error('not written yet'); }
export function attention(_q: Tensor, _k: Tensor, _v: Tensor, _o: AttentionOptions): Tensor { throw new Error('not written yet'); }
