// Binary arithmetic, comparisons and where on the CPU reference: hand-worked values, broadcasting,
// integer wrap and division rules, i64 exactness, half-type rounding, layouts and errors.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { Tensor, DTypeError, ShapeError, BINARY_OPS, CMP_OPS, type DType } from '../../src/index.ts';
import { LAYOUTS, assertClose, nums, randInts, randT, withLayout } from '../helpers.ts';

const ALL: DType[] = ['f32', 'f64', 'f16', 'bf16', 'u8', 'u32', 'i64'];
const throwsWith = (fn: () => unknown, cls: Function, re: RegExp) =>
  assert.throws(fn, (e: unknown) => e instanceof cls && re.test((e as Error).message));
const big = (t: Tensor) => Array.from(t.toArraySync() as BigInt64Array);
const i64 = (xs: bigint[], shape?: number[]) => Tensor.from(BigInt64Array.from(xs), shape ? { shape } : {});

test('known values and broadcasting in every dtype', () => {
  for (const dtype of ALL) {
    const a = Tensor.from([[6], [12]], { dtype }); // [2, 1]
    const b = Tensor.from([1, 2, 3], { dtype }); // [3]
    assert.equal(
      a.add(b).toNestedSync(),
      [
        [7, 8, 9],
        [13, 14, 15],
      ],
      `add ${dtype}`,
    );
    assert.equal(
      a.mul(b).toNestedSync(),
      [
        [6, 12, 18],
        [12, 24, 36],
      ],
      `mul ${dtype}`,
    );
    assert.equal(
      a.div(b).toNestedSync(),
      [
        [6, 3, 2],
        [12, 6, 4],
      ],
      `div ${dtype}`,
    );
    assert.equal(
      a.sub(b).toNestedSync(),
      [
        [5, 4, 3],
        [11, 10, 9],
      ],
      `sub ${dtype}`,
    );
    assert.equal(
      a.maximum(Tensor.from([7, 13, 1], { dtype })).toNestedSync(),
      [
        [7, 13, 6],
        [12, 13, 12],
      ],
      `maximum ${dtype}`,
    );
    assert.equal(
      a.minimum(Tensor.from([7, 13, 1], { dtype })).toNestedSync(),
      [
        [6, 6, 1],
        [7, 12, 1],
      ],
      `minimum ${dtype}`,
    );
    assert.equal(a.add(b).dtype, dtype);
    assert.equal(b.add(4).toNestedSync(), [5, 6, 7], `scalar ${dtype}`);
    assert.equal(b.mul(a).shape, [2, 3], 'broadcast is symmetric');
  }
});

test('float division, NaN propagation in maximum/minimum', () => {
  const x = Tensor.from([1, -1, 0, 3], { dtype: 'f64' });
  assertClose(nums(x.div(0)), [Infinity, -Infinity, NaN, Infinity], 0, 0, 'x/0', true);
  assertClose(nums(x.div(3)), [1 / 3, -1 / 3, 0, 1], 0, 0, 'x/3');
  const n = Tensor.from([NaN, 1, 2], { dtype: 'f32' });
  const m = Tensor.from([0, NaN, 1], { dtype: 'f32' });
  assertClose(nums(n.maximum(m)), [NaN, NaN, 2], 0, 0, 'maximum', true);
  assertClose(nums(n.minimum(m)), [NaN, NaN, 1], 0, 0, 'minimum', true);
  assertClose(nums(n.add(1)), [NaN, 2, 3], 0, 0, 'add', true);
});

