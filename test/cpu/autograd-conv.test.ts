// Gradients of convolution, pooling and dropout on the CPU against central finite differences in
// f64: strides, padding, dilation, groups, bias, unbatched and non-contiguous inputs; the
// transposed convolutions with output padding; both pooling kinds with and without padded cells
// in the divisor; dropout's mask reused by its gradient.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { Tensor, TensorError } from '../../src/index.ts';
import { gradCheck, leaf, nextSeed, values } from '../grad-check.ts';

test('conv2d: input, weight and bias gradients (stride, padding, dilation, groups)', () => {
  gradCheck('conv2d plain', ([x, w]) => x!.conv2d(w!), [
    [2, 2, 5, 5],
    [3, 2, 3, 3],
  ]);
  gradCheck('conv2d stride 2 padding 1 bias', ([x, w, b]) => x!.conv2d(w!, { stride: 2, padding: 1, bias: b! }), [
    [2, 3, 6, 5],
    [4, 3, 3, 2],
    [4],
  ]);
  gradCheck(
    'conv2d dilation 2, groups 2, stride [2, 1]',
    ([x, w]) => x!.conv2d(w!, { dilation: 2, groups: 2, stride: [2, 1], padding: [1, 2] }),
    [
      [1, 4, 7, 6],
      [6, 2, 2, 3],
    ],
  );
  gradCheck('conv2d unbatched', ([x, w]) => x!.conv2d(w!, { padding: 1 }), [
    [2, 4, 4],
    [2, 2, 3, 3],
  ]);
  // a transposed (non-contiguous) input and weight
  gradCheck('conv2d non-contiguous', ([x, w]) => x!.transpose(2, 3).conv2d(w!.transpose(2, 3), { stride: 2 }), [
    [2, 2, 5, 6],
    [3, 2, 2, 3],
  ]);
});

test('conv1d: gradients with stride, padding, dilation, groups and bias', () => {
  gradCheck('conv1d', ([x, w, b]) => x!.conv1d(w!, { stride: 2, padding: 2, dilation: 2, groups: 2, bias: b! }), [
    [2, 4, 9],
    [6, 2, 3],
    [6],
  ]);
  gradCheck('conv1d unbatched', ([x, w]) => x!.conv1d(w!), [
    [3, 7],
    [2, 3, 4],
  ]);
});

test('convTranspose2d / convTranspose1d: gradients, output padding included', () => {
  gradCheck(
    'convTranspose2d',
    ([x, w, b]) => x!.convTranspose2d(w!, { stride: 2, padding: 1, outputPadding: 1, bias: b! }),
    [[2, 3, 3, 4], [3, 2, 3, 3], [2]],
  );
  gradCheck('convTranspose2d groups, dilation', ([x, w]) => x!.convTranspose2d(w!, { groups: 2, dilation: 2 }), [
    [1, 4, 3, 3],
    [4, 3, 2, 2],
  ]);
  gradCheck('convTranspose1d', ([x, w]) => x!.convTranspose1d(w!, { stride: 3, padding: 1, outputPadding: 2 }), [
    [2, 2, 4],
    [2, 3, 3],
  ]);
});

test('avgPool2d and maxPool2d: gradients to the window (divisor with and without padding) and to the maximum', () => {
  gradCheck('avgPool2d', ([x]) => x!.avgPool2d({ kernel: 2 }), [[2, 3, 4, 6]]);
  gradCheck('avgPool2d padded', ([x]) => x!.avgPool2d({ kernel: 3, stride: 2, padding: 1 }), [[1, 2, 5, 5]]);
  gradCheck(
    'avgPool2d padded, padding excluded',
    ([x]) => x!.avgPool2d({ kernel: 3, stride: 2, padding: 1, countIncludePad: false }),
    [[1, 2, 5, 5]],
  );
  // overlapping windows: an element that is the maximum of two windows gets both gradients
  gradCheck('maxPool2d overlapping', ([x]) => x!.maxPool2d({ kernel: 3, stride: 1, padding: 1 }), [[2, 2, 4, 5]]);
  gradCheck('maxPool2d unbatched', ([x]) => x!.maxPool2d({ kernel: [2, 3], stride: 2 }), [[3, 4, 6]]);
});

test("dropout: the gradient reuses the forward's mask and scale; not training passes it through", () => {
  const x = leaf([4, 50]);
  const y = x.dropout(0.3, { seed: nextSeed() });
  y.sum().backward();
  const kept = values(y).map((v) => v !== 0);
  const g = values(x.grad!);
  const scale = 1 / 0.7;
  g.forEach((v, i) => assert.ok(Math.abs(v - (kept[i] ? scale : 0)) < 1e-12, `element ${i}: ${v}`));
  assert.ok(kept.some((k) => !k) && kept.some((k) => k), 'the mask drops some and keeps some');
  const z = leaf([3, 3]);
  z.dropout(0.5, { training: false }).sum().backward();
  assert.equal(values(z.grad!), new Array(9).fill(1));
});

