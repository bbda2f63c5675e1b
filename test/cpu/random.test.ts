// Random ops on the CPU: Philox 4x32-10 against the Random123 known answers, the f32 log against
// Math's, randn's inverse normal CDF against a double-precision one (and its table against its
// generator), the seed and index mapping (determinism, shape independence), the
// distributions (moments and chi-square tests), and every error.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { Tensor, DTypeError, ShapeError, TensorError, type DType } from '../../src/index.ts';
import { philox, logU24 } from '../../src/backends/cpu/philox.ts';
import { normalOfWord } from '../../src/backends/cpu/normal.ts';
import { RANDN_TABLE } from '../../src/backends/cpu/randn-table.ts';
import { buildTable, tableSources } from '../../scripts/randn/gen-table.ts';
import { normalQuantileLow } from '../../scripts/randn/quantile.ts';
import { readFileSync } from 'node:fs';
import { readRaw } from '../../src/backends/cpu/util.ts';
import { nums, throwsWith } from '../helpers.ts';

const hex = (a: Int32Array): string => Array.from(a, (x) => (x >>> 0).toString(16).padStart(8, '0')).join(' ');
const FLOATS: DType[] = ['f32', 'f64', 'f16', 'bf16'];
const raw = (t: Tensor): number[] => Array.from(readRaw(t) as ArrayLike<number | bigint>, Number);

test('Philox 4x32-10 gives the Random123 known answers', () => {
  const o = new Int32Array(4);
  // counter words 0..3, key words 0, 1 -> output (Random123 kat_vectors)
  philox(0, 0, 0, 0, 0, 0, o);
  assert.is(hex(o), '6627e8d5 e169c58d bc57ac4c 9b00dbd8');
  philox(-1, -1, -1, -1, -1, -1, o);
  assert.is(hex(o), '408f276d 41c83b0e a20bc7c6 6d5451fd');
  philox(0x243f6a88, 0x85a308d3 | 0, 0x13198a2e, 0x03707344, 0xa4093822 | 0, 0x299f31d0, o);
  assert.is(hex(o), 'd16cfe09 94fdcceb 5001e420 24126ea1');
});

test('the seed is the key and element i takes word i & 3 of block i >> 2', () => {
  const o = new Int32Array(4);
  philox(1, 0, 0, 0, 5, 0, o); // block 1 under seed 5
  const got = raw(Tensor.rand([8], { seed: 5 })).slice(4);
  assert.equal(
    got,
    Array.from(o, (w) => Math.fround((w >>> 8) * 2 ** -24)),
  );
  philox(0, 0, 0, 0, 7, 1, o); // seed 2^32 + 7: key (7, 1)
  assert.is(raw(Tensor.rand([1], { seed: 2 ** 32 + 7 }))[0], Math.fround((o[0]! >>> 8) * 2 ** -24));
  philox(0, 0, 0, 0, -1, -1, o); // seed -1 is 2^64 - 1
  assert.is(raw(Tensor.rand([1], { seed: -1 }))[0], Math.fround((o[0]! >>> 8) * 2 ** -24));
  // f64: 53 bits from words 2(i & 1) (high 27) and 2(i & 1) + 1 (high 26) of block i >> 1
  philox(0, 0, 0, 0, 5, 0, o);
  assert.is(nums(Tensor.rand([2], { seed: 5, dtype: 'f64' }))[1], ((o[2]! >>> 5) * 2 ** 26 + (o[3]! >>> 6)) * 2 ** -53);
});

const ulpOf = (x: number): number => {
  const a = Math.abs(Math.fround(x));
  return a === 0 ? 2 ** -149 : 2 ** (Math.floor(Math.log2(a)) - 23);
};

test('f32 log is within 1 ulp of Math.log', () => {
  let worst = 0;
  for (let k = 1; k <= 2 ** 24; k += k < 70000 ? 1 : 4093) {
    const want = Math.log(k * 2 ** -24);
    if (want !== 0) worst = Math.max(worst, Math.abs(logU24(k) - want) / ulpOf(want));
  }
  assert.is(logU24(2 ** 24), 0);
  assert.ok(worst <= 1, `log ${worst}`);
});

