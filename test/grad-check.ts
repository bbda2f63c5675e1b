// Gradient checks against central finite differences in f64, shared by the autograd tests.
import * as assert from 'uvu/assert';
import { Tensor, noGrad, liveTensors, tidy } from '../src/index.ts';

let seed = 77;
/** the next seed of this process's sequence (fresh random data for each check) */
export const nextSeed = (): number => seed++;

/** an f64 leaf, uniform in [lo, hi) */
export function leaf(shape: number[], lo = -1.5, hi = 1.5): Tensor {
  const u = Tensor.rand(shape, { seed: seed++, dtype: 'f64' });
  const t = u.affine(hi - lo, lo);
  u.dispose();
  t.requiresGrad = true;
  return t;
}

export const values = (t: Tensor): number[] => Array.from(t.toArraySync() as Float64Array);

/**
 * f's gradient at the given leaves against central differences of sum(f(x) * r) for a random r,
 * element by element (relative tolerance tol); every tensor made on the way is disposed.
 */
export function gradCheck(
  name: string,
  f: (xs: Tensor[]) => Tensor,
  shapes: number[][],
  opts: { lo?: number; hi?: number; tol?: number } = {},
): void {
  const before = liveTensors().length;
  const xs = shapes.map((s) => leaf(s, opts.lo, opts.hi));
  // tidy frees what f makes on the way; the graph's saved tensors are autograd's, not tidy's
  const y = tidy(() => f(xs));
  const r = Tensor.rand(y.shape, { seed: seed++, dtype: 'f64' });
  const loss = tidy(() => y.mul(r).sum());
  loss.backward();
  const h = 1e-6,
    tol = opts.tol ?? 1e-6;
  const lossAt = (vals: Tensor[]): number => noGrad(() => tidy(() => f(vals).mul(r).sum().itemSync()));
  xs.forEach((x, i) => {
    const base = values(x);
    const got = values(x.grad!);
    for (let j = 0; j < base.length; j++) {
      const shifted = (d: number): Tensor[] =>
        xs.map((o, k) => {
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
        `${name}: input ${i} element ${j}: autograd ${got[j]} finite differences ${want}`,
      );
    }
  });
  for (const t of [y, r, loss, ...xs.map((x) => x.grad!), ...xs]) t.dispose();
  assert.is(liveTensors().length, before, `${name}: tensors left alive`);
}
