// scatter, scatterAdd and indexAdd: known values (PyTorch's documented examples), duplicate ids,
// single rounding of the adds, every dtype, non-contiguous inputs, x left unchanged, errors.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { Tensor, type DType } from '../../src/index.ts';
import { DTypeError, IndexError, ShapeError } from '../../src/core/errors.ts';
import { LAYOUTS, assertClose, nums, randInts, randT, withLayout, throwsWith } from '../helpers.ts';

const ALL: DType[] = ['f32', 'f64', 'f16', 'bf16', 'u8', 'u32', 'i64'];
const IDS: DType[] = ['u8', 'u32', 'i64'];
const ids = (v: number[], dtype: DType = 'u32', shape?: number[]) => Tensor.from(v, { dtype, shape });
async function bits(t: Tensor): Promise<string[]> {
  return Array.from((await t.toRawArray()) as ArrayLike<number | bigint>, (v) => String(v));
}
function anyRand(shape: number[], dtype: DType): Tensor {
  if (dtype === 'u8') return randT(shape, 'u8', 0, 100);
  if (dtype === 'u32') return randT(shape, 'u32', 0, 2 ** 20);
  if (dtype === 'i64') {
    const r = randT(shape, 'f64', -1, 1).toArraySync() as Float64Array;
    return Tensor.from(
      BigInt64Array.from(r, (v) => BigInt(Math.round(v * 2 ** 40)) * 4099n + 1n),
      { shape },
    );
  }
  return randT(shape, dtype);
}

// ---- scatter ----------------------------------------------------------------------------------
test('scatter: PyTorch docs examples (dim 0 and dim 1), x unchanged', () => {
  const src = Tensor.arange(1, 11).reshape([2, 5]);
  for (const d of IDS) {
    const x = Tensor.zeros([3, 5]);
    const y = x.scatter(ids([0, 1, 2, 0], d, [1, 4]), src, 0);
    assert.equal(
      y.toNestedSync(),
      [
        [1, 0, 0, 4, 0],
        [0, 2, 0, 0, 0],
        [0, 0, 3, 0, 0],
      ],
      d,
    );
    assert.equal(
      x.toNestedSync(),
      [
        [0, 0, 0, 0, 0],
        [0, 0, 0, 0, 0],
        [0, 0, 0, 0, 0],
      ],
      'x unchanged',
    );
    const z = x.scatter(ids([0, 1, 2, 0, 1, 4], d, [2, 3]), src, 1);
    assert.equal(
      z.toNestedSync(),
      [
        [1, 2, 3, 0, 0],
        [6, 7, 0, 0, 8],
        [0, 0, 0, 0, 0],
      ],
      d,
    );
  }
});

test('scatter: duplicate ids, the last write in row-major order wins', () => {
  const x = Tensor.from([9, 9, 9, 9]);
  assert.equal(x.scatter(ids([1, 1, 2, 1]), Tensor.from([5, 6, 7, 8]), 0).toNestedSync(), [9, 8, 7, 9]);
  // 2-d: along dim 0 the rows of ids run in row-major order, so row 1 overwrites row 0
  const y = Tensor.zeros([2, 2]).scatter(
    ids([0, 0, 0, 0], 'u32', [2, 2]),
    Tensor.from([
      [1, 2],
      [3, 4],
    ]),
    0,
  );
  assert.equal(y.toNestedSync(), [
    [3, 4],
    [0, 0],
  ]);
});

test('scatter: every dtype exact; scatter of a gathered permutation rebuilds x', async () => {
  for (const dt of ALL) {
    const x = anyRand([4, 3], dt);
    // each column a permutation of the rows
    const perm = ids([2, 0, 3, 0, 3, 1, 1, 2, 0, 3, 1, 2], 'i64', [4, 3]);
    const g = x.gather(perm, 0);
    const back = Tensor.zeros([4, 3], { dtype: dt }).scatter(perm, g, 0);
    assert.equal(await bits(back), await bits(x), dt);
  }
});

test('scatter / scatterAdd: non-contiguous x, ids and src', async () => {
  for (const add of [false, true]) {
    const t = randT([5, 4], 'f64'),
      s = randT([5, 4], 'f64');
    const i = randInts([5, 4], 5, 'u32');
    const ref = add ? t.scatterAdd(i, s, 0) : t.scatter(i, s, 0);
    for (const kind of LAYOUTS) {
      const { x, ref: xr } = withLayout(t, kind);
      const { x: sx, ref: sr } = withLayout(s, kind);
      const { x: ix, ref: ir } = withLayout(i, kind);
      const got = add ? x.scatterAdd(ix, sx, 0) : x.scatter(ix, sx, 0);
      const want = kind === 'broadcast' ? (add ? xr.scatterAdd(ir, sr, 0) : xr.scatter(ir, sr, 0)) : ref;
      assert.equal(await bits(got), await bits(want), `${add ? 'scatterAdd' : 'scatter'} ${kind}`);
    }
  }
});