test('batch norm in training: batch statistics, running statistics moved, gradients (x, weight, bias)', () => {
  // [n, c, h, w] and [n, c]
  gradCheck('batchNorm training 4-d', ([x, w, b]) => x!.batchNorm({ weight: w!, bias: b!, training: true }), [
    [3, 2, 2, 3],
    [2],
    [2],
  ]);
  gradCheck('batchNorm training 2-d, no affine', ([x]) => x!.batchNorm({ training: true, eps: 1e-3 }), [[5, 3]]);
  // against a hand computation: y normalized per channel; the running statistics move by momentum
  const x = Tensor.from([1, 2, 3, 4, 10, 20, 30, 40], { dtype: 'f64', shape: [2, 2, 2] });
  const mean = Tensor.from([0.5, -1], { dtype: 'f64' });
  const variance = Tensor.from([2, 3], { dtype: 'f64' });
  const y = x.batchNorm({ mean, variance, training: true, momentum: 0.25, eps: 0 });
  // channel 0 holds 1, 2, 10, 20 (mean 8.25, biased var 59.1875, unbiased 78.9166...)
  const m0 = 8.25,
    v0 = (7.25 ** 2 + 6.25 ** 2 + 1.75 ** 2 + 11.75 ** 2) / 4;
  assert.ok(Math.abs(values(y)[0]! - (1 - m0) / Math.sqrt(v0)) < 1e-12);
  assert.ok(Math.abs(values(mean)[0]! - (0.75 * 0.5 + 0.25 * m0)) < 1e-12);
  assert.ok(Math.abs(values(variance)[0]! - (0.75 * 2 + 0.25 * ((v0 * 4) / 3))) < 1e-12);
  assert.throws(
    () => Tensor.zeros([1, 3], { dtype: 'f64' }).batchNorm({ training: true }),
    /more than one value per channel/,
  );
  for (const t of [x, mean, variance, y]) t.dispose();
});

test('inference batch norm: gradients with fixed statistics', () => {
  const mean = Tensor.from([0.3, -0.2, 0.1], { dtype: 'f64' });
  const variance = Tensor.from([1.5, 0.5, 2], { dtype: 'f64' });
  gradCheck('batchNorm inference', ([x, w, b]) => x!.batchNorm({ mean, variance, weight: w!, bias: b! }), [
    [2, 3, 4],
    [3],
    [3],
  ]);
  for (const t of [mean, variance]) t.dispose();
});

test('upsampling: nearest (1-d, 2-d, non-integer ratios) and bilinear (both corner alignments) gradients', () => {
  gradCheck('upsampleNearest2d x2', ([x]) => x!.upsampleNearest2d(6, 8), [[2, 2, 3, 4]]);
  gradCheck('upsampleNearest2d 3->7, 5->3', ([x]) => x!.upsampleNearest2d(7, 3), [[1, 2, 3, 5]]);
  gradCheck('upsampleNearest1d 4->9', ([x]) => x!.upsampleNearest1d(9), [[2, 3, 4]]);
  gradCheck('upsampleBilinear2d', ([x]) => x!.upsampleBilinear2d(7, 5), [[2, 2, 3, 4]]);
  gradCheck('upsampleBilinear2d alignCorners, down', ([x]) => x!.upsampleBilinear2d(4, 2, true), [[1, 2, 5, 3]]);
});

test('the weight-gradient op checks its operands', () => {
  const x = Tensor.zeros([2, 3, 5, 5], { dtype: 'f64' });
  const dy = Tensor.zeros([2, 4, 3, 3], { dtype: 'f64' });
  const p = { padding: [0, 0], stride: [1, 1], dilation: [1, 1], groups: 1 } as const;
  return import('../../src/ops/conv-grad.ts').then(({ convWeightGrad }) => {
    assert.equal(
      values(Tensor.wrap(convWeightGrad(x, dy, [4, 3, 3, 3], p))),
      new Array(4 * 27).fill(0),
      'zero dy: zero gradient',
    );
    assert.throws(
      () => convWeightGrad(x, dy, [4, 2, 3, 3], p),
      (e: unknown) => e instanceof TensorError && /convWeightGrad: x \[2, 3, 5, 5\] f64, dy/.test((e as Error).message),
    );
  });
});

test.run();
