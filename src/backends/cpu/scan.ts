// CPU reference of cumsum: running sums in f64, each output rounded once to the dtype.
import type { RawTensor } from '../../device/raw-tensor.ts';
import { fromNumbers, readNumbers } from './util.ts';

export function cumsum(x: RawTensor, dim: number): RawTensor {
  const shape = x.layout.shape;
  const n = shape[dim]!;
  let inner = 1;
  for (let i = dim + 1; i < shape.length; i++) inner *= shape[i]!;
  const v = readNumbers(x);
  const out = new Float64Array(v.length);
  const outer = n === 0 ? 0 : v.length / (n * inner);
  for (let o = 0; o < outer; o++) {
    for (let i = 0; i < inner; i++) {
      let s = 0;
      for (let j = 0; j < n; j++) {
        const at = (o * n + j) * inner + i;
        s += v[at]!;
        out[at] = s;
      }
    }
  }
  return fromNumbers(out, shape, x.dtype, x.device);
}
