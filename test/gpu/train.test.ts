// Training on the GPU against the CPU reference: each loss's value and input gradient (f32, f16,
// bf16 and f64, every input layout, outputs poisoned); the optimizers' steps from the same
// parameters and gradients; a small CNN built from the same seed on both devices (Conv2d,
// BatchNorm2d, ReLU, MaxPool2d, Flatten, Linear, Dropout) through forward, crossEntropy,
// backward, clipGradNorm and AdamW steps; an MLP trained on the GPU to a loss threshold; and a
// checkpoint (model file, optimizer state) that resumes with the uninterrupted run's losses.
import * as assert from 'uvu/assert';
import { gpuSuite, checkOp, compareNorm, LAYOUTS, FLOAT_DTYPES, type MakeInputs } from './harness.ts';
import { Tensor, nn, optim, tidy, noGrad, type DType, type Device } from '../../src/index.ts';
import { backwardOf, randT } from '../helpers.ts';
import { LlamaModel } from '../../src/models/llama.ts';
import { parseLlamaConfig } from '../../src/models/llama-config.ts';
import { MemoryWeights } from '../../src/nn/weights.ts';
import { tinyConfig, tinyWeights } from '../fixtures/tiny-llama.ts';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const s = gpuSuite('gpu/train');

// the backward runs several roundings of the forward's dtype on both sides
const TOL = { f64: 1e-10, f32: 1e-4, f16: 3e-2, bf16: 5e-2 };

/** class ids in [0, c) as i64 with one ignored (-100) */
function classIds(n: number, c: number): Tensor {
  const ids = Array.from({ length: n }, (_, i) => (i === 1 ? -100 : (i * 7 + 3) % c));
  return Tensor.from(BigInt64Array.from(ids.map(BigInt)), { shape: [n] });
}

type LossFn = (x: Tensor, t: Tensor) => Tensor;
const LOSSES: [string, LossFn, (d: DType) => Tensor[]][] = [
  [
    'crossEntropy',
    (x, t) => nn.crossEntropy(x, t, { labelSmoothing: 0.1 }),
    (d) => [randT([6, 5], d, -3, 3), classIds(6, 5)],
  ],
  [
    'crossEntropy none',
    (x, t) => nn.crossEntropy(x, t, { reduction: 'none' }),
    (d) => [randT([6, 5], d, -3, 3), classIds(6, 5)],
  ],
  ['nllLoss', (x, t) => nn.nllLoss(x.logSoftmax(1), t), (d) => [randT([6, 5], d, -3, 3), classIds(6, 5)]],
  ['mseLoss', (x, t) => nn.mseLoss(x, t), (d) => [randT([4, 6], d), randT([4, 6], d)]],
  ['l1Loss', (x, t) => nn.l1Loss(x, t), (d) => [randT([4, 6], d), randT([4, 6], d)]],
  ['smoothL1Loss', (x, t) => nn.smoothL1Loss(x, t, { beta: 0.5 }), (d) => [randT([4, 6], d), randT([4, 6], d)]],
  [
    'binaryCrossEntropyWithLogits',
    (x, t) => nn.binaryCrossEntropyWithLogits(x, t),
    (d) => [randT([4, 6], d, -4, 4), randT([4, 6], d, 0, 1)],
  ],
];

s.test('losses: values and input gradients against the CPU', async () => {
  for (const [name, f, make] of LOSSES) {
    const inputs: MakeInputs = (d) => make(d);
    await checkOp(
      name,
      FLOAT_DTYPES,
      LAYOUTS,
      inputs,
      ([x, t]) => {
        x!.requiresGrad = true;
        const loss = f(x!, t!);
        const value = loss.reshape([-1]);
        loss.sum().backward();
        return Tensor.cat([value, x!.grad!.reshape([-1])], 0);
      },
      { variant: 'value and gradient', tol: TOL, fixed: [1] },
    );
  }
});

/** the same parameters on both devices, and STEPS of gradients; the parameters after each step compared */
function optimizerMatches(dev: Device, name: string, make: (ps: Tensor[]) => { step(): void; dispose(): void }): void {
  const base = [randT([7, 5]), randT([5])];
  const on = (d: Device | 'cpu'): Tensor[] =>
    base.map((p) => {
      const t = noGrad(() => p.to(d).mul(1));
      t.requiresGrad = true;
      return t;
    });
  const cpu = on('cpu'),
    gpu = on(dev);
  const oc = make(cpu),
    og = make(gpu);
  for (let step = 0; step < 5; step++) {
    base.forEach((p, i) => {
      const g = randT(p.shape, 'f32', -2, 2);
      for (const [ps, d] of [
        [cpu, 'cpu'],
        [gpu, dev],
      ] as const) {
        ps[i]!.grad?.dispose();
        ps[i]!.grad = noGrad(() => g.to(d).mul(1));
      }
    });
    optim.clipGradNorm(cpu, 3).dispose();
    optim.clipGradNorm(gpu, 3).dispose();
    oc.step();
    og.step();
    cpu.forEach((p, i) => {
      const r = compareNorm(gpu[i]!.toArraySync() as Float32Array, p.toArraySync() as Float32Array, 1e-5);
      assert.ok(r.ok, `${name} step ${step} parameter ${i}: ${r.note}`);
    });
  }
  oc.dispose();
  og.dispose();
}

