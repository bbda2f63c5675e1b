// 1x1 convolutions on the GPU against the CPU reference. Most take the library GEMM
// (src/backends/gpu/conv-gemm.ts: one strided-batched GEMM over the images, or one GEMM with the
// images folded into its rows at one output pixel); the others must still pass on MIOpen / cuDNN.
// Every float dtype, every layout of every operand (contiguous, transposed, narrowed, offset,
// broadcast), bias and none, batch 1 and more, odd channel counts.
import * as assert from 'uvu/assert';
import { gpuSuite, checkOp, LAYOUTS, FLOAT_DTYPES } from './harness.ts';
import type { DType, ConvOptions } from '../../src/index.ts';
import { pair, type Pair } from '../../src/backends/options.ts';
import { Layout } from '../../src/core/layout.ts';
import { gemmConvRoute } from '../../src/backends/gpu/conv-gemm.ts';
import { randT, relErr } from '../helpers.ts';

const s = gpuSuite('gpu/conv1x1');
const r = (shape: number[], d: DType) => randT(shape, d, -1, 1);
// the GEMM keeps f32 full f32 (no TF32, about 1e-3 here): the default f32 tolerance of 1e-5
// holds it; the DNN rows keep ops-dnn's 1e-4
const DNN_TOL = { f32: 1e-4 };

/** [variant, x shape, w shape, options, bias length, the GEMM route for a contiguous x] */
type Case = readonly [string, number[], number[], ConvOptions, number | null, boolean];

const CONV2D: readonly Case[] = [
  ['odd channels, bias', [2, 7, 9, 11], [5, 7, 1, 1], {}, 5, true],
  ['batch 1, no bias', [1, 13, 6, 10], [9, 13, 1, 1], {}, null, true],
  ['128 -> 64 channels, bias', [2, 128, 14, 14], [64, 128, 1, 1], {}, 64, true],
  ['257 input channels (an odd k past the tiles)', [2, 257, 5, 7], [33, 257, 1, 1], {}, null, true],
  ['one pixel: the images folded into one GEMM, bias', [6, 24, 1, 1], [10, 24, 1, 1], {}, 10, true],
  ['one pixel, batch 1', [1, 24, 1, 1], [10, 24, 1, 1], {}, null, true],
  ['dilation 2 (one tap: no effect)', [2, 6, 7, 5], [4, 6, 1, 1], { dilation: 2 }, 4, true],
  ['width 1', [3, 5, 9, 1], [7, 5, 1, 1], {}, null, true],
  ['unbatched, bias', [7, 9, 11], [5, 7, 1, 1], {}, 5, true],
  ['stride 2 to one pixel per image', [3, 5, 2, 2], [4, 5, 1, 1], { stride: 2 }, 4, true],
  ['no input channels: the bias alone', [2, 0, 3, 4], [5, 0, 1, 1], {}, 5, true],
  // the DNN path
  ['stride 2, bias (DNN)', [2, 7, 9, 11], [5, 7, 1, 1], { stride: 2 }, 5, false],
  ['stride [1, 2] (DNN)', [2, 7, 9, 11], [5, 7, 1, 1], { stride: [1, 2] }, null, false],
  ['padding 1 (DNN)', [2, 7, 5, 6], [5, 7, 1, 1], { padding: 1 }, 5, false],
  ['groups 2 (DNN)', [2, 8, 5, 6], [6, 4, 1, 1], { groups: 2 }, 6, false],
  ['depthwise (DNN)', [2, 6, 5, 6], [6, 1, 1, 1], { groups: 6 }, null, false],
];
const CONV1D: readonly Case[] = [
  ['k 1, bias', [2, 7, 20], [5, 7, 1], {}, 5, true],
  ['k 1, batch 1', [1, 9, 33], [11, 9, 1], {}, null, true],
  ['unbatched', [7, 20], [5, 7, 1], {}, 5, true],
  // a contiguous input sampled at stride 2 is a gather (DNN); the 'transposed' layout stores it
  // channels-last, where the sampled columns are a GEMM operand as they are
  ['k 1, stride 2, bias', [2, 7, 20], [5, 7, 1], { stride: 2 }, 5, false],
  ['k 1, padding 2 (DNN)', [2, 7, 20], [5, 7, 1], { padding: 2 }, null, false],
];

