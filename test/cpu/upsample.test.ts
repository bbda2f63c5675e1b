import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { Tensor, DTypeError, ShapeError, type DType } from '../../src/index.ts';
import { randT, withLayout, LAYOUTS, assertClose, relErr, TOL, nums, throwsLike } from '../helpers.ts';

test('nearest 1-d known values', () => {
  const x = Tensor.from([[[1, 2, 3]]]);
  // scale 3/5: floor(0, .6, 1.2, 1.8, 2.4)
  assert.equal(nums(x.upsampleNearest1d(5)), [1, 1, 2, 2, 3]);
  assert.equal(nums(x.upsampleNearest1d(6)), [1, 1, 2, 2, 3, 3]);
  assert.equal(nums(x.upsampleNearest1d(3)), [1, 2, 3]);
  assert.equal(nums(x.upsampleNearest1d(1)), [1]);
  // downsampling: scale 5/2 picks cells 0 and 2
  assert.equal(nums(Tensor.from([[[1, 2, 3, 4, 5]]]).upsampleNearest1d(2)), [1, 3]);
  assert.equal(x.upsampleNearest1d(4).shape, [1, 1, 4]);
});

test('nearest uses f32 scales like PyTorch (2 -> 82: dst 41 maps to 0)', () => {
  // f32(2/82) * 41 rounds to just under 1 in f32, so PyTorch's floorf gives 0 there
  const y = nums(Tensor.from([[[10, 20]]]).upsampleNearest1d(82));
  assert.is(y[40], 10);
  assert.is(y[41], 10);
  assert.is(y[42], 20);
  assert.is(y.filter((v) => v === 10).length, 42);
});

test('nearest 2-d known values', () => {
  const x = Tensor.from([
    [
      [
        [1, 2],
        [3, 4],
      ],
    ],
  ]);
  assert.equal(x.upsampleNearest2d(4, 4).toNestedSync(), [
    [
      [
        [1, 1, 2, 2],
        [1, 1, 2, 2],
        [3, 3, 4, 4],
        [3, 3, 4, 4],
      ],
    ],
  ]);
  // scale 2/3: floor(0, .67, 1.33) -> rows 0, 0, 1
  assert.equal(x.upsampleNearest2d(3, 2).toNestedSync(), [
    [
      [
        [1, 2],
        [1, 2],
        [3, 4],
      ],
    ],
  ]);
  assert.equal(x.upsampleNearest2d(1, 3).toNestedSync(), [[[[1, 1, 2]]]]);
  const big = Tensor.arange(16).reshape([1, 1, 4, 4]);
  assert.equal(big.upsampleNearest2d(2, 2).toNestedSync(), [
    [
      [
        [0, 2],
        [8, 10],
      ],
    ],
  ]);
});

test('bilinear, alignCorners = false (half-pixel centres, clamped at 0)', () => {
  const x = Tensor.from([
    [
      [
        [1, 2],
        [3, 4],
      ],
    ],
  ]);
  // 1-d taps for 2 -> 4: src = max(0.5 (d + 0.5) - 0.5, 0) = 0, .25, .75, 1 (clamped to the last cell)
  assert.equal(x.upsampleBilinear2d(4, 4).toNestedSync(), [
    [
      [
        [1, 1.25, 1.75, 2],
        [1.5, 1.75, 2.25, 2.5],
        [2.5, 2.75, 3.25, 3.5],
        [3, 3.25, 3.75, 4],
      ],
    ],
  ]);
  assert.equal(x.upsampleBilinear2d(2, 2).toNestedSync(), [
    [
      [
        [1, 2],
        [3, 4],
      ],
    ],
  ]);
  const r = Tensor.from([[[[1, 2, 3, 4]]]]);
  // downsampling 4 -> 2: src = 0.5, 2.5; 4 -> 1: src = 1.5
  assert.equal(nums(r.upsampleBilinear2d(1, 2)), [1.5, 3.5]);
  assert.equal(nums(r.upsampleBilinear2d(1, 1)), [2.5]);
  // 4 -> 3: scale 4/3, src = 1/6, 1.5, 17/6
  assertClose(nums(r.upsampleBilinear2d(1, 3)), [7 / 6, 2.5, 23 / 6], 1e-6, 0, '4 -> 3');
  // a single row stretched vertically repeats
  assert.equal(nums(r.upsampleBilinear2d(3, 4)), [1, 2, 3, 4, 1, 2, 3, 4, 1, 2, 3, 4]);
});

