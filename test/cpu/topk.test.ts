// topk on the CPU: known values, PyTorch's semantics (largest and smallest, values in order,
// NaN the largest, ties by the lower index), the first k of the stable sort for every dtype and
// dim, non-contiguous inputs, k = 0 / 1 / n, the 0-d and empty cases, and the errors.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { Tensor, type DType } from '../../src/index.ts';
import { ShapeError, TensorError } from '../../src/core/errors.ts';
import { LAYOUTS, nums, randInts, randT, withLayout, throwsWith } from '../helpers.ts';

const ALL: DType[] = ['f32', 'f64', 'f16', 'bf16', 'u8', 'u32', 'i64'];
async function bits(t: Tensor): Promise<string[]> {
  return Array.from((await t.toRawArray()) as ArrayLike<number | bigint>, (v) => String(v));
}

test('topk: known values, largest and smallest, in order, u32 indices', () => {
  const x = Tensor.from([3, 1, 4, 1, 5, 9, 2, 6]);
  const t = x.topk(3);
  assert.equal(nums(t.values), [9, 6, 5]);
  assert.equal(nums(t.indices), [5, 7, 4]);
  assert.is(t.indices.dtype, 'u32');
  assert.is(t.values.dtype, 'f32');
  const s = x.topk(3, { largest: false });
  assert.equal(nums(s.values), [1, 1, 2]);
  assert.equal(nums(s.indices), [1, 3, 6]);
  const m = Tensor.from([
    [1, 5, 3],
    [7, 2, 8],
  ]);
  assert.equal(m.topk(2).values.toNestedSync(), [
    [5, 3],
    [8, 7],
  ]);
  assert.equal(m.topk(2).indices.toNestedSync(), [
    [1, 2],
    [2, 0],
  ]);
  assert.equal(m.topk(1, { dim: 0 }).values.toNestedSync(), [[7, 5, 8]]);
  assert.equal(m.topk(1, { dim: 0, largest: false }).indices.toNestedSync(), [[0, 1, 0]]);
});

test('topk: ties go to the lower index; NaN counts as the largest; -0 ties with +0', () => {
  const x = Tensor.from([2, 5, 2, 5, 2]);
  assert.equal(nums(x.topk(3).indices), [1, 3, 0]);
  assert.equal(nums(x.topk(4, { largest: false }).indices), [0, 2, 4, 1]);
  for (const dt of ['f32', 'f64', 'f16', 'bf16'] as DType[]) {
    const y = Tensor.from([1, NaN, Infinity, -Infinity, NaN, 0], { dtype: dt });
    assert.equal(nums(y.topk(3).indices), [1, 4, 2], `${dt} largest: the NaNs first, in index order`);
    assert.equal(nums(y.topk(3, { largest: false }).indices), [3, 5, 0], `${dt} smallest: no NaN`);
    assert.equal(nums(y.topk(6, { largest: false }).indices), [3, 5, 0, 2, 1, 4], `${dt} smallest, all: the NaNs last`);
    const z = Tensor.from([0, -0, 1], { dtype: dt });
    assert.equal(nums(z.topk(2, { largest: false }).indices), [0, 1], `${dt} -0 and +0 in index order`);
  }
});

test('topk: the first k of the stable sort, every dtype, every dim, values with their bits', async () => {
  for (const dt of ALL) {
    // few distinct values: many ties
    const r = randInts([3, 7, 5], 6, 'f64');
    const x =
      dt === 'i64' ? r.affine(1, -3).toDtype('i64') : r.affine(dt === 'u8' || dt === 'u32' ? 1 : 0.5, 0).toDtype(dt);
    for (const dim of [0, 1, 2]) {
      const n = x.shape[dim]!;
      for (const largest of [true, false]) {
        for (const k of [0, 1, 2, n]) {
          const got = x.topk(k, { dim, largest });
          const s = x.sort(dim, { descending: largest });
          const want = { values: s.values.narrow(dim, 0, k), indices: s.indices.narrow(dim, 0, k) };
          const what = `${dt} dim ${dim} k ${k}${largest ? '' : ' smallest'}`;
          assert.equal(got.values.shape, want.values.shape, `${what}: shape`);
          assert.equal(await bits(got.indices), await bits(want.indices), `${what}: indices`);
          assert.equal(await bits(got.values), await bits(want.values), `${what}: values`);
        }
      }
    }
  }
});

test('topk: i64 compared exactly beyond 2^53', async () => {
  const big = 2n ** 60n;
  const x = Tensor.from(new BigInt64Array([big + 1n, big, -big, big + 2n, -1n]));
  assert.equal(nums(x.topk(2).indices), [3, 0]);
  assert.equal(await bits(x.topk(2).values), [String(big + 2n), String(big + 1n)]);
  assert.equal(nums(x.topk(2, { largest: false }).indices), [2, 4]);
});

test('topk: non-contiguous inputs give the contiguous result', async () => {
  for (const dt of ['f32', 'bf16', 'i64', 'u8'] as DType[]) {
    const t = randT([5, 6], 'f64', -3, 3).toDtype(dt);
    for (const kind of LAYOUTS) {
      const { x, ref } = withLayout(t, kind);
      for (const dim of [0, 1]) {
        const a = x.topk(3, { dim }),
          b = ref.topk(3, { dim });
        assert.equal(await bits(a.values), await bits(b.values), `${dt} ${kind} ${dim} values`);
        assert.equal(await bits(a.indices), await bits(b.indices), `${dt} ${kind} ${dim} indices`);
      }
    }
  }
});

test('topk: sorted: false is accepted (the results are in order anyway); empty and 0-d', () => {
  const x = Tensor.from([3, 1, 2]);
  assert.equal(nums(x.topk(2, { sorted: false }).values), [3, 2]);
  assert.equal(Tensor.zeros([0, 4]).topk(2).values.shape, [0, 2]);
  assert.equal(Tensor.zeros([3, 4]).topk(0).indices.shape, [3, 0]);
  assert.equal(Tensor.zeros([3, 0]).topk(0).values.shape, [3, 0]);
  const s = Tensor.from(4).topk(1);
  assert.equal(s.values.shape, []);
  assert.equal(s.values.itemSync(), 4);
  assert.equal(s.indices.itemSync(), 0);
});

test('topk: errors name the op, k, the dim and the tensor', () => {
  throwsWith(() => randT([2, 3]).topk(4), ShapeError, 'topk', 'k = 4', 'dim 1 of size 3', '[2, 3] f32');
  throwsWith(() => randT([2, 3]).topk(3, { dim: 0 }), ShapeError, 'topk', 'dim 0 of size 2');
  throwsWith(() => randT([2, 3]).topk(-1), TensorError, 'topk', 'k must be an integer >= 0', '-1');
  throwsWith(() => randT([2, 3]).topk(1.5), TensorError, 'topk', '1.5');
  throwsWith(() => randT([2, 3]).topk(1, { dim: 2 }), ShapeError, 'topk', 'dim 2', '[2, 3] f32');
  throwsWith(() => randT([2, 3]).topk(1, { largest: 'yes' as never }), TensorError, 'topk', 'largest', 'yes');
  throwsWith(() => randT([2, 3]).topk(1, { sorted: 1 as never }), TensorError, 'topk', 'sorted');
  throwsWith(() => Tensor.from(1).topk(0), ShapeError, 'topk', '0-d', 'k must be 1');
  throwsWith(() => Tensor.from(1).topk(2), ShapeError, 'topk', 'k = 2');
});

test.run();