/** the route a contiguous input takes, from the same predicate the GPU path asks (in the front
 *  end's 4-d form: conv1d is h = 1, an unbatched input a batch of 1) */
function takesGemm(op: 'conv1d' | 'conv2d', xs: number[], ws: number[], o: ConvOptions): boolean {
  const oneD = op === 'conv1d';
  const batched = xs.length === (oneD ? 3 : 4) ? xs : [1, ...xs];
  const x4 = oneD ? [batched[0]!, batched[1]!, 1, batched[2]!] : batched;
  const w4 = oneD ? [ws[0]!, ws[1]!, 1, ws[2]!] : ws;
  const two = (v: Pair | undefined, dflt: number, h1d: number): [number, number] => {
    const t = pair(op, 'option', v, dflt);
    return oneD ? [h1d, t[1]] : t;
  };
  const p = {
    padding: two(o.padding, 0, 0),
    stride: two(o.stride, 1, 1),
    dilation: two(o.dilation, 1, 1),
    groups: o.groups ?? 1,
  };
  return gemmConvRoute('bf16', Layout.contiguous(x4), Layout.contiguous(w4), p) !== null;
}

for (const [op, cases] of [
  ['conv2d', CONV2D],
  ['conv1d', CONV1D],
] as const) {
  s.test(`${op}: the cases take the route they name`, () => {
    for (const [variant, xs, ws, o, , gemm] of cases) assert.is(takesGemm(op, xs, ws, o), gemm, `${op} ${variant}`);
  });
  s.opTest(
    op,
    async () => {
      for (const [variant, xs, ws, o, bias, gemm] of cases) {
        const make = (d: DType) => [r(xs, d), r(ws, d), ...(bias ? [r([bias], d)] : [])];
        await checkOp(
          op,
          FLOAT_DTYPES,
          LAYOUTS,
          make,
          ([x, w, b]) => {
            const opts = { ...o, bias: b ?? null };
            return op === 'conv1d' ? x!.conv1d(w!, opts) : x!.conv2d(w!, opts);
          },
          { variant: `1x1 ${variant}`, ...(gemm ? {} : { tol: DNN_TOL }) },
        );
      }
    },
    `${op} 1x1`,
  );
}

// MIOpen / cuDNN calls are refused during a capture (test/gpu/graph.test.ts); the GEMM route
// calls only the BLAS and kernels, so a 1x1 convolution records into a graph
s.test('conv2d 1x1 (GEMM route) records into a graph; replays equal eager runs as the input changes', async (dev) => {
  if (dev.isCpu) return; // ROCM_TENSOR_GPU_TESTS_ON=cpu: the CPU device has no graphs
  const xs = [2, 16, 6, 7];
  const x = randT(xs, 'f32', -1, 1, dev),
    w = randT([24, 16, 1, 1], 'f32', -1, 1, dev),
    b = randT([24], 'f32', -1, 1, dev);
  const fn = () => x.conv2d(w, { bias: b });
  const g = dev.captureGraph(fn);
  try {
    for (let round = 0; round < 3; round++) {
      const next = randT(xs, 'f32', -1, 1, dev);
      x.sliceSet(next, 0, 0);
      next.dispose();
      g.replay();
      const eager = fn();
      const err = relErr(Array.from(await g.outputs.toArray(), Number), Array.from(await eager.toArray(), Number));
      assert.ok(err < 1e-6, `round ${round}: relative error ${err}`);
      eager.dispose();
    }
  } finally {
    g.dispose();
  }
});

s.run();
