// captureBackward's argument checks and its refusal on the CPU, which has no graphs; and its
// memory on a runtime that runs nothing (bench/null-runtime.ts: the GPU path's tensors and
// allocations, no results): the warm-up, capture, runs and dispose leave no tensor and no byte
// in use behind. The replays' results are checked on a GPU: test/gpu/graph-train.test.ts.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import {
  Tensor,
  captureBackward,
  GraphCaptureError,
  TensorError,
  liveTensors,
  nn,
  optim,
  tidy,
} from '../../src/index.ts';
import { nullDevice } from '../../bench/null-runtime.ts';

test('captureBackward: the CPU has no graphs (a clear error, after the warm-up runs nothing leaks)', () => {
  const before = liveTensors();
  const w = Tensor.randn([4, 3], { seed: 1 });
  w.requiresGrad = true;
  const x = Tensor.randn([2, 4], { seed: 2 });
  assert.throws(
    () => captureBackward(() => x.matmul(w).sum(), [w], { warmup: 0 }),
    (e: unknown) => e instanceof GraphCaptureError && /cpu device has no graphs/.test((e as Error).message),
  );
  w.grad?.dispose();
  w.dispose();
  x.dispose();
  assert.equal(liveTensors(), before);
});

test('captureBackward: bad arguments name what was wrong', () => {
  const w = Tensor.randn([3], { seed: 3 });
  const frozen = Tensor.randn([3], { seed: 4 });
  w.requiresGrad = true;
  assert.throws(() => captureBackward(() => w.sum(), []), /non-empty array of tensors/);
  assert.throws(
    () => captureBackward(() => w.sum(), [frozen]),
    (e: unknown) => e instanceof TensorError && /not a leaf that requires a gradient/.test((e as Error).message),
  );
  assert.throws(() => captureBackward(() => w.sum(), [w], { warmup: -1 }), /warmup must be an integer >= 0/);
  assert.throws(() => captureBackward('loss' as unknown as () => Tensor, [w]), /function returning the loss/);
  w.dispose();
  frozen.dispose();
});

test('captureBackward on the GPU path (a runtime that runs nothing): nothing left in use after dispose', () => {
  const dev = nullDevice();
  const before = liveTensors().length;
  const inUse0 = dev.memoryStats()!.inUse;
  nn.manualSeed(1);
  const o = { device: dev };
  const model = new nn.Sequential(new nn.Linear(64, 128, o), new nn.GELU(), new nn.Linear(128, 10, o));
  const opt = new optim.SGD(model.parameters(), { lr: 0.1, momentum: 0.9 });
  const x = Tensor.randn([32, 64], { seed: 2, device: dev });
  const y = Tensor.randint(0, 10, [32], { seed: 3, device: dev, dtype: 'i64' });
  const step = captureBackward(() => nn.crossEntropy(model.forward(x), y), model.parameters(), { warmup: 2 });
  assert.ok(step.poolBytes > 0, 'the graph holds its memory');
  // the gradients it hands out (and its loss) live in its pool: counted once by poolInUse
  const gradBytes = model.parameters().reduce((n, p) => n + p.numel * 4, 0);
  assert.ok(step.poolInUse >= gradBytes, `pool in use ${step.poolInUse} holds the gradients (${gradBytes} bytes)`);
  assert.ok(step.poolInUse < step.poolBytes, 'and less than the whole pool');
  for (let i = 0; i < 3; i++)
    tidy(() => {
      step.run();
      opt.step();
      opt.zeroGrad();
    });
  assert.ok(
    model.parameters().every((p) => p.grad === null),
    'zeroGrad dropped the views',
  );
  step.dispose();
  opt.dispose();
  model.dispose();
  x.dispose();
  y.dispose();
  assert.equal(liveTensors().length, before, liveTensors().join('; '));
  assert.equal(dev.memoryStats()!.inUse, inUse0);
});

test.run();
