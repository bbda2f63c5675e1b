// The MIOpen / cuDNN ops on the GPU against the CPU reference: convolutions (1-d, 2-d and
// transposed, with padding, stride, dilation, groups and bias), pooling, softmax and inference
// batch norm, in every float dtype and every layout of every operand.
import { gpuSuite, checkOp, LAYOUTS, FLOAT_DTYPES } from './harness.ts';
import { type DType, type ConvOptions, type ConvTransposeOptions, type PoolOptions } from '../../src/index.ts';
import { randT } from '../helpers.ts';

const s = gpuSuite('gpu/ops-dnn');
const r = (shape: number[], d: DType, lo = -1, hi = 1) => randT(shape, d, lo, hi);
// a library convolution may pick a reduced-precision f32 path (TF32 on NVIDIA); 1e-4 still
// holds a real f32 result to about 13 bits and catches any TF32 (about 1e-3)
const CONV_TOL = { f32: 1e-4 };

type ConvCase = readonly [string, number[], number[], ConvOptions & ConvTransposeOptions, number | null];

// [variant, x shape, w shape, options, bias length]
const CONV2D: readonly ConvCase[] = [
  ['3x3', [2, 4, 9, 11], [6, 4, 3, 3], {}, null],
  ['padding 1, stride 2, bias', [2, 4, 9, 11], [6, 4, 3, 3], { padding: 1, stride: 2 }, 6],
  ['dilation 2, padding [2, 1]', [2, 4, 9, 11], [6, 4, 3, 3], { dilation: 2, padding: [2, 1] }, null],
  ['groups 2', [2, 4, 9, 11], [6, 2, 3, 3], { groups: 2, padding: 1 }, 6],
  ['depthwise', [2, 4, 9, 11], [4, 1, 3, 3], { groups: 4, padding: 1 }, null],
  ['1x1', [2, 4, 9, 11], [5, 4, 1, 1], {}, 5],
  ['kernel [3, 5], stride [1, 2]', [2, 4, 9, 11], [3, 4, 3, 5], { stride: [1, 2] }, null],
  ['unbatched', [4, 9, 11], [6, 4, 3, 3], { padding: 1 }, 6],
];
const CONV1D: readonly ConvCase[] = [
  ['k 5', [2, 4, 20], [6, 4, 5], {}, null],
  ['stride 2, padding 2, bias', [2, 4, 20], [6, 4, 5], { stride: 2, padding: 2 }, 6],
  ['dilation 3', [2, 4, 20], [6, 4, 3], { dilation: 3 }, null],
  ['groups 2', [2, 4, 20], [6, 2, 3], { groups: 2, padding: 1 }, 6],
  ['unbatched', [4, 20], [6, 4, 5], {}, null],
];
const CONVT2D: readonly ConvCase[] = [
  ['3x3', [2, 4, 7, 6], [4, 3, 3, 3], {}, null],
  [
    'stride 2, padding 1, outputPadding 1, bias',
    [2, 4, 7, 6],
    [4, 3, 3, 3],
    { stride: 2, padding: 1, outputPadding: 1 },
    3,
  ],
  ['groups 2', [2, 4, 7, 6], [4, 2, 3, 3], { groups: 2, stride: 2 }, 4],
  ['dilation 2', [2, 4, 7, 6], [4, 3, 3, 3], { dilation: 2, padding: 1 }, null],
  ['stride [2, 1], kernel [2, 4]', [2, 4, 7, 6], [4, 5, 2, 4], { stride: [2, 1] }, 5],
];
const CONVT1D: readonly ConvCase[] = [
  ['k 5', [2, 4, 10], [4, 3, 5], {}, null],
  ['stride 3, padding 1, outputPadding 2, bias', [2, 4, 10], [4, 3, 5], { stride: 3, padding: 1, outputPadding: 2 }, 3],
  ['groups 2', [2, 4, 10], [4, 2, 3], { groups: 2 }, 4],
];

