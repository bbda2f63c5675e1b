// captureBackward's argument checks and its refusal on the CPU, which has no graphs (the
// replays themselves are checked on the GPU: test/gpu/graph-train.test.ts).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { Tensor, captureBackward, GraphCaptureError, TensorError, liveTensors } from '../../src/index.ts';

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

test.run();
