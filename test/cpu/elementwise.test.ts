// Unary and parameterized unary ops on the CPU reference: hand-worked values, identities, every
// float dtype, non-contiguous layouts, edge cases and the errors.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { Tensor, DTypeError, UNARY_OPS, type DType, type UnaryOp } from '../../src/index.ts';
import { LAYOUTS, assertClose, nums, randT, withLayout } from '../helpers.ts';

const FLOATS: DType[] = ['f32', 'f64', 'f16', 'bf16'];
const f64 = (xs: number[]) => Tensor.from(xs, { dtype: 'f64' });
const throwsWith = (fn: () => unknown, cls: Function, re: RegExp) =>
  assert.throws(fn, (e: unknown) => e instanceof cls && re.test((e as Error).message));

// [op, inputs, expected] worked out by hand or from published tables (erf: A&S table 7.1)
const KNOWN: [UnaryOp, number[], number[]][] = [
  ['exp', [0, 1, -1, Math.log(3)], [1, Math.E, 1 / Math.E, 3]],
  ['log', [1, Math.E, 0, -1], [0, 1, -Infinity, NaN]],
  ['sin', [0, Math.PI / 2, -Math.PI / 6], [0, 1, -0.5]],
  ['cos', [0, Math.PI, Math.PI / 3], [1, -1, 0.5]],
  ['tanh', [0, 50, -50, Math.log(2)], [0, 1, -1, 0.6]], // tanh(ln 2) = (2 - 1/2)/(2 + 1/2)
  ['neg', [1.5, -2, 0], [-1.5, 2, -0]],
  ['recip', [4, -0.5, 0], [0.25, -2, Infinity]],
  ['sqr', [-3, 0.5, 0], [9, 0.25, 0]],
  ['sqrt', [9, 2.25, 0, -1], [3, 1.5, 0, NaN]],
  ['gelu', [0, 1, -1, 10], [0, 0.8411919906082768, -0.15880800939172324, 10]],
  ['geluErf', [0, 1, -1, -10], [0, 0.8413447460685429, -0.15865525393145707, -0]],
  [
    'erf',
    [0, 0.1, 0.5, 1, 2, 3, -1, 10],
    [
      0, 0.1124629160182849, 0.5204998778130465, 0.8427007929497149, 0.9953222650189527, 0.9999779095030014,
      -0.8427007929497149, 1,
    ],
  ],
  ['relu', [-1, 0, 2.5, NaN], [0, 0, 2.5, NaN]],
  ['silu', [0, 1, -1], [0, 0.7310585786300049, -0.2689414213699951]],
  ['abs', [-2, 3, -0], [2, 3, 0]],
  ['ceil', [-1.5, 1.2, 2, -0.2], [-1, 2, 2, -0]],
  ['floor', [-1.5, 1.2, 2, 0.9], [-2, 1, 2, 0]],
  ['round', [0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 2.4, 2.6, -2.6, 3], [0, 2, 2, -0, -2, -2, 2, 3, -3, 3]],
  ['sign', [-2, 0, 3.5, NaN, -0.001], [-1, 0, 1, NaN, -1]],
  ['sigmoid', [0, Math.log(3), -Math.log(3), 800, -800], [0.5, 0.75, 0.25, 1, 0]],
];

test('known values in f64', () => {
  assert.is(new Set(KNOWN.map((k) => k[0])).size, UNARY_OPS.length, 'every unary op has known values');
  for (const [op, xs, want] of KNOWN) {
    const y = f64(xs).unary(op);
    assert.is(y.dtype, 'f64');
    assert.equal(y.shape, [xs.length]);
    assertClose(nums(y), want, 1e-14, 1e-15, op, true);
  }
});

test('erf to about 1e-15 against tabulated values', () => {
  // erf(x) to 17+ digits (Abramowitz & Stegun 7.1 / high-precision tables)
  const xs = [0.25, 0.75, 1.5, 2.5, 3.5, 4.5];
  const want = [
    0.27632639016823696, 0.7111556336535151, 0.9661051464753108, 0.999593047982555, 0.9999992569016276,
    0.9999999998033839,
  ];
  assertClose(nums(f64(xs).erf()), want, 2e-15, 0, 'erf');
  // odd function, exactly
  const x = randT([64], 'f64', -5, 5);
  assert.equal(nums(x.neg().erf()), nums(x.erf().neg()));
});