test('bilinear, alignCorners = true (corner cells line up)', () => {
  const x = Tensor.from([
    [
      [
        [1, 2],
        [3, 4],
      ],
    ],
  ]);
  assert.equal(x.upsampleBilinear2d(3, 3, true).toNestedSync(), [
    [
      [
        [1, 1.5, 2],
        [2, 2.5, 3],
        [3, 3.5, 4],
      ],
    ],
  ]);
  const y = nums(x.upsampleBilinear2d(4, 4, true));
  // scale 1/3: value = 1 + fx + 2 fy with f in {0, 1/3, 2/3, 1}
  const want: number[] = [];
  for (const fy of [0, 1 / 3, 2 / 3, 1]) for (const fx of [0, 1 / 3, 2 / 3, 1]) want.push(1 + fx + 2 * fy);
  assertClose(y, want, 1e-6, 1e-6, '2 -> 4');
  // out size 1: scale 0 picks the first cell
  assert.equal(nums(Tensor.from([[[[1, 2, 3, 4]]]]).upsampleBilinear2d(1, 1, true)), [1]);
  // a linear ramp stays the same ramp, sampled at d * (in - 1) / (out - 1)
  const ramp = Tensor.from([[[[0, 3, 6, 9, 12]]]], { dtype: 'f64' });
  assertClose(nums(ramp.upsampleBilinear2d(1, 9, true)), [0, 1.5, 3, 4.5, 6, 7.5, 9, 10.5, 12], 1e-14, 1e-14, 'ramp');
});

test('identities: same size is the identity; integer-factor nearest repeats cells', () => {
  const x = randT([2, 3, 4, 5], 'f64');
  assert.equal(nums(x.upsampleNearest2d(4, 5)), nums(x));
  assert.equal(nums(x.upsampleBilinear2d(4, 5)), nums(x));
  assert.equal(nums(x.upsampleBilinear2d(4, 5, true)), nums(x));
  const up = nums(x.upsampleNearest2d(8, 15)),
    xv = nums(x);
  for (let p = 0; p < 6; p++)
    for (let y = 0; y < 8; y++)
      for (let i = 0; i < 15; i++) {
        assert.is(up[(p * 8 + y) * 15 + i], xv[(p * 4 + (y >> 1)) * 5 + Math.floor(i / 3)]);
      }
  // bilinear output lies within each plane's range
  const b = nums(x.upsampleBilinear2d(7, 9));
  for (let p = 0; p < 6; p++) {
    const plane = xv.slice(p * 20, p * 20 + 20),
      lo = Math.min(...plane),
      hi = Math.max(...plane);
    assert.ok(b.slice(p * 63, p * 63 + 63).every((v) => v >= lo - 1e-12 && v <= hi + 1e-12));
  }
  const n1 = randT([2, 3, 5]);
  assert.equal(nums(n1.upsampleNearest1d(11)), nums(n1.unsqueeze(2).upsampleNearest2d(1, 11)));
});

test('every float dtype', () => {
  for (const dt of ['f32', 'f64', 'f16', 'bf16'] as DType[]) {
    const x = randT([1, 2, 3, 4], dt);
    const n = x.upsampleNearest2d(5, 7);
    assert.is(n.dtype, dt);
    assert.equal(nums(n), nums(x.toDtype('f64').upsampleNearest2d(5, 7)), `nearest ${dt}`);
    assert.is(x.narrow(2, 0, 1).squeeze(2).upsampleNearest1d(9).dtype, dt);
    for (const ac of [false, true]) {
      const b = x.upsampleBilinear2d(6, 5, ac);
      assert.is(b.dtype, dt);
      const exact = x.toDtype('f64').upsampleBilinear2d(6, 5, ac);
      assert.equal(nums(b), nums(exact.toDtype(dt)), `bilinear ${dt} ${ac}`);
      assert.ok(relErr(nums(b), nums(exact)) <= TOL[dt], `${dt}`);
    }
  }
});

