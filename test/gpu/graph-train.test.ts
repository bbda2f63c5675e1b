// captureBackward: a training step's forward and backward replayed from a graph gives the eager
// gradients as the inputs change (convolutions, pooling and batch norm through the DNN library,
// GEMMs, attention, losses), training with it follows the eager loss curve, zeroGrad between
// runs is harmless, and an unseeded dropout inside is refused.
import { gpuSuite } from './harness.ts';
import * as assert from 'uvu/assert';
import { Tensor, GraphCaptureError, captureBackward, nn, optim, type Device } from '../../src/index.ts';
import { relErr } from '../helpers.ts';

const s = gpuSuite('gpu/graph-train', { needsRuntime: true });
const arr = async (t: Tensor) => Array.from(await t.toArray(), Number);

function cnn(dev: Device, seed: number): nn.Sequential {
  nn.manualSeed(seed);
  const o = { device: dev };
  return new nn.Sequential(
    // no bias ahead of batch norm (its gradient would be rounding noise around 0)
    new nn.Conv2d(1, 8, 3, { padding: 1, bias: false, ...o }),
    new nn.BatchNorm2d(8, o),
    new nn.ReLU(),
    new nn.MaxPool2d(2),
    new nn.Conv2d(8, 16, 3, { padding: 1, ...o }),
    new nn.ReLU(),
    new nn.AvgPool2d(2),
    new nn.Flatten(),
    new nn.Linear(16 * 7 * 7, 32, o),
    new nn.ReLU(),
    new nn.Linear(32, 10, o),
  );
}

s.test('captureBackward: replayed gradients equal eager ones as the batch changes (CNN, cuDNN)', async (dev) => {
  const model = cnn(dev, 1);
  const params = model.parameters();
  const x = Tensor.randn([32, 1, 28, 28], { seed: 2, device: dev });
  const y = Tensor.randint(0, 10, [32], { seed: 3, device: dev, dtype: 'i64' });
  const lossFn = () => nn.crossEntropy(model.forward(x), y);
  const step = captureBackward(lossFn, params);
  try {
    for (let round = 0; round < 3; round++) {
      const nx = Tensor.randn([32, 1, 28, 28], { seed: 10 + round, device: dev });
      x.sliceSet(nx, 0, 0);
      nx.dispose();
      const loss = step.run();
      const got = await Promise.all(params.map((p) => arr(p.grad!)));
      const lossGot = (await arr(loss))[0]!;
      loss.dispose();
      // eager on copies of the same parameters (batch norm's running statistics move in both)
      for (const p of params) {
        p.grad?.dispose();
        p.grad = null;
      }
      const l = lossFn();
      l.backward();
      const lossWant = (await arr(l))[0]!;
      l.dispose();
      assert.ok(
        Math.abs(lossGot - lossWant) <= 1e-5 * Math.max(1, Math.abs(lossWant)),
        `round ${round}: loss ${lossGot} vs ${lossWant}`,
      );
      const errs: string[] = [];
      let worst = 0;
      for (let i = 0; i < params.length; i++) {
        const want = await arr(params[i]!.grad!);
        assert.ok(!got[i]!.some(Number.isNaN), `round ${round}: NaN in gradient ${i}`);
        // against the gradient's own scale
        const scale = Math.max(...want.map(Math.abs), 1e-6);
        const e = Math.max(...want.map((w, j) => Math.abs(w - got[i]![j]!))) / scale;
        worst = Math.max(worst, e);
        errs.push(`${i} ${params[i]!.describe()}: ${e.toExponential(2)}`);
      }
      assert.ok(worst < 1e-4, `round ${round}: gradients' errors (max |diff| / max |eager|) ${errs.join('; ')}`);
      for (const p of params) {
        p.grad?.dispose();
        p.grad = null;
      }
    }
  } finally {
    step.dispose();
    model.dispose();
    x.dispose();
    y.dispose();
  }
});

