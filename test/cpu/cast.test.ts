// toDtype on the CPU reference: every pair of the seven dtypes, rounding and wrap rules worked out
// by hand, i64 exactness, layouts and errors.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { Tensor, DTYPES, TensorError, type DType } from '../../src/index.ts';
import { LAYOUTS, nums, randInts, randT, withLayout } from '../helpers.ts';

const big = (t: Tensor) => Array.from(t.toArraySync() as BigInt64Array);

// small non-negative integers survive every dtype exactly, so every pair must round-trip them
test('every pair of dtypes keeps small integers exactly', () => {
  const vals = [0, 1, 2, 7, 100, 255];
  for (const from of DTYPES) {
    for (const to of DTYPES) {
      const y = Tensor.from(vals, { dtype: from }).toDtype(to);
      assert.is(y.dtype, to);
      assert.equal(y.shape, [6]);
      assert.equal(nums(y), vals, `${from} -> ${to}`);
    }
  }
});

test('floats to integers truncate toward zero, wrap, NaN and inf -> 0', () => {
  for (const from of ['f32', 'f64', 'f16', 'bf16'] as const) {
    const x = Tensor.from([3.75, -3.75, 256, 258, -1, NaN, Infinity, -0.5], { dtype: from });
    assert.equal(nums(x.toDtype('u8')), [3, 253, 0, 2, 255, 0, 0, 0], `${from} -> u8`);
    assert.equal(nums(x.toDtype('u32')), [3, 4294967293, 256, 258, 4294967295, 0, 0, 0], `${from} -> u32`);
    assert.equal(big(x.toDtype('i64')), [3n, -3n, 256n, 258n, -1n, 0n, 0n, 0n], `${from} -> i64`);
  }
  assert.equal(nums(Tensor.from([4294967301.9], { dtype: 'f64' }).toDtype('u32')), [5]);
  assert.equal(big(Tensor.from([2 ** 60, -(2 ** 62)], { dtype: 'f64' }).toDtype('i64')), [2n ** 60n, -(2n ** 62n)]);
});

test('narrowing float casts round to nearest even', () => {
  // f64 -> f32: 1 + 2^-24 is a tie -> 1; 1 + 3 * 2^-24 -> 1 + 2^-22
  assert.equal(nums(Tensor.from([1 + 2 ** -24, 1 + 3 * 2 ** -24, 1e39], { dtype: 'f64' }).toDtype('f32')), [
    1,
    1 + 2 ** -22,
    Infinity,
  ]);
  // f32 -> f16: 65519 -> 65504, 65520 is the tie with 65536 (inf) -> inf; 2^-25 ties to 0
  assert.equal(nums(Tensor.from([65519, 65520, 2 ** -25, 3 * 2 ** -25, 0.1], { dtype: 'f32' }).toDtype('f16')), [
    65504,
    Infinity,
    0,
    2 ** -23,
    0.0999755859375,
  ]);
  // f64 -> bf16 straight, not via a double rounding: 1 + 2^-8 + 2^-30 rounds up
  assert.equal(
    nums(Tensor.from([1 + 2 ** -8, 1 + 2 ** -8 + 2 ** -30, 1 + 3 * 2 ** -8], { dtype: 'f64' }).toDtype('bf16')),
    [1, 1 + 2 ** -7, 1 + 2 ** -6],
  );
  // f16 -> bf16 loses mantissa bits; bf16 -> f16 can overflow
  assert.equal(nums(Tensor.from([1 + 2 ** -10, 1 + 3 * 2 ** -9], { dtype: 'f16' }).toDtype('bf16')), [1, 1 + 2 ** -7]);
  assert.equal(nums(Tensor.from([1e5, 1e-10], { dtype: 'bf16' }).toDtype('f16')), [Infinity, 0]);
  const nan = Tensor.from([NaN], { dtype: 'f32' });
  for (const to of ['f64', 'f16', 'bf16'] as const) assert.ok(Number.isNaN(nums(nan.toDtype(to))[0]!), to);
});

