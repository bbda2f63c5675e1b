// Reductions on the CPU reference: hand-worked values over every dim set, keepdim, dtypes,
// half-type accumulation, NaN rules, empty extents, layouts and errors.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { Tensor, DTypeError, ShapeError, type DType } from '../../src/index.ts';
import { LAYOUTS, assertClose, nums, randInts, randT, withLayout } from '../helpers.ts';

const throwsWith = (fn: () => unknown, cls: Function, re: RegExp) =>
  assert.throws(fn, (e: unknown) => e instanceof cls && re.test((e as Error).message));
const big = (t: Tensor) => Array.from(t.toArraySync() as BigInt64Array);

// x[i][j][k] = 12 i + 4 j + k, shape [2, 3, 4]
const cube = (dtype: DType = 'f32') => Tensor.arange(24, undefined, 1, { dtype }).reshape([2, 3, 4]);

test('sum, mean, min, max over every dim set, hand-worked', () => {
  for (const dtype of ['f32', 'f64', 'f16', 'bf16', 'u32', 'i64'] as const) {
    const x = cube(dtype);
    assert.equal(x.sum().toNestedSync(), 276, `sum all ${dtype}`);
    assert.equal(x.sum().shape, []);
    assert.equal(
      x.sum(0).toNestedSync(),
      [
        [12, 14, 16, 18],
        [20, 22, 24, 26],
        [28, 30, 32, 34],
      ],
      dtype,
    );
    assert.equal(
      x.sum(1).toNestedSync(),
      [
        [12, 15, 18, 21],
        [48, 51, 54, 57],
      ],
      dtype,
    );
    assert.equal(
      x.sum(-1).toNestedSync(),
      [
        [6, 22, 38],
        [54, 70, 86],
      ],
      dtype,
    );
    assert.equal(x.sum([0, 2]).toNestedSync(), [60, 92, 124], dtype);
    assert.equal(x.sum([2, 0]).toNestedSync(), [60, 92, 124], 'dim order does not matter');
    assert.equal(x.max([0, 1]).toNestedSync(), [20, 21, 22, 23], dtype);
    assert.equal(
      x.min(-2).toNestedSync(),
      [
        [0, 1, 2, 3],
        [12, 13, 14, 15],
      ],
      dtype,
    );
    assert.equal(x.max().toNestedSync(), 23);
    assert.equal(x.min().toNestedSync(), 0);
    assert.equal(x.sum(1).dtype, dtype);
    assert.equal(x.max(1).dtype, dtype);
  }
  for (const dtype of ['f32', 'f64', 'f16', 'bf16'] as const) {
    const x = cube(dtype);
    assert.equal(x.mean().toNestedSync(), 11.5, dtype);
    assert.equal(
      x.mean(1).toNestedSync(),
      [
        [4, 5, 6, 7],
        [16, 17, 18, 19],
      ],
      dtype,
    );
    assert.equal(x.mean([0, 2]).toNestedSync(), [7.5, 11.5, 15.5], dtype);
    assert.equal(x.mean(0).dtype, dtype);
  }
  assert.equal(
    Tensor.from([[3, 1, 2]], { dtype: 'u8' })
      .max(1)
      .toNestedSync(),
    [3],
  );
  assert.equal(
    Tensor.from([[3, 1, 2]], { dtype: 'u8' })
      .sum(1)
      .toNestedSync(),
    [6],
  );
});

test('keepdim keeps reduced dims as size 1', () => {
  const x = cube();
  assert.equal(x.sum(1, true).shape, [2, 1, 4]);
  assert.equal(x.sum([0, 2], true).shape, [1, 3, 1]);
  assert.equal(x.sum([0, 2], true).toNestedSync(), [[[60], [92], [124]]]);
  assert.equal(x.max(undefined, true).shape, [1, 1, 1]);
  assert.equal(x.argmax(2, true).shape, [2, 3, 1]);
  assert.equal(x.mean(-1, true).toNestedSync(), [
    [[1.5], [5.5], [9.5]],
    [[13.5], [17.5], [21.5]],
  ]);
});

