// CPU reference of SwiGLU over the last dim ([gate; up] halves) and of its backward, in f64 with
// one rounding to the dtype on store.
import type { RawTensor } from '../../device/raw-tensor.ts';
import { fromNumbers, readNumbers } from './util.ts';
import { UNARY } from './elementwise.ts';

/** y = silu(a) b for x = [a, b] along the last dim */
export function swiglu(x: RawTensor): RawTensor {
  const shape = x.layout.shape;
  const n = shape[shape.length - 1]! / 2;
  const xs = readNumbers(x);
  const rows = n === 0 ? 0 : xs.length / (2 * n);
  const y = new Float64Array(rows * n);
  for (let r = 0; r < rows; r++) {
    for (let c = 0; c < n; c++) {
      const a = xs[r * 2 * n + c]!,
        b = xs[r * 2 * n + n + c]!;
      y[r * n + c] = UNARY.silu(a) * b;
    }
  }
  return fromNumbers(y, [...shape.slice(0, -1), n], x.dtype, x.device);
}

/** dx = [g b s (1 + a (1 - s)), g a s] with s = sigmoid(a), for x = [a, b] */
export function swigluBackward(g: RawTensor, x: RawTensor): RawTensor {
  const shape = x.layout.shape;
  const n = shape[shape.length - 1]! / 2;
  const xs = readNumbers(x),
    gs = readNumbers(g);
  const rows = n === 0 ? 0 : xs.length / (2 * n);
  const dx = new Float64Array(xs.length);
  for (let r = 0; r < rows; r++) {
    for (let c = 0; c < n; c++) {
      const a = xs[r * 2 * n + c]!,
        b = xs[r * 2 * n + n + c]!,
        gv = gs[r * n + c]!;
      const s = UNARY.sigmoid(a);
      dx[r * 2 * n + c] = gv * b * s * (1 + a * (1 - s));
      dx[r * 2 * n + n + c] = gv * a * s;
    }
  }
  return fromNumbers(dx, shape, x.dtype, x.device);
}