test('randn: each word maps to the normal quantile of its probability, within 5 ulp (1e-8 near 0)', () => {
  // word w: p = (2 (w mod 2^31) + 1) 2^-33 rounded to f32, negative below 1/2 (top bit clear)
  const quantile = (w: number): number => {
    const v = Math.fround(((w << 1) | 1) >>> 0);
    const z = normalQuantileLow(v * 2 ** -33);
    return w >>> 31 ? -z : z;
  };
  let worstUlp = 0,
    worstNear0 = 0;
  const check = (w: number): void => {
    const got = normalOfWord(w),
      want = quantile(w),
      err = Math.abs(got - want);
    if (Math.abs(want) >= 0.01) worstUlp = Math.max(worstUlp, err / ulpOf(want));
    else worstNear0 = Math.max(worstNear0, err);
  };
  let x = 12345;
  for (let i = 0; i < 60000; i++) {
    x = (Math.imul(x, 1103515245) + 12345) | 0;
    check(x);
  }
  // every segment's ends, the extreme words and the small exact integers of the far tail
  for (let e = 0; e < 32; e++)
    for (let s = 0; s < 8; s++) {
      const v = 2 ** e * (1 + s / 8);
      for (const u of [v - 1, v, v + 1, v + 2 ** Math.max(0, e - 4)]) {
        const w = Math.floor((u - 1) / 2);
        if (w >= 0 && w < 2 ** 31) {
          check(w);
          check(w + 2 ** 31);
        }
      }
    }
  for (let w = 0; w < 5000; w++) check(w);
  console.log(`  randn: worst ${worstUlp.toFixed(2)} ulp for |z| >= 0.01, ${worstNear0.toExponential(2)} below`);
  assert.ok(worstUlp <= 5 && worstNear0 <= 1e-8, `${worstUlp} ulp, ${worstNear0} near 0`);
  assert.is(Math.fround(normalOfWord(0)), Math.fround(normalQuantileLow(2 ** -33)), 'the far tail: p = 2^-33');
  assert.is(normalOfWord(0x7fffffff), 0, 'p = 1/2 (v rounds to 2^32)');
  assert.ok(Object.is(normalOfWord(-1), -0));
  assert.is(normalOfWord(0x80000000 | 0), -normalOfWord(0), 'the top bit is the sign');
});

test("randn: the committed table files are the generator's output", () => {
  const tab = buildTable();
  assert.equal(Array.from(RANDN_TABLE), Array.from(tab));
  const { h, ts } = tableSources(tab);
  const root = new URL('../../', import.meta.url).pathname;
  assert.ok(
    readFileSync(`${root}hip-src/randn-table.h`, 'utf8') === h,
    'hip-src/randn-table.h is stale: npx tsx scripts/randn/gen-table.ts',
  );
  assert.ok(
    readFileSync(`${root}src/backends/cpu/randn-table.ts`, 'utf8') === ts,
    'src/backends/cpu/randn-table.ts is stale',
  );
});

test('same seed, same bits; other seeds differ; element i does not depend on the shape', () => {
  for (const make of [
    (s: number[], seed: number) => Tensor.rand(s, { seed }),
    (s: number[], seed: number) => Tensor.randn(s, { seed }),
    (s: number[], seed: number) => Tensor.rand(s, { seed, dtype: 'f64' }),
    (s: number[], seed: number) => Tensor.randint(-5, 9, s, { seed }),
    (s: number[], seed: number) => Tensor.bernoulli(0.3, { shape: s, seed }),
  ]) {
    const a = raw(make([1000], 11));
    assert.equal(raw(make([1000], 11)), a);
    assert.not.equal(raw(make([1000], 12)), a);
    assert.equal(raw(make([10, 100], 11)), a, 'shape independent');
    assert.equal(raw(make([7], 11)), a.slice(0, 7), 'a prefix of a longer draw');
  }
  assert.not.equal(nums(Tensor.rand([16])), nums(Tensor.rand([16])), 'no seed: fresh values');
  for (const d of FLOATS) assert.equal(Tensor.randn([0, 3], { seed: 1, dtype: d }).shape, [0, 3]);
});