test('argmin/argmax: u32, the first extreme, NaN counts as the extreme', () => {
  const x = Tensor.from([
    [1, 5, 5, 0],
    [2, 2, -1, -1],
    [7, 7, 7, 7],
  ]);
  const am = x.argmax(1);
  assert.is(am.dtype, 'u32');
  assert.equal(nums(am), [1, 0, 0]);
  assert.equal(nums(x.argmin(1)), [3, 2, 0]);
  assert.equal(nums(x.argmax(0)), [2, 2, 2, 2]);
  assert.equal(nums(x.argmin(-2)), [0, 1, 1, 1]);
  const n = Tensor.from([
    [1, NaN, 3, NaN],
    [NaN, 0, 9, 1],
  ]);
  assert.equal(nums(n.argmax(1)), [1, 0]);
  assert.equal(nums(n.argmin(1)), [1, 0]);
  const p = 2n ** 53n;
  const b = Tensor.from(BigInt64Array.from([p, p + 1n, p, -p, -p - 1n, 3n]), { shape: [2, 3] });
  assert.equal(nums(b.argmax(1)), [1, 2]);
  assert.equal(nums(b.argmin(1)), [0, 1]);
  for (const dtype of ['f16', 'bf16', 'u8', 'u32'] as const) {
    assert.equal(nums(Tensor.from([[4, 9, 1, 9]], { dtype }).argmax(1)), [1], dtype);
    assert.equal(nums(Tensor.from([[4, 9, 1, 1]], { dtype }).argmin(-1)), [2], dtype);
  }
});

test('min/max propagate NaN; sum/mean too', () => {
  const x = Tensor.from(
    [
      [1, NaN, 3],
      [4, 5, 6],
    ],
    { dtype: 'f64' },
  );
  assertClose(nums(x.max(1)), [NaN, 6], 0, 0, 'max', true);
  assertClose(nums(x.min(1)), [NaN, 4], 0, 0, 'min', true);
  assertClose(nums(x.min(0)), [1, NaN, 3], 0, 0, 'min 0', true);
  assertClose(nums(x.sum(1)), [NaN, 15], 0, 0, 'sum', true);
  assertClose(nums(x.mean(1)), [NaN, 5], 0, 0, 'mean', true);
  assertClose(nums(Tensor.from([Infinity, 1, -Infinity]).sum()), [NaN], 0, 0, 'inf - inf', true);
  assert.equal(nums(Tensor.from([Infinity, 1]).sum()), [Infinity]);
  assert.equal(nums(Tensor.from([-Infinity, 1]).max()), [1]);
});

test('half types accumulate in f64 and round once', () => {
  // an f16 accumulator would stop at 2048 (2048 + 1 rounds back to 2048), a bf16 one at 256
  assert.equal(nums(Tensor.ones([4096], { dtype: 'f16' }).sum()), [4096]);
  assert.equal(nums(Tensor.ones([4096], { dtype: 'f16' }).mean()), [1]);
  assert.equal(nums(Tensor.ones([512], { dtype: 'bf16' }).sum()), [512]);
  // 2049 is a tie in f16: the exact sum rounds once to even
  assert.equal(nums(Tensor.ones([2049], { dtype: 'f16' }).sum()), [2048]);
  assert.equal(nums(Tensor.ones([2051], { dtype: 'f16' }).sum()), [2052]);
  // f32: 1 + 2^-24 * 4 rows; an f32 accumulator adding one by one would lose every 2^-24
  const v = [1, 2 ** -24, 2 ** -24, 2 ** -24, 2 ** -24];
  assert.equal(nums(Tensor.from(v, { dtype: 'f32' }).sum()), [1 + 2 ** -22]);
});

test('integer sums wrap in their dtype, i64 is exact', () => {
  assert.equal(nums(Tensor.from([200, 100, 1], { dtype: 'u8' }).sum()), [45]);
  assert.equal(nums(Tensor.from([4294967295, 2], { dtype: 'u32' }).sum()), [1]);
  const p = 2n ** 53n;
  assert.equal(big(Tensor.from(BigInt64Array.from([p, 1n, 1n])).sum()), [p + 2n]);
  assert.equal(big(Tensor.from(BigInt64Array.from([2n ** 63n - 1n, 1n])).sum()), [-(2n ** 63n)]);
  assert.equal(big(Tensor.from(BigInt64Array.from([p + 1n, p, -5n])).max()), [p + 1n]);
  assert.equal(big(Tensor.from(BigInt64Array.from([p + 1n, p, -5n])).min()), [-5n]);
});

test('empty extents: sum 0, mean NaN, min/max/argmin/argmax a ShapeError', () => {
  const e = Tensor.zeros([0, 3]);
  assert.equal(nums(e.sum(0)), [0, 0, 0]);
  assert.equal(e.sum(1).shape, [0]);
  assert.equal(nums(e.sum()), [0]);
  assertClose(nums(e.mean(0)), [NaN, NaN, NaN], 0, 0, 'mean', true);
  assert.equal(e.max(1).shape, [0]); // the reduced dim (3) is not empty
  assert.equal(nums(Tensor.zeros([0], { dtype: 'i64' }).sum()), [0]);
  throwsWith(
    () => e.max(0),
    ShapeError,
    /^max: cannot reduce over an empty extent \(dims \[0\] of shape \[0, 3\], f32\)/,
  );
  throwsWith(() => e.min(), ShapeError, /^min: cannot reduce over an empty extent/);
  throwsWith(() => e.argmax(0), ShapeError, /^argmax: cannot reduce over an empty extent/);
  throwsWith(() => e.argmin(-2), ShapeError, /^argmin:/);
});

