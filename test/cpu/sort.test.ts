// argsort and sort: known values, stability, NaN placement, exact i64 keys, every dtype,
// non-contiguous inputs, any dim, empty / size-1 / 0-d, and errors.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { Tensor, type DType } from '../../src/index.ts';
import { ShapeError, TensorError } from '../../src/core/errors.ts';
import { LAYOUTS, nums, randInts, randT, withLayout, throwsWith } from '../helpers.ts';

const ALL: DType[] = ['f32', 'f64', 'f16', 'bf16', 'u8', 'u32', 'i64'];
async function bits(t: Tensor): Promise<string[]> {
  return Array.from((await t.toRawArray()) as ArrayLike<number | bigint>, (v) => String(v));
}
/** few distinct values, so rows have ties */
function tiesRand(shape: number[], dtype: DType): Tensor {
  const r = randInts(shape, 5, 'f64');
  return dtype === 'i64' ? r.toDtype('i64') : r.affine(dtype === 'u8' || dtype === 'u32' ? 1 : 0.5, 0).toDtype(dtype);
}

test('argsort / sort: known values', () => {
  const x = Tensor.from([3, 1, 2]);
  assert.equal(nums(x.argsort()), [1, 2, 0]);
  assert.equal(nums(x.argsort(0, { descending: true })), [0, 2, 1]);
  assert.is(x.argsort().dtype, 'u32');
  const s = x.sort();
  assert.equal(nums(s.values), [1, 2, 3]);
  assert.equal(nums(s.indices), [1, 2, 0]);
  assert.is(s.values.dtype, 'f32');
  assert.is(s.indices.dtype, 'u32');
  const m = Tensor.from([
    [3, 1],
    [1, 2],
    [2, 0],
  ]);
  assert.equal(m.argsort(0).toNestedSync(), [
    [1, 2],
    [2, 0],
    [0, 1],
  ]);
  assert.equal(m.sort(0).values.toNestedSync(), [
    [1, 0],
    [2, 1],
    [3, 2],
  ]);
  assert.equal(m.sort(-1, { descending: true }).values.toNestedSync(), [
    [3, 1],
    [2, 1],
    [2, 0],
  ]);
  assert.equal(m.sort(-1, { descending: true }).indices.toNestedSync(), [
    [0, 1],
    [1, 0],
    [0, 1],
  ]);
});

test('argsort: stable in both directions; -0 equals 0', () => {
  const x = Tensor.from([2, 1, 2, 1, 2]);
  assert.equal(nums(x.argsort()), [1, 3, 0, 2, 4]);
  assert.equal(nums(x.argsort(-1, { descending: true })), [0, 2, 4, 1, 3]);
  assert.equal(nums(Tensor.from([0, -0, 0], { dtype: 'f64' }).argsort()), [0, 1, 2]);
  assert.equal(nums(Tensor.from([0, -0, 0], { dtype: 'f64' }).argsort(0, { descending: true })), [0, 1, 2]);
});

test('argsort: NaN last ascending, first descending; infinities in order', () => {
  for (const dt of ['f32', 'f64', 'f16', 'bf16'] as DType[]) {
    const x = Tensor.from([NaN, 1, NaN, 0, Infinity, -Infinity], { dtype: dt });
    assert.equal(nums(x.argsort()), [5, 3, 1, 4, 0, 2], dt);
    assert.equal(nums(x.argsort(0, { descending: true })), [0, 2, 4, 1, 3, 5], dt);
    const v = nums(x.sort().values);
    assert.equal(v.slice(0, 4), [-Infinity, 0, 1, Infinity], dt);
    assert.ok(Number.isNaN(v[4]!) && Number.isNaN(v[5]!), dt);
  }
});

test('argsort / sort: i64 keys compared exactly beyond 2^53; values keep their bits', async () => {
  const big = 2n ** 60n;
  const x = Tensor.from(new BigInt64Array([big + 1n, big, -big, big + 2n, -1n]));
  assert.equal(nums(x.argsort()), [2, 4, 1, 0, 3]);
  assert.equal(nums(x.argsort(0, { descending: true })), [3, 0, 1, 4, 2]);
  assert.equal(await bits(x.sort().values), [-big, -1n, big, big + 1n, big + 2n].map(String));
});

