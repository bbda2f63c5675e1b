// CPU reference of batch norm in training mode, in f64: batch statistics per channel over every
// dim but dim 1, and the input gradient from them.
import type { RawTensor } from '../../device/raw-tensor.ts';
import type { BatchNormGrads } from '../options.ts';
import { batchNormParamDType } from '../checks.ts';
import { copyInto } from './copy.ts';
import { fromNumbers, readNumbers } from './util.ts';

interface Stats {
  readonly c: number;
  readonly inner: number;
  /** elements per channel */
  readonly count: number;
  readonly mean: Float64Array;
  /** biased (divided by count), as the normalization uses it */
  readonly variance: Float64Array;
}

function stats(x: RawTensor, v: Float64Array): Stats {
  const shape = x.layout.shape;
  const c = shape[1]!;
  let inner = 1;
  for (let i = 2; i < shape.length; i++) inner *= shape[i]!;
  const count = v.length / c;
  const mean = new Float64Array(c),
    variance = new Float64Array(c);
  for (let p = 0; p < v.length; p++) mean[Math.floor(p / inner) % c]! += v[p]!;
  for (let ch = 0; ch < c; ch++) mean[ch]! /= count;
  for (let p = 0; p < v.length; p++) {
    const d = v[p]! - mean[Math.floor(p / inner) % c]!;
    variance[Math.floor(p / inner) % c]! += d * d;
  }
  for (let ch = 0; ch < c; ch++) variance[ch]! /= count;
  return { c, inner, count, mean, variance };
}

/** y from the batch statistics; the running statistics (if given) move towards them by momentum,
 *  the variance unbiased, as PyTorch does */
export function batchNormTrain(
  x: RawTensor,
  weight: RawTensor | null,
  bias: RawTensor | null,
  runningMean: RawTensor | null,
  runningVar: RawTensor | null,
  momentum: number,
  eps: number,
): RawTensor {
  const v = readNumbers(x);
  const s = stats(x, v);
  const wv = weight ? readNumbers(weight) : null,
    bv = bias ? readNumbers(bias) : null;
  const out = new Float64Array(v.length);
  for (let p = 0; p < v.length; p++) {
    const ch = Math.floor(p / s.inner) % s.c;
    out[p] = ((v[p]! - s.mean[ch]!) / Math.sqrt(s.variance[ch]! + eps)) * (wv ? wv[ch]! : 1) + (bv ? bv[ch]! : 0);
  }
  const update = (t: RawTensor | null, batch: (ch: number) => number): void => {
    if (!t) return;
    const old = readNumbers(t);
    const next = fromNumbers(
      old.map((r, ch) => (1 - momentum) * r + momentum * batch(ch)),
      t.layout.shape,
      t.dtype,
      t.device,
    );
    copyInto(t, next);
    next.dispose();
  };
  update(runningMean, (ch) => s.mean[ch]!);
  update(runningVar, (ch) => (s.variance[ch]! * s.count) / (s.count - 1));
  return fromNumbers(out, x.layout.shape, x.dtype, x.device);
}

/**
 * dx = w * invstd / N * (N dy - sum(dy) - xhat * sum(dy xhat)), per channel; with the scale's and
 * bias's gradients sum(dy xhat) and sum(dy) ([c], f32 for half x, else x's dtype)
 */
export function batchNormTrainBackward(
  x: RawTensor,
  dy: RawTensor,
  weight: RawTensor | null,
  eps: number,
): BatchNormGrads {
  const v = readNumbers(x),
    g = readNumbers(dy);
  const s = stats(x, v);
  const wv = weight ? readNumbers(weight) : null;
  const invstd = s.variance.map((vr) => 1 / Math.sqrt(vr + eps));
  const sumG = new Float64Array(s.c),
    sumGX = new Float64Array(s.c);
  for (let p = 0; p < v.length; p++) {
    const ch = Math.floor(p / s.inner) % s.c;
    sumG[ch]! += g[p]!;
    sumGX[ch]! += g[p]! * (v[p]! - s.mean[ch]!) * invstd[ch]!;
  }
  const out = new Float64Array(v.length);
  for (let p = 0; p < v.length; p++) {
    const ch = Math.floor(p / s.inner) % s.c;
    const xhat = (v[p]! - s.mean[ch]!) * invstd[ch]!;
    out[p] = (((wv ? wv[ch]! : 1) * invstd[ch]!) / s.count) * (s.count * g[p]! - sumG[ch]! - xhat * sumGX[ch]!);
  }
  const pd = batchNormParamDType(x);
  return {
    dx: fromNumbers(out, x.layout.shape, x.dtype, x.device),
    dScale: fromNumbers(sumGX, [s.c], pd, x.device),
    dBias: fromNumbers(sumG, [s.c], pd, x.device),
  };
}
