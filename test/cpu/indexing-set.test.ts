// indexSet (in place, PyTorch's index_copy_) on the CPU reference: known values along each dim,
// every dtype (bits copied exactly), ids of each index dtype, and errors.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { Tensor, DTYPES } from '../../src/index.ts';
import { IndexError, ShapeError, DTypeError } from '../../src/core/errors.ts';
import { nums, randT, throwsWith } from '../helpers.ts';

test('indexSet: known values along dims 0, 1 and 2', () => {
  const x = Tensor.zeros([3, 4], { dtype: 'f64' });
  x.indexSet(
    Tensor.from([2, 0], { dtype: 'u32' }),
    Tensor.from(
      [
        [1, 2, 3, 4],
        [5, 6, 7, 8],
      ],
      { dtype: 'f64' },
    ),
    0,
  );
  assert.equal(nums(x), [5, 6, 7, 8, 0, 0, 0, 0, 1, 2, 3, 4]);
  const y = Tensor.zeros([2, 3], { dtype: 'f64' });
  y.indexSet(Tensor.from([1], { dtype: 'i64' }), Tensor.from([[9], [7]], { dtype: 'f64' }), 1);
  assert.equal(nums(y), [0, 9, 0, 0, 7, 0]);
  const cache = Tensor.zeros([1, 2, 4, 2]);
  const ret = cache.indexSet(Tensor.from([3], { dtype: 'u8' }), Tensor.ones([1, 2, 1, 2]), 2);
  assert.ok(ret === cache, 'returns this');
  assert.equal(nums(cache), [0, 0, 0, 0, 0, 0, 1, 1, 0, 0, 0, 0, 0, 0, 1, 1]);
});

test('indexSet: every dtype, src of any layout, into an offset view', () => {
  for (const d of DTYPES) {
    const src = randT([4, 3], d, 0, 50).transpose(0, 1);
    const big = Tensor.zeros([40], { dtype: d });
    const x = big.narrow(0, 8, 15).reshape([3, 5]);
    x.indexSet(Tensor.from([4, 1, 0, 2], { dtype: 'u32' }), src, 1);
    const sv = nums(src),
      xv = nums(x);
    for (let r = 0; r < 3; r++)
      [4, 1, 0, 2].forEach((c, k) => assert.is(xv[r * 5 + c], sv[r * 4 + k], `${d} row ${r} col ${c}`));
    assert.equal(nums(x.narrow(1, 3, 1)), [0, 0, 0], `${d}: untouched column`);
    assert.ok(
      nums(big.narrow(0, 0, 8)).every((v) => v === 0) && nums(big.narrow(0, 23, 17)).every((v) => v === 0),
      `${d}: nothing outside the view`,
    );
  }
});

test('indexSet: errors', () => {
  const x = Tensor.zeros([3, 4]);
  throwsWith(
    () => x.indexSet(Tensor.from([3], { dtype: 'u32' }), Tensor.ones([1, 4]), 0),
    IndexError,
    'indexSet',
    '3',
    '[0, 3)',
  );
  throwsWith(
    () => x.indexSet(Tensor.from([0], { dtype: 'u32' }), Tensor.ones([2, 4]), 0),
    ShapeError,
    'indexSet',
    'src [2, 4] f32',
    '[1, 4]',
  );
  throwsWith(() => x.indexSet(Tensor.from([0], { dtype: 'f32' }), Tensor.ones([1, 4]), 0), DTypeError, 'indexSet');
  throwsWith(
    () => x.indexSet(Tensor.from([0], { dtype: 'u32' }), Tensor.ones([1, 4], { dtype: 'f64' }), 0),
    DTypeError,
    'indexSet',
    'f64',
  );
  throwsWith(
    () => x.T.indexSet(Tensor.from([0], { dtype: 'u32' }), Tensor.ones([1, 3]), 0),
    ShapeError,
    'indexSet',
    'contiguous',
  );
  throwsWith(() => x.indexSet(Tensor.from([0], { dtype: 'u32' }), Tensor.ones([3, 1]), 2), ShapeError, 'indexSet');
});

test.run();