test('0-d and size-1 tensors; an empty dims list reduces nothing', () => {
  const s = Tensor.from(5, { dtype: 'f64' });
  assert.equal(s.sum().shape, []);
  assert.is(s.sum().itemSync(), 5);
  assert.is(s.max().itemSync(), 5);
  const x = Tensor.from([
    [1, 2],
    [3, 4],
  ]);
  assert.equal(x.sum([]).toNestedSync(), [
    [1, 2],
    [3, 4],
  ]);
  assert.equal(x.max([], true).shape, [2, 2]);
  assert.equal(
    Tensor.from([[7]])
      .argmax(0)
      .toNestedSync(),
    [0],
  );
  assert.equal(
    Tensor.from([[7, 8]])
      .sum(0)
      .toNestedSync(),
    [7, 8],
  );
  assert.is(x.sumAll().itemSync(), 10);
});

test('identities on random data', () => {
  const x = randT([4, 5, 6], 'f64');
  assertClose(nums(x.sum([0, 1])), nums(x.sum(0).sum(0)), 1e-13, 1e-13, 'sum over two dims = nested sums');
  assertClose(nums(x.sum()), nums(x.sum(2).sum(1).sum(0)), 1e-13, 1e-13, 'sum all');
  assertClose(
    nums(x.mean(1)),
    nums(x.sum(1)).map((v) => v / 5),
    1e-15,
    1e-15,
    'mean = sum / n',
  );
  assert.equal(nums(x.max(2)), nums(x.neg().min(2).neg()), 'max = -min(-x)');
  const X = nums(x),
    am = nums(x.argmax(2)),
    mx = nums(x.max(2));
  for (let r = 0; r < 20; r++) {
    assert.is(X[r * 6 + am[r]!], mx[r], 'argmax points at the max');
    for (let k = 0; k < 6; k++) assert.ok(X[r * 6 + k]! <= mx[r]!);
  }
  const ints = randInts([3, 7], 50, 'i64');
  assert.equal(nums(ints.sum(1)), nums(ints.toDtype('f64').sum(1)));
});

test('every dtype and layout gives the contiguous answer', () => {
  for (const dtype of ['f32', 'f64', 'f16', 'bf16', 'u8', 'u32', 'i64'] as const) {
    for (const kind of LAYOUTS) {
      const t =
        dtype === 'u8' || dtype === 'u32' || dtype === 'i64' ? randInts([4, 6], 40, dtype) : randT([4, 6], dtype);
      const { x, ref } = withLayout(t, kind);
      for (const op of ['sum', 'min', 'max', 'argmin', 'argmax'] as const) {
        for (const d of [0, 1])
          assert.equal(x.reduce(op, d).toNestedSync(), ref.reduce(op, d).toNestedSync(), `${op} ${d} ${dtype} ${kind}`);
      }
      assert.equal(x.sum().toNestedSync(), ref.sum().toNestedSync());
      if (dtype[0] === 'f' || dtype === 'bf16')
        assert.equal(x.mean([0, 1]).toNestedSync(), ref.mean([0, 1]).toNestedSync());
    }
  }
});

test('errors name the op, the dims, the shape and the dtype', () => {
  const x = cube();
  throwsWith(() => x.sum(3), ShapeError, /^sum: dim 3 out of range for a tensor of rank 3/);
  throwsWith(() => x.max(-4), ShapeError, /^max: dim -4 out of range/);
  throwsWith(() => x.sum([0, -3]), ShapeError, /^sum: dim repeated in \[0, -3\] \(tensor \[2, 3, 4\] f32\)/);
  throwsWith(() => x.sum(1.5), ShapeError, /^sum: dim 1.5/);
  throwsWith(
    () => x.reduce('argmax', [0, 1]),
    ShapeError,
    /^argmax: needs exactly one dim, got \[0, 1\] \(tensor \[2, 3, 4\] f32\)/,
  );
  throwsWith(() => x.reduce('argmin'), ShapeError, /^argmin: needs exactly one dim \(tensor \[2, 3, 4\] f32\)/);
  for (const dtype of ['u8', 'u32', 'i64'] as const) {
    throwsWith(
      () => cube(dtype).mean(0),
      DTypeError,
      new RegExp(`^mean: dtype ${dtype} not supported \\(tensor \\[2, 3, 4\\] ${dtype}`),
    );
  }
  throwsWith(() => x.reduce('prod' as 'sum'), Error, /reduce: unknown op 'prod'/);
  throwsWith(() => x.sum('1' as unknown as number), TypeError, /sum: dims must be/);
  const gone = cube();
  gone.dispose();
  throwsWith(() => gone.sum(), Error, /sum: .* after dispose/);
});

test.run();
