// linear with no input features (k = 0): the output is zeros of the leading shape, plus the bias,
// as a product over an empty sum is (PyTorch's F.linear agrees).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { Tensor } from '../../src/index.ts';

test('linear with k = 0: zeros (plus the bias) in the leading shape', () => {
  const x = Tensor.zeros([2, 3, 0]),
    w = Tensor.zeros([4, 0]),
    b = Tensor.from([1, 2, 3, 4]);
  const y = x.linear(w),
    yb = x.linear(w, { bias: b });
  assert.equal(y.shape, [2, 3, 4]);
  assert.equal(Array.from(y.toArraySync() as Float32Array), new Array(24).fill(0));
  assert.equal(Array.from(yb.toArraySync() as Float32Array).slice(0, 8), [1, 2, 3, 4, 1, 2, 3, 4]);
  for (const t of [x, w, b, y, yb]) t.dispose();
});

test.run();
