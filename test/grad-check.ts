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
 * f's gradient at the given f64 inputs (made leaves here) against central differences of
 * sum(f(x) * r) for a random r, element by element (relative tolerance tol): the whole
 * vector-Jacobian product. Frees everything it made; the inputs stay the caller's (their
 * gradients cleared). module: one whose parameters f uses (their gradients are cleared too).
 */
export function gradCheckAt(
  name: string,
  f: (xs: Tensor[]) => Tensor,
  xs: Tensor[],
  opts: { tol?: number; module?: { zeroGrad(): void } } = {},
): void {
  const before = liveTensors().length;
  for (const x of xs) x.requiresGrad = true;
  // tidy frees what f makes on the way; the graph's saved tensors are autograd's, not tidy's
  const y = tidy(() => f(xs));
  const r = Tensor.rand(y.shape, { seed: seed++, dtype: 'f64' });
  const loss = tidy(() => y.mul(r).sum());
  loss.backward();
  const h = 1e-6,
    tol = opts.tol ?? 1e-6;
  const lossAt = (vals: Tensor[]): number => noGrad(() => tidy(() => f(vals).mul(r).sum().itemSync()));
  xs.forEach((x, i) => {
    assert.ok(x.grad !== null, `${name}: input ${i} got no gradient`);
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
  for (const t of [y, r, loss, ...xs.map((x) => x.grad!)]) t.dispose();
  for (const x of xs) {
    x.grad = null;
    x.requiresGrad = false;
  }
  opts.module?.zeroGrad();
  assert.is(liveTensors().length, before, `${name}: tensors left alive`);
}

/** gradCheckAt on fresh f64 inputs of the given shapes, uniform in [lo, hi) */
export function gradCheck(
  name: string,
  f: (xs: Tensor[]) => Tensor,
  shapes: number[][],
  opts: { lo?: number; hi?: number; tol?: number } = {},
): void {
  const xs = shapes.map((s) => leaf(s, opts.lo, opts.hi));
  try {
    gradCheckAt(name, f, xs, opts);
  } finally {
    for (const x of xs) x.dispose();
  }
}