function convTests(op: 'conv1d' | 'conv2d' | 'convTranspose1d' | 'convTranspose2d', cases: readonly ConvCase[]): void {
  s.opTest(op, async () => {
    for (const [variant, xs, ws, o, bias] of cases) {
      const make = (d: DType) => [r(xs, d), r(ws, d), ...(bias ? [r([bias], d)] : [])];
      await checkOp(
        op,
        FLOAT_DTYPES,
        LAYOUTS,
        make,
        ([x, w, b]) => {
          const opts = { ...o, bias: b ?? null };
          switch (op) {
            case 'conv1d':
              return x!.conv1d(w!, opts);
            case 'conv2d':
              return x!.conv2d(w!, opts);
            case 'convTranspose1d':
              return x!.convTranspose1d(w!, opts);
            case 'convTranspose2d':
              return x!.convTranspose2d(w!, opts);
          }
        },
        { variant, tol: CONV_TOL },
      );
    }
  });
}
convTests('conv2d', CONV2D);
convTests('conv1d', CONV1D);
convTests('convTranspose2d', CONVT2D);
convTests('convTranspose1d', CONVT1D);

s.opTest(
  'conv2d',
  async () => {
    // cuDNN keeps the descriptors and algorithm of 64 convolution shapes a handle (the oldest
    // destroyed first): 70 shapes, forward and transposed, then the first ones again, made anew
    const widths = Array.from({ length: 70 }, (_, i) => 4 + i);
    for (const w of [...widths, 4, 5]) {
      await checkOp(
        'conv2d',
        ['f32'],
        ['contiguous'],
        (d) => [r([1, 2, 5, w], d), r([3, 2, 3, 3], d)],
        ([x, k]) => x!.conv2d(k!, { padding: 1 }),
        { variant: `width ${w} (past the shapes kept)`, tol: CONV_TOL },
      );
      await checkOp(
        'convTranspose2d',
        ['f32'],
        ['contiguous'],
        (d) => [r([1, 2, 5, w], d), r([2, 3, 3, 3], d)],
        ([x, k]) => x!.convTranspose2d(k!, { stride: 2 }),
        { variant: `width ${w} (past the shapes kept)`, tol: CONV_TOL },
      );
    }
  },
  'conv2d: more shapes than the library descriptors kept, then the first again',
);

// ---- pooling ---------------------------------------------------------------------------------
const POOLS: readonly [string, PoolOptions][] = [
  ['k 3, stride 2, padding 1', { kernel: 3, stride: 2, padding: 1 }],
  ['k 2', { kernel: 2 }],
  ['k [2, 3], stride [2, 1]', { kernel: [2, 3], stride: [2, 1] }],
  ['k 3, stride 1, padding 1, countIncludePad false', { kernel: 3, stride: 1, padding: 1, countIncludePad: false }],
];
s.opTest('avgPool2d', async () => {
  for (const [variant, o] of POOLS) {
    await checkOp(
      'avgPool2d',
      FLOAT_DTYPES,
      LAYOUTS,
      (d) => [r([2, 3, 10, 11], d)],
      ([x]) => x!.avgPool2d(o),
      { variant },
    );
  }
  await checkOp(
    'avgPool2d',
    FLOAT_DTYPES,
    LAYOUTS,
    (d) => [r([3, 10, 11], d)],
    ([x]) => x!.avgPool2d({ kernel: 2 }),
    { variant: 'unbatched' },
  );
});
s.opTest('maxPool2d', async () => {
  for (const [variant, o] of POOLS) {
    const { countIncludePad: _unused, ...maxOpts } = o;
    await checkOp(
      'maxPool2d',
      FLOAT_DTYPES,
      LAYOUTS,
      (d) => [r([2, 3, 10, 11], d)],
      ([x]) => x!.maxPool2d(maxOpts),
      { variant },
    );
  }
  // every window sees only negative numbers and padding: padding must not win
  await checkOp(
    'maxPool2d',
    FLOAT_DTYPES,
    LAYOUTS,
    (d) => [r([2, 3, 10, 11], d, -5, -1)],
    ([x]) => x!.maxPool2d({ kernel: 3, padding: 1, stride: 2 }),
    { variant: 'all negative, padded' },
  );
});

