// Attention's gradient in bf16 against the same gradient in f64, on inputs whose values share a
// large common part (all in [0, 1)): dP = dO Vᵀ is then mostly that part, which rounding in bf16
// would leave dS = P (dP - rowsum(P dP)) little of, so dQ must come from centred values.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { Tensor, tidy } from '../../src/index.ts';

test('scaledDotProductAttention gradient in bf16: dQ, dK, dV within bf16 rounding of f64 (causal, t 256)', () => {
  const [h, t, d] = [2, 256, 64];
  const base = [1, 2, 3, 4].map((seed) => Tensor.rand([1, h, t, d], { seed, dtype: 'f64' }));
  const grads = (dtype: 'f64' | 'bf16'): number[][] =>
    tidy(() => {
      const [q, k, v] = base.slice(0, 3).map((x) => {
        const y = x.toDtype(dtype);
        y.requiresGrad = true;
        return y;
      });
      Tensor.scaledDotProductAttention(q!, k!, v!, { causal: true }).backward(base[3]!.toDtype(dtype));
      const out = [q!, k!, v!].map((x) => Array.from(x.grad!.toDtype('f64').toArraySync() as Float64Array));
      for (const x of [q!, k!, v!]) {
        x.grad!.dispose();
        x.dispose();
      }
      return out;
    });
  const want = grads('f64'),
    got = grads('bf16');
  const names = ['dQ', 'dK', 'dV'];
  for (let i = 0; i < 3; i++) {
    let n = 0,
      m = 0;
    got[i]!.forEach((x, j) => {
      n += (x - want[i]![j]!) ** 2;
      m += want[i]![j]! ** 2;
    });
    const e = Math.sqrt(n / m);
    assert.ok(!Number.isNaN(e) && e < 3e-2, `${names[i]}: relative error by norm ${e.toExponential(2)}`);
  }
  for (const x of base) x.dispose();
});

test.run();