test('identities on random data', () => {
  const x = randT([200], 'f64', -6, 6);
  const X = nums(x);
  const s = nums(x.sigmoid()),
    sn = nums(x.neg().sigmoid());
  assertClose(
    s.map((v, i) => v + sn[i]!),
    X.map(() => 1),
    1e-15,
    1e-15,
    'sigmoid(x) + sigmoid(-x) = 1',
  );
  assertClose(
    nums(x.silu()),
    X.map((v, i) => v * s[i]!),
    1e-14,
    1e-15,
    'silu = x sigmoid(x)',
  );
  const sin = nums(x.sin()),
    cos = nums(x.cos());
  assertClose(
    sin.map((v, i) => v * v + cos[i]! ** 2),
    X.map(() => 1),
    1e-14,
    0,
    'sin^2 + cos^2',
  );
  const pos = randT([100], 'f64', 0.01, 50);
  assertClose(nums(pos.log().exp()), nums(pos), 1e-14, 0, 'exp(log x)');
  assertClose(nums(pos.sqrt().sqr()), nums(pos), 1e-14, 0, 'sqrt(x)^2');
  assertClose(nums(pos.recip().recip()), nums(pos), 1e-15, 0, 'recip twice');
  const erf = nums(x.affine(Math.SQRT1_2, 0).erf());
  // atol 2e-15: in the left tail 1 + erf cancels, so the identity itself loses a few ulp
  assertClose(
    nums(x.geluErf()),
    X.map((v, i) => 0.5 * v * (1 + erf[i]!)),
    1e-14,
    2e-15,
    'geluErf via erf',
  );
  const t2 = nums(x.affine(2, 0).sigmoid());
  assertClose(
    nums(x.tanh()),
    t2.map((v) => 2 * v - 1),
    1e-13,
    1e-15,
    'tanh = 2 sigmoid(2x) - 1',
  );
  // relu + (-relu(-x)) = x; abs = relu(x) + relu(-x)
  const r = nums(x.relu()),
    rn = nums(x.neg().relu());
  assert.equal(
    r.map((v, i) => v - rn[i]!),
    X,
  );
  assert.equal(
    nums(x.abs()),
    r.map((v, i) => v + rn[i]!),
  );
  const fl = nums(x.floor()),
    ce = nums(x.ceil());
  X.forEach((v, i) => {
    assert.ok(fl[i]! <= v && v < fl[i]! + 1);
    assert.ok(ce[i]! >= v && v > ce[i]! - 1);
  });
});

test('every float dtype: the f64 answer rounded once to the dtype', () => {
  const ref: Record<UnaryOp, (x: number) => number> = {
    exp: Math.exp,
    log: (x) => Math.log(Math.abs(x)),
    sin: Math.sin,
    cos: Math.cos,
    tanh: Math.tanh,
    neg: (x) => -x,
    recip: (x) => 1 / x,
    sqr: (x) => x * x,
    sqrt: (x) => Math.sqrt(Math.abs(x)),
    gelu: (x) => 0.5 * x * (1 + Math.tanh(Math.sqrt(2 / Math.PI) * (x + 0.044715 * x ** 3))),
    geluErf: () => NaN,
    erf: () => NaN,
    relu: (x) => Math.max(x, 0),
    silu: (x) => x / (1 + Math.exp(-x)),
    abs: Math.abs,
    ceil: Math.ceil,
    floor: Math.floor,
    round: () => NaN,
    sign: Math.sign,
    sigmoid: (x) => 1 / (1 + Math.exp(-x)),
  };
  for (const dtype of FLOATS) {
    for (const op of UNARY_OPS) {
      if (op === 'geluErf' || op === 'erf' || op === 'round') continue; // covered by known values
      const x = randT([5, 7], dtype, -3, 3);
      const input = op === 'log' || op === 'sqrt' ? x.abs() : x;
      const got = input.unary(op);
      assert.is(got.dtype, dtype);
      assert.equal(got.shape, [5, 7]);
      const want = Tensor.from(nums(input).map(ref[op]), { dtype: 'f64', shape: [5, 7] }).toDtype(dtype);
      assert.equal(nums(got), nums(want), `${op} ${dtype}`);
    }
  }
});

test('half types round once: exp(1) in f16/bf16, exp overflow to inf in f16', () => {
  assert.equal(nums(Tensor.from([1], { dtype: 'f16' }).exp()), [2.71875]);
  assert.equal(nums(Tensor.from([1], { dtype: 'bf16' }).exp()), [2.71875]);
  assert.equal(nums(Tensor.from([1], { dtype: 'f32' }).exp()), [Math.fround(Math.E)]);
  assert.equal(nums(Tensor.from([12], { dtype: 'f16' }).exp()), [Infinity]); // e^12 > 65504
  assert.equal(nums(Tensor.from([12], { dtype: 'bf16' }).exp()), [162816]); // 162754.79 -> 8 bits
});

test('round half to even in every float dtype', () => {
  for (const dtype of FLOATS) {
    assert.equal(nums(Tensor.from([0.5, 1.5, 2.5, 3.5, -2.5, 4.25], { dtype }).round()), [0, 2, 2, 4, -2, 4], dtype);
  }
});

test('NaN and infinities propagate', () => {
  const x = f64([NaN, Infinity, -Infinity]);
  for (const op of ['exp', 'tanh', 'neg', 'abs', 'sigmoid', 'erf', 'floor'] as const) {
    assert.ok(Number.isNaN(nums(x.unary(op))[0]!), op);
  }
  assert.equal(nums(x.exp()).slice(1), [Infinity, 0]);
  assert.equal(nums(x.tanh()).slice(1), [1, -1]);
  assert.equal(nums(x.sigmoid()).slice(1), [1, 0]);
  assert.equal(nums(x.erf()).slice(1), [1, -1]);
  assert.equal(nums(x.relu()).slice(1), [Infinity, 0]);
});

