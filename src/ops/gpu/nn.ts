// GPU path of the nn family: not written yet. The dispatcher hands these fully validated
// parameters (normalized dim, eps, scale, output shape).
import type { Shape } from '../../layout.ts';
import type { Tensor } from '../../tensor.ts';
import { notOnDevice } from '../dispatch.ts';
import type { RopeLayout } from '../cpu/nn.ts';

export function softmax(x: Tensor, _dim: number, log: boolean): Tensor { return notOnDevice(log ? 'logSoftmax' : 'softmax', x); }
export function layerNorm(x: Tensor, _w: Tensor, _b: Tensor | null, _eps: number): Tensor { return notOnDevice('layerNorm', x); }
export function rmsNorm(x: Tensor, _w: Tensor, _eps: number): Tensor { return notOnDevice('rmsNorm', x); }
export function rope(x: Tensor, _cos: Tensor, _sin: Tensor, _layout: RopeLayout): Tensor { return notOnDevice('rope', x); }
export function batchNorm(x: Tensor, _mean: Tensor, _variance: Tensor, _weight: Tensor | null, _bias: Tensor | null, _eps: number): Tensor {
  return notOnDevice('batchNorm', x);
}
export function attention(q: Tensor, _k: Tensor, _v: Tensor, _causal: boolean, _scale: number, _outShape: Shape): Tensor {
  return notOnDevice('scaledDotProductAttention', q);
}
