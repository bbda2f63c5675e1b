// Gradients on the GPU against the CPU reference, per float dtype and input layout (outputs
// poisoned): for each case, the same random inputs and output gradient on both devices, backward()
// through the op, and every input's gradient compared. The CPU gradients themselves are checked
// against f64 finite differences in test/cpu/autograd*.test.ts.
import { gpuSuite, checkOp, LAYOUTS, FLOAT_DTYPES, type RunOp } from './harness.ts';
import { Tensor, type DType } from '../../src/index.ts';
import { randT } from '../helpers.ts';
import { gradInputs, gradsOf, type GradFn } from './grad-run.ts';

const s = gpuSuite('gpu/grad');

type Fn = GradFn;
/** [variant, input shapes, the op, input ranges] */
type Case = readonly [string, number[][], Fn, { lo?: number; hi?: number }?];

/** index tensors on x's device (made inside the op, so both devices get the same) */
const ids = (v: number[], shape: number[], x: Tensor): Tensor =>
  Tensor.from(v, { dtype: 'u32', shape, device: x.device });

// reduced precision: the backward runs several roundings of the forward's dtype on both sides
const TOL = { f32: 1e-4, f16: 2e-2, bf16: 3e-2 };

function gradTests(op: string, cases: readonly Case[], tol: Partial<Record<DType, number>> = TOL): void {
  s.test(`${op}: gradients against the CPU`, async () => {
    for (const [variant, shapes, f, range] of cases) {
      await checkOp(op, FLOAT_DTYPES, LAYOUTS, gradInputs(shapes, f, range?.lo ?? -1, range?.hi ?? 1), gradsOf(f), {
        variant,
        tol,
        fixed: [shapes.length],
      });
    }
  });
}

gradTests('unary', [
  ['exp, tanh, sigmoid, silu', [[6, 7]], ([x]) => x!.exp().add(x!.tanh()).add(x!.sigmoid()).add(x!.silu())],
  ['gelu, sin, sqr, relu', [[6, 7]], ([x]) => x!.gelu().add(x!.sin()).add(x!.sqr()).add(x!.relu())],
  ['log, sqrt, recip', [[5, 8]], ([x]) => x!.log().add(x!.sqrt()).add(x!.recip()), { lo: 0.5, hi: 2 }],
]);
gradTests('binary', [
  ['mul, add broadcast', [[4, 6], [6]], ([a, b]) => a!.mul(b!).add(b!)],
  [
    'div, sub',
    [
      [3, 5],
      [3, 5],
    ],
    ([a, b]) => a!.div(b!.abs().add(1)).sub(b!),
  ],
]);
gradTests('reduce', [
  ['sum, mean', [[5, 7]], ([x]) => x!.sum(1).add(x!.mean(1))],
  ['max, min', [[5, 7]], ([x]) => x!.max(0).add(x!.min(0))],
]);
gradTests('matmul', [
  [
    '[5, 6] x [6, 4]',
    [
      [5, 6],
      [6, 4],
    ],
    ([a, b]) => a!.matmul(b!),
  ],
  [
    'batched',
    [
      [2, 3, 6],
      [2, 6, 4],
    ],
    ([a, b]) => a!.matmul(b!),
  ],
]);
gradTests('linear', [['bias', [[3, 8], [5, 8], [5]], ([x, w, b]) => x!.linear(w!, { bias: b! })]]);
gradTests('softmax', [
  ['softmax', [[4, 9]], ([x]) => x!.softmax(-1)],
  ['logSoftmax', [[4, 9]], ([x]) => x!.logSoftmax(-1)],
]);
gradTests('norms', [
  ['rmsNorm', [[4, 16], [16]], ([x, w]) => x!.rmsNorm(w!, 1e-5)],
  ['layerNorm', [[4, 16], [16], [16]], ([x, w, b]) => x!.layerNorm(w!, b!, 1e-5)],
]);
gradTests(
  'conv2d',
  [
    ['3x3 padding 1, bias', [[2, 3, 8, 7], [4, 3, 3, 3], [4]], ([x, w, b]) => x!.conv2d(w!, { padding: 1, bias: b! })],
    [
      'stride 2, groups 2',
      [[2, 4, 9, 8], [6, 2, 3, 3], [6]],
      ([x, w, b]) => x!.conv2d(w!, { stride: 2, groups: 2, bias: b! }),
    ],
    [
      'dilation 2',
      [
        [1, 2, 9, 9],
        [3, 2, 3, 3],
      ],
      ([x, w]) => x!.conv2d(w!, { dilation: 2, padding: 2 }),
    ],
    [
      '1x1',
      [
        [2, 4, 5, 5],
        [3, 4, 1, 1],
      ],
      ([x, w]) => x!.conv2d(w!),
    ],
  ],
  { ...TOL, f32: 2e-4 },
);
gradTests('conv1d', [
  ['stride 2, bias', [[2, 3, 12], [4, 3, 3], [4]], ([x, w, b]) => x!.conv1d(w!, { stride: 2, bias: b! })],
]);
gradTests('convTranspose2d', [
  [
    'stride 2, outputPadding 1',
    [[2, 3, 5, 4], [3, 2, 3, 3], [2]],
    ([x, w, b]) => x!.convTranspose2d(w!, { stride: 2, padding: 1, outputPadding: 1, bias: b! }),
  ],
]);
gradTests('pooling', [
  ['maxPool2d 2x2', [[2, 3, 8, 6]], ([x]) => x!.maxPool2d({ kernel: 2 })],
  ['maxPool2d 3x3 stride 2 padding 1', [[2, 2, 7, 7]], ([x]) => x!.maxPool2d({ kernel: 3, stride: 2, padding: 1 })],
  ['avgPool2d 2x2', [[2, 3, 8, 6]], ([x]) => x!.avgPool2d({ kernel: 2 })],
  [
    'avgPool2d padding excluded',
    [[2, 2, 7, 7]],
    ([x]) => x!.avgPool2d({ kernel: 3, stride: 2, padding: 1, countIncludePad: false }),
  ],
]);
gradTests('batchNorm', [
  ['training, affine', [[4, 3, 5, 6], [3], [3]], ([x, w, b]) => x!.batchNorm({ weight: w!, bias: b!, training: true })],
  ['training [n, c]', [[16, 5]], ([x]) => x!.batchNorm({ training: true })],
  [
    'inference',
    [[4, 3, 5], [3], [3]],
    ([x, w, b]) =>
      x!.batchNorm({
        mean: Tensor.from([0.2, -0.4, 0.1], { dtype: x!.dtype, device: x!.device }),
        variance: Tensor.from([0.7, 1.9, 1.1], { dtype: x!.dtype, device: x!.device }),
        weight: w!,
        bias: b!,
      }),
  ],
]);

