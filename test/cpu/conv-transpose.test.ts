import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { Tensor, DTypeError, ShapeError, type DType, setCpuExact } from '../../src/index.ts';
import { randT, withLayout, LAYOUTS, relErr, TOL, nums, throwsLike } from '../helpers.ts';

const dot = (a: Tensor, b: Tensor) => {
  const av = nums(a),
    bv = nums(b);
  return av.reduce((s, v, i) => s + v * bv[i]!, 0);
};

test('convTranspose1d known values: stride, padding, outputPadding, dilation', () => {
  const x = Tensor.from([[[1, 2]]]),
    w = Tensor.from([[[1, 1, 1]]]);
  // each input cell stamps x * w at stride 2: [1,1,1,0,0] + [0,0,2,2,2]
  assert.equal(nums(x.convTranspose1d(w, { stride: 2 })), [1, 1, 3, 2, 2]);
  assert.equal(nums(x.convTranspose1d(w, { stride: 2, padding: 1 })), [1, 3, 2]);
  assert.equal(nums(x.convTranspose1d(w, { stride: 2, outputPadding: 1 })), [1, 1, 3, 2, 2, 0]);
  assert.equal(nums(x.convTranspose1d(w, { stride: 2, padding: 1, outputPadding: 1 })), [1, 3, 2, 2]);
  // dilation 2 spreads the taps: [1,0,1,0,1] + [0,2,0,2,0,2]
  assert.equal(nums(x.convTranspose1d(w, { dilation: 2 })), [1, 2, 1, 2, 1, 2]);
  // an asymmetric kernel is not flipped: x = [1] gives w back
  assert.equal(nums(Tensor.from([[[1]]]).convTranspose1d(Tensor.from([[[1, 2, 3]]]))), [1, 2, 3]);
  assert.equal(nums(x.convTranspose1d(w, { stride: 2, bias: Tensor.from([10]) })), [11, 11, 13, 12, 12]);
});

test('convTranspose2d known values and PyTorch output sizes', () => {
  const x = Tensor.from([
      [
        [
          [1, 2],
          [3, 4],
        ],
      ],
    ]),
    w = Tensor.ones([1, 1, 2, 2]);
  // stride 2 with a 2x2 kernel: every input cell becomes a 2x2 block
  assert.equal(x.convTranspose2d(w, { stride: 2 }).toNestedSync(), [
    [
      [
        [1, 1, 2, 2],
        [1, 1, 2, 2],
        [3, 3, 4, 4],
        [3, 3, 4, 4],
      ],
    ],
  ]);
  // stride 1: overlapping blocks sum
  assert.equal(x.convTranspose2d(w).toNestedSync(), [
    [
      [
        [1, 3, 2],
        [4, 10, 6],
        [3, 7, 4],
      ],
    ],
  ]);
  // (h - 1) * s - 2p + d (k - 1) + op + 1
  const sizes: [number[], object, number[]][] = [
    [[3, 3, 3, 3], { stride: 2, padding: 1, outputPadding: 1 }, [6, 6]],
    [[4, 5, 2, 3], { stride: [3, 1], padding: [0, 1], dilation: [1, 2] }, [11, 7]],
    [[2, 2, 3, 3], { stride: 1, dilation: 3, outputPadding: 2 }, [10, 10]],
  ];
  for (const [[h, wd, kh, kw], o, want] of sizes) {
    const y = randT([2, 4, h!, wd!]).convTranspose2d(randT([4, 3, kh!, kw!]), o);
    assert.equal(y.shape, [2, 3, ...want], JSON.stringify(o));
  }
});

test('groups: each group maps its own channels', () => {
  const x = Tensor.from([
    [
      [1, 2],
      [10, 20],
    ],
  ]);
  const w = Tensor.from([[[1, 1]], [[1, -1]]]);
  assert.equal(x.convTranspose1d(w, { groups: 2 }).toNestedSync(), [
    [
      [1, 3, 2],
      [10, 10, -20],
    ],
  ]);
  // cIn 2, cOut/groups 2, groups 2 -> cOut 4
  const w2 = Tensor.from([
    [[1], [2]],
    [[3], [4]],
  ]);
  assert.equal(x.convTranspose1d(w2, { groups: 2 }).toNestedSync(), [
    [
      [1, 2],
      [2, 4],
      [30, 60],
      [40, 80],
    ],
  ]);
});

