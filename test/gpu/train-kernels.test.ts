// The fused training kernels on the GPU against the CPU reference (every float dtype, every input
// layout, outputs poisoned): softmax / logSoftmax, layerNorm / rmsNorm and SwiGLU gradients through
// their backward kernels (SwiGLU's forward too) (rows shorter and longer than a block, dims other than the last), cross
// entropy's value and logit gradient (weights, ignoreIndex, label smoothing, [N, C, d] inputs),
// and the fused Adam / AdamW / SGD steps (one launch a list) against the CPU's op-composed step
// from the same parameters and gradients, master weights included.
import * as assert from 'uvu/assert';
import { gpuSuite, checkOp, LAYOUTS, FLOAT_DTYPES } from './harness.ts';
import { Tensor, nn, optim, noGrad, GraphCaptureError, type DType, type Device } from '../../src/index.ts';
import { randT } from '../helpers.ts';
import { gradInputs, gradsOf, type GradFn } from './grad-run.ts';

const s = gpuSuite('gpu/train-kernels');

// the backward runs several roundings of the forward's dtype on both sides
const TOL = { f64: 1e-10, f32: 1e-4, f16: 3e-2, bf16: 5e-2 };

type Fn = GradFn;

const cases: [string, string, number[][], Fn][] = [
  ['softmaxBackward', 'softmax [5, 300]', [[5, 300]], ([x]) => x!.softmax(-1)],
  ['softmaxBackward', 'logSoftmax [5, 300]', [[5, 300]], ([x]) => x!.logSoftmax(-1)],
  ['softmaxBackward', 'softmax dim 0 [7, 6]', [[7, 6]], ([x]) => x!.softmax(0)],
  ['softmaxBackward', 'logSoftmax [3, 1]', [[3, 1]], ([x]) => x!.logSoftmax(-1)],
  [
    'layerNormBackward',
    'layerNorm + bias [37, 1000]',
    [[37, 1000], [1000], [1000]],
    ([x, w, b]) => x!.layerNorm(w!, b!, 1e-5),
  ],
  ['layerNormBackward', 'layerNorm [2, 3, 40]', [[2, 3, 40], [40]], ([x, w]) => x!.layerNorm(w!, null, 1e-5)],
  ['rmsNormBackward', 'rmsNorm [37, 1000]', [[37, 1000], [1000]], ([x, w]) => x!.rmsNorm(w!, 1e-6)],
  ['rmsNormBackward', 'rmsNorm [3, 7]', [[3, 7], [7]], ([x, w]) => x!.rmsNorm(w!, 1e-6)],
  // rows of more than 24 waves' worth of columns take the block-a-row kernel (f64 always does)
  ['rmsNormBackward', 'rmsNorm [5, 2100]', [[5, 2100], [2100]], ([x, w]) => x!.rmsNorm(w!, 1e-6)],
  ['swigluBackward', 'swiglu [37, 1000]', [[37, 1000]], ([x]) => x!.swiglu()],
  ['swigluBackward', 'swiglu [3, 2, 6]', [[3, 2, 6]], ([x]) => x!.swiglu()],
];
for (const [op, variant, shapes, f] of cases)
  s.opTest(
    op,
    async () => {
      await checkOp(op, FLOAT_DTYPES, LAYOUTS, gradInputs(shapes, f), gradsOf(f), {
        variant,
        tol: TOL,
        fixed: [shapes.length],
      });
    },
    `${op}: ${variant} gradients against the CPU`,
  );

s.opTest('swiglu', async () => {
  for (const shape of [
    [37, 1000],
    [3, 2, 6],
  ])
    await checkOp(
      'swiglu',
      FLOAT_DTYPES,
      LAYOUTS,
      (d) => [randT(shape, d, -4, 4)],
      ([x]) => x!.swiglu(),
      {
        variant: `[${shape}]`,
        tol: TOL,
      },
    );
});

/** class ids in [0, c) as i64 (made on x's device), one ignored (-100) */
function classIds(shape: number[], c: number, x: Tensor): Tensor {
  const n = shape.reduce((a, b) => a * b, 1);
  const ids = Array.from({ length: n }, (_, i) => (i === 1 ? -100 : (i * 7 + 3) % c));
  return Tensor.from(BigInt64Array.from(ids.map(BigInt)), { shape, device: x.device });
}

