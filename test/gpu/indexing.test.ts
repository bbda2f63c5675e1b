// The indexing family on the GPU against the CPU reference: indexSelect, gather, scatter,
// scatterAdd, indexAdd, indexSetDistinct and embedding, for every dtype and ids dtype (u8, u32, i64), every layout
// of x, src and ids, duplicate ids (random ids over a small range, broadcast ids), empty ids and
// tensors over 2^20 elements. The 'rows:' cases and the big ones take the row kernels of
// index-rows.hip where the layout allows (the other layouts of the same case fall back to the
// per-element kernels, so both paths meet the same data). Moves must be exact; adds within the per-dtype tolerances.
// Bad ids (the device-side error record) are indexing-errors.test.ts.
import { gpuSuite, checkOp, LAYOUTS, ALL_DTYPES, FLOAT_DTYPES, cpuFrom, type LayoutKind } from './harness.ts';
import * as assert from 'uvu/assert';
import { Tensor, type DType } from '../../src/index.ts';
import { randInts, randData } from '../helpers.ts';
import { ID_DTYPES, checkIndexAddCases } from './index-data.ts';

const s = gpuSuite('gpu/indexing');

const ids = (shape: number[], n: number, dtype: DType): Tensor => randInts(shape, n, dtype);

// the big cases check sizes, not dtypes (the small ones cover every width): few, since making
// their random inputs and the CPU reference dominate the suite's time
const BIG: readonly LayoutKind[] = ['contiguous', 'transposed'];
const BIG_DTYPES: readonly DType[] = ['f32', 'i64'];

s.opTest('indexSelect', async () => {
  const cases = [
    { name: 'dim 0 of [6, 7]', x: [6, 7], dim: 0, k: 5 },
    { name: 'dim 1 of [6, 7], repeats', x: [6, 7], dim: 1, k: 9 },
    { name: 'dim -2 of [3, 4, 5]', x: [3, 4, 5], dim: -2, k: 6 },
    { name: 'empty ids', x: [6, 7], dim: 0, k: 0 },
    // the row kernel (index-rows.hip): rows of 40 elements (16-byte units where aligned), and
    // rows after a leading dim (one division a row)
    { name: 'rows: dim 0 of [9, 40]', x: [9, 40], dim: 0, k: 13 },
    { name: 'rows: dim 1 of [3, 5, 24]', x: [3, 5, 24], dim: 1, k: 7 },
  ];
  for (const c of cases) {
    const n = c.x.at(c.dim)!;
    for (const it of ID_DTYPES) {
      await checkOp(
        'indexSelect',
        ALL_DTYPES,
        LAYOUTS,
        (d) => [randData(c.x, d), ids([c.k], n, it)],
        ([x, i]) => x!.indexSelect(i!, c.dim),
        { tol: 0, variant: `${c.name}, ids ${it}` },
      );
    }
  }
  await checkOp(
    'indexSelect',
    BIG_DTYPES,
    BIG,
    (d) => [randData([2048, 640], d), ids([2048], 2048, 'i64')],
    ([x, i]) => x!.indexSelect(i!, 0),
    { tol: 0, variant: '[2048, 640] dim 0 (1.3M elements)' },
  );
});

s.opTest('gather', async () => {
  const cases = [
    { name: 'dim 0 of [5, 7]', x: [5, 7], ids: [4, 7], dim: 0 },
    { name: 'dim 1 of [5, 7], smaller ids', x: [5, 7], ids: [3, 9], dim: 1 },
    { name: 'dim 2 of [3, 4, 5]', x: [3, 4, 5], ids: [2, 4, 6], dim: 2 },
    { name: 'empty ids', x: [5, 7], ids: [0, 7], dim: 0 },
    // the row walk (index-rows.hip): rows of at least 16 ids along the last dim
    { name: 'rows: dim 0 of [20, 40]', x: [20, 40], ids: [15, 40], dim: 0 },
    { name: 'rows: dim 1 of [6, 50], ids [6, 33]', x: [6, 50], ids: [6, 33], dim: 1 },
    { name: 'rows: dim 1 of [3, 9, 20], ids [3, 5, 20]', x: [3, 9, 20], ids: [3, 5, 20], dim: 1 },
  ];
  for (const c of cases) {
    for (const it of ID_DTYPES) {
      await checkOp(
        'gather',
        ALL_DTYPES,
        LAYOUTS,
        (d) => [randData(c.x, d), ids(c.ids, c.x[c.dim]!, it)],
        ([x, i]) => x!.gather(i!, c.dim),
        { tol: 0, variant: `${c.name}, ids ${it}` },
      );
    }
  }
  await checkOp(
    'gather',
    BIG_DTYPES,
    BIG,
    (d) => [randData([1100, 1000], d), ids([1100, 1000], 1000, 'u32')],
    ([x, i]) => x!.gather(i!, 1),
    { tol: 0, variant: '[1100, 1000] dim 1 (1.1M elements)' },
  );
});

