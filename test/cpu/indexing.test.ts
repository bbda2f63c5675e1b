// indexSelect, gather, embedding: known values, every dtype (exact bits), every ids dtype,
// non-contiguous inputs, empty and size-1 dims, and every bad-input error.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { Tensor, type DType } from '../../src/index.ts';
import { DTypeError, IndexError, ShapeError } from '../../src/core/errors.ts';
import { LAYOUTS, randInts, randT, withLayout, throwsWith } from '../helpers.ts';

const ALL: DType[] = ['f32', 'f64', 'f16', 'bf16', 'u8', 'u32', 'i64'];
const IDS: DType[] = ['u8', 'u32', 'i64'];

/** random values of any dtype; i64 beyond 2^53 so an inexact move would show */
function anyRand(shape: number[], dtype: DType): Tensor {
  if (dtype === 'u8') return randT(shape, 'u8', 0, 256);
  if (dtype === 'u32') return randT(shape, 'u32', 0, 2 ** 32);
  if (dtype === 'i64') {
    const r = randT(shape, 'f64', -1, 1).toArraySync() as Float64Array;
    return Tensor.from(
      BigInt64Array.from(r, (v) => BigInt(Math.round(v * 2 ** 40)) * 4099n + 1n),
      { shape },
    );
  }
  return randT(shape, dtype);
}
/** bit-exact element list: strings so bigints and raw half bits compare alike */
async function bits(t: Tensor): Promise<string[]> {
  return Array.from((await t.toRawArray()) as ArrayLike<number | bigint>, (v) => String(v));
}
const ids = (v: number[], dtype: DType = 'u32', shape?: number[]) => Tensor.from(v, { dtype, shape });

// ---- indexSelect ------------------------------------------------------------------------------
test('indexSelect: known values along each dim, every ids dtype', () => {
  const x = Tensor.from([
    [1, 2, 3],
    [4, 5, 6],
  ]);
  for (const d of IDS) {
    assert.equal(
      x.indexSelect(ids([2, 0, 2], d), 1).toNestedSync(),
      [
        [3, 1, 3],
        [6, 4, 6],
      ],
      d,
    );
    assert.equal(
      x.indexSelect(ids([1, 1, 0], d), 0).toNestedSync(),
      [
        [4, 5, 6],
        [4, 5, 6],
        [1, 2, 3],
      ],
      d,
    );
    assert.equal(x.indexSelect(ids([1], d), -1).toNestedSync(), [[2], [5]], d);
  }
});

test('indexSelect: every dtype moves exact bits (3-d, middle dim)', async () => {
  for (const dt of ALL) {
    const x = anyRand([2, 4, 3], dt);
    const sel = [3, 0, 3, 1, 2];
    const got = await bits(x.indexSelect(ids(sel, 'i64'), 1));
    const xs = await bits(x);
    const want: string[] = [];
    for (let a = 0; a < 2; a++) for (const s of sel) for (let c = 0; c < 3; c++) want.push(xs[(a * 4 + s) * 3 + c]!);
    assert.equal(got, want, dt);
  }
});

test('indexSelect: non-contiguous x and ids give the contiguous result', async () => {
  for (const dt of ['f32', 'bf16', 'i64'] as DType[]) {
    const t = anyRand([4, 5], dt);
    const sel = randInts([6], 4, 'u32');
    for (const kind of LAYOUTS) {
      const { x, ref } = withLayout(t, kind);
      for (const dim of [0, 1]) {
        const s = dim === 0 ? sel : randInts([6], 5, 'u32');
        const { x: sx } = withLayout(s, kind === 'broadcast' ? 'offset' : kind);
        assert.equal(
          await bits(x.indexSelect(sx, dim)),
          await bits(ref.indexSelect(s, dim)),
          `${dt} ${kind} dim ${dim}`,
        );
      }
    }
    // ids broadcast from one element: every pick the same row
    const one = ids([2]).broadcastAs([3]);
    assert.equal(
      await bits(t.indexSelect(one, 0)),
      await bits(t.indexSelect(ids([2, 2, 2]), 0)),
      `${dt} broadcast ids`,
    );
  }
});

test('indexSelect: empty ids, empty dims, size-1 dims', () => {
  const x = randT([3, 4]);
  const e = x.indexSelect(ids([]), 1);
  assert.equal(e.shape, [3, 0]);
  assert.equal(x.narrow(0, 0, 0).indexSelect(ids([1, 2]), 1).shape, [0, 2]);
  assert.equal(Tensor.zeros([0, 2]).indexSelect(ids([]), 0).shape, [0, 2]);
  const one = Tensor.from([[7]]);
  assert.equal(one.indexSelect(ids([0, 0, 0]), 0).toNestedSync(), [[7], [7], [7]]);
});