s.test('captureBackward: SGD on replayed gradients follows the eager loss curve; zeroGrad is harmless', async (dev) => {
  const curve = async (graphed: boolean): Promise<number[]> => {
    const model = cnn(dev, 5);
    const params = model.parameters();
    const opt = new optim.SGD(params, { lr: 0.05, momentum: 0.9 });
    const x = Tensor.randn([64, 1, 28, 28], { seed: 6, device: dev });
    const y = Tensor.randint(0, 10, [64], { seed: 7, device: dev, dtype: 'i64' });
    const lossFn = () => nn.crossEntropy(model.forward(x), y);
    const losses: number[] = [];
    // warmup 0: the eager curve's first step is the graph's first step too
    const step = graphed ? captureBackward(lossFn, params, { warmup: 0 }) : null;
    for (let i = 0; i < 8; i++) {
      let loss: Tensor;
      if (step) loss = step.run();
      else {
        loss = lossFn();
        loss.backward();
      }
      opt.step();
      opt.zeroGrad();
      losses.push((await arr(loss))[0]!);
      loss.dispose();
    }
    step?.dispose();
    model.dispose();
    x.dispose();
    y.dispose();
    return losses;
  };
  const eager = await curve(false);
  const graphed = await curve(true);
  assert.ok(eager[7]! < eager[0]!, `the eager loss falls: ${eager.join(', ')}`);
  for (let i = 0; i < eager.length; i++)
    assert.ok(
      Math.abs(eager[i]! - graphed[i]!) <= 1e-3 * Math.max(1, Math.abs(eager[i]!)),
      `step ${i}: eager ${eager[i]} graphed ${graphed[i]}`,
    );
});

s.test('captureBackward: a transformer block in bf16 (GEMMs, attention, norms, embedding)', async (dev) => {
  nn.manualSeed(9);
  const o = { device: dev, dtype: 'bf16' as const };
  const emb = new nn.Embedding(64, 32, o);
  const norm = new nn.RMSNorm(32, o);
  const mha = new nn.MultiheadAttention(32, 4, { batchFirst: true, ...o });
  const head = new nn.Linear(32, 64, o);
  const params = [...emb.parameters(), ...norm.parameters(), ...mha.parameters(), ...head.parameters()];
  const ids = Tensor.randint(0, 64, [4, 16], { seed: 11, device: dev, dtype: 'i64' });
  const tgt = Tensor.randint(0, 64, [64], { seed: 12, device: dev, dtype: 'i64' });
  const lossFn = () => {
    const h = norm.forward(emb.forward(ids));
    const a = mha.forward(h, h, h, { isCausal: true });
    return nn.crossEntropy(head.forward(a.add(h)).reshape([64, 64]).toDtype('f32'), tgt);
  };
  const step = captureBackward(lossFn, params);
  try {
    const loss = step.run();
    const got = await Promise.all(params.map((p) => arr(p.grad!)));
    loss.dispose();
    for (const p of params) {
      p.grad?.dispose();
      p.grad = null;
    }
    const l = lossFn();
    l.backward();
    l.dispose();
    for (let i = 0; i < params.length; i++) {
      const e = relErr(got[i]!, await arr(params[i]!.grad!));
      assert.ok(e < 1e-2, `gradient ${i} ${params[i]!.describe()} relative error ${e}`);
    }
  } finally {
    step.dispose();
    for (const m of [emb, norm, mha, head]) m.dispose();
    ids.dispose();
    tgt.dispose();
  }
});

s.test('captureBackward: dropout is refused, seeded or not (a replay would repeat its mask)', async (dev) => {
  nn.manualSeed(13);
  const lin = new nn.Linear(16, 4, { device: dev });
  const x = Tensor.randn([8, 16], { seed: 14, device: dev });
  for (const drop of [new nn.Dropout(0.5), new nn.Dropout(0.5, { seed: 3 })]) {
    assert.throws(
      () => captureBackward(() => drop.forward(lin.forward(x)).sum(), lin.parameters(), { warmup: 0 }),
      (e: unknown) => e instanceof GraphCaptureError && /dropout inside captureBackward/.test((e as Error).message),
    );
    assert.equal(dev.isCapturing, false, 'the capture state is clean after the refusal');
  }
  // in evaluation mode dropout is the identity: nothing to refuse
  const off = new nn.Dropout(0.5);
  off.eval();
  const ok = captureBackward(() => off.forward(lin.forward(x)).sum(), lin.parameters(), { warmup: 0 });
  ok.run().dispose();
  ok.dispose();
  lin.dispose();
  x.dispose();
});

s.run();
