// Upsampling on the GPU against the CPU reference: nearest (exact: a pure move, with PyTorch's
// f32 index formula, whose rounding the 2 -> 82 case exercises) and bilinear with and without
// alignCorners, up, down, identity, to size 1, over every float dtype and layout of x, and an
// output over 2^20 elements.
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

s.opTest('upsampleNearest1d', async () => {
  for (const [l, n] of [[5, 11], [2, 82], [7, 3], [4, 4]] as const) {
    await checkOp('upsampleNearest1d', FLOAT_DTYPES, LAYOUTS, (d) => [randT([2, 3, l], d)],
      ([x]) => x!.upsampleNearest1d(n), { tol: 0, variant: `[2, 3, ${l}] -> ${n}` });
  }
});

for (const alignCorners of [false, true]) {
  s.opTest('upsampleBilinear2d', async () => {
    for (const c of SIZES) {
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