const XENT: [string, number[], (x: Tensor, w: Tensor) => Tensor][] = [
  ['mean, smoothing 0.1', [9, 5], (x) => nn.crossEntropy(x, classIds([9], 5, x), { labelSmoothing: 0.1 })],
  ['sum, weights', [9, 5], (x, w) => nn.crossEntropy(x, classIds([9], 5, x), { weight: w, reduction: 'sum' })],
  [
    'none, weights, smoothing, 300 classes',
    [6, 300],
    (x, w) =>
      nn.crossEntropy(x, classIds([6], 300, x), {
        weight: w.narrow(0, 0, 1).expand([300]).contiguous(),
        labelSmoothing: 0.2,
        reduction: 'none',
      }),
  ],
  ['[N, C, d] mean, weights', [3, 5, 4], (x, w) => nn.crossEntropy(x, classIds([3, 4], 5, x), { weight: w })],
];
for (const [variant, shape, f] of XENT)
  s.opTest(
    'crossEntropyRows',
    async () => {
      await checkOp(
        'crossEntropy',
        FLOAT_DTYPES,
        LAYOUTS,
        (d) => [randT(shape, d, -3, 3), randT([shape[1]!], d, 0.2, 2)],
        ([x, w]) => {
          x!.requiresGrad = true;
          const loss = f(x!, w!);
          loss.sum().backward();
          return Tensor.cat([loss.reshape([-1]), x!.grad!.reshape([-1])], 0);
        },
        { variant, tol: TOL, fixed: [1] },
      );
    },
    `crossEntropy ${variant}: value and logit gradient against the CPU`,
  );

/** the same parameters and gradients on the CPU and on dev */
function twin(dev: Device, dtype: DType): { cpu: Tensor[]; gpu: Tensor[]; grads: Tensor[][] } {
  const shapes = [[33, 70], [5000], [1], [4096]];
  const cpu = shapes.map((sh) => randT(sh, dtype, -1, 1));
  const gpu = cpu.map((t) => t.to(dev));
  for (const t of [...cpu, ...gpu]) t.requiresGrad = true;
  const grads = [0, 1, 2].map(() => shapes.map((sh) => randT(sh, dtype, -0.5, 0.5)));
  return { cpu, gpu, grads };
}

const OPTS: [
  string,
  boolean,
  (ps: Tensor[], master: boolean, fused: boolean) => optim.AdamW | optim.Adam | optim.SGD,
][] = [
  [
    'AdamW',
    true,
    (ps, masterWeights, fused) => new optim.AdamW(ps, { lr: 0.01, weightDecay: 0.1, masterWeights, fused }),
  ],
  [
    'Adam amsgrad',
    true,
    (ps, masterWeights, fused) =>
      new optim.Adam(ps, { lr: 0.01, amsgrad: true, weightDecay: 0.05, masterWeights, fused }),
  ],
  [
    'SGD nesterov',
    false,
    (ps, masterWeights, fused) =>
      new optim.SGD(ps, { lr: 0.1, momentum: 0.9, nesterov: true, weightDecay: 0.01, masterWeights, fused }),
  ],
  ['SGD', false, (ps, masterWeights, fused) => new optim.SGD(ps, { lr: 0.1, masterWeights, fused })],
];

s.opTest(
  'adamStep',
  async (dev) => {
    for (const [name, , make] of OPTS)
      for (const [dtype, master] of [
        ['f32', false],
        ['f64', false],
        ['bf16', true],
        ['f16', true],
        ['bf16', false],
      ] as const) {
        const { cpu, gpu, grads } = twin(dev, dtype);
        const oc = make(cpu, master, true),
          og = make(gpu, master, true);
        for (const gs of grads) {
          cpu.forEach((p, i) => (p.grad = gs[i]!.mul(1)));
          gpu.forEach((p, i) => (p.grad = gs[i]!.to(dev)));
          oc.step();
          og.step();
          oc.zeroGrad();
          og.zeroGrad();
        }
        // f16 without master weights rounds eps to 0 in the composed CPU update: left out above.
        // Half parameters and state: the composed update rounds after every op, the fused one once
        // a step, so after a few steps they part by a few units in the last place (bf16: 2^-8 each)
        const tol = dtype === 'f32' ? 1e-5 : dtype === 'f64' ? 1e-12 : dtype === 'bf16' ? 3e-2 : 1e-2;
        for (let i = 0; i < cpu.length; i++) {
          const wt = cpu[i]!.toDtype('f64'),
            gt = gpu[i]!.toDtype('f64');
          const want = await wt.toArray();
          const got = await gt.toArray();
          wt.dispose();
          gt.dispose();
          const w = Array.from(want as Float64Array),
            g = Array.from(got as Float64Array);
          let worst = 0;
          for (let k = 0; k < w.length; k++) {
            const e = Math.abs(g[k]! - w[k]!) / Math.max(1, Math.abs(w[k]!));
            assert.ok(
              Number.isFinite(g[k]!),
              `${name} ${dtype}${master ? ' master' : ''}: param ${i}[${k}] is ${g[k]}`,
            );
            worst = Math.max(worst, e);
          }
          assert.ok(
            worst <= tol,
            `${name} ${dtype}${master ? ' master' : ''}: param ${i} off by ${worst} (tol ${tol})`,
          );
        }
        oc.dispose();
        og.dispose();
        for (const t of [...cpu, ...gpu, ...grads.flat()]) t.dispose();
      }
  },
  'adamStep / sgdStep: the fused GPU step equals the CPU op-composed step (AdamW, amsgrad, SGD, master weights)',
);

