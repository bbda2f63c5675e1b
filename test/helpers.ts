// Shared test helpers: random data, layout variants with the same logical values, and
// comparisons with per-dtype tolerances (NaN never passes unless both sides agree on NaN
// and the caller asked for it).
import * as assert from 'uvu/assert';
import { Tensor, tidy, type DType } from '../src/index.ts';
import type { Device } from '../src/device/device.ts';

let seed = 1234;
/** fresh random data each call: uniform in [lo, hi) */
export function randT(shape: number[], dtype: DType = 'f32', lo = -2, hi = 2, device?: Device): Tensor {
  const u = Tensor.rand(shape, { seed: seed++, dtype: 'f64' });
  const v = u.affine(hi - lo, lo);
  const out = v.toDtype(dtype);
  u.dispose();
  v.dispose();
  return device ? moveTo(out, device) : out;
}
/** random integers in [0, n) */
export function randInts(shape: number[], n: number, dtype: DType = 'u32', device?: Device): Tensor {
  const u = Tensor.rand(shape, { seed: seed++, dtype: 'f64' }).affine(n, 0).floor();
  const out = u.toDtype(dtype);
  return device ? moveTo(out, device) : out;
}
/** fresh data of any dtype: floats in [-3, 3), integers over a wide range (adds wrap alike) */
export function randData(shape: number[], dtype: DType): Tensor {
  switch (dtype) {
    case 'u8':
      return randInts(shape, 256, 'u8');
    case 'u32':
      return randInts(shape, 4e9, 'u32');
    case 'i64':
      return randInts(shape, 2 ** 40, 'i64');
    default:
      return randT(shape, dtype, -3, 3);
  }
}

/**
 * Values with ties, for sorting and selection: floats in steps of 4 / spread over [-2, 2) (exact
 * in f32 and f64; f16 and bf16 round them, which only makes more ties), integers from `spread`
 * values (negative ones too for i64); a large `spread` makes few ties.
 */
export function tiedValues(shape: number[], dtype: DType, spread: number): Tensor {
  if (dtype === 'u8') return randInts(shape, Math.min(spread, 256), 'u8');
  if (dtype === 'u32') return randInts(shape, spread, 'u32');
  const h = randInts(shape, spread, 'f64');
  const shifted = dtype === 'i64' ? h.affine(1, -Math.floor(spread / 2)) : h.affine(4 / spread, -2);
  const out = shifted.toDtype(dtype);
  h.dispose();
  shifted.dispose();
  return out;
}
function moveTo(t: Tensor, d: Device): Tensor {
  const m = t.to(d);
  if (m !== t) t.dispose();
  return m;
}

export type LayoutKind = 'contiguous' | 'transposed' | 'narrowed' | 'offset' | 'broadcast';
export const LAYOUTS: readonly LayoutKind[] = ['contiguous', 'transposed', 'narrowed', 'offset', 'broadcast'];

/**
 * A tensor with the same logical values as `t` (rank >= 2 for transposed) but the given memory
 * layout: transposed (stored as the transpose), narrowed (a window of a wider tensor), offset
 * (starting inside a bigger storage), broadcast (stride 0 on the first dim; the values of
 * t's first row repeated, so compare against `ref` instead of t).
 */
export function withLayout(t: Tensor, kind: LayoutKind): { x: Tensor; ref: Tensor } {
  const shape = t.shape;
  switch (kind) {
    case 'contiguous':
      return { x: t, ref: t };
    case 'transposed': {
      if (t.rank < 2) return { x: t, ref: t };
      const x = t.transpose(-2, -1).contiguous().transpose(-2, -1);
      return { x, ref: t };
    }
    case 'narrowed': {
      const d = t.rank - 1;
      const wide = Tensor.cat([t, t.narrow(d, 0, Math.min(1, shape[d]!)), t], d);
      return { x: wide.narrow(d, shape[d]! + Math.min(1, shape[d]!), shape[d]!), ref: t };
    }
    case 'offset': {
      const flat = t.flatten();
      const pad = Tensor.zeros([3], { dtype: t.dtype, device: t.device });
      const big = Tensor.cat([pad, flat], 0);
      return { x: big.narrow(0, 3, flat.numel).reshape(shape), ref: t };
    }
    case 'broadcast': {
      if (t.rank < 1 || shape[0]! < 1) return { x: t, ref: t };
      const row = t.narrow(0, 0, 1);
      const x = row.broadcastAs(shape);
      return { x, ref: x.contiguous() };
    }
  }
}

/** relative error by norm, the GPU suite's measure: |a - b|_2 / max(|b|_2, tiny) */
export function relErr(a: ArrayLike<number>, b: ArrayLike<number>): number {
  let num = 0,
    den = 0;
  for (let i = 0; i < b.length; i++) {
    const x = Number(a[i]),
      y = Number(b[i]);
    if (Number.isNaN(x) !== Number.isNaN(y)) return Infinity;
    if (Number.isNaN(x)) continue;
    if (!Number.isFinite(x) || !Number.isFinite(y)) {
      if (x !== y) return Infinity;
      continue;
    }
    num += (x - y) ** 2;
    den += y * y;
  }
  return Math.sqrt(num) / Math.max(Math.sqrt(den), 1e-30);
}

export const TOL: Record<DType, number> = { f64: 1e-12, f32: 1e-5, f16: 2e-3, bf16: 1.6e-2, u8: 0, u32: 0, i64: 0 };

/** element-wise closeness: |a-b| <= atol + rtol*|b|; NaN fails unless `nanOk` and both NaN */
export function assertClose(
  actual: ArrayLike<number>,
  expected: ArrayLike<number>,
  rtol = 1e-5,
  atol = 1e-6,
  what = '',
  nanOk = false,
): void {
  assert.is(actual.length, expected.length, `${what}: length`);
  for (let i = 0; i < expected.length; i++) {
    const a = Number(actual[i]),
      e = Number(expected[i]);
    if (Number.isNaN(a) || Number.isNaN(e)) {
      if (nanOk && Number.isNaN(a) && Number.isNaN(e)) continue;
      assert.unreachable(`${what}: element ${i}: got ${a}, expected ${e}`);
    }
    if (a === e) continue;
    if (!(Math.abs(a - e) <= atol + rtol * Math.abs(e)))
      assert.unreachable(`${what}: element ${i}: got ${a}, expected ${e}`);
  }
}

export function nums(t: Tensor): number[] {
  return Array.from(t.toArraySync(), Number);
}

/** fn throws an instance of cls whose message contains every part (string or pattern) */
export function throwsWith(fn: () => unknown, cls: new (...a: never[]) => Error, ...parts: (string | RegExp)[]): void {
  try {
    fn();
  } catch (e) {
    assert.ok(e instanceof cls, `expected ${cls.name}, got ${String(e)}`);
    const m = (e as Error).message;
    for (const p of parts)
      assert.ok(typeof p === 'string' ? m.includes(p) : p.test(m), `message '${m}' lacks ${String(p)}`);
    return;
  }
  assert.unreachable(`expected ${cls.name}`);
}
/** throwsWith with the message parts as one array */
export function throwsLike(fn: () => unknown, cls: new (...a: never[]) => Error, parts: (string | RegExp)[]): void {
  throwsWith(fn, cls, ...parts);
}

/** the loss `f` makes, after its backward (the step's other tensors freed by tidy) */
export function backwardOf(f: () => Tensor): Tensor {
  return tidy(() => {
    const l = f();
    l.backward();
    return l;
  });
}
