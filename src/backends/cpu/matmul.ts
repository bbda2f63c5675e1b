// CPU reference matmul: f64 accumulation, one rounding to the dtype on store.
import { numel, type Shape } from '../../core/layout.ts';
import type { RawTensor } from '../../device/raw-tensor.ts';
import { fromNumbers, readNumbers } from './util.ts';

/** t's values broadcast to `shape` (row-major) */
export function readBroadcast(t: RawTensor, shape: Shape): Float64Array {
  const v = t.view(t.layout.broadcastAs(shape));
  try {
    return readNumbers(v);
  } finally {
    v.dispose();
  }
}

/** a [...batchA, m, k], b [...batchB, k, n] -> [...batch, m, n] = outShape */
export function matmul(a: RawTensor, b: RawTensor, outShape: Shape): RawTensor {
  const r = outShape.length;
  const m = outShape[r - 2]!,
    n = outShape[r - 1]!,
    k = a.layout.shape[a.rank - 1]!;
  const batch = outShape.slice(0, -2);
  const av = readBroadcast(a, [...batch, m, k]);
  const bv = readBroadcast(b, [...batch, k, n]);
  const nb = numel(batch);
  const out = new Float64Array(nb * m * n);
  for (let p = 0; p < nb; p++) {
    const ao = p * m * k,
      bo = p * k * n,
      oo = p * m * n;
    for (let i = 0; i < m; i++) {
      for (let j = 0; j < n; j++) {
        let s = 0;
        for (let q = 0; q < k; q++) s += av[ao + i * k + q]! * bv[bo + q * n + j]!;
        out[oo + i * n + j] = s;
      }
    }
  }
  return fromNumbers(out, outShape, a.dtype, a.device);
}
