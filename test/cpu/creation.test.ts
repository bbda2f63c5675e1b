// Creation ops on the CPU: from (typed arrays, nested arrays, numbers), zeros/ones/full, arange,
// eye, rand/randn (seeded), zerosLike/onesLike, with their errors.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { Tensor, ShapeError, DTypeError, TensorError, DTYPES } from '../../src/index.ts';
import { nums } from '../helpers.ts';

const throwsWith = (fn: () => unknown, cls: Function, re: RegExp) =>
  assert.throws(fn, (e: unknown) => e instanceof cls && re.test((e as Error).message));

test('from typed arrays: the dtype follows the array, data is copied', () => {
  const cases: [ArrayLike<number> | BigInt64Array, string][] = [
    [new Float32Array([1, 2]), 'f32'],
    [new Float64Array([1, 2]), 'f64'],
    [new Uint8Array([1, 2]), 'u8'],
    [new Uint32Array([1, 2]), 'u32'],
    [BigInt64Array.from([1n, 2n]), 'i64'],
    [new Int32Array([1, 2]), 'i64'],
  ];
  for (const [arr, dtype] of cases) {
    const t = Tensor.from(arr);
    assert.is(t.dtype, dtype);
    assert.equal(t.shape, [2]);
    assert.equal(nums(t), [1, 2]);
  }
  const src = new Float32Array([1, 2, 3, 4]);
  const t = Tensor.from(src, { shape: [2, 2] });
  src[0] = 99;
  assert.equal(
    t.toNestedSync(),
    [
      [1, 2],
      [3, 4],
    ],
    "a copy, not a view of the caller's array",
  );
  assert.equal(nums(Tensor.from(new Int32Array([-5, 7]))), [-5, 7]);
  assert.equal(Array.from(Tensor.from(BigInt64Array.from([2n ** 62n + 1n])).toArraySync() as BigInt64Array), [
    2n ** 62n + 1n,
  ]);
  // raw f16 bits in a Uint16Array are taken as bits
  assert.equal(nums(Tensor.from(new Uint16Array([0x3c00, 0xc000]), { dtype: 'f16' })), [1, -2]);
  assert.equal(nums(Tensor.from(new Uint16Array([0x3f80]), { dtype: 'bf16' })), [1]);
  // an explicit dtype converts (rounding per the dtype)
  assert.equal(nums(Tensor.from(new Float64Array([0.1, -1.5]), { dtype: 'f16' })), [0.0999755859375, -1.5]);
  assert.equal(nums(Tensor.from(new Float32Array([1, 255]), { dtype: 'u8' })), [1, 255]);
  assert.equal(nums(Tensor.from(BigInt64Array.from([258n]), { dtype: 'u32' })), [258]);
  throwsWith(
    () => Tensor.from(new Float32Array(5), { shape: [2, 2] }),
    ShapeError,
    /^from: shape \[2, 2\] does not hold 5 values/,
  );
  throwsWith(() => Tensor.from(new Float32Array(4), { shape: [-2, -2] }), ShapeError, /^from: invalid shape/);
});

test('from nested arrays and numbers', () => {
  const t = Tensor.from([[[1, 2]], [[3, 4]]]);
  assert.equal(t.shape, [2, 1, 2]);
  assert.is(t.dtype, 'f32');
  assert.equal(
    Tensor.from(
      [
        [1, 2],
        [3, 4],
      ],
      { shape: [4] },
    ).shape,
    [4],
  );
  assert.equal(Tensor.from([]).shape, [0]);
  const s = Tensor.from(2.5);
  assert.equal(s.shape, []);
  assert.is(s.itemSync(), 2.5);
  assert.is(Tensor.from(200, { dtype: 'u8' }).itemSync(), 200);
  assert.is(Tensor.from(0.1).itemSync(), Math.fround(0.1));
  for (const dtype of DTYPES) assert.equal(nums(Tensor.from([[0, 3]], { dtype })), [0, 3], dtype);
  throwsWith(() => Tensor.from([[1, 2], [3]]), ShapeError, /^from: nested array is ragged/);
  throwsWith(() => Tensor.from([[1, 2], 3] as unknown as number[][]), ShapeError, /^from: nested array is ragged/);
  throwsWith(
    () => Tensor.from([1, 2, 3], { shape: [2, 2] }),
    ShapeError,
    /^from: shape \[2, 2\] does not hold 3 values/,
  );
  throwsWith(() => Tensor.from([1], { dtype: 'f8' as 'f32' }), TensorError, /^from: unknown dtype .*'f8'/);
});