test('convTranspose is the adjoint of conv: <conv(x, w), y> == <x, convT(y, w)>', () => {
  const geos = [
    { padding: [1, 0], stride: [2, 1], dilation: [1, 2], groups: 2 },
    { padding: [0, 2], stride: [3, 2], dilation: [2, 1], groups: 1 },
    { padding: [1, 1], stride: [1, 1], dilation: [1, 1], groups: 4 },
  ] as const;
  for (const g of geos) {
    const x = randT([2, 4, 9, 8], 'f64'),
      w = randT([8, 4 / g.groups, 3, 2], 'f64');
    const cx = x.conv2d(w, g);
    const [, , oh, ow] = cx.shape as [number, number, number, number];
    // outputPadding recovers the input size lost to conv's floor
    const op = [0, 1].map(
      (d) =>
        [9, 8][d]! -
        ((d === 0 ? oh : ow) - 1) * g.stride[d]! +
        2 * g.padding[d]! -
        g.dilation[d]! * ([3, 2][d]! - 1) -
        1,
    ) as [number, number];
    const y = randT(cx.shape, 'f64');
    const ty = y.convTranspose2d(w, { ...g, outputPadding: op });
    assert.equal(ty.shape, x.shape);
    const lhs = dot(cx, y),
      rhs = dot(x, ty);
    assert.ok(Math.abs(lhs - rhs) <= 1e-10 * Math.max(1, Math.abs(lhs)), `${JSON.stringify(g)}: ${lhs} vs ${rhs}`);
  }
  // the 1-d form too
  const x = randT([1, 2, 11], 'f64'),
    w = randT([3, 2, 4], 'f64');
  const cx = x.conv1d(w, { stride: 3, padding: 2 });
  const y = randT(cx.shape, 'f64');
  const ty = y.convTranspose1d(w, { stride: 3, padding: 2, outputPadding: 11 - ((cx.shape[2]! - 1) * 3 - 4 + 3 + 1) });
  assert.equal(ty.shape, x.shape);
  const lhs = dot(cx, y),
    rhs = dot(x, ty);
  assert.ok(Math.abs(lhs - rhs) <= 1e-10 * Math.max(1, Math.abs(lhs)), `1d: ${lhs} vs ${rhs}`);
});

test('convTranspose1d equals convTranspose2d with h = 1; unbatched equals batch of one', () => {
  const x = randT([2, 3, 5], 'f64'),
    w = randT([3, 2, 3], 'f64'),
    b = randT([2], 'f64');
  const y1 = x.convTranspose1d(w, { stride: 2, padding: 1, outputPadding: 1, bias: b });
  const y2 = x
    .unsqueeze(2)
    .convTranspose2d(w.unsqueeze(2), { stride: [1, 2], padding: [0, 1], outputPadding: [0, 1], bias: b });
  assert.equal(y1.shape, [2, 2, 10]);
  assert.equal(nums(y1), nums(y2));
  const u = x.narrow(0, 1, 1).squeeze(0).convTranspose1d(w, { stride: 2, padding: 1, outputPadding: 1, bias: b });
  assert.equal(u.shape, [2, 10]);
  assert.equal(nums(u), nums(y1.narrow(0, 1, 1)));
  const x3 = randT([3, 4, 4]),
    w3 = randT([3, 2, 2, 2]);
  assert.equal(nums(x3.convTranspose2d(w3, { stride: 2 })), nums(x3.unsqueeze(0).convTranspose2d(w3, { stride: 2 })));
});