test('u8 and u32 wrap; integer division truncates and x/0 is 0', () => {
  const u8 = Tensor.from([250, 3, 16, 7], { dtype: 'u8' });
  assert.equal(nums(u8.add(10)), [4, 13, 26, 17]);
  assert.equal(nums(u8.sub(5)), [245, 254, 11, 2]);
  assert.equal(nums(u8.mul(17)), [(250 * 17) % 256, 51, 16, 119]);
  assert.equal(nums(u8.div(2)), [125, 1, 8, 3]);
  assert.equal(nums(u8.div(0)), [0, 0, 0, 0]);
  assert.equal(nums(u8.add(-1)), [249, 2, 15, 6]); // -1 is the u8 scalar 255
  const u32 = Tensor.from([4294967295, 0, 65536, 7], { dtype: 'u32' });
  assert.equal(nums(u32.add(1)), [0, 1, 65537, 8]);
  assert.equal(nums(u32.sub(1)), [4294967294, 4294967295, 65535, 6]);
  assert.equal(nums(u32.mul(Tensor.from([4294967295, 5, 65537, 613566757], { dtype: 'u32' }))), [1, 0, 65536, 3]);
  assert.equal(nums(u32.div(Tensor.from([2, 0, 3, 0], { dtype: 'u32' }))), [2147483647, 0, 21845, 0]);
});

test('i64 is exact beyond 2^53, wraps at 64 bits, divides toward zero', () => {
  const p = 2n ** 53n,
    max = 2n ** 63n - 1n,
    min = -(2n ** 63n);
  assert.equal(big(i64([p, p + 1n]).add(i64([1n, 1n]))), [p + 1n, p + 2n]);
  assert.equal(big(i64([max, min]).add(i64([1n, -1n]))), [min, max]);
  assert.equal(big(i64([p + 1n]).mul(i64([3n]))), [3n * p + 3n]);
  assert.equal(big(i64([-7n, 7n, -7n, 5n, min]).div(i64([2n, -2n, -2n, 0n, -1n]))), [-3n, -3n, 3n, 0n, min]);
  assert.equal(big(i64([p + 1n, -5n]).maximum(i64([p, -4n]))), [p + 1n, -4n]);
  assert.equal(big(i64([p + 1n, -5n]).minimum(i64([p, -4n]))), [p, -5n]);
  assert.equal(big(i64([10n, 20n], [2, 1]).sub(i64([1n, 2n]))), [9n, 8n, 19n, 18n]);
  assert.equal(big(i64([5n]).sub(7)), [-2n]);
});

test('half types round the exact result once, to nearest even', () => {
  // f16 integers above 2048 step by 2: 2049 is a tie (-> 2048), 2051 a tie (-> 2052)
  assert.equal(
    nums(Tensor.from([2048, 2048], { dtype: 'f16' }).add(Tensor.from([1, 3], { dtype: 'f16' }))),
    [2048, 2052],
  );
  // bf16 integers above 256 step by 2
  assert.equal(
    nums(Tensor.from([256, 256], { dtype: 'bf16' }).add(Tensor.from([1, 3], { dtype: 'bf16' }))),
    [256, 260],
  );
  assert.equal(nums(Tensor.from([60000], { dtype: 'f16' }).mul(2)), [Infinity]);
  // the scalar is rounded to the dtype first: 0.1 in f16 is 0.0999755859375
  assert.equal(nums(Tensor.from([0], { dtype: 'f16' }).add(0.1)), [0.0999755859375]);
});

test('non-contiguous layouts give the contiguous answer', () => {
  for (const dtype of ['f32', 'f16', 'u8', 'i64'] as const) {
    for (const kind of LAYOUTS) {
      const t = dtype === 'u8' || dtype === 'i64' ? randInts([4, 5], 100, dtype) : randT([4, 5], dtype);
      const u = dtype === 'u8' || dtype === 'i64' ? randInts([4, 5], 100, dtype) : randT([4, 5], dtype);
      const { x, ref } = withLayout(t, kind);
      for (const op of BINARY_OPS)
        assert.equal(x.binary(op, u).toNestedSync(), ref.binary(op, u).toNestedSync(), `${op} ${dtype} ${kind}`);
      for (const op of CMP_OPS)
        assert.equal(u.compare(op, x).toNestedSync(), u.compare(op, ref).toNestedSync(), `${op} ${dtype} ${kind}`);
      assert.equal(x.add(u.narrow(0, 0, 1)).toNestedSync(), ref.add(u.narrow(0, 0, 1)).toNestedSync());
    }
  }
});