/** scatter-like cases: ids over a small range, so most targets are hit several times */
const SCATTER_CASES = [
  { name: 'dim 0 of [6, 5], src [5, 6]', x: [6, 5], ids: [4, 5], src: [5, 6], dim: 0 },
  { name: 'dim 1 of [4, 7]', x: [4, 7], ids: [4, 9], src: [4, 9], dim: 1 },
  { name: 'dim 1 of [3, 4, 5]', x: [3, 4, 5], ids: [2, 6, 5], src: [3, 6, 5], dim: 1 },
  { name: 'empty ids', x: [6, 5], ids: [0, 5], src: [4, 5], dim: 0 },
];

for (const add of [false, true]) {
  const op = add ? 'scatterAdd' : 'scatter';
  s.opTest(op, async () => {
    for (const c of SCATTER_CASES) {
      for (const it of ID_DTYPES) {
        await checkOp(
          op,
          ALL_DTYPES,
          LAYOUTS,
          (d) => [randData(c.x, d), ids(c.ids, c.x[c.dim]!, it), randData(c.src, d)],
          ([x, i, u]) => (add ? x!.scatterAdd(i!, u!, c.dim) : x!.scatter(i!, u!, c.dim)),
          { variant: `${c.name}, ids ${it}`, ...(add ? {} : { tol: 0 }) },
        );
      }
    }
    // every target hit about once; with 1100 rows of ids over 1100 rows many are hit twice
    await checkOp(
      op,
      BIG_DTYPES,
      BIG,
      (d) => [randData([1100, 1000], d), ids([1100, 1000], 1100, 'i64'), randData([1100, 1000], d)],
      ([x, i, u]) => (add ? x!.scatterAdd(i!, u!, 0) : x!.scatter(i!, u!, 0)),
      { variant: '[1100, 1000] dim 0 (1.1M elements)', ...(add ? {} : { tol: 0 }) },
    );
  });
}

s.opTest(
  'indexSet',
  async () => {
    const cases = [
      { name: 'dim 0 of [6, 5]', x: [6, 5], k: 3, dim: 0 },
      { name: 'dim 2 of a cache [2, 3, 9, 4]', x: [2, 3, 9, 4], k: 2, dim: 2 },
      { name: 'dim 1 of [4, 7] (duplicates: the last wins)', x: [4, 7], k: 10, dim: 1 },
    ];
    for (const c of cases) {
      const src = [...c.x];
      src[c.dim] = c.k;
      for (const it of ID_DTYPES) {
        // x is written in place, so it stays contiguous; ids and src take every layout
        await checkOp(
          'indexSet',
          ALL_DTYPES,
          LAYOUTS,
          (d) => [randData(c.x, d), ids([c.k], c.x[c.dim]!, it), randData(src, d)],
          ([x, i, u]) => x!.indexSet(i!, u!, c.dim),
          { variant: `${c.name}, ids ${it}`, fixed: [0] },
        );
      }
    }
  },
  'indexSet: in place along dims, every dtype, ids dtype and layout',
);

s.opTest(
  'indexSet',
  async (dev) => {
    // x a contiguous view at an offset inside a larger storage; one id (the ones-buffer path) and two
    for (const idList of [[3], [0, 4]]) {
      const big = Tensor.zeros([70]),
        bigGpu = Tensor.zeros([70], { device: dev });
      const src = Tensor.from(
        Array.from({ length: 3 * idList.length }, (_, i) => i + 1),
        { shape: [3, idList.length] },
      );
      const cpuX = big.narrow(0, 9, 15).reshape([3, 5]),
        gpuX = bigGpu.narrow(0, 9, 15).reshape([3, 5]);
      cpuX.indexSet(Tensor.from(idList, { dtype: 'u32' }), src, 1);
      gpuX.indexSet(Tensor.from(idList, { dtype: 'u32', device: dev }), src.to(dev), 1);
      assert.equal(await nums(bigGpu), await nums(big), `ids [${idList}]`);
      // an out-of-range id is reported at the next readback, on the single-id path too
      let err: unknown = null;
      try {
        gpuX.indexSet(Tensor.from([5], { dtype: 'u32', device: dev }), Tensor.ones([3, 1], { device: dev }), 1);
        await nums(bigGpu);
      } catch (e) {
        err = e;
      }
      assert.ok(err instanceof Error && /indexSet/.test(err.message) && /\[0, 5\)/.test(err.message), String(err));
    }
  },
  'indexSet: into an offset view, one id and two; bad ids reported',
);