test('scatter: src larger than ids, ids smaller than x, empty ids', () => {
  const x = Tensor.zeros([2, 4]);
  const src = Tensor.from([
    [1, 2, 3],
    [4, 5, 6],
    [7, 8, 9],
  ]);
  assert.equal(x.scatter(ids([3, 1], 'u8', [1, 2]), src, 1).toNestedSync(), [
    [0, 2, 0, 1],
    [0, 0, 0, 0],
  ]);
  const x2 = Tensor.from([
    [1, 2],
    [3, 4],
  ]);
  assert.equal(x2.scatter(ids([], 'u32', [0, 2]), Tensor.zeros([1, 2]), 0).toNestedSync(), [
    [1, 2],
    [3, 4],
  ]);
});

// ---- scatterAdd -------------------------------------------------------------------------------
test('scatterAdd: PyTorch docs examples', () => {
  const src = Tensor.ones([2, 5]);
  const x = Tensor.zeros([3, 5]);
  assert.equal(x.scatterAdd(ids([0, 1, 2, 0, 0], 'i64', [1, 5]), src, 0).toNestedSync(), [
    [1, 0, 0, 1, 1],
    [0, 1, 0, 0, 0],
    [0, 0, 1, 0, 0],
  ]);
  assert.equal(x.scatterAdd(ids([0, 1, 2, 0, 0, 0, 1, 2, 2, 2], 'u8', [2, 5]), src, 0).toNestedSync(), [
    [2, 0, 0, 1, 1],
    [0, 2, 0, 0, 0],
    [0, 0, 2, 1, 1],
  ]);
  assert.equal(
    x.toNestedSync(),
    [
      [0, 0, 0, 0, 0],
      [0, 0, 0, 0, 0],
      [0, 0, 0, 0, 0],
    ],
    'x unchanged',
  );
});

test('scatterAdd: a histogram of random ids; adds onto x', () => {
  const i = randInts([200], 7, 'u32');
  const counts = new Array<number>(7).fill(0);
  for (const v of i.toArraySync()) counts[Number(v)]!++;
  const h = Tensor.full([7], 10, { dtype: 'u32' }).scatterAdd(i, Tensor.ones([200], { dtype: 'u32' }), 0);
  assert.equal(
    nums(h),
    counts.map((c) => c + 10),
  );
  assert.is(
    counts.reduce((a, b) => a + b, 0),
    200,
  );
});

test('scatterAdd / indexAdd: every dtype against a loop; adds round once (f16), u8 wraps', async () => {
  for (const dt of ALL) {
    const x = anyRand([3, 4], dt),
      s = anyRand([3, 4], dt);
    const i = randInts([3, 4], 3, 'u32');
    const xv = Array.from(x.toArraySync(), Number),
      sv = Array.from(s.toArraySync(), Number);
    const iv = Array.from(i.toArraySync(), Number);
    const want = [...xv];
    iv.forEach((r, p) => {
      want[r * 4 + (p % 4)] += sv[p]!;
    });
    const tol = dt === 'f16' ? 2e-3 : dt === 'bf16' ? 1.6e-2 : dt === 'f32' ? 1e-6 : 0;
    assertClose(
      Array.from(x.scatterAdd(i, s, 0).toArraySync(), Number),
      want.map((v) => (dt === 'u8' ? v % 256 : v)),
      tol,
      tol,
      `scatterAdd ${dt}`,
    );
  }
  // 1 + 2^-11 + 2^-11 is 1 + 2^-10 exactly; adding in f16 step by step would give 1 (ties to even)
  const tiny = 2 ** -11;
  const one = Tensor.from([1], { dtype: 'f16' });
  const r = one.scatterAdd(ids([0, 0]), Tensor.from([tiny, tiny], { dtype: 'f16' }), 0);
  assert.equal(nums(r), [1 + 2 ** -10]);
  const r2 = one.indexAdd(ids([0, 0]), Tensor.from([tiny, tiny], { dtype: 'f16' }), 0);
  assert.equal(nums(r2), [1 + 2 ** -10]);
  const w = Tensor.from([200], { dtype: 'u8' }).scatterAdd(ids([0]), Tensor.from([100], { dtype: 'u8' }), 0);
  assert.equal(nums(w), [44]);
});

test('scatter / scatterAdd: errors', () => {
  const x = Tensor.zeros([3, 5]);
  const src = Tensor.ones([2, 5]);
  throwsWith(
    () => x.scatter(ids([0, 1, 3], 'u32', [1, 3]), src, 0),
    IndexError,
    'scatter',
    'id 3',
    'position [0, 2]',
    '[0, 3)',
    '[3, 5] f32',
  );
  throwsWith(
    () => x.scatterAdd(Tensor.from(new BigInt64Array([-2n]), { shape: [1, 1] }), src, 1),
    IndexError,
    'scatterAdd',
    'id -2',
    '[0, 5)',
  );
  throwsWith(
    () => x.scatter(ids([0, 0, 0], 'u32', [3, 1]), src, 0),
    ShapeError,
    'scatter',
    '[3, 1] u32',
    '[2, 5] f32',
    '[3, 5] f32',
  );
  throwsWith(() => x.scatter(ids([0, 0, 0, 0, 0, 0], 'u32', [1, 6]), src, 0), ShapeError, 'scatter', '[1, 6] u32');
  throwsWith(() => x.scatter(ids([0], 'u32', [1]), src, 0), ShapeError, 'scatter', '[1] u32');
  throwsWith(
    () => x.scatter(ids([0], 'u32', [1, 1]), Tensor.ones([2, 5], { dtype: 'f64' }), 0),
    DTypeError,
    'scatter',
    '[3, 5] f32',
    '[2, 5] f64',
  );
  throwsWith(() => x.scatterAdd(ids([0], 'f32', [1, 1]), src, 0), DTypeError, 'scatterAdd', 'f32');
  throwsWith(() => x.scatter(ids([0], 'u32', [1, 1]), src, 2), ShapeError, 'scatter', 'dim 2', '[3, 5] f32');
  // nothing written before the check: x is still zeros
  assert.equal(x.toNestedSync(), [
    [0, 0, 0, 0, 0],
    [0, 0, 0, 0, 0],
    [0, 0, 0, 0, 0],
  ]);
});