s.opTest(
  'adamStep',
  async (dev) => {
    // fused and composed on the same GPU, from the same start: the same parameters after 3 steps
    const { gpu, grads } = twin(dev, 'f32');
    const other = gpu.map((p) => {
      const q = noGrad(() => p.mul(1));
      q.requiresGrad = true;
      return q;
    });
    const a = new optim.AdamW(gpu, { lr: 0.01 }),
      b = new optim.AdamW(other, { lr: 0.01, fused: false });
    for (const gs of grads) {
      gpu.forEach((p, i) => (p.grad = gs[i]!.to(dev)));
      other.forEach((p, i) => (p.grad = gs[i]!.to(dev)));
      a.step();
      b.step();
      a.zeroGrad();
      b.zeroGrad();
    }
    for (let i = 0; i < gpu.length; i++) {
      const x = Array.from((await gpu[i]!.to('cpu').toArray()) as Float32Array),
        y = Array.from((await other[i]!.to('cpu').toArray()) as Float32Array);
      x.forEach((v, k) =>
        assert.ok(
          Math.abs(v - y[k]!) <= 1e-5 * Math.max(1, Math.abs(y[k]!)),
          `param ${i}[${k}]: fused ${v}, composed ${y[k]}`,
        ),
      );
    }
    a.dispose();
    b.dispose();
    for (const t of [...gpu, ...other, ...grads.flat()]) t.dispose();
  },
  'AdamW: fused (one launch) and composed steps agree on the GPU',
);

s.opTest(
  'sgdStep',
  async (dev) => {
    if (dev.isCpu) {
      console.log('gpu/train-kernels: the captured-step test needs a GPU (graphs), left out on the CPU device');
      return;
    }
    // a step captured once replays with the table it was captured with: gradients written into
    // the same tensors before each replay give what eager steps give
    const shapes = [[33, 70], [5000], [1]];
    const start = shapes.map((sh) => randT(sh, 'f32', -1, 1, dev));
    const mk = (): Tensor[] =>
      start.map((t) => {
        const q = noGrad(() => t.mul(1));
        q.requiresGrad = true;
        return q;
      });
    const a = mk(),
      b = mk();
    const ga = shapes.map((sh) => Tensor.zeros(sh, { device: dev })),
      gb = shapes.map((sh) => Tensor.zeros(sh, { device: dev }));
    a.forEach((p, i) => (p.grad = ga[i]!));
    b.forEach((p, i) => (p.grad = gb[i]!));
    const oa = new optim.SGD(a, { lr: 0.1, momentum: 0.9, nesterov: true, weightDecay: 0.01 }),
      ob = new optim.SGD(b, { lr: 0.1, momentum: 0.9, nesterov: true, weightDecay: 0.01 });
    const feed = (): void =>
      shapes.forEach((sh, i) => {
        const g = randT(sh, 'f32', -0.5, 0.5, dev);
        ga[i]!.sliceSet(g, 0, 0);
        gb[i]!.sliceSet(g, 0, 0);
        g.dispose();
      });
    // the first step makes the momentum buffers, the second uploads the table of a list with
    // state: both outside the capture
    for (let i = 0; i < 2; i++) {
      feed();
      oa.step();
      ob.step();
    }
    const graph = dev.captureGraph(() => {
      oa.step();
      return a[0]!.sum();
    });
    for (let round = 1; round <= 3; round++) {
      feed();
      graph.replay();
      ob.step();
    }
    for (let i = 0; i < a.length; i++) {
      const x = Array.from((await a[i]!.toArray()) as Float32Array),
        y = Array.from((await b[i]!.toArray()) as Float32Array);
      x.forEach((v, k) =>
        assert.ok(
          Math.abs(v - y[k]!) <= 1e-6 * Math.max(1, Math.abs(y[k]!)),
          `param ${i}[${k}]: replayed ${v}, eager ${y[k]}`,
        ),
      );
    }
    graph.dispose();
    // Adam's bias corrections would replay unchanged: its fused step refuses a capture
    const adam = new optim.AdamW(b, { lr: 0.01 });
    adam.step();
    assert.throws(
      () =>
        dev.captureGraph(() => {
          adam.step();
          return b[0]!.sum();
        }),
      (e: Error) => e instanceof GraphCaptureError && /bias corrections/.test(e.message),
    );
    assert.not.ok(dev.isCapturing, 'the refused capture left no capture behind');
    adam.dispose();
    oa.dispose();
    ob.dispose();
    for (const t of [...start, ...a, ...b, ...ga, ...gb]) t.dispose();
  },
  'SGD: a fused step captured in a graph replays as eager steps do; AdamW refuses a capture',
);

s.run();