test('indexSelect: errors name the op, the id, its position, the range, shapes and dtypes', () => {
  const x = Tensor.from([
    [1, 2, 3],
    [4, 5, 6],
  ]);
  throwsWith(
    () => x.indexSelect(ids([0, 3]), 1),
    IndexError,
    'indexSelect',
    'id 3',
    'position [1]',
    '[0, 3)',
    '[2, 3] f32',
    '[2] u32',
  );
  throwsWith(() => x.indexSelect(ids([2], 'u8'), 0), IndexError, 'indexSelect', 'id 2', '[0, 2)');
  throwsWith(
    () => x.indexSelect(Tensor.from(new BigInt64Array([0n, 1n, -1n])), 1),
    IndexError,
    'indexSelect',
    'id -1',
    'position [2]',
    'i64',
  );
  throwsWith(
    () => x.indexSelect(Tensor.from(new BigInt64Array([2n, 3n])), 1),
    IndexError,
    'indexSelect',
    'id 3',
    'position [1]',
    '[0, 3)',
  );
  throwsWith(
    () => x.indexSelect(Tensor.from(new BigInt64Array([2n ** 60n])), 1),
    IndexError,
    'indexSelect',
    `id ${2n ** 60n}`,
  );
  throwsWith(() => x.indexSelect(ids([0], 'f32'), 1), DTypeError, 'indexSelect', 'f32', 'u8, u32, i64');
  throwsWith(
    () => x.indexSelect(ids([0, 1], 'u32', [1, 2]), 1),
    ShapeError,
    'indexSelect',
    '1-d',
    '[1, 2] u32',
    '[2, 3] f32',
  );
  throwsWith(() => x.indexSelect(ids([0]), 2), ShapeError, 'indexSelect', 'dim 2', 'rank 2', '[2, 3] f32');
  throwsWith(() => x.indexSelect(ids([0]), -3), ShapeError, 'indexSelect', 'dim -3');
  throwsWith(() => Tensor.zeros([0, 2]).indexSelect(ids([0]), 0), IndexError, 'indexSelect', '[0, 0)');
});

// ---- gather -----------------------------------------------------------------------------------
test('gather: known values (PyTorch docs example and dim 0)', () => {
  const t = Tensor.from([
    [1, 2],
    [3, 4],
  ]);
  for (const d of IDS) {
    assert.equal(
      t.gather(ids([0, 0, 1, 0], d, [2, 2]), 1).toNestedSync(),
      [
        [1, 1],
        [4, 3],
      ],
      d,
    );
  }
  const x = Tensor.from([
    [1, 2, 3],
    [4, 5, 6],
  ]);
  assert.equal(x.gather(ids([1, 0, 1], 'i64', [1, 3]), 0).toNestedSync(), [[4, 2, 6]]);
  // ids smaller than x outside dim, larger along dim
  assert.equal(x.gather(ids([2, 2, 0, 1], 'u8', [1, 4]), -1).toNestedSync(), [[3, 3, 1, 2]]);
});

test('gather: every dtype exact; equals indexSelect when ids repeat along the other dims', async () => {
  for (const dt of ALL) {
    const x = anyRand([5, 3], dt);
    const sel = [4, 0, 2, 2];
    const rows = ids(
      sel.flatMap((s) => [s, s, s]),
      'u32',
      [4, 3],
    );
    assert.equal(await bits(x.gather(rows, 0)), await bits(x.indexSelect(ids(sel), 0)), dt);
    const g = randInts([5, 2], 3, 'u32');
    const gi = Array.from(g.toArraySync(), Number),
      xs = await bits(x);
    assert.equal(
      await bits(x.gather(g, 1)),
      gi.map((c, p) => xs[Math.floor(p / 2) * 3 + c]!),
      `${dt} dim 1`,
    );
  }
});

test('gather: non-contiguous x and ids', async () => {
  const t = randT([4, 6], 'f64');
  const g = randInts([4, 6], 4, 'i64');
  for (const kind of LAYOUTS) {
    const { x, ref } = withLayout(t, kind);
    const { x: gx, ref: gref } = withLayout(g, kind);
    assert.equal(await bits(x.gather(gx, 0)), await bits(ref.gather(gref, 0)), kind);
  }
});