test('integer to float and integer to integer', () => {
  assert.equal(nums(Tensor.from([4294967295, 16777217], { dtype: 'u32' }).toDtype('f32')), [4294967296, 16777216]);
  assert.equal(nums(Tensor.from([4294967295, 2049], { dtype: 'u32' }).toDtype('f16')), [Infinity, 2048]);
  assert.equal(nums(Tensor.from([257, 4294967295], { dtype: 'u32' }).toDtype('u8')), [1, 255]);
  assert.equal(nums(Tensor.from([255], { dtype: 'u8' }).toDtype('u32')), [255]);
  const x = Tensor.from(BigInt64Array.from([2n ** 40n + 5n, -1n, 2n ** 53n + 1n, -(2n ** 63n)]));
  assert.equal(nums(x.toDtype('u8')), [5, 255, 1, 0]);
  assert.equal(nums(x.toDtype('u32')), [5, 4294967295, 1, 0]);
  assert.equal(nums(x.toDtype('f64')), [2 ** 40 + 5, -1, 2 ** 53, -(2 ** 63)]);
  assert.equal(nums(x.toDtype('f32')), [Math.fround(2 ** 40), -1, 2 ** 53, -(2 ** 63)]);
  assert.equal(big(Tensor.from([4294967295], { dtype: 'u32' }).toDtype('i64')), [4294967295n]);
});

test('same dtype is a view with the same values (i64 exact)', () => {
  const x = Tensor.from(BigInt64Array.from([2n ** 62n + 3n, -7n]));
  const y = x.toDtype('i64');
  assert.is.not(y, x);
  assert.is(y.storage, x.storage);
  assert.equal(big(y), [2n ** 62n + 3n, -7n]);
});

test('round trips: widening is exact, narrowing then widening is idempotent', () => {
  for (const h of ['f16', 'bf16'] as const) {
    const x = randT([50], h, -1000, 1000);
    assert.equal(nums(x.toDtype('f32').toDtype(h)), nums(x), `${h} -> f32 -> ${h}`);
    assert.equal(nums(x.toDtype('f64').toDtype(h)), nums(x), `${h} -> f64 -> ${h}`);
  }
  const f = randT([50], 'f64', -1e4, 1e4);
  const once = nums(f.toDtype('f16'));
  assert.equal(nums(f.toDtype('f16').toDtype('f64').toDtype('f16')), once);
  const ints = randInts([40], 1000, 'i64');
  assert.equal(nums(ints.toDtype('f64').toDtype('i64')), nums(ints));
});

test('non-contiguous and empty inputs', () => {
  for (const kind of LAYOUTS) {
    for (const to of DTYPES) {
      const t = randT([3, 5], 'f32', -300, 300);
      const { x, ref } = withLayout(t, kind);
      const y = x.toDtype(to);
      if (to !== 'f32') assert.ok(y.isContiguous(), `${kind} -> ${to} contiguous`);
      assert.equal(y.toNestedSync(), ref.toDtype(to).toNestedSync(), `${kind} -> ${to}`);
    }
    const bi = withLayout(randInts([3, 4], 1000, 'i64'), kind);
    assert.equal(bi.x.toDtype('u8').toNestedSync(), bi.ref.toDtype('u8').toNestedSync(), `i64 ${kind}`);
  }
  assert.equal(Tensor.zeros([0, 2]).toDtype('f16').shape, [0, 2]);
  assert.equal(Tensor.from(3.5).toDtype('u8').itemSync(), 3);
});

test('errors: unknown dtype, disposed tensor', () => {
  const x = Tensor.from([1, 2]);
  assert.throws(
    () => x.toDtype('f8' as DType),
    (e: unknown) => e instanceof TensorError && /toDtype: unknown dtype 'f8'/.test((e as Error).message),
  );
  x.dispose();
  assert.throws(
    () => x.toDtype('f64'),
    (e: unknown) => e instanceof TensorError && /toDtype: .* after dispose/.test((e as Error).message),
  );
});

test.run();