s.test('batchNorm training: output and running statistics against the CPU', async () => {
  // y, then the moved running mean and variance (each in f32, the half types' statistics dtype)
  const run: RunOp = ([x, m, v]) => {
    const rm = m!.affine(1, 0),
      rv = v!.abs().add(0.5);
    const y = x!.batchNorm({ mean: rm, variance: rv, training: true, momentum: 0.3 });
    return Tensor.cat([y.toDtype('f32').reshape([-1]), rm.toDtype('f32'), rv.toDtype('f32')], 0);
  };
  await checkOp(
    'batchNormTrain',
    FLOAT_DTYPES,
    LAYOUTS,
    (d) => [randT([6, 4, 3, 5], d, -2, 3), randT([4], d), randT([4], d)],
    run,
    {
      tol: { f32: 1e-4, f16: 2e-2, bf16: 3e-2 },
      fixed: [1, 2],
    },
  );
});

gradTests('upsample', [
  ['nearest2d 3x5 -> 7x10', [[2, 3, 3, 5]], ([x]) => x!.upsampleNearest2d(7, 10)],
  ['nearest1d 4 -> 9', [[2, 3, 4]], ([x]) => x!.upsampleNearest1d(9)],
  ['bilinear2d', [[2, 3, 4, 5]], ([x]) => x!.upsampleBilinear2d(9, 7)],
  ['bilinear2d alignCorners', [[2, 2, 5, 4]], ([x]) => x!.upsampleBilinear2d(3, 8, true)],
]);

const sdpa = Tensor.scaledDotProductAttention;
gradTests('attention', [
  [
    'plain',
    [
      [2, 2, 5, 8],
      [2, 2, 6, 8],
      [2, 2, 6, 8],
    ],
    ([q, k, v]) => sdpa(q!, k!, v!),
  ],
  [
    'causal bottom-right, GQA',
    [
      [1, 4, 5, 16],
      [1, 2, 7, 16],
      [1, 2, 7, 16],
    ],
    ([q, k, v]) => sdpa(q!, k!, v!, { causal: 'bottom-right' }),
  ],
  [
    'window 3',
    [
      [1, 2, 6, 8],
      [1, 2, 6, 8],
      [1, 2, 6, 8],
    ],
    ([q, k, v]) => sdpa(q!, k!, v!, { causal: true, window: 3 }),
  ],
]);
gradTests('dropout', [['p 0.25, seeded', [[8, 33]], ([x]) => x!.dropout(0.25, { seed: 1234 })]]);
gradTests('indexing', [
  ['cumsum', [[4, 9]], ([x]) => x!.cumsum(1)],
  [
    'cat',
    [
      [3, 4],
      [3, 2],
    ],
    ([a, b]) => Tensor.cat([a!, b!], 1),
  ],
  [
    'scatter',
    [
      [3, 4],
      [3, 3],
    ],
    ([x, src]) => x!.scatter(ids([0, 2, 1, 0], [2, 2], x!), src!, 0),
  ],
  [
    'scatterAdd, repeated ids',
    [
      [2, 4],
      [2, 3],
    ],
    ([x, src]) => x!.scatterAdd(ids([1, 1, 1, 0, 2, 1], [2, 3], x!), src!, 1),
  ],
  [
    'gather, indexSelect',
    [[4, 5]],
    ([x]) =>
      x!
        .gather(ids([3, 0, 3, 1], [2, 2], x!), 1)
        .sum()
        .add(x!.indexSelect(ids([2, 2, 0], [3], x!), 0).sum()),
  ],
]);

s.run();