test('gather: 3-d, empty and size-1', () => {
  const x = Tensor.arange(24).reshape([2, 3, 4]);
  // out[i][j][k] = x[i][ids[i][j][k]][k]
  const g = ids([2, 0, 1, 1, 0, 0, 0, 2], 'u32', [2, 1, 4]);
  assert.equal(x.gather(g, 1).toNestedSync(), [[[8, 1, 6, 7]], [[12, 13, 14, 23]]]);
  assert.equal(x.gather(ids([], 'u32', [2, 0, 4]), 1).shape, [2, 0, 4]);
  assert.equal(
    Tensor.from([[5]])
      .gather(ids([0, 0], 'u8', [2, 1]), 0)
      .toNestedSync(),
    [[5], [5]],
  );
});

test('gather: errors', () => {
  const x = Tensor.from([
    [1, 2, 3],
    [4, 5, 6],
  ]);
  throwsWith(
    () => x.gather(ids([0, 1, 3], 'u32', [1, 3]), 1),
    IndexError,
    'gather',
    'id 3',
    'position [0, 2]',
    '[0, 3)',
    '[2, 3] f32',
  );
  throwsWith(() => x.gather(ids([0, 1, 2], 'u32', [3]), 1), ShapeError, 'gather', '[3] u32', '[2, 3] f32');
  throwsWith(() => x.gather(ids([0, 0, 0], 'u32', [3, 1]), 1), ShapeError, 'gather', '[3, 1] u32');
  throwsWith(() => x.gather(ids([0], 'f64', [1, 1]), 1), DTypeError, 'gather', 'f64');
  throwsWith(() => x.gather(ids([0], 'u32', [1, 1]), 5), ShapeError, 'gather', 'dim 5');
});

// ---- embedding --------------------------------------------------------------------------------
test('embedding: known values, any ids shape', () => {
  const table = Tensor.from([
    [0, 1],
    [2, 3],
    [4, 5],
  ]);
  for (const d of IDS) {
    const e = Tensor.embedding(ids([2, 0, 1, 1], d, [2, 2]), table);
    assert.equal(e.shape, [2, 2, 2]);
    assert.equal(
      e.toNestedSync(),
      [
        [
          [4, 5],
          [0, 1],
        ],
        [
          [2, 3],
          [2, 3],
        ],
      ],
      d,
    );
  }
  assert.equal(Tensor.embedding(Tensor.from(1, { dtype: 'u32' }), table).toNestedSync(), [2, 3]);
  assert.equal(Tensor.embedding(ids([]), table).shape, [0, 2]);
});

test('embedding: rows of a table that starts inside its storage (a narrowed, contiguous view)', () => {
  const full = Tensor.arange(0, 12, 1, { dtype: 'f64' }).reshape([6, 2]);
  const table = full.narrow(0, 2, 3);
  const e = Tensor.embedding(Tensor.from([2, 0], { dtype: 'u32' }), table);
  assert.equal(e.toNestedSync(), [
    [8, 9],
    [4, 5],
  ]);
  for (const t of [e, table, full]) t.dispose();
});

test('embedding: every dtype exact; equals indexSelect on flat ids; non-contiguous', async () => {
  for (const dt of ALL) {
    const table = anyRand([6, 4], dt);
    const i = randInts([2, 3], 6, 'i64');
    const e = Tensor.embedding(i, table);
    assert.equal(e.shape, [2, 3, 4]);
    assert.equal(await bits(e), await bits(table.indexSelect(i.flatten(), 0)), dt);
    for (const kind of LAYOUTS) {
      const { x, ref } = withLayout(table, kind);
      const { x: ix, ref: iref } = withLayout(i, kind);
      assert.equal(await bits(Tensor.embedding(ix, x)), await bits(Tensor.embedding(iref, ref)), `${dt} ${kind}`);
    }
  }
});

test('embedding: errors', () => {
  const table = Tensor.from([
    [0, 1],
    [2, 3],
    [4, 5],
  ]);
  throwsWith(
    () => Tensor.embedding(ids([0, 3, 1, 0], 'u32', [2, 2]), table),
    IndexError,
    'embedding',
    'id 3',
    'position [0, 1]',
    '[0, 3)',
    '[3, 2] f32',
  );
  throwsWith(
    () => Tensor.embedding(ids([0]), Tensor.from([1, 2])),
    ShapeError,
    'embedding',
    '[vocab, hidden]',
    '[2] f32',
  );
  throwsWith(() => Tensor.embedding(ids([0], 'bf16'), table), DTypeError, 'embedding', 'bf16');
});

test.run();