// ---- indexAdd ---------------------------------------------------------------------------------
test('indexAdd: PyTorch docs example, duplicates, dim 1, x unchanged', () => {
  const x = Tensor.ones([5, 3]);
  const t = Tensor.from([
    [1, 2, 3],
    [4, 5, 6],
    [7, 8, 9],
  ]);
  for (const d of IDS) {
    assert.equal(
      x.indexAdd(ids([0, 4, 2], d), t, 0).toNestedSync(),
      [
        [2, 3, 4],
        [1, 1, 1],
        [8, 9, 10],
        [1, 1, 1],
        [5, 6, 7],
      ],
      d,
    );
  }
  assert.equal(
    x
      .indexAdd(ids([1, 1, 1]), t, 0)
      .narrow(0, 0, 2)
      .toNestedSync(),
    [
      [1, 1, 1],
      [13, 16, 19],
    ],
  );
  assert.equal(
    x
      .indexAdd(
        ids([2, 0]),
        Tensor.from([
          [1, 2],
          [3, 4],
          [5, 6],
          [7, 8],
          [9, 10],
        ]),
        1,
      )
      .toNestedSync(),
    [
      [3, 1, 2],
      [5, 1, 4],
      [7, 1, 6],
      [9, 1, 8],
      [11, 1, 10],
    ],
  );
  assert.equal(x.toNestedSync(), [
    [1, 1, 1],
    [1, 1, 1],
    [1, 1, 1],
    [1, 1, 1],
    [1, 1, 1],
  ]);
});

test('indexAdd: every dtype against a loop; non-contiguous; empty ids', async () => {
  for (const dt of ALL) {
    const x = anyRand([4, 3], dt),
      s = anyRand([4, 5], dt);
    const sel = [2, 0, 2, 1, 2];
    const xv = Array.from(x.toArraySync(), Number),
      sv = Array.from(s.toArraySync(), Number);
    const want = [...xv];
    for (let r = 0; r < 4; r++)
      sel.forEach((c, k) => {
        want[r * 3 + c] += sv[r * 5 + k]!;
      });
    const tol = dt === 'f16' ? 2e-3 : dt === 'bf16' ? 1.6e-2 : dt === 'f32' ? 1e-6 : 0;
    assertClose(
      Array.from(x.indexAdd(ids(sel, 'u8'), s, 1).toArraySync(), Number),
      want.map((v) => (dt === 'u8' ? v % 256 : v)),
      tol,
      tol,
      `indexAdd ${dt}`,
    );
  }
  const t = randT([4, 3], 'f32'),
    s = randT([6, 3], 'f32'),
    i = randInts([6], 4, 'i64');
  for (const kind of LAYOUTS) {
    const { x, ref } = withLayout(t, kind);
    const { x: sx, ref: sr } = withLayout(s, kind);
    assert.equal(await bits(x.indexAdd(i, sx, 0)), await bits(ref.indexAdd(i, sr, 0)), kind);
  }
  assert.equal(await bits(t.indexAdd(ids([]), Tensor.zeros([0, 3]), 0)), await bits(t));
});

test('indexAdd: errors', () => {
  const x = Tensor.ones([5, 3]);
  const t = Tensor.ones([3, 3]);
  throwsWith(
    () => x.indexAdd(ids([0, 5, 1]), t, 0),
    IndexError,
    'indexAdd',
    'id 5',
    'position [1]',
    '[0, 5)',
    '[5, 3] f32',
  );
  throwsWith(() => x.indexAdd(ids([0, 1]), t, 0), ShapeError, 'indexAdd', '[3, 3] f32', '[2, 3]');
  throwsWith(() => x.indexAdd(ids([0, 1, 2], 'u32', [3, 1]), t, 0), ShapeError, 'indexAdd', '1-d', '[3, 1] u32');
  throwsWith(
    () => x.indexAdd(ids([0, 1, 2]), Tensor.ones([3, 3], { dtype: 'bf16' }), 0),
    DTypeError,
    'indexAdd',
    'bf16',
  );
  throwsWith(() => x.indexAdd(ids([0, 1, 2]), t, -3), ShapeError, 'indexAdd', 'dim -3');
});

test.run();