// ---- softmax -------------------------------------------------------------------------------
const SOFTMAX: readonly [string, number[], number, number][] = [
  ['[9, 67] last dim', [9, 67], -1, 3],
  ['[9, 67] dim 0', [9, 67], 0, 3],
  ['[3, 5, 7] dim 1', [3, 5, 7], 1, 3],
  ['[4, 5000] last dim, large values', [4, 5000], -1, 50],
  ['[2, 1] single element rows', [2, 1], -1, 3],
];
for (const op of ['softmax', 'logSoftmax'] as const) {
  s.opTest(op, async () => {
    for (const [variant, shape, dim, range] of SOFTMAX) {
      await checkOp(
        op,
        FLOAT_DTYPES,
        LAYOUTS,
        (d) => [r(shape, d, -range, range)],
        ([x]) => (op === 'softmax' ? x!.softmax(dim) : x!.logSoftmax(dim)),
        { variant },
      );
    }
  });
}

// ---- batch norm (inference) ----------------------------------------------------------------
s.opTest('batchNorm', async () => {
  const make = (xs: number[], affine: boolean) => (d: DType) => {
    const c = xs[1]!;
    return [
      r(xs, d, -2, 2),
      r([c], d, -0.5, 0.5),
      r([c], d, 0.2, 2),
      ...(affine ? [r([c], d, 0.5, 1.5), r([c], d)] : []),
    ];
  };
  await checkOp(
    'batchNorm',
    FLOAT_DTYPES,
    LAYOUTS,
    make([2, 5, 6, 7], true),
    ([x, mean, variance, weight, bias]) =>
      x!.batchNorm({ mean: mean!, variance: variance!, weight: weight!, bias: bias!, eps: 1e-5 }),
    { variant: 'NCHW, weight and bias' },
  );
  await checkOp(
    'batchNorm',
    FLOAT_DTYPES,
    LAYOUTS,
    make([2, 5, 6, 7], false),
    ([x, mean, variance]) => x!.batchNorm({ mean: mean!, variance: variance! }),
    { variant: 'NCHW, no affine' },
  );
  await checkOp(
    'batchNorm',
    FLOAT_DTYPES,
    LAYOUTS,
    make([8, 5], true),
    ([x, mean, variance, weight, bias]) =>
      x!.batchNorm({ mean: mean!, variance: variance!, weight: weight!, bias: bias!, eps: 1e-3 }),
    { variant: '[n, c]' },
  );
  // planes of whole 16-byte vectors (batchnorm.hip's vector path), a plane longer than a block's
  // vectors, and per-channel tensors in f32 beside half data (read as f32) or mixed (cast first)
  await checkOp(
    'batchNorm',
    FLOAT_DTYPES,
    LAYOUTS,
    make([3, 4, 8, 8], true),
    ([x, mean, variance, weight, bias]) =>
      x!.batchNorm({ mean: mean!, variance: variance!, weight: weight!, bias: bias! }),
    { variant: 'planes of 64' },
  );
  await checkOp(
    'batchNorm',
    FLOAT_DTYPES,
    LAYOUTS,
    make([2, 3, 48, 96], false),
    ([x, mean, variance]) => x!.batchNorm({ mean: mean!, variance: variance! }),
    { variant: 'planes of 4608' },
  );
  const f32Stats = (xs: number[], mixed: boolean) => (d: DType) => {
    const c = xs[1]!;
    return [
      r(xs, d, -2, 2),
      r([c], 'f32', -0.5, 0.5),
      r([c], 'f32', 0.2, 2),
      r([c], mixed ? d : 'f32', 0.5, 1.5),
      r([c], 'f32'),
    ];
  };
  for (const mixed of [false, true]) {
    await checkOp(
      'batchNorm',
      ['f16', 'bf16'],
      LAYOUTS,
      f32Stats([2, 4, 4, 8], mixed),
      ([x, mean, variance, weight, bias]) =>
        x!.batchNorm({ mean: mean!, variance: variance!, weight: weight!, bias: bias! }),
      { variant: mixed ? 'half weight, f32 stats' : 'f32 per-channel tensors' },
    );
  }
});

s.run();
