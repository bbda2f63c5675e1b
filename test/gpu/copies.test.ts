// The copy kernels on the GPU against the CPU reference, outputs poisoned (the
// harness): copy.hip's tiled transpose_<w> (contiguous() of transposed views, 2-D and batched,
// narrowed, offset and broadcast; a contiguous tensor written into a transposed view), the
// one-launch cat_rows_<unit> (every dim, inputs of several lengths and layouts, more inputs than
// one launch takes, rows longer and shorter than a block's tile, 16-byte and narrower units),
// and index-rows.hip's index_add_rows (repeated ids, dims with rows before them, every dtype and
// ids dtype). Sizes are off the tiles on purpose (tiles are 64 x 64 elements for 4-byte types).
// Moves must be exact; adds within the per-dtype tolerances.
import * as assert from 'uvu/assert';
import { gpuSuite, checkOp, LAYOUTS, ALL_DTYPES, FLOAT_DTYPES, cpuFrom, type LayoutKind } from './harness.ts';
import { Tensor, type DType } from '../../src/index.ts';
import { randInts, randData } from '../helpers.ts';
import { checkIndexAddCases } from './index-data.ts';

const s = gpuSuite('gpu/copies');
const BIG: readonly LayoutKind[] = ['contiguous', 'transposed'];

s.opTest('contiguous', async () => {
  // 2-D: both sides inside one tile, one side on a tile and a bit, thin sides (the smallest the
  // tiled kernel takes, 8), a whole number of tiles for every width
  const shapes = [
    [37, 53],
    [130, 70],
    [8, 300],
    [300, 9],
    [256, 128],
    [3, 5],
  ];
  for (const sh of shapes) {
    await checkOp(
      'contiguous',
      ALL_DTYPES,
      LAYOUTS,
      (d) => [randData(sh, d)],
      ([x]) => x!.T.contiguous(),
      { tol: 0, variant: `.T of [${sh}]` },
    );
  }
  // batched: the last two dims swapped ([b, c, r] from [b, r, c]), the first and last swapped
  // (a batch dim in the middle), and a narrowed window transposed
  await checkOp(
    'contiguous',
    ALL_DTYPES,
    LAYOUTS,
    (d) => [randData([3, 67, 45], d)],
    ([x]) => x!.transpose(1, 2).contiguous(),
    { tol: 0, variant: 'transpose(1, 2) of [3, 67, 45]' },
  );
  await checkOp(
    'contiguous',
    ALL_DTYPES,
    LAYOUTS,
    (d) => [randData([20, 3, 33], d)],
    ([x]) => x!.transpose(0, 2).contiguous(),
    { tol: 0, variant: 'transpose(0, 2) of [20, 3, 33]' },
  );
  await checkOp(
    'contiguous',
    ALL_DTYPES,
    LAYOUTS,
    (d) => [randData([50, 90], d)],
    ([x]) => x!.narrow(0, 3, 41).narrow(1, 1, 77).T.contiguous(),
    { tol: 0, variant: '.T of a [41, 77] window of [50, 90]' },
  );
  // rows swapped as attention's heads and positions are ([b, t, 3, h, d] -> [b, h, t, d]): the
  // strided kernel in units wider than the element where offsets and strides allow (2-byte
  // types: d 16 in 8-byte units, d 6 in 4-byte units; d 5 at the element width), parts 0 to 2
  for (const [dd, start] of [
    [16, 0],
    [6, 1],
    [5, 2],
  ] as const) {
    await checkOp(
      'contiguous',
      ALL_DTYPES,
      ['contiguous'],
      (d) => [randData([2, 7, 3, 4, dd], d)],
      ([x]) => x!.narrow(2, start, 1).squeeze(2).transpose(1, 2).contiguous(),
      { tol: 0, variant: `[2, 7, 3, 4, ${dd}] part ${start} as [b, h, t, d]` },
    );
  }
  await checkOp(
    'contiguous',
    ['f32', 'bf16', 'u8', 'i64'],
    BIG,
    (d) => [randData([1030, 770], d)],
    ([x]) => x!.T.contiguous(),
    { tol: 0, variant: '.T of [1030, 770] (0.8M elements)' },
  );
});

s.opTest('sliceSet', async () => {
  // a contiguous source written into a transposed view: dst's unit-stride dim is src's strided one
  await checkOp(
    'sliceSet',
    ALL_DTYPES,
    LAYOUTS,
    (d) => [randData([40, 70], d), randData([70, 25], d)],
    ([y, src]) => {
      y!.T.sliceSet(src!, 1, 5);
      return y!;
    },
    { tol: 0, fixed: [0], variant: 'into columns 5..30 of a [70, 40] .T view' },
  );
});

