// Upsampling on the GPU against the CPU reference: nearest (exact: a pure move, with PyTorch's
// f32 index formula, whose rounding the 2 -> 82 case exercises) and bilinear with and without
// alignCorners, up, down, identity, to size 1, over every float dtype and layout of x, and an
// output over 2^20 elements. Nearest also on the vector-row kernel (upsample_nearest_rows:
// rows of whole 16-byte vectors whose columns stay or double), with rows up, down and kept,
// through an aligned strided view, and beside the shapes that just miss it; bilinear also a
// 16-byte output vector a thread (upsample_bilinear_rows) where the output's rows allow.
import { gpuSuite, checkOp, LAYOUTS, FLOAT_DTYPES, cpuFrom, type LayoutKind } from './harness.ts';
import * as assert from 'uvu/assert';
import { randT } from '../helpers.ts';

const s = gpuSuite('gpu/upsample');

const SIZES: readonly { name: string; x: number[]; h: number; w: number }[] = [
  { name: 'up [2, 3, 4, 5] -> 8x7', x: [2, 3, 4, 5], h: 8, w: 7 },
  { name: 'down [2, 3, 6, 7] -> 4x3', x: [2, 3, 6, 7], h: 4, w: 3 },
  { name: 'identity [2, 3, 4, 5]', x: [2, 3, 4, 5], h: 4, w: 5 },
  { name: 'double [1, 2, 3, 5] -> 6x10', x: [1, 2, 3, 5], h: 6, w: 10 },
  { name: 'f32 scale [1, 2, 2, 3] -> 82x7', x: [1, 2, 2, 3], h: 82, w: 7 },
  { name: 'to 1x1 [2, 2, 5, 4]', x: [2, 2, 5, 4], h: 1, w: 1 },
];
const BIG: readonly LayoutKind[] = ['contiguous', 'transposed'];
const BIG_CASE = { name: '[2, 9, 64, 64] -> 256x256 (1.2M elements)', x: [2, 9, 64, 64], h: 256, w: 256 };

s.opTest('upsampleNearest2d', async () => {
  for (const c of SIZES) {
    await checkOp('upsampleNearest2d', FLOAT_DTYPES, LAYOUTS, (d) => [randT(c.x, d)],
      ([x]) => x!.upsampleNearest2d(c.h, c.w), { tol: 0, variant: c.name });
  }
  await checkOp('upsampleNearest2d', ['f32', 'f16'], BIG, (d) => [randT(BIG_CASE.x, d)],
    ([x]) => x!.upsampleNearest2d(BIG_CASE.h, BIG_CASE.w), { tol: 0, variant: BIG_CASE.name });
});

// widths of 16: whole vectors of every float dtype (2, 4 or 8 elements); 12 and 20: whole
// vectors of f32/f64 only (f16/bf16 take the element kernel)
const ROWS_CASES: readonly { name: string; x: number[]; h: number; w: number }[] = [
  { name: 'x2 [2, 3, 5, 16] -> 10x32', x: [2, 3, 5, 16], h: 10, w: 32 },
  { name: 'rows 5 -> 7, columns x2 [2, 3, 5, 16] -> 7x32', x: [2, 3, 5, 16], h: 7, w: 32 },
  { name: 'rows 5 -> 3, columns kept [2, 3, 5, 16] -> 3x16', x: [2, 3, 5, 16], h: 3, w: 16 },
  { name: 'rows x4, columns kept [1, 2, 3, 12] -> 12x12', x: [1, 2, 3, 12], h: 12, w: 12 },
  { name: 'x2 [1, 2, 3, 20] -> 6x40', x: [1, 2, 3, 20], h: 6, w: 40 },
  { name: 'columns x3 [1, 2, 3, 16] -> 6x48 (element kernel)', x: [1, 2, 3, 16], h: 6, w: 48 },
];

