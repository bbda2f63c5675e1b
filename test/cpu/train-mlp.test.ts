// End to end on the CPU: small MLPs trained on synthetic data to a loss threshold within a few
// seconds. A classifier (Linear, BatchNorm1d, ReLU, Dropout; crossEntropy; AdamW with a warm-up
// and cosine schedule, gradient clipping) and a regression (Linear, Tanh; mseLoss; SGD with
// nesterov momentum). Each checks the loss falls below its threshold, the accuracy or error on
// held-out points, and that the training loop leaves no tensor alive.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { Tensor, nn, optim, liveTensors, noGrad, tidy } from '../../src/index.ts';
import { backwardOf } from '../helpers.ts';

/** points in [-1, 1)^2: class 0 inside radius 0.55, else 1 on the right half and 2 on the left */
function rings(n: number, seed: number): { x: Tensor; y: Tensor } {
  const u = Tensor.rand([n, 2], { seed });
  const x = u.affine(2, -1);
  u.dispose();
  const xs = x.toArraySync() as Float32Array;
  const ids = new BigInt64Array(n);
  for (let i = 0; i < n; i++) {
    const a = xs[2 * i]!,
      b = xs[2 * i + 1]!;
    ids[i] = a * a + b * b < 0.3 ? 0n : a > 0 ? 1n : 2n;
  }
  return { x, y: Tensor.from(ids, { shape: [n] }) };
}

test('a classifier MLP learns three classes (AdamW, warm-up then cosine, clipping)', () => {
  const before = liveTensors().length;
  const t0 = performance.now();
  nn.manualSeed(2024);
  const model = new nn.Sequential(
    new nn.Linear(2, 32),
    new nn.BatchNorm1d(32),
    new nn.ReLU(),
    new nn.Dropout(0.05, { seed: 5 }),
    new nn.Linear(32, 32),
    new nn.ReLU(),
    new nn.Linear(32, 3),
  );
  const train = rings(384, 11),
    held = rings(256, 12);
  const opt = new optim.AdamW(model.parameters(), { lr: 0.03, weightDecay: 1e-4 });
  const steps = 120;
  const sched = new optim.SequentialLR(
    opt,
    [new optim.LinearLR(opt, { startFactor: 0.1, totalIters: 10 }), new optim.CosineAnnealingLR(opt, steps - 10)],
    [10],
  );
  const losses: Tensor[] = [];
  for (let step = 0; step < steps; step++) {
    // the loss stays on the device; it is read once, after the loop
    const loss = backwardOf(() => nn.crossEntropy(model.forward(train.x), train.y));
    losses.push(loss);
    optim.clipGradNorm(model.parameters(), 5).dispose();
    opt.step();
    opt.zeroGrad();
    sched.step();
  }
  const curve = losses.map((l) => l.itemSync());
  for (const l of losses) l.dispose();
  model.eval();
  const acc = noGrad(() =>
    tidy(() => {
      const pred = model.forward(held.x).argmax(1).toDtype('i64');
      return pred.eq(held.y).toDtype('f32').mean().itemSync();
    }),
  );
  const ms = performance.now() - t0;
  console.log(
    `  classifier: loss ${curve[0]!.toFixed(3)} -> ${curve.at(-1)!.toFixed(4)}, held-out accuracy ${(acc * 100).toFixed(1)}%, ${ms.toFixed(0)} ms`,
  );
  assert.ok(curve.every(Number.isFinite), 'every loss finite');
  assert.ok(curve[0]! > 0.9, `the first loss is near log 3: ${curve[0]}`);
  assert.ok(curve.at(-1)! < 0.1, `the last loss is below 0.1: ${curve.at(-1)}`);
  assert.ok(acc > 0.95, `held-out accuracy ${acc}`);
  assert.ok(ms < 30_000, `trained in ${ms.toFixed(0)} ms`);
  for (const t of [train.x, train.y, held.x, held.y]) t.dispose();
  opt.dispose();
  model.dispose();
  assert.is(liveTensors().length, before, 'tensors left alive');
});

test('a regression MLP fits a smooth function (SGD with nesterov momentum, mseLoss)', () => {
  const before = liveTensors().length;
  nn.manualSeed(7);
  const model = new nn.Sequential(new nn.Linear(1, 24), new nn.Tanh(), new nn.Linear(24, 1));
  const x = tidy(() => Tensor.arange(-2, 2, 4 / 128).reshape([128, 1]));
  const y = tidy(() => x.mul(2).sin().mul(0.8));
  const opt = new optim.SGD(model.parameters(), { lr: 0.1, momentum: 0.9, nesterov: true });
  let last = Infinity;
  for (let step = 0; step < 400; step++) {
    const loss = backwardOf(() => nn.mseLoss(model.forward(x), y));
    opt.step();
    opt.zeroGrad();
    if (step === 399) last = loss.itemSync();
    loss.dispose();
  }
  console.log(`  regression: final mse ${last.toExponential(2)}`);
  assert.ok(last < 5e-3, `final mse ${last}`);
  for (const t of [x, y]) t.dispose();
  opt.dispose();
  model.dispose();
  assert.is(liveTensors().length, before, 'tensors left alive');
});

test.run();