/** k distinct ids below n (a shuffled range), so indexSetDistinct's result is defined */
function distinctIds(k: number, n: number, dtype: DType): Tensor {
  const all = Array.from({ length: n }, (_, i) => i);
  for (let i = n - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    [all[i], all[j]] = [all[j]!, all[i]!];
  }
  return Tensor.from(all.slice(0, k), { dtype });
}

s.opTest(
  'indexSetDistinct',
  async () => {
    const cases = [
      { name: 'dim 0 of [9, 5]', x: [9, 5], k: 4, dim: 0 },
      { name: 'dim 0 of slots [40, 2, 8] (16-byte rows)', x: [40, 2, 8], k: 7, dim: 0 },
      { name: 'dim 2 of a cache [2, 3, 9, 4]', x: [2, 3, 9, 4], k: 3, dim: 2 },
      { name: 'dim 1 of [4, 7]', x: [4, 7], k: 7, dim: 1 },
    ];
    for (const c of cases) {
      const src = [...c.x];
      src[c.dim] = c.k;
      for (const it of ID_DTYPES) {
        // broadcast ids would repeat: every other layout of ids and src
        await checkOp(
          'indexSetDistinct',
          ALL_DTYPES,
          ['contiguous', 'transposed', 'narrowed', 'offset'],
          (d) => [randData(c.x, d), distinctIds(c.k, c.x[c.dim]!, it), randData(src, d)],
          ([x, i, u]) => x!.indexSetDistinct(i!, u!, c.dim),
          { variant: `${c.name}, ids ${it}`, fixed: [0] },
        );
      }
    }
  },
  'indexSetDistinct: in place along dims (the row kernel where rows allow), every dtype, ids dtype and layout',
);

s.opTest(
  'indexSetDistinct',
  async (dev) => {
    // the KV cache's write: rows of a fused projection [tokens, heads, d] narrowed to the kv
    // heads (rows apart by the whole projection), into a pool's slots seen as [slots, kvHeads, d]
    for (const dt of ['bf16', 'f32'] as DType[]) {
      const qkv = randData([5, 6, 8], dt);
      const pool = randData([40, 2, 8], dt);
      const slots = distinctIds(5, 40, 'u32');
      const gp = pool.to(dev);
      gp.indexSetDistinct(slots.to(dev), qkv.to(dev).narrow(1, 3, 2), 0);
      pool.indexSet(slots, qkv.narrow(1, 3, 2), 0);
      assert.equal(await gp.toArray(), await pool.toArray(), dt);
      // a slot past the pool is reported at the next readback, naming the op
      const bad = Tensor.from([40], { dtype: 'u32', device: dev });
      let err: unknown = null;
      try {
        gp.indexSetDistinct(bad, Tensor.ones([1, 2, 8], { dtype: dt, device: dev }), 0);
        await gp.toArray();
      } catch (e) {
        err = e;
      }
      assert.ok(
        err instanceof Error && /indexSetDistinct/.test(err.message) && /\[0, 40\)/.test(err.message),
        String(err),
      );
    }
  },
  'indexSetDistinct: a KV-cache write from a narrowed projection; a bad slot reported',
);

s.opTest('indexAdd', async () => {
  const cases = [
    { name: 'dim 0 of [6, 5]', x: [6, 5], k: 8, dim: 0 },
    { name: 'dim 1 of [4, 7]', x: [4, 7], k: 10, dim: 1 },
    { name: 'dim 1 of [3, 4, 5]', x: [3, 4, 5], k: 6, dim: 1 },
    { name: 'empty ids', x: [6, 5], k: 0, dim: 0 },
  ];
  await checkIndexAddCases(cases);
  await checkOp(
    'indexAdd',
    BIG_DTYPES,
    BIG,
    (d) => [randData([1024, 1100], d), ids([1024], 1024, 'u32'), randData([1024, 1100], d)],
    ([x, i, u]) => x!.indexAdd(i!, u!, 0),
    { variant: '[1024, 1100] dim 0 (1.1M elements)' },
  );
});

s.opTest('embedding', async () => {
  const cases = [
    { name: 'ids [3, 4], table [10, 6]', ids: [3, 4], table: [10, 6] },
    { name: 'ids [7], table [12, 3]', ids: [7], table: [12, 3] },
    { name: 'empty ids', ids: [0], table: [10, 6] },
    // rows of 32 elements: 16-byte units for every dtype but u8 when aligned
    { name: 'ids [4, 5], table [50, 32]', ids: [4, 5], table: [50, 32] },
  ];
  for (const c of cases) {
    for (const it of ID_DTYPES) {
      // ids first: checkOp gives every input the layout, the table included
      await checkOp(
        'embedding',
        ALL_DTYPES,
        LAYOUTS,
        (d) => [ids(c.ids, c.table[0]!, it), randData(c.table, d)],
        ([i, t]) => Tensor.embedding(i!, t!),
        { tol: 0, variant: `${c.name}, ids ${it}` },
      );
    }
  }
  await checkOp(
    'embedding',
    BIG_DTYPES,
    ['contiguous', 'transposed'],
    (d) => [ids([5, 4096], 50000, 'i64'), randData([50000, 64], d)],
    ([i, t]) => Tensor.embedding(i!, t!),
    { tol: 0, variant: 'ids [5, 4096], table [50000, 64] (1.3M elements)' },
  );
});