test('non-contiguous layouts give the contiguous answer', () => {
  for (const dtype of FLOATS) {
    for (const kind of LAYOUTS) {
      const t = randT([4, 6], dtype);
      const { x, ref } = withLayout(t, kind);
      for (const op of ['exp', 'gelu', 'round', 'sigmoid'] as const) {
        assert.equal(nums(x.unary(op)), nums(ref.unary(op)), `${op} ${dtype} ${kind}`);
      }
      assert.equal(nums(x.affine(3, -1)), nums(ref.affine(3, -1)), `affine ${dtype} ${kind}`);
      assert.equal(x.exp().shape, [4, 6]);
    }
  }
});

test('empty, size-1 and 0-d tensors', () => {
  const e = Tensor.zeros([0, 3]).exp();
  assert.equal(e.shape, [0, 3]);
  assert.is(e.numel, 0);
  const s = Tensor.from(2, { dtype: 'f64' }).sqr();
  assert.equal(s.shape, []);
  assert.is(s.itemSync(), 4);
  assert.equal(nums(Tensor.from([[[-1]]]).relu()), [0]);
});

test('param unary: affine, powf, elu, clamp, leakyRelu', () => {
  assert.equal(nums(f64([1, -2, 0.5]).affine(2, 1)), [3, -3, 2]);
  assert.equal(nums(f64([4, 9, 2]).powf(0.5)), [2, 3, Math.SQRT2]);
  assert.equal(nums(f64([-3, 2, 0]).powf(2)), [9, 4, 0]);
  assert.equal(nums(f64([0, 2]).powf(-1)), [Infinity, 0.5]);
  assert.ok(Number.isNaN(nums(f64([-8]).powf(1 / 3))[0]!)); // a negative base with a fractional exponent
  assertClose(nums(f64([-1, 0, 2]).elu()), [-0.6321205588285577, 0, 2], 1e-15, 0, 'elu');
  assertClose(nums(f64([-1, 3]).elu(2)), [-1.2642411176571153, 3], 1e-15, 0, 'elu 2');
  assertClose(nums(f64([-2, 0.5, 3, NaN]).clamp(-1, 1)), [-1, 0.5, 1, NaN], 0, 0, 'clamp', true);
  assert.equal(nums(f64([-5, 5]).clamp(2, 1)), [1, 1]); // lo > hi: hi, like torch.clamp
  assertClose(nums(f64([-2, 3, 0]).leakyRelu(0.1)), [-0.2, 3, 0], 1e-15, 0, 'leakyRelu');
  assertClose(nums(f64([-100]).leakyRelu()), [-1], 1e-15, 0, 'leakyRelu default slope');
  for (const dtype of FLOATS) {
    const x = randT([3, 4], dtype, -5, 5);
    const X = nums(x);
    const want = Tensor.from(
      X.map((v) => v * 0.3 - 2),
      { dtype: 'f64' },
    ).toDtype(dtype);
    assert.equal(nums(x.affine(0.3, -2)), nums(want), `affine ${dtype}`);
    assert.is(x.clamp(-1, 1).dtype, dtype);
    for (const v of nums(x.clamp(-1, 1))) assert.ok(v >= -1 && v <= 1);
  }
  // affine rounds once: 1 * 1 + 2^-11 is a tie in f16 and goes to even
  assert.equal(nums(Tensor.from([1], { dtype: 'f16' }).affine(1, 2 ** -11)), [1]);
  assert.equal(nums(Tensor.from([1], { dtype: 'f16' }).affine(1, 3 * 2 ** -11)), [1 + 2 ** -9]);
});

test('errors: integer dtypes, bad parameters, unknown ops, disposed tensors', () => {
  for (const dtype of ['u8', 'u32', 'i64'] as const) {
    const x = Tensor.from([1, 2], { dtype });
    throwsWith(() => x.exp(), DTypeError, new RegExp(`^exp: dtype ${dtype} not supported \\(tensor \\[2\\] ${dtype}`));
    throwsWith(() => x.relu(), DTypeError, /relu: dtype .* supported: f32, f64, f16, bf16/);
    throwsWith(() => x.affine(2, 1), DTypeError, new RegExp(`affine: dtype ${dtype} not supported`));
    throwsWith(() => x.clamp(0, 1), DTypeError, /clamp:/);
  }
  const x = Tensor.from([1, 2]);
  throwsWith(() => x.affine('2' as unknown as number, 1), TypeError, /affine: parameters must be numbers.*\[2\] f32/);
  throwsWith(() => x.unary('cube' as UnaryOp), Error, /unary: unknown op 'cube'.*\[2\] f32/);
  x.dispose();
  throwsWith(() => x.sigmoid(), Error, /sigmoid: .* after dispose/);
});

test.run();
