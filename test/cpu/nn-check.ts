// Helpers for the nn and optim tests: f64 leaves, values, and a gradient check against central
// finite differences in f64 that also checks nothing is left alive.
import * as assert from 'uvu/assert';
import { Tensor, liveTensors, noGrad, tidy } from '../../src/index.ts';

let seed = 9100;
export const nextSeed = (): number => seed++;

/** an f64 tensor uniform in [lo, hi) (a leaf that requires a gradient when grad) */
export function f64(shape: number[], lo = -1.5, hi = 1.5, grad = false): Tensor {
  const u = Tensor.rand(shape, { seed: seed++, dtype: 'f64' });
  const t = u.affine(hi - lo, lo);
  u.dispose();
  if (grad) t.requiresGrad = true;
  return t;
}

export const values = (t: Tensor): number[] => Array.from(t.toArraySync() as ArrayLike<number>, Number);

/** a and b elementwise within tol (relative above magnitude 1, absolute below); NaN never passes */
export function close(got: ArrayLike<number>, want: ArrayLike<number>, tol: number, what: string): void {
  assert.is(got.length, want.length, `${what}: lengths`);
  for (let i = 0; i < want.length; i++) {
    const g = got[i]!,
      w = want[i]!;
    const err = Math.abs(g - w) / Math.max(1, Math.abs(w));
    assert.ok(Number.isFinite(g) && Number.isFinite(w) && err <= tol, `${what}[${i}]: got ${g}, want ${w}`);
  }
}

/**
 * f's gradient with respect to each input against central differences of sum(f(x) r) for a
 * random r (the whole vector-Jacobian product), in f64. inputs: f64 tensors (made leaves here);
 * module: one whose parameters f uses (their gradients are cleared before the leak check).
 */
export function gradCheck(
  name: string,
  f: (xs: Tensor[]) => Tensor,
  inputs: Tensor[],
  opts: { tol?: number; module?: { zeroGrad(): void } } = {},
): void {
  const tol = opts.tol ?? 1e-6;
  const before = liveTensors().length;
  for (const x of inputs) x.requiresGrad = true;
  const y = tidy(() => f(inputs));
  const r = Tensor.rand(y.shape, { seed: seed++, dtype: 'f64' });
  const loss = tidy(() => y.mul(r).sum());
  loss.backward();
  const h = 1e-6;
  const lossAt = (xs: Tensor[]): number => noGrad(() => tidy(() => f(xs).mul(r).sum().itemSync()));
  inputs.forEach((x, i) => {
    assert.ok(x.grad !== null, `${name}: input ${i} got no gradient`);
    const base = values(x),
      got = values(x.grad!);
    for (let j = 0; j < base.length; j++) {
      const shifted = (d: number): Tensor[] =>
        inputs.map((o, k) => {
          if (k !== i) return o.detach();
          const v = base.slice();
          v[j]! += d;
          return Tensor.from(new Float64Array(v), { shape: x.shape });
        });
      const plus = shifted(h),
        minus = shifted(-h);
      const want = (lossAt(plus) - lossAt(minus)) / (2 * h);
      for (const t of [...plus, ...minus]) t.dispose();
      const err = Math.abs(got[j]! - want) / Math.max(1, Math.abs(want));
      assert.ok(
        Number.isFinite(got[j]!) && err <= tol,
        `${name}: input ${i}[${j}]: autograd ${got[j]}, differences ${want}`,
      );
    }
  });
  for (const t of [y, r, loss, ...inputs.map((x) => x.grad!)]) t.dispose();
  for (const x of inputs) {
    x.grad = null;
    x.requiresGrad = false;
  }
  // a module's parameters took gradients too: theirs to free
  opts.module?.zeroGrad();
  assert.is(liveTensors().length, before, `${name}: tensors left alive`);
}
