// CPU reference of local response normalization across channels, in f64 (PyTorch's window:
// channels c - floor(size / 2) .. c + floor((size - 1) / 2), zero outside), and its input gradient.
import type { LrnSettings } from '../lrn-options.ts';
import type { RawTensor } from '../../device/raw-tensor.ts';
import { fromNumbers, readNumbers } from './util.ts';

/** [outer, c, inner] of x ([n, c, ...]) */
function dims(x: RawTensor): [number, number, number] {
  const s = x.layout.shape;
  let inner = 1;
  for (let i = 2; i < s.length; i++) inner *= s[i]!;
  return [s[0]!, s[1]!, inner];
}

/** the denominators' bases k + alpha / size * (sum of squares in the window), per element */
function bases(v: Float64Array, x: RawTensor, p: LrnSettings): Float64Array {
  const [outer, c, inner] = dims(x);
  const lo = Math.floor(p.size / 2),
    hi = Math.floor((p.size - 1) / 2);
  const d = new Float64Array(v.length);
  const scale = p.alpha / p.size;
  for (let b = 0; b < outer; b++)
    for (let i = 0; i < inner; i++) {
      const base = b * c * inner + i;
      for (let ch = 0; ch < c; ch++) {
        let s = 0;
        for (let j = Math.max(0, ch - lo); j <= Math.min(c - 1, ch + hi); j++) {
          const a = v[base + j * inner]!;
          s += a * a;
        }
        d[base + ch * inner] = p.k + scale * s;
      }
    }
  return d;
}

export function localResponseNorm(x: RawTensor, p: LrnSettings): RawTensor {
  const v = readNumbers(x);
  const d = bases(v, x, p);
  const out = new Float64Array(v.length);
  for (let i = 0; i < v.length; i++) out[i] = v[i]! * d[i]! ** -p.beta;
  return fromNumbers(out, x.layout.shape, x.dtype, x.device);
}

/**
 * dx from x and dy (the forward's y is not needed here: the bases are recomputed in f64):
 * dx_j = dy_j d_j^-beta - 2 alpha beta / size * x_j * sum over the channels c whose window holds j
 * of dy_c x_c d_c^(-beta - 1).
 */
export function localResponseNormBackward(x: RawTensor, _y: RawTensor, dy: RawTensor, p: LrnSettings): RawTensor {
  const v = readNumbers(x),
    g = readNumbers(dy);
  const d = bases(v, x, p);
  const [outer, c, inner] = dims(x);
  const lo = Math.floor(p.size / 2),
    hi = Math.floor((p.size - 1) / 2);
  const t = new Float64Array(v.length);
  for (let i = 0; i < v.length; i++) t[i] = g[i]! * v[i]! * d[i]! ** (-p.beta - 1);
  const coef = (2 * p.alpha * p.beta) / p.size;
  const out = new Float64Array(v.length);
  for (let b = 0; b < outer; b++)
    for (let i = 0; i < inner; i++) {
      const base = b * c * inner + i;
      for (let j = 0; j < c; j++) {
        // channel ch's window [ch - lo, ch + hi] holds j when ch is in [j - hi, j + lo]
        let s = 0;
        for (let ch = Math.max(0, j - hi); ch <= Math.min(c - 1, j + lo); ch++) s += t[base + ch * inner]!;
        const at = base + j * inner;
        out[at] = g[at]! * d[at]! ** -p.beta - coef * v[at]! * s;
      }
    }
  return fromNumbers(out, x.layout.shape, x.dtype, x.device);
}