test('argsort / sort: every dtype, every dim of a 3-d tensor: permutation, sorted, stable, values = x[indices]', async () => {
  for (const dt of ALL) {
    const x = tiesRand([3, 4, 6], dt);
    const xb = await bits(x),
      xv = nums(x);
    for (const dim of [0, 1, 2]) {
      for (const descending of [false, true]) {
        const { values, indices } = x.sort(dim, { descending });
        assert.equal(await bits(x.argsort(dim, { descending })), await bits(indices), `${dt} argsort == sort.indices`);
        assert.equal(await bits(values), await bits(x.gather(indices, dim)), `${dt} values = gather`);
        const iv = nums(indices),
          vb = await bits(values);
        const st = [24, 6, 1][dim]!,
          n = x.shape[dim]!;
        for (let p = 0; p < iv.length; p++) {
          const k = Math.floor(p / st) % n,
            base = p - k * st;
          assert.is(vb[p], xb[base + iv[p]! * st], `${dt} dim ${dim} value at ${p}`);
          if (k === 0) {
            const seen = new Set<number>();
            for (let j = 0; j < n; j++) seen.add(iv[base + j * st]!);
            assert.is(seen.size, n, `${dt} permutation`);
            continue;
          }
          const prev = xv[base + iv[p - st]! * st]!,
            cur = xv[base + iv[p]! * st]!;
          assert.ok(descending ? prev >= cur : prev <= cur, `${dt} dim ${dim} order at ${p}`);
          if (prev === cur) assert.ok(iv[p - st]! < iv[p]!, `${dt} dim ${dim} stable at ${p}`);
        }
      }
    }
  }
});

test('argsort / sort: non-contiguous inputs give the contiguous result', async () => {
  for (const dt of ['f32', 'bf16', 'i64', 'u8'] as DType[]) {
    const t = tiesRand([4, 5], dt);
    for (const kind of LAYOUTS) {
      const { x, ref } = withLayout(t, kind);
      for (const dim of [0, 1]) {
        assert.equal(await bits(x.argsort(dim)), await bits(ref.argsort(dim)), `${dt} ${kind} ${dim}`);
        const a = x.sort(dim, { descending: true }),
          b = ref.sort(dim, { descending: true });
        assert.equal(await bits(a.values), await bits(b.values), `${dt} ${kind} values`);
        assert.equal(await bits(a.indices), await bits(b.indices), `${dt} ${kind} indices`);
      }
    }
  }
});

test('argsort / sort: random floats match a reference sort', () => {
  const x = randT([3, 50], 'f64', -100, 100);
  const xv = nums(x);
  const want: number[] = [];
  for (let r = 0; r < 3; r++) want.push(...xv.slice(r * 50, r * 50 + 50).sort((a, b) => a - b));
  assert.equal(nums(x.sort(1).values), want);
});

test('argsort / sort: empty, size-1 and 0-d', () => {
  assert.equal(Tensor.zeros([2, 0]).argsort(-1).shape, [2, 0]);
  assert.equal(Tensor.zeros([0, 3]).sort(0).values.shape, [0, 3]);
  assert.equal(Tensor.zeros([0, 3]).argsort(-1).shape, [0, 3]);
  assert.equal(nums(randT([3, 1]).argsort(-1)), [0, 0, 0]);
  const s = Tensor.from(4).sort();
  assert.equal(s.values.shape, []);
  assert.equal(s.values.itemSync(), 4);
  assert.equal(s.indices.itemSync(), 0);
});

test('argsort / sort: errors', () => {
  throwsWith(() => randT([2, 3]).argsort(2), ShapeError, 'argsort', 'dim 2', '[2, 3] f32');
  throwsWith(() => randT([2, 3], 'f16').sort(-3), ShapeError, 'sort', 'dim -3', '[2, 3] f16');
  throwsWith(() => Tensor.from(1).argsort(1), ShapeError, 'argsort', 'dim 1');
  throwsWith(() => randT([2]).sort(0, { descending: 'yes' as never }), TensorError, 'sort', 'descending', 'yes');
});

test.run();
