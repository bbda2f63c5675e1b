// softmax, logSoftmax, layerNorm, rmsNorm and rope (halves, interleaved, thd) on the GPU against
// the CPU reference, for every float dtype and layout: short rows (one warp a row), rows past
// the warp limit and past what the registers hold (one block a row, re-read from memory),
// softmax over non-last dims; then softmax's NaN and -inf rows value by value.
import { gpuSuite, checkOp, LAYOUTS, FLOAT_DTYPES, cpuFrom } from './harness.ts';
import * as assert from 'uvu/assert';
import type { Tensor } from '../../src/index.ts';
import { randT } from '../helpers.ts';

const s = gpuSuite('gpu/nn-kernels');

const SOFTMAX_CASES: readonly { name: string; shape: number[]; dim: number }[] = [
  { name: 'last dim of [9, 67]', shape: [9, 67], dim: -1 },
  { name: 'dim 0 of [9, 67]', shape: [9, 67], dim: 0 },
  { name: 'dim 1 of [4, 5, 6]', shape: [4, 5, 6], dim: 1 },
  { name: 'rows of 1025 (a block a row)', shape: [5, 1025], dim: -1 },
  { name: 'rows of 20000 (past the registers)', shape: [2, 20000], dim: -1 },
  { name: 'one element', shape: [7, 1], dim: -1 },
];

for (const log of [false, true]) {
  const op = log ? 'logSoftmax' : 'softmax';
  s.opTest(op, async () => {
    for (const c of SOFTMAX_CASES) {
      await checkOp(
        op,
        FLOAT_DTYPES,
        LAYOUTS,
        (d) => [randT(c.shape, d, -4, 4)],
        ([x]) => (log ? x!.logSoftmax(c.dim) : x!.softmax(c.dim)),
        { variant: c.name },
      );
    }
  });
}

const NORM_SHAPES: readonly { name: string; shape: number[] }[] = [
  { name: '[9, 67]', shape: [9, 67] },
  { name: '[2, 3, 40]', shape: [2, 3, 40] },
  { name: '[3, 1030] (a block a row)', shape: [3, 1030] },
  { name: '[2, 12000] (past the registers)', shape: [2, 12000] },
];
const lastDim = (shape: number[]) => shape[shape.length - 1]!;

s.opTest('layerNorm', async () => {
  for (const c of NORM_SHAPES) {
    const h = lastDim(c.shape);
    // an offset mean (x in [1, 5)) checks the variance is taken around the mean
    await checkOp(
      'layerNorm',
      FLOAT_DTYPES,
      LAYOUTS,
      (d) => [randT(c.shape, d, 1, 5), randT([h], d, 0.5, 1.5), randT([h], d, -1, 1)],
      ([x, w, b]) => x!.layerNorm(w!, b!, 1e-5),
      { variant: `${c.name} with bias` },
    );
    await checkOp(
      'layerNorm',
      FLOAT_DTYPES,
      LAYOUTS,
      (d) => [randT(c.shape, d), randT([h], d, 0.5, 1.5)],
      ([x, w]) => x!.layerNorm(w!, null, 1e-3),
      { variant: `${c.name} no bias, eps 1e-3` },
    );
  }
});

s.opTest('rmsNorm', async () => {
  for (const c of NORM_SHAPES) {
    const h = lastDim(c.shape);
    await checkOp(
      'rmsNorm',
      FLOAT_DTYPES,
      LAYOUTS,
      (d) => [randT(c.shape, d), randT([h], d, 0.5, 1.5)],
      ([x, w]) => x!.rmsNorm(w!, 1e-6),
      { variant: c.name },
    );
  }
});

const ROPES: readonly { op: 'rope' | 'ropeI' | 'ropeThd'; run: (x: Tensor, c: Tensor, s: Tensor) => Tensor }[] = [
  { op: 'rope', run: (x, c, sn) => x.rope(c, sn) },
  { op: 'ropeI', run: (x, c, sn) => x.ropeI(c, sn) },
  { op: 'ropeThd', run: (x, c, sn) => x.ropeThd(c, sn) },
];
for (const r of ROPES) {
  s.opTest(r.op, async () => {
    // [b, h, t, d] (thd: [b, t, h, d]) with t = 5; d = 8 and d = 6 (an odd half)
    for (const d of [8, 6]) {
      const shape = r.op === 'ropeThd' ? [2, 5, 3, d] : [2, 3, 5, d];
      await checkOp(
        r.op,
        FLOAT_DTYPES,
        LAYOUTS,
        (dt) => [randT(shape, dt), randT([5, d / 2], dt, -1, 1), randT([5, d / 2], dt, -1, 1)],
        ([x, c, sn]) => r.run(x!, c!, sn!),
        { variant: `d ${d}` },
      );
    }
    // a head view of a fused [b, t, 3, h, d] projection, read in place through its strides
    if (r.op !== 'ropeThd')
      await checkOp(
        r.op,
        FLOAT_DTYPES,
        ['contiguous'],
        (dt) => [randT([2, 5, 3, 3, 8], dt), randT([5, 4], dt, -1, 1), randT([5, 4], dt, -1, 1)],
        ([x, c, sn]) => r.run(x!.narrow(2, 1, 1).squeeze(2).transpose(1, 2), c!, sn!),
        { variant: 'head view of [2, 5, 3, 3, 8]' },
      );
  });
}

s.opTest(
  'softmax',
  async (dev) => {
    for (const dtype of FLOAT_DTYPES) {
      for (const n of [3, 2000]) {
        // row 0: a NaN; row 1: -inf and finite values; row 2: all -inf (NaN, as on the CPU)
        const vals: number[] = [];
        for (let r = 0; r < 3; r++)
          for (let i = 0; i < n; i++)
            vals.push(r === 0 ? (i === 1 ? NaN : 0) : r === 1 ? (i === 0 ? -Infinity : i === 1 ? 1 : 0) : -Infinity);
        const x = cpuFrom(vals, [3, n], dtype).to(dev);
        const y = Array.from(await x.softmax(-1).toArray(), Number);
        assert.ok(y.slice(0, n).every(Number.isNaN), `${dtype} n=${n}: a row with NaN gives NaN`);
        const e = Math.E,
          z = e + (n - 2);
        const want = [0, e / z, ...Array.from({ length: n - 2 }, () => 1 / z)];
        y.slice(n, 2 * n).forEach((v, i) =>
          assert.ok(
            Math.abs(v - want[i]!) <= 1e-2 * want[i]! + 1e-7,
            `${dtype} n=${n}: -inf row element ${i}: ${v} vs ${want[i]}`,
          ),
        );
        assert.ok(y.slice(2 * n).every(Number.isNaN), `${dtype} n=${n}: a row of -inf gives NaN`);
        const ly = Array.from(await x.logSoftmax(-1).toArray(), Number);
        assert.is(ly[n], -Infinity, `${dtype} n=${n}: logSoftmax of -inf`);
      }
    }
  },
  'softmax: NaN rows, -inf entries, all -inf rows',
);

s.run();