test('non-contiguous inputs give the contiguous result', () => {
  const x = randT([2, 3, 4, 5]);
  for (const k of LAYOUTS) {
    const X = withLayout(x, k);
    assert.equal(nums(X.x.upsampleNearest2d(7, 3)), nums(X.ref.upsampleNearest2d(7, 3)), `nearest ${k}`);
    assert.equal(nums(X.x.upsampleBilinear2d(7, 3)), nums(X.ref.upsampleBilinear2d(7, 3)), `bilinear ${k}`);
    assert.equal(
      nums(X.x.upsampleBilinear2d(2, 9, true)),
      nums(X.ref.upsampleBilinear2d(2, 9, true)),
      `bilinear ac ${k}`,
    );
  }
  const x1 = randT([2, 3, 5]);
  for (const k of LAYOUTS) {
    const X = withLayout(x1, k);
    assert.equal(nums(X.x.upsampleNearest1d(8)), nums(X.ref.upsampleNearest1d(8)), `nearest1d ${k}`);
  }
});

test('edge cases: empty batch and channels, size-1 input, NaN stays local', () => {
  assert.equal(randT([0, 3, 2, 2]).upsampleBilinear2d(4, 4).shape, [0, 3, 4, 4]);
  assert.equal(randT([2, 0, 2, 2]).upsampleNearest2d(3, 3).shape, [2, 0, 3, 3]);
  assert.equal(nums(Tensor.from([[[[7]]]]).upsampleBilinear2d(2, 3)), [7, 7, 7, 7, 7, 7]);
  assert.equal(nums(Tensor.from([[[[7]]]]).upsampleBilinear2d(2, 3, true)), [7, 7, 7, 7, 7, 7]);
  const y = nums(Tensor.from([[[[1, 2, 3, NaN]]]]).upsampleBilinear2d(1, 8));
  // src for 4 -> 8: 0, .25, .75, ..., only the last cells touch cell 3
  assert.equal(
    y.map((v) => Number.isNaN(v)),
    [false, false, false, false, false, true, true, true],
  );
});

test('bad inputs', () => {
  const x = randT([1, 2, 3, 3]);
  throwsLike(() => x.upsampleNearest2d(0, 4), RangeError, ['upsampleNearest2d', 'output size', '[1, 2, 3, 3] f32']);
  throwsLike(() => x.upsampleBilinear2d(2.5, 4), RangeError, ['upsampleBilinear2d', '2.5']);
  throwsLike(() => x.upsampleNearest1d(4), ShapeError, ['upsampleNearest1d', '[n, c, l]', '[1, 2, 3, 3] f32']);
  throwsLike(() => randT([2, 3, 3]).upsampleNearest2d(4, 4), ShapeError, [
    'upsampleNearest2d',
    '[n, c, h, w]',
    '[2, 3, 3] f32',
  ]);
  throwsLike(() => randT([2, 3, 3]).upsampleBilinear2d(4, 4), ShapeError, ['upsampleBilinear2d', '[2, 3, 3] f32']);
  throwsLike(() => randT([1, 1, 0, 3]).upsampleBilinear2d(4, 4), ShapeError, [
    'upsampleBilinear2d',
    'non-empty',
    '[1, 1, 0, 3] f32',
  ]);
  throwsLike(() => x.toDtype('u8').upsampleNearest2d(4, 4), DTypeError, ['upsampleNearest2d', 'u8', '[1, 2, 3, 3]']);
  throwsLike(() => x.toDtype('i64').upsampleBilinear2d(4, 4), DTypeError, ['upsampleBilinear2d', 'i64']);
  throwsLike(() => randT([1, 1, 3]).toDtype('u32').upsampleNearest1d(4), DTypeError, ['upsampleNearest1d', 'u32']);
  throwsLike(() => x.upsampleBilinear2d(4, 4, 1 as unknown as boolean), TypeError, [
    'upsampleBilinear2d',
    'alignCorners',
  ]);
});

test.run();
