// cumsum on the CPU reference: known values, every float dtype against running sums, every dim
// and layout, empty extents, and the errors.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { Tensor, type DType } from '../../src/index.ts';
import { DTypeError, ShapeError } from '../../src/core/errors.ts';
import { LAYOUTS, assertClose, nums, randT, withLayout, throwsWith } from '../helpers.ts';

const FLOATS: DType[] = ['f32', 'f64', 'f16', 'bf16'];

test('cumsum: known values along each dim', () => {
  const x = Tensor.from(
    [
      [1, 2, 3],
      [4, 5, 6],
    ],
    { dtype: 'f64' },
  );
  assert.equal(nums(x.cumsum(1)), [1, 3, 6, 4, 9, 15]);
  assert.equal(nums(x.cumsum(0)), [1, 2, 3, 5, 7, 9]);
  assert.equal(nums(x.cumsum(-1)), [1, 3, 6, 4, 9, 15]);
});

test('cumsum: every float dtype and layout against running sums in f64', () => {
  for (const d of FLOATS) {
    for (const kind of LAYOUTS) {
      const { x, ref } = withLayout(randT([3, 4, 7], d), kind);
      for (const dim of [0, 1, 2]) {
        const v = nums(ref),
          [a, b, c] = [3, 4, 7];
        const exp = new Array<number>(v.length).fill(0);
        for (let i = 0; i < a; i++)
          for (let j = 0; j < b; j++)
            for (let k = 0; k < c; k++) {
              const at = (i * b + j) * c + k;
              const prev = dim === 0 ? (i ? at - b * c : -1) : dim === 1 ? (j ? at - c : -1) : k ? at - 1 : -1;
              exp[at] = v[at]! + (prev >= 0 ? exp[prev]! : 0);
            }
        const got = x.cumsum(dim);
        assert.equal(got.shape, [3, 4, 7]);
        assert.is(got.dtype, d);
        // each output is rounded once from the exact running sum
        const tol = d === 'f64' ? 1e-12 : d === 'f32' ? 1e-6 : d === 'f16' ? 1e-3 : 8e-3;
        assertClose(nums(got), exp, tol, tol * 4, `${d} ${kind} dim ${dim}`);
      }
    }
  }
});

test('cumsum: empty extents and 1-d', () => {
  assert.equal(Tensor.zeros([2, 0]).cumsum(1).shape, [2, 0]);
  assert.equal(Tensor.zeros([0, 3]).cumsum(1).shape, [0, 3]);
  assert.equal(nums(Tensor.from([0.5, 0.25, 0.125]).cumsum(0)), [0.5, 0.75, 0.875]);
});

test('cumsum: errors', () => {
  throwsWith(() => Tensor.from([1, 2], { dtype: 'u32' }).cumsum(0), DTypeError, 'cumsum', 'u32', '[2] u32');
  throwsWith(() => Tensor.from([1, 2]).cumsum(1), ShapeError, 'cumsum', '[2] f32');
  throwsWith(() => Tensor.from(3).cumsum(0), ShapeError, 'cumsum', 'at least 1 dim');
  const t = Tensor.from([1, 2]);
  t.dispose();
  throwsWith(() => t.cumsum(0), Error, 'cumsum', 'dispose');
});

test.run();