test('every float dtype: the exact reference is rounded once from the f64 result', () => {
  setCpuExact(true);
  try {
    for (const dt of ['f32', 'f64', 'f16', 'bf16'] as DType[]) {
      const x = randT([2, 4, 4, 3], dt),
        w = randT([4, 3, 3, 2], dt),
        b = randT([6], dt);
      const o = { stride: 2, padding: [1, 0] as [number, number], groups: 2, outputPadding: 1 };
      const y = x.convTranspose2d(w, { ...o, bias: b });
      assert.is(y.dtype, dt);
      const exact = x.toDtype('f64').convTranspose2d(w.toDtype('f64'), { ...o, bias: b.toDtype('f64') });
      assert.equal(nums(y), nums(exact.toDtype(dt)), dt);
      assert.ok(relErr(nums(y), nums(exact)) <= TOL[dt], dt);
    }
  } finally {
    setCpuExact(null);
  }
});

test('non-contiguous input and weight give the contiguous result', () => {
  const x = randT([2, 3, 4, 5]),
    w = randT([3, 2, 3, 2]);
  for (const k of LAYOUTS) {
    const X = withLayout(x, k),
      W = withLayout(w, k);
    assert.equal(
      nums(X.x.convTranspose2d(W.x, { stride: 2, padding: 1 })),
      nums(X.ref.convTranspose2d(W.ref, { stride: 2, padding: 1 })),
      k,
    );
  }
});

test('edge cases: empty batch, padding that crops to one cell, NaN', () => {
  assert.equal(randT([0, 2, 3, 3]).convTranspose2d(randT([2, 1, 2, 2])).shape, [0, 1, 4, 4]);
  // (1 - 1) * 1 - 2 * 1 + 2 + 1 = 1
  assert.equal(nums(Tensor.from([[[5]]]).convTranspose1d(Tensor.from([[[1, 2, 3]]]), { padding: 1 })), [10]);
  const yn = nums(Tensor.from([[[1, NaN, 2, 3]]]).convTranspose1d(Tensor.from([[[1, 1]]]), { stride: 2 }));
  assert.equal(
    yn.map((v) => Number.isNaN(v)),
    [false, false, true, true, false, false, false, false],
  );
});

test('bad inputs', () => {
  const x = randT([1, 4, 3, 3]),
    w = randT([4, 2, 3, 3]);
  throwsLike(() => x.convTranspose2d(w, { stride: 2, outputPadding: 2 }), ShapeError, [
    'convTranspose2d',
    'outputPadding [2, 2]',
    'stride [2, 2]',
    'dilation [1, 1]',
  ]);
  throwsLike(() => x.convTranspose2d(w, { outputPadding: 1 }), ShapeError, ['convTranspose2d', 'outputPadding']);
  throwsLike(() => randT([1, 2, 5]).convTranspose1d(randT([2, 1, 2]), { stride: 2, outputPadding: 2 }), ShapeError, [
    'convTranspose1d',
    'outputPadding 2',
    'stride 2',
  ]);
  throwsLike(() => x.convTranspose2d(randT([3, 2, 3, 3])), ShapeError, [
    'convTranspose2d',
    'weight dim 0',
    '[1, 4, 3, 3] f32',
    '[3, 2, 3, 3] f32',
  ]);
  throwsLike(() => x.convTranspose2d(w, { groups: 3 }), ShapeError, ['convTranspose2d', 'groups 3']);
  throwsLike(() => x.convTranspose2d(w, { bias: Tensor.ones([4]) }), ShapeError, [
    'convTranspose2d',
    'bias must be [2]',
    '[4] f32',
  ]);
  throwsLike(() => x.convTranspose2d(w, { padding: 3 }), ShapeError, ['convTranspose2d', 'too small']);
  throwsLike(() => x.convTranspose2d(w.toDtype('bf16')), DTypeError, ['convTranspose2d', 'bf16', 'f32']);
  throwsLike(() => x.toDtype('u32').convTranspose2d(w.toDtype('u32')), DTypeError, ['convTranspose2d', 'u32']);
  throwsLike(() => randT([4]).convTranspose1d(randT([4, 2, 3])), ShapeError, [
    'convTranspose1d',
    '[4] f32',
    '[n, c, l]',
  ]);
});

test.run();