/** chi-square statistic of counts against expected counts */
function chi2(counts: readonly number[], expected: readonly number[]): number {
  return counts.reduce((s, c, i) => s + (c - expected[i]!) ** 2 / expected[i]!, 0);
}
/** generous upper bound for chi-square with df degrees of freedom (about 6 sigma) */
const chi2Limit = (df: number): number => df + 6 * Math.sqrt(2 * df);

test('rand: in [0, 1) in every dtype, uniform by moments and chi-square', () => {
  for (const dtype of FLOATS) {
    const v = nums(Tensor.rand([200000], { seed: 7, dtype }));
    assert.ok(
      v.every((x) => x >= 0 && x < 1),
      `${dtype} in [0, 1)`,
    );
    const mean = v.reduce((s, x) => s + x, 0) / v.length,
      vr = v.reduce((s, x) => s + (x - mean) ** 2, 0) / v.length;
    assert.ok(Math.abs(mean - 0.5) < 0.005, `${dtype} mean ${mean}`);
    assert.ok(Math.abs(vr - 1 / 12) < 0.002, `${dtype} var ${vr}`);
    if (dtype === 'f32' || dtype === 'f64') {
      const counts = new Array(100).fill(0);
      for (const x of v) counts[Math.floor(x * 100)]++;
      const c = chi2(counts, new Array(100).fill(v.length / 100));
      assert.ok(c < chi2Limit(99), `${dtype} chi-square ${c}`);
    }
  }
  // values within half an ulp of 1 would round to 1.0 in bf16 (0x3f80): they become 0x3f7f
  const b = raw(Tensor.rand([1 << 16], { seed: 3, dtype: 'bf16' }));
  assert.ok(b.includes(0x3f7f) && !b.includes(0x3f80));
  const h = raw(Tensor.rand([1 << 16], { seed: 3, dtype: 'f16' }));
  assert.ok(!h.includes(0x3c00));
});

/** standard normal CDF (erf by Abramowitz-Stegun 7.1.26, error under 1.5e-7) */
function phi(x: number): number {
  const z = Math.abs(x) / Math.SQRT2,
    t = 1 / (1 + 0.3275911 * z);
  const erf =
    1 -
    ((((1.061405429 * t - 1.453152027) * t + 1.421413741) * t - 0.284496736) * t + 0.254829592) * t * Math.exp(-z * z);
  return 0.5 * (1 + (x < 0 ? -erf : erf));
}

test('randn: moments and a chi-square test of the CDF buckets; f64 is the f32 widened', () => {
  const n = 400000;
  const v = nums(Tensor.randn([n], { seed: 3 }));
  const mean = v.reduce((s, x) => s + x, 0) / n;
  const m2 = v.reduce((s, x) => s + (x - mean) ** 2, 0) / n;
  const m3 = v.reduce((s, x) => s + (x - mean) ** 3, 0) / n,
    m4 = v.reduce((s, x) => s + (x - mean) ** 4, 0) / n;
  assert.ok(Math.abs(mean) < 0.01, `mean ${mean}`);
  assert.ok(Math.abs(m2 - 1) < 0.01, `var ${m2}`);
  assert.ok(Math.abs(m3) < 0.03, `third moment ${m3}`);
  assert.ok(Math.abs(m4 - 3) < 0.06, `fourth moment ${m4}`);
  const counts = new Array(100).fill(0);
  for (const x of v) counts[Math.min(99, Math.floor(phi(x) * 100))]++;
  const c = chi2(counts, new Array(100).fill(n / 100));
  assert.ok(c < chi2Limit(99), `chi-square ${c}`);
  assert.ok(v.reduce((m, x) => Math.max(m, Math.abs(x)), 0) <= 6.338, 'the tail ends at the quantile of 2^-33, 6.338');
  assert.equal(nums(Tensor.randn([1001], { seed: 3, dtype: 'f64' })), v.slice(0, 1001));
  assert.equal(
    nums(Tensor.randn([1001], { seed: 3, dtype: 'bf16' })),
    nums(Tensor.from(v.slice(0, 1001)).toDtype('bf16')),
  );
  assert.equal(nums(Tensor.randn([5], { seed: 1 })).length, 5, 'odd counts');
});

