import { Tensor, tidy } from '../src/index.ts';
const t = Number(process.argv[2] ?? 512), d = 64, h = 2;
const mk = (seed: number) => Tensor.rand([1, h, t, d], { seed, dtype: 'f64' });
const q64 = mk(1), k64 = mk(2), v64 = mk(3), g64 = mk(4);
function grads(dtype: 'f64' | 'bf16' | 'f32') {
  const [q, k, v] = [q64, k64, v64].map((x) => { const y = x.toDtype(dtype); y.requiresGrad = true; return y; });
  const o = Tensor.scaledDotProductAttention(q!, k!, v!, { causal: true });
  o.backward(g64.toDtype(dtype));
  return [q!, k!, v!].map((x) => x.grad!.toDtype('f64'));
}
const ref = grads('f64');
for (const dt of ['f32', 'bf16'] as const) {
  const got = grads(dt);
  const errs = got.map((gt, i) => {
    const a = gt.toArraySync() as Float64Array, b = ref[i]!.toArraySync() as Float64Array;
    let n = 0, dd = 0; for (let j = 0; j < a.length; j++) { n += (a[j]! - b[j]!) ** 2; dd += b[j]! ** 2; }
    return Math.sqrt(n / dd).toExponential(2);
  });
  console.log(`t ${t} ${dt}: dQ dK dV relative error by norm vs f64:`, errs.join(' '));
}
