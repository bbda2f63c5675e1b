import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { Tensor, DTypeError, ShapeError, type DType } from '../../src/index.ts';
import { randT, withLayout, LAYOUTS, assertClose, relErr, TOL, nums, throwsLike } from '../helpers.ts';

/** non-overlapping k x k blocks, reduced by plain JS */
function blocks(x: Tensor, k: number, f: (v: number[]) => number): number[] {
  const [n, c, h, w] = x.shape as [number, number, number, number];
  const v = nums(x),
    out: number[] = [];
  for (let p = 0; p < n * c; p++)
    for (let by = 0; by + k <= h; by += k)
      for (let bx = 0; bx + k <= w; bx += k) {
        const cell: number[] = [];
        for (let i = 0; i < k; i++) for (let j = 0; j < k; j++) cell.push(v[p * h * w + (by + i) * w + bx + j]!);
        out.push(f(cell));
      }
  return out;
}

test('known values: 2x2 windows', () => {
  const x = Tensor.arange(16).reshape([1, 1, 4, 4]);
  assert.equal(x.maxPool2d({ kernel: 2 }).toNestedSync(), [
    [
      [
        [5, 7],
        [13, 15],
      ],
    ],
  ]);
  assert.equal(x.avgPool2d({ kernel: 2 }).toNestedSync(), [
    [
      [
        [2.5, 4.5],
        [10.5, 12.5],
      ],
    ],
  ]);
  // stride 1: overlapping windows
  assert.equal(x.maxPool2d({ kernel: 2, stride: 1 }).toNestedSync(), [
    [
      [
        [5, 6, 7],
        [9, 10, 11],
        [13, 14, 15],
      ],
    ],
  ]);
  // rectangular kernel and stride
  assert.equal(x.maxPool2d({ kernel: [1, 2], stride: [2, 1] }).toNestedSync(), [
    [
      [
        [1, 2, 3],
        [9, 10, 11],
      ],
    ],
  ]);
  assert.equal(x.avgPool2d({ kernel: [4, 1] }).toNestedSync(), [[[[6, 7, 8, 9]]]]);
  // floor mode: a 5x5 input with 2x2 windows drops the last row and column
  const x5 = Tensor.arange(25).reshape([1, 1, 5, 5]);
  assert.equal(x5.maxPool2d({ kernel: 2 }).toNestedSync(), [
    [
      [
        [6, 8],
        [16, 18],
      ],
    ],
  ]);
});

test('padding: avg with and without countIncludePad, max ignores padding', () => {
  const x = Tensor.arange(9).reshape([1, 1, 3, 3]);
  const o = { kernel: 3, stride: 2, padding: 1 };
  assertClose(nums(x.avgPool2d(o)), [8 / 9, 12 / 9, 20 / 9, 24 / 9], 1e-6, 0, 'count pad');
  assert.equal(nums(x.avgPool2d({ ...o, countIncludePad: false })), [2, 3, 5, 6]);
  assert.equal(nums(x.maxPool2d(o)), [4, 5, 7, 8]);
  // all negative: a zero from the padding must never win
  const neg = Tensor.from([-1, -2, -3, -4, -5, -6, -7, -8, -9], { shape: [1, 1, 3, 3] });
  assert.equal(nums(neg.maxPool2d(o)), [-1, -2, -4, -5]);
  // kernel 2 stride 1 padding 1 on a 2x2 input: 3x3 windows in the padded 4x4
  const s = Tensor.from([
    [
      [
        [1, 2],
        [3, 4],
      ],
    ],
  ]);
  assert.equal(s.avgPool2d({ kernel: 2, stride: 1, padding: 1 }).toNestedSync(), [
    [
      [
        [0.25, 0.75, 0.5],
        [1, 2.5, 1.5],
        [0.75, 1.75, 1],
      ],
    ],
  ]);
  assert.equal(s.avgPool2d({ kernel: 2, stride: 1, padding: 1, countIncludePad: false }).toNestedSync(), [
    [
      [
        [1, 1.5, 2],
        [2, 2.5, 3],
        [3, 3.5, 4],
      ],
    ],
  ]);
  assert.equal(s.maxPool2d({ kernel: 2, stride: 1, padding: 1 }).toNestedSync(), [
    [
      [
        [1, 2, 2],
        [3, 4, 4],
        [3, 4, 4],
      ],
    ],
  ]);
});

test('identities: blocks reduced by hand, kernel 1 is the identity, channels independent', () => {
  const x = randT([2, 3, 6, 4], 'f64');
  assert.equal(
    nums(x.maxPool2d({ kernel: 2 })),
    blocks(x, 2, (v) => Math.max(...v)),
  );
  assertClose(
    nums(x.avgPool2d({ kernel: 2 })),
    blocks(x, 2, (v) => v.reduce((a, b) => a + b, 0) / 4),
    1e-14,
    1e-14,
    'avg',
  );
  assert.equal(nums(x.maxPool2d({ kernel: 1 })), nums(x));
  assert.equal(nums(x.avgPool2d({ kernel: 1 })), nums(x));
  const one = x.narrow(1, 2, 1);
  assert.equal(
    nums(x.maxPool2d({ kernel: 3, stride: 1, padding: 1 }).narrow(1, 2, 1)),
    nums(one.maxPool2d({ kernel: 3, stride: 1, padding: 1 })),
  );
  // max >= avg everywhere (no padding)
  const mx = nums(x.maxPool2d({ kernel: 3, stride: 2 })),
    av = nums(x.avgPool2d({ kernel: 3, stride: 2 }));
  assert.ok(mx.every((m, i) => m >= av[i]!));
});