test('randint: range, every integer dtype and exact floats, uniformity', () => {
  const v = nums(Tensor.randint(-3, 7, [100000], { seed: 9 }));
  assert.ok(v.every((x) => Number.isInteger(x) && x >= -3 && x < 7));
  const counts = new Array(10).fill(0);
  for (const x of v) counts[x + 3]++;
  assert.ok(chi2(counts, new Array(10).fill(10000)) < chi2Limit(9), `chi-square ${counts}`);
  assert.is(Tensor.randint(0, 5, [3]).dtype, 'i64');
  for (const dtype of ['u8', 'u32', 'i64', 'f32', 'f64', 'f16', 'bf16'] as const) {
    const t = Tensor.randint(0, 200, [1000], { seed: 1, dtype });
    assert.is(t.dtype, dtype);
    assert.equal(
      nums(t),
      v.length ? nums(Tensor.randint(0, 200, [1000], { seed: 1 })) : [],
      `${dtype}: the same integers`,
    );
  }
  const full = nums(Tensor.randint(0, 2 ** 32, [1000], { seed: 2, dtype: 'u32' }));
  assert.ok(full.some((x) => x > 2 ** 31) && full.every((x) => x < 2 ** 32));
  const one = nums(Tensor.randint(5, 6, [10], { seed: 2, dtype: 'u8' }));
  assert.equal(one, new Array(10).fill(5));
  // i64 is written as two 32-bit words: values far from 0 on both sides, and crossing 0
  for (const low of [-Number.MAX_SAFE_INTEGER, Number.MAX_SAFE_INTEGER - 2 ** 32, -(2 ** 31)]) {
    const big = Tensor.randint(low, low + 2 ** 32, [1001], { seed: 3 });
    assert.equal(
      Array.from(readRaw(big) as BigInt64Array),
      nums(Tensor.randint(low, low + 2 ** 32, [1001], { seed: 3, dtype: 'f64' })).map(BigInt),
      `low ${low}`,
    );
  }
});

test('bernoulli: frequency, number or tensor p, output dtypes; equals rand < p', () => {
  const n = 100000;
  const b = nums(Tensor.bernoulli(0.3, { shape: [n], seed: 4 }));
  const f = b.reduce((s, x) => s + x, 0) / n;
  assert.ok(Math.abs(f - 0.3) < 0.006, `frequency ${f}`);
  const u = nums(Tensor.rand([n], { seed: 4 }));
  assert.equal(
    b,
    u.map((x) => (x < 0.3 ? 1 : 0)),
    'bernoulli(p, seed) is rand(seed) < p',
  );
  assert.equal(nums(Tensor.bernoulli(0, { shape: [100], seed: 1 })), new Array(100).fill(0));
  assert.equal(nums(Tensor.bernoulli(1, { shape: [100], seed: 1 })), new Array(100).fill(1));
  const p = Tensor.rand([300, 10], { seed: 5 });
  const pv = nums(p);
  for (const dtype of ['f32', 'u8', 'i64', 'bf16'] as const) {
    const t = p.bernoulli({ seed: 6, dtype });
    assert.is(t.dtype, dtype);
    assert.equal(
      nums(t),
      nums(Tensor.rand([3000], { seed: 6 })).map((x, i) => (x < pv[i]! ? 1 : 0)),
    );
  }
  assert.is(p.bernoulli().dtype, 'f32');
  assert.equal(Tensor.bernoulli(p.transpose(0, 1), { seed: 6 }).shape, [10, 300], 'any layout');
});

test('dropout: zero with probability p, the rest scaled by 1 / (1 - p); eval mode is a view', () => {
  const x = Tensor.randn([100000], { seed: 1 });
  const xv = nums(x);
  const y = nums(x.dropout(0.25, { seed: 2 }));
  const u = nums(Tensor.rand([100000], { seed: 2 }));
  const scale = Math.fround(1 / 0.75);
  assert.equal(
    y,
    xv.map((v, i) => (u[i]! < 0.25 ? 0 : Math.fround(v * scale))),
  );
  const zeros = y.filter((v) => v === 0).length / y.length;
  assert.ok(Math.abs(zeros - 0.25) < 0.006, `dropped ${zeros}`);
  assert.equal(nums(x.dropout(0.25, { training: false })), xv);
  assert.equal(nums(x.dropout(0, { seed: 3 })), xv);
  assert.ok(nums(x.dropout(1, { seed: 3 })).every((v) => v === 0));
  const h = Tensor.from([1, 2, 3, 4, 5, 6, 7, 8], { dtype: 'bf16' }).dropout(0.5, { seed: 1 });
  assert.is(h.dtype, 'bf16');
  assert.ok(nums(h).every((v, i) => v === 0 || v === 2 * (i + 1)));
});