s.test('optimizers: SGD, Adam and AdamW steps against the CPU', (dev) => {
  optimizerMatches(
    dev,
    'SGD nesterov',
    (ps) => new optim.SGD(ps, { lr: 0.05, momentum: 0.9, nesterov: true, weightDecay: 0.01 }),
  );
  optimizerMatches(dev, 'Adam amsgrad', (ps) => new optim.Adam(ps, { lr: 0.01, amsgrad: true, weightDecay: 0.01 }));
  optimizerMatches(dev, 'AdamW', (ps) => new optim.AdamW(ps, { lr: 0.01 }));
});

s.test('a small CNN: the same seed builds the same model; forward, backward and AdamW steps match the CPU', (dev) => {
  const build = (d: Device | 'cpu'): nn.Sequential => {
    nn.manualSeed(5);
    return new nn.Sequential(
      // no bias before a batch norm: its gradient is zero up to rounding noise, which AdamW's
      // normalized step would turn into different updates on the two devices
      new nn.Conv2d(1, 4, 3, { padding: 1, bias: false, device: d }),
      new nn.BatchNorm2d(4, { device: d }),
      new nn.ReLU(),
      new nn.MaxPool2d(2),
      new nn.Flatten(),
      new nn.Dropout(0.2, { seed: 9 }),
      new nn.Linear(4 * 4 * 4, 10, { device: d }),
    );
  };
  const mc = build('cpu'),
    mg = build(dev);
  for (const [[n, a], [, b]] of mc.namedParameters().map((p, i) => [p, mg.namedParameters()[i]!] as const)) {
    // the same uniform draws; the GPU's scale-and-shift to the fan-in bound may round the last bit
    // differently (a fused multiply-add)
    const r = compareNorm(b.toArraySync() as Float32Array, a.toArraySync() as Float32Array, 1e-6);
    assert.ok(r.ok, `initial ${n}: ${r.note}`);
  }
  const oc = new optim.AdamW(mc.parameters(), { lr: 0.01 }),
    og = new optim.AdamW(mg.parameters(), { lr: 0.01 });
  const x = randT([6, 1, 8, 8]),
    y = Tensor.from(BigInt64Array.from([0n, 3n, 9n, 3n, 1n, 7n]), { shape: [6] });
  const xg = x.to(dev),
    yg = y.to(dev);
  for (let step = 0; step < 3; step++) {
    const lc = tidy(() => {
      const l = nn.crossEntropy(mc.forward(x), y);
      l.backward();
      return l.itemSync();
    });
    const lg = tidy(() => {
      const l = nn.crossEntropy(mg.forward(xg), yg);
      l.backward();
      return l.itemSync();
    });
    assert.ok(Math.abs(lc - lg) <= 1e-4 * Math.max(1, Math.abs(lc)), `step ${step} loss: gpu ${lg}, cpu ${lc}`);
    for (const [[n, a], [, b]] of mc.namedParameters().map((p, i) => [p, mg.namedParameters()[i]!] as const)) {
      const r = compareNorm(b.grad!.toArraySync() as Float32Array, a.grad!.toArraySync() as Float32Array, 1e-4);
      assert.ok(r.ok, `step ${step} gradient of ${n}: ${r.note}`);
    }
    optim.clipGradNorm(mc.parameters(), 1).dispose();
    optim.clipGradNorm(mg.parameters(), 1).dispose();
    oc.step();
    og.step();
    oc.zeroGrad();
    og.zeroGrad();
  }
  for (const [[n, a], [, b]] of Object.entries(mc.stateDict()).map(
    (p, i) => [p, Object.entries(mg.stateDict())[i]!] as const,
  )) {
    const r = compareNorm(b.toArraySync() as Float32Array, a.toArraySync() as Float32Array, 1e-4);
    assert.ok(r.ok, `after 3 steps, ${n}: ${r.note}`);
  }
  for (const t of [x, y, xg, yg]) t.dispose();
  oc.dispose();
  og.dispose();
  mc.dispose();
  mg.dispose();
});

s.test('an MLP trains on the GPU to a loss threshold', (dev) => {
  nn.manualSeed(3);
  const model = new nn.Sequential(
    new nn.Linear(1, 32, { device: dev }),
    new nn.Tanh(),
    new nn.Linear(32, 1, { device: dev }),
  );
  const x = tidy(() => Tensor.arange(-2, 2, 4 / 256, { device: dev }).reshape([256, 1]));
  const y = tidy(() => x.mul(2).sin().mul(0.8));
  const opt = new optim.Adam(model.parameters(), { lr: 0.01 });
  const sched = new optim.CosineAnnealingLR(opt, 500);
  let last = Infinity;
  for (let step = 0; step < 500; step++) {
    const loss = backwardOf(() => nn.mseLoss(model.forward(x), y));
    opt.step();
    opt.zeroGrad();
    sched.step();
    if (step === 499) last = loss.itemSync();
    loss.dispose();
  }
  console.log(`  gpu/train: MLP final mse ${last.toExponential(2)} on ${dev}`);
  assert.ok(last < 5e-3, `final mse ${last}`);
  for (const t of [x, y]) t.dispose();
  opt.dispose();
  model.dispose();
});

