// The Llama-family models' training forward on the CPU: its logits equal the inference forward's
// for every variant (GQA, MQA, tied head, sliding window, qkv biases); the gradients of its
// weights against f64 finite differences; and a few AdamW steps on one batch bring the loss down.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { Tensor, nn, optim, noGrad, tidy, liveTensors, type DType } from '../../src/index.ts';
import { LlamaModel } from '../../src/models/llama.ts';
import { parseLlamaConfig } from '../../src/models/llama-config.ts';
import { MemoryWeights } from '../../src/nn/weights.ts';
import { tinyConfig, tinyWeights, type TinyOptions, type TinyType } from '../fixtures/tiny-llama.ts';
import { assertClose } from '../helpers.ts';

async function build(type: TinyType, o: TinyOptions = {}, dtype: DType = 'f32') {
  const raw = tinyConfig(type, o);
  return LlamaModel.fromWeights(parseLlamaConfig(raw), new MemoryWeights(tinyWeights(raw, 3)), {
    device: 'cpu',
    dtype,
  });
}
const VARIANTS: [string, TinyType, TinyOptions][] = [
  ['llama untied GQA', 'llama', {}],
  ['llama tied MQA', 'llama', { tied: true, kvHeads: 1 }],
  ['mistral window 3', 'mistral', { window: 3 }],
  ['qwen2 (qkv bias) tied', 'qwen2', { tied: true }],
];
const ids = Tensor.from([1, 17, 42, 5, 88, 3, 9, 12, 7, 60, 2, 33], { dtype: 'u32', shape: [2, 6] });

test('forwardTrain: the same logits as the inference forward, for every variant', async () => {
  for (const [name, type, o] of VARIANTS) {
    const model = await build(type, o);
    const cache = model.newCache(2, 8);
    const want = model.forward(ids, cache);
    const got = model.forwardTrain(ids);
    assert.equal(got.shape, want.shape, name);
    assertClose(
      Array.from(got.toArraySync() as Float32Array),
      Array.from(want.toArraySync() as Float32Array),
      1e-5,
      1e-6,
      name,
    );
    for (const t of [want, got]) t.dispose();
    cache.dispose();
    model.dispose();
  }
});

test('forwardTrain: weight gradients against f64 finite differences (sampled elements of every kind of weight)', async () => {
  for (const [name, type, o] of [VARIANTS[1]!, VARIANTS[2]!, VARIANTS[3]!]) {
    const model = await build(type, o, 'f64');
    const params = model.parameters();
    for (const p of params) p.requiresGrad = true;
    const targets = Tensor.from(BigInt64Array.from([17n, 42n, 5n, 88n, 3n, 9n, 7n, 60n, 2n, 33n, 1n, 4n]));
    const lossOf = (): Tensor => nn.crossEntropy(model.forwardTrain(ids).reshape([12, -1]), targets);
    const loss = tidy(lossOf);
    loss.backward();
    const h = 1e-6;
    let checked = 0;
    for (const p of params) {
      const g = Array.from(p.grad!.toArraySync() as Float64Array);
      const n = p.numel;
      // three elements of each weight, spread over it
      for (const i of [0, Math.floor(n / 2), n - 1]) {
        const flat = p.reshape([-1]);
        const at = flat.narrow(0, i, 1);
        const v = at.itemSync();
        const lossAt = (x: number): number =>
          noGrad(() => {
            at.fill(x);
            return tidy(() => lossOf().itemSync());
          });
        const want = (lossAt(v + h) - lossAt(v - h)) / (2 * h);
        noGrad(() => at.fill(v));
        const err = Math.abs(g[i]! - want) / Math.max(1e-3, Math.abs(want));
        assert.ok(err < 1e-5, `${name}: element ${i} of ${p.describe()}: autograd ${g[i]}, differences ${want}`);
        checked++;
        at.dispose();
        flat.dispose();
      }
    }
    assert.ok(checked >= 3 * 8, `${name}: ${checked} elements checked`);
    loss.dispose();
    for (const p of params) {
      p.grad?.dispose();
      p.grad = null;
      p.requiresGrad = false;
    }
    targets.dispose();
    model.dispose();
  }
});

test('forwardTrain: AdamW on one batch brings the loss down; nothing is left alive', async () => {
  const model = await build('llama', {});
  // the rotary tables are the model's, made on the first call
  model.rope.reserve(6);
  const before = liveTensors().length;
  const params = model.parameters();
  for (const p of params) p.requiresGrad = true;
  const opt = new optim.AdamW(params, { lr: 1e-2 });
  const targets = Tensor.from(BigInt64Array.from([17n, 42n, 5n, 88n, 3n, 9n, 7n, 60n, 2n, 33n, 1n, 4n]));
  const losses: number[] = [];
  for (let step = 0; step < 25; step++) {
    const l = tidy(() => {
      const loss = nn.crossEntropy(model.forwardTrain(ids).reshape([12, -1]), targets);
      loss.backward();
      return loss.itemSync();
    });
    losses.push(l);
    opt.step();
    opt.zeroGrad();
  }
  assert.ok(losses.at(-1)! < losses[0]! * 0.5, `loss ${losses[0]} -> ${losses.at(-1)}`);
  opt.dispose();
  targets.dispose();
  for (const p of params) p.requiresGrad = false;
  assert.is(liveTensors().length, before, 'tensors left alive');
  model.dispose();
});

test.run();