test('multinomial with replacement: frequencies follow the probabilities', () => {
  const p = [0.1, 0, 0.2, 0.3, 0.4];
  const t = Tensor.from([p, [1, 1, 1, 1, 0]]).multinomial(50000, { replacement: true, seed: 3 });
  assert.equal(t.shape, [2, 50000]);
  assert.is(t.dtype, 'i64');
  const v = nums(t);
  const c0 = new Array(5).fill(0),
    c1 = new Array(5).fill(0);
  for (let i = 0; i < 50000; i++) {
    c0[v[i]!]++;
    c1[v[50000 + i]!]++;
  }
  assert.is(c0[1], 0, 'zero probability never drawn');
  assert.is(c1[4], 0);
  assert.ok(chi2([c0[0], c0[2], c0[3], c0[4]], [5000, 10000, 15000, 20000]) < chi2Limit(3), `row 0 ${c0}`);
  assert.ok(chi2(c1.slice(0, 4), [12500, 12500, 12500, 12500]) < chi2Limit(3), `row 1 ${c1}`);
  assert.equal(Tensor.from([0.5, 0.5]).multinomial(3, { replacement: true, dtype: 'u32' }).dtype, 'u32');
});

test('multinomial without replacement: distinct indices, exact first- and second-draw frequencies', () => {
  const p = [0.5, 0.3, 0.2];
  const rows = 30000;
  const probs = Tensor.from(
    new Float32Array(rows * 3).map((_, i) => p[i % 3]!),
    { shape: [rows, 3] },
  );
  const v = nums(probs.multinomial(2, { seed: 8 }));
  const pairs = new Map<string, number>();
  for (let r = 0; r < rows; r++) {
    assert.ok(v[2 * r] !== v[2 * r + 1], 'distinct');
    const k = `${v[2 * r]},${v[2 * r + 1]}`;
    pairs.set(k, (pairs.get(k) ?? 0) + 1);
  }
  const obs: number[] = [],
    exp: number[] = [];
  for (let i = 0; i < 3; i++)
    for (let j = 0; j < 3; j++) {
      if (i === j) continue;
      obs.push(pairs.get(`${i},${j}`) ?? 0);
      exp.push((rows * p[i]! * p[j]!) / (1 - p[i]!));
    }
  assert.ok(chi2(obs, exp) < chi2Limit(5), `pairs ${obs} vs ${exp.map(Math.round)}`);
  const all = nums(Tensor.from([1, 2, 3, 4]).multinomial(4, { seed: 1 }));
  assert.equal([...all].sort(), [0, 1, 2, 3], 'a permutation');
  assert.is(Tensor.from([1, 2, 3, 4]).multinomial(2, { seed: 1, dtype: 'u32' }).dtype, 'u32');
});