test('identities on random data', () => {
  const a = randT([3, 4], 'f64'),
    b = randT([3, 4], 'f64', 0.5, 2);
  assertClose(nums(a.sub(b).add(b)), nums(a), 1e-14, 1e-15, 'a - b + b');
  assertClose(nums(a.div(b).mul(b)), nums(a), 1e-14, 1e-15, 'a / b * b');
  assert.equal(nums(a.maximum(b).add(a.minimum(b))), nums(a.add(b)));
  assert.equal(nums(a.sub(a)), new Array(12).fill(0));
});

test('empty and 0-d operands', () => {
  assert.equal(Tensor.zeros([0, 3]).add(Tensor.ones([3])).shape, [0, 3]);
  assert.equal(Tensor.zeros([2, 0]).mul(Tensor.ones([2, 1])).shape, [2, 0]);
  const s = Tensor.from(2).mul(Tensor.from([[1, 2]]));
  assert.equal(s.toNestedSync(), [[2, 4]]);
  assert.equal(Tensor.from(3).sub(1).shape, []);
});

test('comparisons give u8, NaN is unequal to everything', () => {
  for (const dtype of ALL) {
    const a = Tensor.from([1, 2, 3], { dtype }),
      b = Tensor.from([3, 2, 1], { dtype });
    const r = (op: (typeof CMP_OPS)[number]) => nums(a.compare(op, b));
    assert.equal(r('eq'), [0, 1, 0], `eq ${dtype}`);
    assert.equal(r('ne'), [1, 0, 1], `ne ${dtype}`);
    assert.equal(r('lt'), [1, 0, 0], `lt ${dtype}`);
    assert.equal(r('le'), [1, 1, 0], `le ${dtype}`);
    assert.equal(r('gt'), [0, 0, 1], `gt ${dtype}`);
    assert.equal(r('ge'), [0, 1, 1], `ge ${dtype}`);
    assert.is(a.eq(b).dtype, 'u8');
    assert.equal(nums(a.gt(2)), [0, 0, 1], `scalar ${dtype}`);
  }
  const n = Tensor.from([NaN, 1]);
  assert.equal(nums(n.eq(n)), [0, 1]);
  assert.equal(nums(n.ne(n)), [1, 0]);
  assert.equal(nums(n.lt(Infinity)), [0, 1]);
  assert.equal(nums(n.ge(-Infinity)), [0, 1]);
  const p = 2n ** 53n;
  assert.equal(nums(i64([p, p + 1n]).eq(i64([p + 1n, p + 1n]))), [0, 1]); // doubles would say equal
  assert.equal(nums(i64([-1n]).lt(i64([0n]))), [1]);
  assert.equal(
    Tensor.from([[1], [2]])
      .lt(Tensor.from([1, 2, 3]))
      .toNestedSync(),
    [
      [0, 1, 1],
      [0, 0, 1],
    ],
  );
  // the number is rounded to the tensor's dtype: f16(0.1) == f16(0.1)
  assert.equal(nums(Tensor.from([0.1], { dtype: 'f16' }).eq(0.1)), [1]);
  assert.equal(nums(Tensor.from([0.1], { dtype: 'f64' }).eq(Math.fround(0.1))), [0]);
});