s.test(
  'a checkpoint resumes exactly: the model file and the optimizer state give the uninterrupted losses',
  async (dev) => {
    const build = (seed: number) => {
      nn.manualSeed(seed);
      return new nn.Sequential(
        new nn.Linear(3, 24, { device: dev }),
        new nn.GELU(),
        new nn.LayerNorm(24, { device: dev }),
        new nn.Linear(24, 2, { device: dev }),
      );
    };
    const x = tidy(() => Tensor.randn([64, 3], { seed: 11 }).to(dev));
    const y = tidy(() => Tensor.randn([64, 2], { seed: 12 }).to(dev));
    const step = (model: nn.Sequential, opt: optim.AdamW): number => {
      const loss = backwardOf(() => nn.mseLoss(model.forward(x), y));
      opt.step();
      opt.zeroGrad();
      const v = loss.itemSync();
      loss.dispose();
      return v;
    };
    const hyper = { lr: 0.02, weightDecay: 0.01 };
    const whole = build(5);
    const wholeOpt = new optim.AdamW(whole.parameters(), hyper);
    const want = Array.from({ length: 6 }, () => step(whole, wholeOpt));
    const first = build(5);
    const firstOpt = new optim.AdamW(first.parameters(), hyper);
    for (let i = 0; i < 3; i++) assert.is(step(first, firstOpt), want[i], `step ${i} before the checkpoint`);
    const dir = mkdtempSync(join(tmpdir(), 'rocm-tensor-resume-'));
    try {
      const file = join(dir, 'model.safetensors');
      await nn.saveModule(first, file);
      const state = firstOpt.stateDict();
      // a model from another seed, and a fresh optimizer: all they know comes from the checkpoint
      const resumed = build(99);
      await nn.loadModule(resumed, file);
      const resumedOpt = new optim.AdamW(resumed.parameters(), hyper);
      resumedOpt.loadStateDict(state);
      for (const st of Object.values(state.state))
        for (const v of Object.values(st)) if (v instanceof Tensor) v.dispose();
      for (let i = 3; i < 6; i++) assert.is(step(resumed, resumedOpt), want[i], `step ${i} after resuming`);
      resumedOpt.dispose();
      resumed.dispose();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    for (const t of [x, y]) t.dispose();
    for (const o of [wholeOpt, firstOpt]) o.dispose();
    whole.dispose();
    first.dispose();
  },
);

s.test('a Llama-family model: forwardTrain loss and every weight gradient match the CPU (f32)', async (dev) => {
  for (const type of ['llama', 'qwen2'] as const) {
    const raw = tinyConfig(type, { tied: type === 'qwen2' });
    const build = (d: Device | 'cpu') =>
      LlamaModel.fromWeights(parseLlamaConfig(raw), new MemoryWeights(tinyWeights(raw, 7)), {
        device: d,
        dtype: 'f32',
      });
    const [mc, mg] = [await build('cpu'), await build(dev)];
    const ids = Tensor.from([1, 17, 42, 5, 88, 3, 9, 12, 7, 60, 2, 33], { dtype: 'u32', shape: [2, 6] });
    const tg = Tensor.from(BigInt64Array.from([17n, 42n, 5n, 88n, 3n, 9n, 7n, 60n, 2n, 33n, 1n, 4n]));
    const run = (m: LlamaModel, d: Device | 'cpu') => {
      for (const p of m.parameters()) p.requiresGrad = true;
      return tidy(() => {
        const l = nn.crossEntropy(m.forwardTrain(ids.to(d)).reshape([12, -1]), tg.to(d));
        l.backward();
        return l.itemSync();
      });
    };
    const lc = run(mc, 'cpu'),
      lg = run(mg, dev);
    assert.ok(Math.abs(lc - lg) <= 1e-5 * Math.abs(lc), `${type}: loss gpu ${lg}, cpu ${lc}`);
    const pc = mc.parameters(),
      pg = mg.parameters();
    assert.is(pc.length, pg.length);
    pc.forEach((a, i) => {
      const r = compareNorm(pg[i]!.grad!.toArraySync() as Float32Array, a.grad!.toArraySync() as Float32Array, 1e-4);
      assert.ok(r.ok, `${type}: gradient of ${a.describe()}: ${r.note}`);
    });
    for (const m of [mc, mg]) {
      for (const p of m.parameters()) {
        p.grad?.dispose();
        p.grad = null;
        p.requiresGrad = false;
      }
      m.dispose();
    }
    for (const t of [ids, tg]) t.dispose();
  }
});

s.run();
