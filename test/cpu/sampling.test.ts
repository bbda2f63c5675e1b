// Device-side sampling on the CPU backend: greedy is argmax; draws follow softmax(logits / T)
// (chi-square over many rows drawn at once), top-k and top-p keep exactly the expected tokens;
// seeds repeat; bad options are refused.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { Tensor } from '../../src/index.ts';
import { Sampler } from '../../src/models/sampling.ts';
import { TensorError } from '../../src/core/errors.ts';
import { throwsWith } from '../helpers.ts';

const LOGITS = [1.0, 2.5, -1.0, 0.3, 2.0, -3.0, 0.0, 1.7];
const rows = (n: number, dtype: 'f32' | 'bf16' = 'f32') =>
  Tensor.from(Array.from({ length: n }, () => LOGITS).flat(), { shape: [n, LOGITS.length], dtype });
const counts = (ids: Tensor) => {
  const c = new Array<number>(LOGITS.length).fill(0);
  for (const x of ids.toArraySync()) c[Number(x)]!++;
  return c;
};
function softmax(xs: number[], t: number): number[] {
  const m = Math.max(...xs);
  const e = xs.map((x) => Math.exp((x - m) / t));
  const z = e.reduce((a, b) => a + b, 0);
  return e.map((x) => x / z);
}

/** chi-square of counts against probabilities over the tokens with p > 0; df <= 7 here */
function chi2(c: number[], p: number[]): number {
  const n = c.reduce((a, b) => a + b, 0);
  return p.reduce((s, pi, i) => (pi > 0 ? s + (c[i]! - n * pi) ** 2 / (n * pi) : s), 0);
}
// 99.9th percentile of chi-square with 7 degrees of freedom is 24.3: a correct sampler fails 1 run in 1000 per check
const CHI2_LIMIT = 24.3;

test('sampling: greedy is argmax per row (also in bf16)', () => {
  const x = Tensor.from(
    [
      [0, 3, 1],
      [5, -1, 2],
    ],
    { dtype: 'bf16' },
  );
  assert.equal(Array.from(new Sampler({ temperature: 0 }).sample(x).toArraySync(), Number), [1, 0]);
  assert.equal(Array.from(new Sampler({ temperature: 2, topK: 1, seed: 3 }).sample(x).toArraySync(), Number), [1, 0]);
});

test('sampling: frequencies follow softmax(logits / T)', () => {
  for (const t of [1, 0.7]) {
    const c = counts(new Sampler({ temperature: t, seed: 11 }).sample(rows(20000)));
    const x2 = chi2(c, softmax(LOGITS, t));
    assert.ok(x2 < CHI2_LIMIT, `T ${t}: chi-square ${x2.toFixed(1)} for counts ${c}`);
  }
});

test('sampling: top-k keeps the k most likely, renormalized', () => {
  const c = counts(new Sampler({ temperature: 1, topK: 3, seed: 5 }).sample(rows(20000)));
  const keep = [1, 4, 7];
  assert.ok(
    c.every((n, i) => keep.includes(i) || n === 0),
    `only tokens ${keep}: ${c}`,
  );
  const p = softmax(
    keep.map((i) => LOGITS[i]!),
    1,
  );
  const full = new Array<number>(LOGITS.length).fill(0);
  keep.forEach((i, j) => (full[i] = p[j]!));
  assert.ok(chi2(c, full) < CHI2_LIMIT, `chi-square ${chi2(c, full)} for ${c}`);
});

test('sampling: top-p keeps the smallest prefix reaching p', () => {
  const p = softmax(LOGITS, 1);
  const order = [...p.keys()].sort((a, b) => p[b]! - p[a]!);
  for (const topP of [0.5, 0.8, 0.999]) {
    const keep: number[] = [];
    let mass = 0;
    for (const i of order) {
      if (mass >= topP) break;
      keep.push(i);
      mass += p[i]!;
    }
    const c = counts(new Sampler({ temperature: 1, topP, seed: 9 }).sample(rows(20000)));
    assert.ok(
      c.every((n, i) => keep.includes(i) || n === 0),
      `top-p ${topP}: only ${keep}, got ${c}`,
    );
    assert.ok(
      keep.every((i) => c[i]! > 0),
      `top-p ${topP}: every kept token drawn: ${c}`,
    );
    const full = p.map((pi, i) => (keep.includes(i) ? pi / mass : 0));
    assert.ok(chi2(c, full) < CHI2_LIMIT, `top-p ${topP}: chi-square ${chi2(c, full)}`);
  }
});

test('sampling: seeds repeat, differ across seeds; options are checked', () => {
  const a = Array.from(new Sampler({ temperature: 1, seed: 4 }).sample(rows(64)).toArraySync(), Number);
  const b = Array.from(new Sampler({ temperature: 1, seed: 4 }).sample(rows(64)).toArraySync(), Number);
  const c = Array.from(new Sampler({ temperature: 1, seed: 5 }).sample(rows(64)).toArraySync(), Number);
  assert.equal(a, b);
  assert.not.equal(a, c);
  throwsWith(() => new Sampler({ temperature: -1 }), TensorError, 'temperature');
  throwsWith(() => new Sampler({ topK: 1.5 }), TensorError, 'topK');
  throwsWith(() => new Sampler({ topP: 0 }), TensorError, 'topP');
  throwsWith(() => new Sampler({ topP: 1.2 }), TensorError, 'topP');
  throwsWith(
    () => new Sampler({ temperature: 1 }).sample(Tensor.zeros([4])),
    TensorError,
    'sampling',
    '[batch, vocab]',
  );
});

test.run();