test('every float dtype: max is exact, avg rounded once', () => {
  for (const dt of ['f32', 'f64', 'f16', 'bf16'] as DType[]) {
    const x = randT([2, 2, 5, 6], dt);
    const m = x.maxPool2d({ kernel: 3, stride: 2, padding: 1 });
    assert.is(m.dtype, dt);
    assert.equal(nums(m), nums(x.toDtype('f64').maxPool2d({ kernel: 3, stride: 2, padding: 1 })), dt);
    const a = x.avgPool2d({ kernel: 2, padding: 1, countIncludePad: false });
    assert.is(a.dtype, dt);
    const exact = x.toDtype('f64').avgPool2d({ kernel: 2, padding: 1, countIncludePad: false });
    assert.equal(nums(a), nums(exact.toDtype(dt)), dt);
    assert.ok(relErr(nums(a), nums(exact)) <= TOL[dt], dt);
  }
});

test('non-contiguous inputs give the contiguous result', () => {
  const x = randT([2, 3, 5, 6]);
  for (const k of LAYOUTS) {
    const X = withLayout(x, k);
    for (const o of [{ kernel: 2 }, { kernel: 3, stride: 1, padding: 1 }]) {
      assert.equal(nums(X.x.maxPool2d(o)), nums(X.ref.maxPool2d(o)), `max ${k}`);
      assert.equal(nums(X.x.avgPool2d(o)), nums(X.ref.avgPool2d(o)), `avg ${k}`);
    }
  }
  const nhwc = x.permute([0, 2, 3, 1]).contiguous().permute([0, 3, 1, 2]);
  assert.equal(nums(nhwc.maxPool2d({ kernel: 2 })), nums(x.maxPool2d({ kernel: 2 })));
});

test('edge cases: unbatched, empty batch, whole-input window, NaN', () => {
  const x = randT([3, 4, 4]);
  const u = x.maxPool2d({ kernel: 2 });
  assert.equal(u.shape, [3, 2, 2]);
  assert.equal(nums(u), nums(x.unsqueeze(0).maxPool2d({ kernel: 2 })));
  assert.equal(x.avgPool2d({ kernel: 2 }).shape, [3, 2, 2]);
  assert.equal(randT([0, 2, 4, 4]).avgPool2d({ kernel: 2 }).shape, [0, 2, 2, 2]);
  const g = Tensor.from([
    [
      [
        [1, 5],
        [-3, 2],
      ],
    ],
  ]);
  assert.equal(nums(g.maxPool2d({ kernel: 2 })), [5]);
  assert.equal(nums(g.avgPool2d({ kernel: 2 })), [1.25]);
  // NaN wins its window (PyTorch propagates NaN in max pooling); other windows are untouched
  const n = Tensor.from([
    [
      [
        [1, NaN, 3, 4],
        [5, 6, 7, 8],
      ],
    ],
  ]);
  const mn = nums(n.maxPool2d({ kernel: 2 })),
    an = nums(n.avgPool2d({ kernel: 2 }));
  assert.ok(Number.isNaN(mn[0]!) && mn[1] === 8);
  assert.ok(Number.isNaN(an[0]!) && an[1] === 5.5);
  const big = Tensor.from([
    [
      [
        [3e38, 3e38],
        [3e38, 3e38],
      ],
    ],
  ]);
  assert.equal(nums(big.avgPool2d({ kernel: 2 })), [Math.fround(3e38)]);
});

test('bad inputs', () => {
  const x = randT([1, 2, 4, 4]);
  throwsLike(() => x.maxPool2d({ kernel: 2, padding: 2 }), ShapeError, [
    'maxPool2d',
    'half the kernel',
    'padding [2, 2]',
    '[1, 2, 4, 4] f32',
  ]);
  throwsLike(() => x.avgPool2d({ kernel: [3, 2], padding: [1, 2] }), ShapeError, [
    'avgPool2d',
    'half the kernel',
    'kernel [3, 2]',
  ]);
  throwsLike(() => x.maxPool2d({ kernel: 5 }), ShapeError, [
    'maxPool2d',
    'too small',
    'kernel [5, 5]',
    '[1, 2, 4, 4] f32',
  ]);
  throwsLike(() => x.maxPool2d({ kernel: 0 }), RangeError, ['maxPool2d', 'kernel']);
  throwsLike(() => x.avgPool2d({ kernel: 2, stride: 0 }), RangeError, ['avgPool2d', 'stride']);
  throwsLike(() => x.avgPool2d({ kernel: 2, padding: -1 }), RangeError, ['avgPool2d', 'padding']);
  throwsLike(() => randT([4, 4]).maxPool2d({ kernel: 2 }), ShapeError, ['maxPool2d', '[4, 4] f32', '[n, c, h, w]']);
  throwsLike(() => randT([1, 1, 1, 4, 4]).avgPool2d({ kernel: 2 }), ShapeError, ['avgPool2d', '[1, 1, 1, 4, 4] f32']);
  throwsLike(() => x.toDtype('u8').maxPool2d({ kernel: 2 }), DTypeError, ['maxPool2d', 'u8', '[1, 2, 4, 4]']);
  throwsLike(() => x.toDtype('i64').avgPool2d({ kernel: 2 }), DTypeError, ['avgPool2d', 'i64']);
  throwsLike(() => randT([1, 2, 0, 4]).maxPool2d({ kernel: 1 }), ShapeError, [
    'maxPool2d',
    'non-empty',
    '[1, 2, 0, 4] f32',
  ]);
  throwsLike(() => x.maxPool2d({} as { kernel: number }), RangeError, ['maxPool2d', 'kernel']);
});

test.run();
