// CPU reference pooling in f64, one rounding to the dtype on store.
import { type Shape, numel } from '../../core/layout.ts';
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

/** the window of every output cell of every plane: its real cells [y0, y1) x [x0, x1), and its
 *  size in padded coordinates (the divisor that counts padding) */
function eachWindow(
  x: RawTensor,
  p: Pool2dParams,
  outShape: Shape,
  fn: (base: number, o: number, y0: number, y1: number, x0: number, x1: number, window: number) => void,
): void {
  const [n, c, h, w] = x.layout.shape as [number, number, number, number];
  const [, , oh, ow] = outShape as [number, number, number, number];
  const [kh, kw] = p.kernel,
    [sh, sw] = p.stride,
    [ph, pw] = p.padding;
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
        fn(base, (plane * oh + y) * ow + xo, y0, y1, x0, x1, (wy1 - wy0) * (wx1 - wx0));
      }
    }
  }
}

function pool2d(x: RawTensor, p: Pool2dParams, outShape: Shape, reduce: Reducer): RawTensor {
  const w = x.layout.shape[3]!;
  const xv = readNumbers(x);
  const out = new Float64Array(numel(outShape));
  eachWindow(x, p, outShape, (base, o, y0, y1, x0, x1, window) => {
    out[o] = reduce(xv, base, w, y0, y1, x0, x1, window);
  });
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

/**
 * dx of a pooling: each output cell's gradient goes back to its window, split evenly (avg, by
 * the forward's divisor) or all to the window's first maximum (max; a NaN window to its first
 * NaN), as PyTorch's CPU kernels do
 */
export function pool2dBackward(
  mode: 'max' | 'avg',
  x: RawTensor,
  _y: RawTensor,
  dy: RawTensor,
  p: Pool2dParams,
): RawTensor {
  const w = x.layout.shape[3]!;
  const xv = mode === 'max' ? readNumbers(x) : null;
  const gv = readNumbers(dy);
  const out = new Float64Array(x.numel);
  eachWindow(x, p, dy.layout.shape, (base, o, y0, y1, x0, x1, window) => {
    const g = gv[o]!;
    if (xv === null) {
      const share = g / (p.countIncludePad ? window : (y1 - y0) * (x1 - x0));
      for (let yy = y0; yy < y1; yy++) for (let xx = x0; xx < x1; xx++) out[base + yy * w + xx]! += share;
      return;
    }
    let at = -1,
      m = -Infinity;
    scan: for (let yy = y0; yy < y1; yy++) {
      for (let xx = x0; xx < x1; xx++) {
        const e = xv[base + yy * w + xx]!;
        if (Number.isNaN(e)) {
          at = base + yy * w + xx;
          break scan;
        }
        if (e > m || at < 0) {
          m = e;
          at = base + yy * w + xx;
        }
      }
    }
    if (at >= 0) out[at]! += g;
  });
  return fromNumbers(out, x.layout.shape, x.dtype, x.device);
}
