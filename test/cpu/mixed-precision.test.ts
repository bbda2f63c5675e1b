// Mixed precision on the CPU: bf16 parameters with f32 master weights (updates below the
// parameter's resolution still add up, the state is f32 and survives a state-dict round trip),
// and f16 dynamic loss scaling (a step with Inf or NaN gradients is skipped and the scale
// shrinks; finite ones are unscaled and stepped; the scale grows after growthInterval good steps).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { Tensor, optim, nn, TensorError } from '../../src/index.ts';

const vals = (t: Tensor): number[] => Array.from(t.toDtype('f64').toArraySync() as Float64Array);

/** a bf16 parameter at `value` whose gradient is set to g each step */
function param(value: number, n = 4): Tensor {
  const p = Tensor.full([n], value, { dtype: 'bf16' });
  p.requiresGrad = true;
  return p;
}
const setGrad = (p: Tensor, g: number): void => {
  p.grad?.dispose();
  p.grad = Tensor.full(p.shape, g, { dtype: p.dtype });
};

test('masterWeights: SGD updates below bf16 resolution add up in the f32 copy; without it they are lost', () => {
  for (const master of [false, true]) {
    const p = param(1);
    const opt = new optim.SGD([p], { lr: 1e-4, masterWeights: master });
    for (let i = 0; i < 50; i++) {
      setGrad(p, 1);
      opt.step();
    }
    // 50 steps of 1e-4: the f32 copy holds 0.995, which bf16 (steps of 2^-8 below 1) rounds to
    // 1 - 2^-8; without it, each step's 0.9999 rounds back to 1
    const got = vals(p)[0]!;
    if (master) assert.is(got, 0.99609375, 'bf16(0.995) = 1 - 2^-8');
    else assert.is(got, 1, 'each 1e-4 step rounds back to 1 in bf16');
    p.grad?.dispose();
    opt.dispose();
    p.dispose();
  }
});

test('masterWeights: AdamW state is f32 and equals an f32 run on the same gradients; the state dict round-trips', () => {
  const p = param(0.5, 3);
  const ref = Tensor.full([3], 0.5, { dtype: 'f32' });
  ref.requiresGrad = true;
  const o = { lr: 1e-2, weightDecay: 0.1, masterWeights: true };
  const opt = new optim.AdamW([p], o),
    optRef = new optim.AdamW([ref], { lr: 1e-2, weightDecay: 0.1 });
  const grads = [0.25, -0.125, 0.75];
  for (const g of grads) {
    setGrad(p, g);
    ref.grad?.dispose();
    ref.grad = Tensor.full([3], g, { dtype: 'f32' });
    opt.step();
    optRef.step();
  }
  const sd = opt.stateDict();
  const st = sd.state[0]!;
  assert.is((st.master as Tensor).dtype, 'f32');
  assert.is((st.expAvg as Tensor).dtype, 'f32');
  // the master copy is the f32 run, exactly (these gradients are exact in bf16 and f32 alike)
  assert.equal(vals(st.master as Tensor), vals(ref));
  assert.equal(vals(p), vals((st.master as Tensor).toDtype('bf16')));
  // resume: a fresh optimizer loaded from the state dict takes the same next step
  const p2 = param(0.5, 3);
  const opt2 = new optim.AdamW([p2], o);
  opt2.loadStateDict(sd);
  assert.is((opt2.stateDict().state[0]!.master as Tensor).dtype, 'f32');
  for (const [q, oq] of [
    [p, opt],
    [p2, opt2],
  ] as const) {
    setGrad(q, 0.375);
    oq.step();
  }
  assert.equal(vals(opt2.stateDict().state[0]!.master as Tensor), vals(opt.stateDict().state[0]!.master as Tensor));
  for (const t of [p, p2, ref]) {
    t.grad?.dispose();
    t.dispose();
  }
  for (const x of [opt, opt2, optRef]) x.dispose();
});

test('GradScaler: Inf or NaN gradients skip the step and halve the scale; finite ones are unscaled and stepped', () => {
  const p = Tensor.full([4], 1, { dtype: 'f16' });
  p.requiresGrad = true;
  const opt = new optim.SGD([p], { lr: 0.5 });
  const scaler = new optim.GradScaler({ initScale: 1024, growthInterval: 2 });
  const loss = scaler.scaleLoss(p.sum());
  assert.is(loss.itemSync(), 4 * 1024);
  loss.backward();
  assert.equal(vals(p.grad!), [1024, 1024, 1024, 1024], 'the gradient carries the scale');
  assert.ok(scaler.step(opt), 'finite gradients: stepped');
  assert.equal(vals(p), [0.5, 0.5, 0.5, 0.5], 'with the unscaled gradient 1');
  scaler.update();
  assert.is(scaler.scale, 1024);
  for (const bad of [Infinity, Number.NaN]) {
    p.grad!.dispose();
    p.grad = Tensor.from([1, bad, 2, 3], { dtype: 'f16' });
    assert.not.ok(scaler.step(opt), `${bad}: skipped`);
    assert.equal(vals(p), [0.5, 0.5, 0.5, 0.5], `${bad}: the parameters did not move`);
    scaler.update();
  }
  assert.is(scaler.scale, 256, 'halved twice');
  // two good steps in a row grow it back
  for (let i = 0; i < 2; i++) {
    p.grad!.dispose();
    p.grad = Tensor.full([4], 256, { dtype: 'f16' });
    assert.ok(scaler.step(opt));
    scaler.update();
  }
  assert.is(scaler.scale, 512);
  assert.equal(scaler.stateDict(), { scale: 512, growthTracker: 0 });
  assert.throws(
    () => scaler.update(),
    (e: unknown) => e instanceof TensorError && /call step\(\)/.test((e as Error).message),
  );
  assert.throws(() => new optim.GradScaler({ backoffFactor: 2 }), /backoffFactor must be a number in \[/);
  p.grad!.dispose();
  for (const t of [loss, p]) t.dispose();
  opt.dispose();
});

test('a bf16 model with master weights trains (loss falls) where rounding alone would stall it', () => {
  nn.manualSeed(3);
  const model = new nn.Linear(8, 1, { dtype: 'bf16' });
  const x = Tensor.randn([64, 8], { seed: 4 }).toDtype('bf16');
  const y = x
    .toDtype('f32')
    .matmul(Tensor.randn([8, 1], { seed: 5 }))
    .toDtype('bf16');
  const opt = new optim.SGD(model.parameters(), { lr: 0.05, masterWeights: true });
  const lossAt = (): number => {
    const l = nn.mseLoss(model.forward(x), y);
    const v = l.itemSync();
    l.backward();
    l.dispose();
    return v;
  };
  const first = lossAt();
  opt.zeroGrad();
  let last = first;
  for (let i = 0; i < 60; i++) {
    last = lossAt();
    opt.step();
    opt.zeroGrad();
  }
  assert.ok(last < first * 0.2, `loss ${first} -> ${last}`);
  model.dispose();
  opt.dispose();
  for (const t of [x, y]) t.dispose();
});

test.run();