s.opTest('upsampleNearest2d', async () => {
  for (const c of ROWS_CASES) {
    await checkOp('upsampleNearest2d', FLOAT_DTYPES, LAYOUTS, (d) => [randT(c.x, d)],
      ([x]) => x!.upsampleNearest2d(c.h, c.w), { tol: 0, variant: c.name });
  }
  // a view whose rows are whole vectors but not packed: rows 1..5 of 9, the plane strides 9 rows
  await checkOp('upsampleNearest2d', FLOAT_DTYPES, ['contiguous', 'broadcast'], (d) => [randT([2, 3, 9, 16], d)],
    ([x]) => x!.narrow(2, 1, 5).upsampleNearest2d(10, 32), { tol: 0, variant: 'rows 1..5 of [2, 3, 9, 16] -> 10x32' });
  await checkOp('upsampleNearest2d', FLOAT_DTYPES, BIG, (d) => [randT([2, 9, 64, 64], d)],
    ([x]) => x!.upsampleNearest2d(128, 128), { tol: 0, variant: 'x2 [2, 9, 64, 64] -> 128x128' });
}, 'upsampleNearest2d: the vector-row kernel');

s.opTest('upsampleNearest1d', async () => {
  for (const [l, n] of [[5, 11], [2, 82], [7, 3], [4, 4], [16, 32], [16, 16]] as const) {
    await checkOp('upsampleNearest1d', FLOAT_DTYPES, LAYOUTS, (d) => [randT([2, 3, l], d)],
      ([x]) => x!.upsampleNearest1d(n), { tol: 0, variant: `[2, 3, ${l}] -> ${n}` });
  }
});

// output widths of whole 16-byte vectors (8 and 16: every dtype; 12: f32/f64 only) go a vector
// a thread (upsample_bilinear_rows), up, down and x2
const BILINEAR_ROWS: readonly { name: string; x: number[]; h: number; w: number }[] = [
  { name: 'rows: [2, 3, 5, 7] -> 10x16', x: [2, 3, 5, 7], h: 10, w: 16 },
  { name: 'rows: down [1, 2, 8, 16] -> 4x8', x: [1, 2, 8, 16], h: 4, w: 8 },
  { name: 'rows: [2, 2, 5, 6] -> 9x12', x: [2, 2, 5, 6], h: 9, w: 12 },
  { name: 'rows: x2 [1, 2, 16, 16] -> 32x32', x: [1, 2, 16, 16], h: 32, w: 32 },
  { name: 'rows: one column [1, 2, 3, 1] -> 6x8', x: [1, 2, 3, 1], h: 6, w: 8 },
];

for (const alignCorners of [false, true]) {
  s.opTest('upsampleBilinear2d', async () => {
    for (const c of [...SIZES, ...BILINEAR_ROWS]) {
      await checkOp('upsampleBilinear2d', FLOAT_DTYPES, LAYOUTS, (d) => [randT(c.x, d)],
        ([x]) => x!.upsampleBilinear2d(c.h, c.w, alignCorners), { variant: `${c.name}, alignCorners ${alignCorners}` });
    }
    await checkOp('upsampleBilinear2d', ['f32', 'bf16'], BIG, (d) => [randT(BIG_CASE.x, d)],
      ([x]) => x!.upsampleBilinear2d(BIG_CASE.h, BIG_CASE.w, alignCorners), { variant: `${BIG_CASE.name}, alignCorners ${alignCorners}` });
  }, `upsampleBilinear2d alignCorners ${alignCorners}`);
}

s.opTest('upsampleBilinear2d', async (dev) => {
  // [[0, 1], [2, 3]] to 3x3: corners kept with alignCorners, half-pixel centres without
  const x = cpuFrom([0, 1, 2, 3], [1, 1, 2, 2], 'f32').to(dev);
  assert.equal(Array.from(await x.upsampleBilinear2d(3, 3, true).toArray(), Number), [0, 0.5, 1, 1, 1.5, 2, 2, 2.5, 3]);
  const half = Array.from(await x.upsampleBilinear2d(4, 4, false).toArray(), Number);
  assert.equal(half.slice(0, 4), [0, 0.25, 0.75, 1]);
  assert.equal(half.slice(12), [2, 2.25, 2.75, 3]);
}, 'upsampleBilinear2d: values by hand');

s.run();