test('zeros, ones, full, zerosLike, onesLike in every dtype', () => {
  for (const dtype of DTYPES) {
    assert.equal(nums(Tensor.zeros([2, 2], { dtype })), [0, 0, 0, 0], dtype);
    assert.equal(nums(Tensor.ones([3], { dtype })), [1, 1, 1], dtype);
    assert.equal(nums(Tensor.full([2], 5, { dtype })), [5, 5], dtype);
    const x = Tensor.full([1, 2], 3, { dtype });
    assert.is(x.zerosLike().dtype, dtype);
    assert.equal(x.onesLike().shape, [1, 2]);
    assert.equal(nums(x.onesLike()), [1, 1]);
  }
  assert.equal(nums(Tensor.full([2], 0.1, { dtype: 'bf16' })), [0.10009765625, 0.10009765625]);
  assert.equal(nums(Tensor.full([1], 2 ** 32 - 1, { dtype: 'u32' })), [4294967295]);
  assert.equal(Tensor.zeros([]).shape, []);
  assert.equal(Tensor.zeros([]).numel, 1);
  assert.equal(Tensor.zeros([3, 0]).numel, 0);
  throwsWith(() => Tensor.zeros([2, -1]), ShapeError, /^zeros: invalid shape \[2, -1\]/);
  throwsWith(() => Tensor.ones([1.5]), ShapeError, /^ones: invalid shape \[1.5\]/);
  throwsWith(() => Tensor.full([2], 1, { dtype: 'q4' as 'f32' }), TensorError, /^full: unknown dtype .*'q4'/);
});

test('arange and eye', () => {
  assert.equal(nums(Tensor.arange(4)), [0, 1, 2, 3]);
  assert.equal(nums(Tensor.arange(2, 5)), [2, 3, 4]);
  assert.equal(nums(Tensor.arange(0, 1, 0.25, { dtype: 'f64' })), [0, 0.25, 0.5, 0.75]);
  assert.equal(nums(Tensor.arange(5, 0, -2)), [5, 3, 1]);
  assert.equal(Tensor.arange(3, 3).shape, [0]);
  assert.equal(Tensor.arange(3, 0).shape, [0]);
  assert.equal(nums(Tensor.arange(0, 1, 0.3, { dtype: 'f64' })).length, 4); // ceil(1 / 0.3)
  assert.is(Tensor.arange(3, undefined, 1, { dtype: 'i64' }).dtype, 'i64');
  throwsWith(
    () => Tensor.arange(0, 5, 0),
    RangeError,
    /^arange: need finite start\/end and a nonzero step, got \(0, 5, 0\)/,
  );
  throwsWith(() => Tensor.arange(0, Infinity), RangeError, /^arange:/);
  assert.equal(Tensor.eye(3).toNestedSync(), [
    [1, 0, 0],
    [0, 1, 0],
    [0, 0, 1],
  ]);
  assert.equal(Tensor.eye(0).shape, [0, 0]);
  assert.is(Tensor.eye(2, { dtype: 'u8' }).dtype, 'u8');
  throwsWith(() => Tensor.eye(-1), ShapeError, /^eye: invalid shape \[-1, -1\]/);
});

test('rand: seeded, in [0, 1), differs across seeds', () => {
  const a = nums(Tensor.rand([1000], { seed: 42 }));
  assert.equal(nums(Tensor.rand([1000], { seed: 42 })), a, 'same seed, same values');
  assert.not.equal(nums(Tensor.rand([1000], { seed: 43 })), a);
  assert.equal(nums(Tensor.rand([10, 100], { seed: 42 })), a, 'element i depends on (seed, i) only');
  for (const dtype of ['f32', 'f64', 'f16', 'bf16'] as const) {
    const v = nums(Tensor.rand([20000], { seed: 7, dtype }));
    assert.ok(
      v.every((x) => x >= 0 && x < 1),
      `${dtype} in [0, 1)`,
    );
    const mean = v.reduce((s, x) => s + x, 0) / v.length;
    assert.ok(Math.abs(mean - 0.5) < 0.01, `${dtype} mean ${mean}`);
    assert.ok(new Set(v).size > (dtype === 'bf16' ? 100 : 1000), `${dtype} not constant`);
  }
  assert.not.equal(nums(Tensor.rand([16])), nums(Tensor.rand([16])), 'no seed: fresh values');
  throwsWith(
    () => Tensor.rand([2], { dtype: 'u8' }),
    DTypeError,
    /^rand: dtype u8 is not a float dtype \(shape \[2\]\)/,
  );
  throwsWith(() => Tensor.rand([-1]), ShapeError, /^rand: invalid shape/);
});

test('randn: seeded, mean about 0 and std about 1 on 10^5 samples', () => {
  const v = nums(Tensor.randn([100000], { seed: 3, dtype: 'f64' }));
  assert.equal(nums(Tensor.randn([100000], { seed: 3, dtype: 'f64' })).slice(0, 100), v.slice(0, 100));
  const mean = v.reduce((s, x) => s + x, 0) / v.length;
  const std = Math.sqrt(v.reduce((s, x) => s + (x - mean) ** 2, 0) / v.length);
  assert.ok(Math.abs(mean) < 0.02, `mean ${mean}`);
  assert.ok(Math.abs(std - 1) < 0.02, `std ${std}`);
  const within1 = v.filter((x) => Math.abs(x) < 1).length / v.length;
  assert.ok(Math.abs(within1 - 0.6827) < 0.01, `P(|x| < 1) = ${within1}`);
  assert.equal(Tensor.randn([3], { dtype: 'bf16' }).dtype, 'bf16');
  assert.equal(nums(Tensor.randn([5], { seed: 1 })).length, 5, 'odd counts');
  throwsWith(() => Tensor.randn([2], { dtype: 'i64' }), DTypeError, /^randn: dtype i64 is not a float dtype/);
});

test.run();