// ---- duplicates, value by value ---------------------------------------------------------------

async function nums(t: Tensor): Promise<number[]> {
  return Array.from(await t.toArray(), Number);
}

s.opTest(
  'scatter',
  async (dev) => {
    // every id of a column aims at the same row: the last in row-major order of ids wins
    for (const dtype of ALL_DTYPES) {
      for (const it of ID_DTYPES) {
        const x = cpuFrom(
          Array.from({ length: 12 }, () => 0),
          [3, 4],
          dtype,
        ).to(dev);
        const i = cpuFrom(
          Array.from({ length: 20 }, (_, k) => (k % 4 === 1 ? 0 : 2)),
          [5, 4],
          it,
        ).to(dev);
        const u = cpuFrom(
          Array.from({ length: 20 }, (_, k) => k + 1),
          [5, 4],
          dtype,
        ).to(dev);
        // column 1: every id is 0, so src[4][1] = 18 lands in row 0; the other columns: row 2
        assert.equal(await nums(x.scatter(i, u, 0)), [0, 18, 0, 0, 0, 0, 0, 0, 17, 0, 19, 20], `${dtype}, ids ${it}`);
      }
    }
    // a large case where thousands of sources aim at each target: still the last one
    const n = 1 << 20;
    const x = Tensor.zeros([4], { dtype: 'u32', device: dev });
    const i = cpuFrom(
      Array.from({ length: n }, (_, k) => k % 4),
      [n],
      'u8',
    ).to(dev);
    const u = cpuFrom(
      Array.from({ length: n }, (_, k) => k),
      [n],
      'u32',
    ).to(dev);
    assert.equal(await nums(x.scatter(i, u, 0)), [n - 4, n - 3, n - 2, n - 1], 'last of 2^18 writers to each target');
  },
  'scatter: with duplicate ids the last in row-major order wins',
);

s.opTest(
  'scatterAdd',
  async (dev) => {
    // 2^20 adds of 1 into 4 targets: exact in f32 (2^18 each) and in the f32 accumulator of f16
    const n = 1 << 20;
    for (const dtype of ['f32', 'f64', 'f16', 'u32', 'i64'] as DType[]) {
      const x = Tensor.zeros([4], { dtype, device: dev });
      const i = cpuFrom(
        Array.from({ length: n }, (_, k) => k % 4),
        [n],
        'u32',
      ).to(dev);
      const u = Tensor.ones([n], { dtype, device: dev });
      const want = n / 4;
      const got = await nums(x.scatterAdd(i, u, 0));
      if (dtype === 'f16') {
        // 2^18 is beyond f16's range: the f32 sum rounds once, to inf, as the CPU reference does
        assert.equal(got, [Infinity, Infinity, Infinity, Infinity], 'f16 overflow after one rounding');
      } else {
        assert.equal(got, [want, want, want, want], `${dtype}: 2^18 atomic adds into each of 4 targets`);
      }
    }
    // u8 wraps: 300 adds of 1 into each byte of a 5-byte tensor (neighbours share 32-bit words)
    const x = Tensor.zeros([5], { dtype: 'u8', device: dev });
    const i = cpuFrom(
      Array.from({ length: 1500 }, (_, k) => k % 5),
      [1500],
      'i64',
    ).to(dev);
    const u = Tensor.ones([1500], { dtype: 'u8', device: dev });
    assert.equal(await nums(x.scatterAdd(i, u, 0)), [44, 44, 44, 44, 44], 'u8 adds wrap mod 256');
  },
  'scatterAdd: many duplicate targets, u8 neighbours, wrap and one rounding',
);

s.opTest(
  'indexAdd',
  async (dev) => {
    for (const dtype of FLOAT_DTYPES) {
      const x = cpuFrom([1, 2, 3], [3, 1], dtype).to(dev);
      const i = cpuFrom([2, 2, 0, 2], [4], 'u8').to(dev);
      const u = cpuFrom([0.5, 0.25, 4, 0.125], [4, 1], dtype).to(dev);
      assert.equal(await nums(x.indexAdd(i, u, 0)), [5, 2, 3.875], dtype);
    }
  },
  'indexAdd: duplicate ids add up',
);

s.run();