s.opTest('cat', async () => {
  const cases = [
    // rows of 40 + 24 + 3 elements: the 16-byte unit only where every length allows it
    {
      name: 'dim 1 of [5, 40], [5, 24], [5, 3]',
      shapes: [
        [5, 40],
        [5, 24],
        [5, 3],
      ],
      dim: 1,
    },
    {
      name: 'dim 1 of [6, 32], [6, 64] (16-byte units)',
      shapes: [
        [6, 32],
        [6, 64],
      ],
      dim: 1,
    },
    {
      name: 'dim 1 of [3, 2, 8], [3, 5, 8]',
      shapes: [
        [3, 2, 8],
        [3, 5, 8],
      ],
      dim: 1,
    },
    {
      name: 'dim 2 of [2, 3, 4], [2, 3, 9]',
      shapes: [
        [2, 3, 4],
        [2, 3, 9],
      ],
      dim: 2,
    },
    {
      name: 'dim 0 of [4, 6], [2, 6] (dense blocks)',
      shapes: [
        [4, 6],
        [2, 6],
      ],
      dim: 0,
    },
    // more inputs than one launch takes (8), one of them empty
    {
      name: 'dim 1 of 11 inputs [4, 1..11]',
      shapes: Array.from({ length: 11 }, (_, k) => [4, k === 5 ? 0 : k + 1]),
      dim: 1,
    },
  ];
  for (const c of cases) {
    await checkOp(
      'cat',
      ALL_DTYPES,
      LAYOUTS,
      (d) => c.shapes.map((sh) => randData(sh, d)),
      (xs) => Tensor.cat(xs, c.dim),
      { tol: 0, variant: c.name },
    );
  }
  // rows longer than a block's tile (1024 units) next to short ones, many rows
  await checkOp(
    'cat',
    ['f32', 'bf16', 'u8', 'f64'],
    BIG,
    (d) => [randData([300, 4100], d), randData([300, 36], d), randData([300, 1030], d)],
    (xs) => Tensor.cat(xs, 1),
    { tol: 0, variant: 'dim 1 of [300, 4100], [300, 36], [300, 1030]' },
  );
});

s.opTest('indexAdd', async () => {
  const cases = [
    // ids over a small range: most rows are added several times
    { name: 'rows: dim 0 of [16, 40], 30 ids', x: [16, 40], k: 30, dim: 0 },
    { name: 'rows: dim 1 of [3, 5, 24], 9 ids', x: [3, 5, 24], k: 9, dim: 1 },
    { name: 'rows: dim 0 of [7, 3], 12 ids (short rows)', x: [7, 3], k: 12, dim: 0 },
  ];
  await checkIndexAddCases(cases);
  await checkOp(
    'indexAdd',
    ['f32', 'bf16', 'i64'],
    BIG,
    (d) => [randData([1000, 1030], d), randInts([2500], 1000, 'i64'), randData([2500, 1030], d)],
    ([x, i, u]) => x!.indexAdd(i!, u!, 0),
    { variant: '2500 rows into [1000, 1030], repeated ids' },
  );
});

s.opTest(
  'indexAdd',
  async (dev) => {
    // 4096 adds of 1 into each of 3 rows of 70 (ids repeat 4096 times): exact in the f32
    // accumulator of every float type, and wrapping alike for the integers
    const n = 3 * 4096;
    for (const dtype of [...FLOAT_DTYPES, 'u8', 'u32', 'i64'] as DType[]) {
      const x = Tensor.zeros([5, 70], { dtype, device: dev });
      const ids = cpuFrom(
        Array.from({ length: n }, (_, k) => [4, 0, 2][k % 3]!),
        [n],
        'i64',
      ).to(dev);
      const src = Tensor.ones([n, 70], { dtype, device: dev });
      const got = Array.from(await x.indexAdd(ids, src, 0).toArray(), Number);
      const row = (r: number) => got.slice(r * 70, r * 70 + 70);
      const want = dtype === 'u8' ? 0 : 4096; // 4096 wraps to 0 in u8
      for (const r of [0, 2, 4])
        assert.ok(
          row(r).every((v) => v === want),
          `${dtype}: row ${r} is ${row(r).slice(0, 4)}..., expected ${want}`,
        );
      for (const r of [1, 3])
        assert.ok(
          row(r).every((v) => v === 0),
          `${dtype}: row ${r} is ${row(r).slice(0, 4)}..., expected 0`,
        );
    }
  },
  'indexAdd: 4096 repeats of each id add every row',
);

s.run();
