// Helpers for the nn and optim tests: f64 leaves, values, and a gradient check against central
// finite differences in f64 that also checks nothing is left alive.
import * as assert from 'uvu/assert';
import { Tensor } from '../../src/index.ts';

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

/** f's gradient at the given f64 inputs against central differences (test/grad-check.ts) */
export { gradCheckAt as gradCheck } from '../grad-check.ts';