test('where: values, cond dtypes, scalars, broadcasting', () => {
  for (const cd of ['u8', 'u32', 'i64'] as const) {
    const c = Tensor.from([1, 0, 7, 0], { dtype: cd });
    assert.equal(nums(Tensor.where(c, Tensor.from([1, 2, 3, 4]), Tensor.from([-1, -2, -3, -4]))), [1, -2, 3, -4], cd);
  }
  const c = Tensor.from([[1], [0]], { dtype: 'u8' }); // [2, 1]
  const w = Tensor.where(c, Tensor.from([1, 2, 3], { dtype: 'f64' }), -1);
  assert.equal(w.shape, [2, 3]);
  assert.is(w.dtype, 'f64');
  assert.equal(w.toNestedSync(), [
    [1, 2, 3],
    [-1, -1, -1],
  ]);
  const both = Tensor.where(Tensor.from([1, 0], { dtype: 'u8' }), 0.1, 2);
  assert.is(both.dtype, 'f32');
  assert.equal(nums(both), [Math.fround(0.1), 2]);
  const p = 2n ** 60n + 1n;
  const wi = Tensor.where(Tensor.from([0, 1], { dtype: 'u8' }), i64([p, p]), 5);
  assert.is(wi.dtype, 'i64');
  assert.equal(big(wi), [5n, p]);
  const wh = Tensor.where(Tensor.from([1, 0], { dtype: 'u8' }), Tensor.from([0.1, 0.1], { dtype: 'bf16' }), 0.1);
  assert.is(wh.dtype, 'bf16');
  assert.equal(nums(wh), [0.10009765625, 0.10009765625]);
  // all three broadcast: [2,1,1] x [1,3,1] x [1,1,2]
  const wb = Tensor.where(
    Tensor.from([1, 0], { dtype: 'u8', shape: [2, 1, 1] }),
    Tensor.from([1, 2, 3], { shape: [1, 3, 1] }),
    Tensor.from([8, 9], { shape: [1, 1, 2] }),
  );
  assert.equal(wb.toNestedSync(), [
    [
      [1, 1],
      [2, 2],
      [3, 3],
    ],
    [
      [8, 9],
      [8, 9],
      [8, 9],
    ],
  ]);
  // a transposed cond and an offset source
  const ct = Tensor.from(
    [
      [1, 0],
      [0, 1],
      [1, 1],
    ],
    { dtype: 'u8' },
  ).T; // [2, 3]
  const { x } = withLayout(
    Tensor.from([
      [1, 2, 3],
      [4, 5, 6],
    ]),
    'offset',
  );
  assert.equal(Tensor.where(ct, x, 0).toNestedSync(), [
    [1, 0, 3],
    [0, 5, 6],
  ]);
  assert.equal(Tensor.where(Tensor.zeros([0], { dtype: 'u8' }), 1, 2).shape, [0]);
});

test('errors name the op, the shapes and the dtypes', () => {
  const a = Tensor.from([1, 2, 3]),
    b = Tensor.from([1, 2, 3, 4]);
  throwsWith(() => a.add(b), ShapeError, /^add: shapes \[3\] and \[4\] cannot be broadcast/);
  throwsWith(() => a.lt(b), ShapeError, /^lt: shapes \[3\] and \[4\]/);
  throwsWith(
    () => a.mul(Tensor.from([1, 2, 3], { dtype: 'f16' })),
    DTypeError,
    /^mul: dtype mismatch \(\[3\] f32 vs \[3\] f16\)/,
  );
  throwsWith(
    () => a.eq(Tensor.from([1, 2, 3], { dtype: 'i64' })),
    DTypeError,
    /^eq: dtype mismatch \(\[3\] f32 vs \[3\] i64\)/,
  );
  throwsWith(
    () => a.add('1' as unknown as number),
    TypeError,
    /add: the other operand must be a Tensor or a number.*\[3\] f32/,
  );
  throwsWith(() => a.binary('pow' as 'add', 2), Error, /binary: unknown op 'pow'/);
  const c = Tensor.from([1, 0, 1], { dtype: 'u8' });
  throwsWith(
    () => Tensor.where(Tensor.from([1, 0, 1]), 1, 2),
    DTypeError,
    /^where: cond dtype f32 not supported \(cond \[3\] f32/,
  );
  throwsWith(
    () => Tensor.where(c, a, Tensor.from([1, 2, 3], { dtype: 'f64' })),
    DTypeError,
    /^where: dtype mismatch \(\[3\] f32 vs \[3\] f64\)/,
  );
  throwsWith(() => Tensor.where(c, b, 0), ShapeError, /^where: shapes \[3\] and \[4\]/);
  const gone = Tensor.from([1, 2, 3]);
  gone.dispose();
  throwsWith(() => a.add(gone), Error, /add: .* after dispose/);
  throwsWith(() => Tensor.where(c, gone, 0), Error, /where: .* after dispose/);
});

test.run();
