// CPU reference pooling in f64, one rounding to the dtype on store.
import type { Shape } from '../../core/layout.ts';
import type { RawTensor } from '../../device/raw-tensor.ts';
import type { Pool2dParams } from '../../core/op-types.ts';
import { fromNumbers, readNumbers } from './util.ts';

type Reducer = (
  v: Float64Array,
  base: number,
  w: number,
  y0: number,
  y1: number,
  x0: number,
  x1: number,
  window: number,
) => number;

function pool2d(x: RawTensor, p: Pool2dParams, outShape: Shape, reduce: Reducer): RawTensor {
  const [n, c, h, w] = x.layout.shape as [number, number, number, number];
  const [, , oh, ow] = outShape as [number, number, number, number];
  const [kh, kw] = p.kernel,
    [sh, sw] = p.stride,
    [ph, pw] = p.padding;
  const xv = readNumbers(x);
  const out = new Float64Array(n * c * oh * ow);
  for (let plane = 0; plane < n * c; plane++) {
    const base = plane * h * w;
    for (let y = 0; y < oh; y++) {
      // the window in padded coordinates, then clipped to the real cells
      const wy0 = y * sh - ph,
        wy1 = Math.min(wy0 + kh, h + ph);
      const y0 = Math.max(wy0, 0),
        y1 = Math.min(wy1, h);
      for (let xo = 0; xo < ow; xo++) {
        const wx0 = xo * sw - pw,
          wx1 = Math.min(wx0 + kw, w + pw);
        const x0 = Math.max(wx0, 0),
          x1 = Math.min(wx1, w);
        out[(plane * oh + y) * ow + xo] = reduce(xv, base, w, y0, y1, x0, x1, (wy1 - wy0) * (wx1 - wx0));
      }
    }
  }
  return fromNumbers(out, outShape, x.dtype, x.device);
}

export function avgPool2d(x: RawTensor, p: Pool2dParams, outShape: Shape): RawTensor {
  return pool2d(x, p, outShape, (v, base, w, y0, y1, x0, x1, window) => {
    let s = 0;
    for (let y = y0; y < y1; y++) for (let xi = x0; xi < x1; xi++) s += v[base + y * w + xi]!;
    return s / (p.countIncludePad ? window : (y1 - y0) * (x1 - x0));
  });
}

export function maxPool2d(x: RawTensor, p: Pool2dParams, outShape: Shape): RawTensor {
  return pool2d(x, p, outShape, (v, base, w, y0, y1, x0, x1) => {
    let m = -Infinity;
    for (let y = y0; y < y1; y++) {
      for (let xi = x0; xi < x1; xi++) {
        const e = v[base + y * w + xi]!;
        if (e > m || Number.isNaN(e)) {
          m = e;
          if (Number.isNaN(e)) return NaN;
        }
      }
    }
    return m;
  });
}