test('errors name the op, shape and dtype', () => {
  throwsWith(
    () => Tensor.rand([2], { dtype: 'u8' }),
    DTypeError,
    /^rand: dtype u8 is not a float dtype \(shape \[2\]\)/,
  );
  throwsWith(() => Tensor.randn([2], { dtype: 'i64' }), DTypeError, /^randn: dtype i64 is not a float dtype/);
  throwsWith(() => Tensor.rand([-1]), ShapeError, /^rand: invalid shape/);
  throwsWith(() => Tensor.randn([2.5]), ShapeError, /^randn: invalid shape \[2.5\]/);
  throwsWith(() => Tensor.rand([2], { seed: 1.5 }), TensorError, /^rand: seed must be a safe integer, got 1.5/);
  throwsWith(
    () => Tensor.randint(3, 3, [2]),
    TensorError,
    /^randint: low must be below high \(low 3, high 3, shape \[2\], dtype i64\)/,
  );
  throwsWith(() => Tensor.randint(0, 2 ** 33, [2]), TensorError, /^randint: high - low must be at most 2\^32/);
  throwsWith(
    () => Tensor.randint(0, 300, [2], { dtype: 'u8' }),
    DTypeError,
    /^randint: u8 cannot hold every integer in \[0, 300\)/,
  );
  throwsWith(() => Tensor.randint(-1, 3, [2], { dtype: 'u32' }), DTypeError, /^randint: u32 cannot hold/);
  throwsWith(() => Tensor.randint(0, 3000, [2], { dtype: 'f16' }), DTypeError, /^randint: f16 cannot hold/);
  throwsWith(() => Tensor.randint(0.5, 3, [2]), TensorError, /^randint: low and high must be safe integers/);
  throwsWith(
    () => Tensor.bernoulli(1.5, { shape: [2] }),
    TensorError,
    /^bernoulli: p must be in \[0, 1\] \(p 1.5, shape \[2\], dtype f32\)/,
  );
  throwsWith(() => Tensor.bernoulli(Number.NaN, { shape: [2] }), TensorError, /^bernoulli: p must be in \[0, 1\]/);
  throwsWith(() => Tensor.bernoulli(0.5), ShapeError, /^bernoulli: a number p \(0.5\) needs a shape/);
  throwsWith(
    () => Tensor.from([0.5, -0.1]).bernoulli(),
    TensorError,
    /^bernoulli: probability -0.10000000149011612 at flat index 1 is outside \[0, 1\] \(p \[2\] f32/,
  );
  throwsWith(
    () => Tensor.from([1, 0], { dtype: 'u8' }).bernoulli(),
    DTypeError,
    /^bernoulli: probabilities must have a float dtype \(p \[2\] u8/,
  );
  throwsWith(
    () => Tensor.from([1, 0]).dropout(1.5),
    TensorError,
    /^dropout: p must be in \[0, 1\] \(x \[2\] f32, p 1.5\)/,
  );
  throwsWith(
    () => Tensor.from([1, 0], { dtype: 'u32' }).dropout(0.5),
    DTypeError,
    /^dropout: x must have a float dtype \(x \[2\] u32/,
  );
  const probs = Tensor.from([
    [0.2, 0.8],
    [0.5, 0.5],
  ]);
  throwsWith(
    () => probs.multinomial(3),
    TensorError,
    /^multinomial: numSamples 3 exceeds the 2 categories of a row without replacement \(probs \[2, 2\] f32/,
  );
  throwsWith(() => probs.multinomial(0), TensorError, /^multinomial: numSamples must be an integer >= 1/);
  throwsWith(
    () => Tensor.from([[0.2, -0.8]]).multinomial(1),
    TensorError,
    /^multinomial: probability -0.800000011920929 at row 0, index 1 is negative, infinite or NaN/,
  );
  throwsWith(
    () => Tensor.from([0.2, Number.NaN]).multinomial(1),
    TensorError,
    /^multinomial: probability NaN at row 0, index 1/,
  );
  throwsWith(
    () =>
      Tensor.from([
        [1, 1],
        [0, 0],
      ]).multinomial(1, { replacement: true }),
    TensorError,
    /^multinomial: row 1 has no nonzero probability/,
  );
  throwsWith(
    () => Tensor.from([1, 0, 0]).multinomial(2),
    TensorError,
    /^multinomial: row 0 has 1 nonzero probabilities, fewer than numSamples 2/,
  );
  throwsWith(
    () => Tensor.zeros([2, 2, 2]).multinomial(1),
    ShapeError,
    /^multinomial: probs must be \[n\] or \[rows, n\] \(probs \[2, 2, 2\] f32/,
  );
  throwsWith(
    () => Tensor.from([1, 2], { dtype: 'i64' }).multinomial(1),
    DTypeError,
    /^multinomial: probabilities must have a float dtype/,
  );
  throwsWith(
    () => probs.multinomial(1, { dtype: 'f32' as 'i64' }),
    DTypeError,
    /^multinomial: index dtype must be i64 or u32, got f32/,
  );
});

test.run();
