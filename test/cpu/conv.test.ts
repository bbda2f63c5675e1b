import { test } from 'uvu';
import * as assert from 'uvu/assert';
import {
  Tensor,
  DTypeError,
  ShapeError,
  DisposedError,
  liveTensors,
  type DType,
  setCpuExact,
} from '../../src/index.ts';
import { randT, withLayout, LAYOUTS, assertClose, relErr, TOL, nums, throwsLike } from '../helpers.ts';

const f64 = (t: Tensor) => t.toDtype('f64');

interface Geo {
  padding: [number, number];
  stride: [number, number];
  dilation: [number, number];
  groups: number;
}

/**
 * conv2d the other way round: unfold each group's receptive fields into a
 * [cg*kh*kw, oh*ow] matrix (zeros where the padding is) and multiply by the weight matrix.
 */
function convByUnfold(x: Tensor, w: Tensor, bias: Tensor | null, g: Geo, oh: number, ow: number): number[] {
  const [n, cIn, h, wd] = x.shape as [number, number, number, number];
  const [cOut, cg, kh, kw] = w.shape as [number, number, number, number];
  const xv = nums(x),
    og = cOut / g.groups;
  const out = new Array<number>(n * cOut * oh * ow).fill(0);
  for (let b = 0; b < n; b++)
    for (let gi = 0; gi < g.groups; gi++) {
      const cols: number[] = [];
      for (let c = 0; c < cg; c++)
        for (let i = 0; i < kh; i++)
          for (let j = 0; j < kw; j++) {
            for (let y = 0; y < oh; y++)
              for (let xo = 0; xo < ow; xo++) {
                const iy = y * g.stride[0] - g.padding[0] + i * g.dilation[0];
                const ix = xo * g.stride[1] - g.padding[1] + j * g.dilation[1];
                const inside = iy >= 0 && iy < h && ix >= 0 && ix < wd;
                cols.push(inside ? xv[((b * cIn + gi * cg + c) * h + iy) * wd + ix]! : 0);
              }
          }
      const colT = Tensor.from(cols, { shape: [cg * kh * kw, oh * ow], dtype: 'f64' });
      const wg = f64(
        w
          .narrow(0, gi * og, og)
          .contiguous()
          .reshape([og, cg * kh * kw]),
      );
      const r = nums(wg.matmul(colT));
      for (let o = 0; o < og; o++)
        for (let p = 0; p < oh * ow; p++) {
          out[(b * cOut + gi * og + o) * oh * ow + p] = r[o * oh * ow + p]! + (bias ? nums(bias)[gi * og + o]! : 0);
        }
    }
  return out;
}

test('conv2d known values: 2x2 box filter, padding + stride, bias', () => {
  const x = Tensor.arange(16).reshape([1, 1, 4, 4]);
  const y = x.conv2d(Tensor.ones([1, 1, 2, 2]));
  assert.equal(y.shape, [1, 1, 3, 3]);
  assert.equal(y.toNestedSync(), [
    [
      [
        [10, 14, 18],
        [26, 30, 34],
        [42, 46, 50],
      ],
    ],
  ]);
  const x3 = Tensor.arange(9).reshape([1, 1, 3, 3]);
  const z = x3.conv2d(Tensor.ones([1, 1, 3, 3]), { padding: 1, stride: 2, bias: Tensor.from([0.5]) });
  assert.equal(z.toNestedSync(), [
    [
      [
        [8.5, 12.5],
        [20.5, 24.5],
      ],
    ],
  ]);
  // cross-correlation, not flipped: a [1, 0] kernel picks the left neighbour
  const pick = Tensor.from([[[[1, 2, 3]]]]).conv2d(Tensor.from([[[[1, 0]]]]));
  assert.equal(nums(pick), [1, 2]);
});

test('conv1d known values: dilation, groups, stride', () => {
  const x = Tensor.from([[[1, 2, 3, 4, 5]]]);
  assert.equal(nums(x.conv1d(Tensor.from([[[1, -1]]]), { dilation: 2 })), [-2, -2, -2]);
  assert.equal(nums(x.conv1d(Tensor.from([[[1, 1]]]), { stride: 2 })), [3, 7]);
  assert.equal(nums(x.conv1d(Tensor.from([[[1, 1, 1]]]), { padding: 1 })), [3, 6, 9, 12, 9]);
  const xg = Tensor.from([
    [
      [1, 2, 3],
      [10, 20, 30],
    ],
  ]);
  const wg = Tensor.from([[[1, 1]], [[1, -1]]]);
  const yg = xg.conv1d(wg, { groups: 2, bias: Tensor.from([100, 0]) });
  assert.equal(yg.toNestedSync(), [
    [
      [103, 105],
      [-10, -10],
    ],
  ]);
  // two output channels from one input channel each, groups = cIn (depthwise with multiplier 2)
  const wd = Tensor.from([[[1, 0]], [[0, 1]], [[2, 0]], [[0, 2]]]);
  assert.equal(xg.conv1d(wd, { groups: 2 }).toNestedSync(), [
    [
      [1, 2],
      [2, 3],
      [20, 40],
      [40, 60],
    ],
  ]);
});

test('output sizes as PyTorch documents them', () => {
  const cases: [number[], Geo, number[]][] = [
    // [h, w, kh, kw], geometry, [oh, ow] worked out from floor((i + 2p - d(k-1) - 1)/s) + 1
    [[7, 6, 3, 2], { padding: [1, 0], stride: [2, 1], dilation: [1, 2], groups: 1 }, [4, 4]],
    [[5, 5, 3, 3], { padding: [0, 0], stride: [3, 3], dilation: [1, 1], groups: 1 }, [1, 1]],
    [[8, 9, 2, 3], { padding: [2, 1], stride: [3, 2], dilation: [3, 1], groups: 1 }, [3, 5]],
  ];
  for (const [[h, w, kh, kw], g, want] of cases) {
    const y = randT([1, 2, h!, w!]).conv2d(randT([3, 2, kh!, kw!]), g);
    assert.equal(y.shape, [1, 3, ...want]);
  }
});

test('conv2d equals unfold + matmul (groups, padding, stride, dilation, bias)', () => {
  const geos: Geo[] = [
    { padding: [1, 0], stride: [2, 1], dilation: [1, 2], groups: 2 },
    { padding: [0, 0], stride: [1, 1], dilation: [1, 1], groups: 1 },
    { padding: [2, 1], stride: [1, 3], dilation: [2, 1], groups: 4 },
  ];
  for (const g of geos) {
    const x = randT([2, 4, 7, 6], 'f64'),
      w = randT([8, 4 / g.groups, 3, 2], 'f64'),
      bias = randT([8], 'f64');
    const y = x.conv2d(w, { ...g, bias });
    const [, , oh, ow] = y.shape as [number, number, number, number];
    assertClose(nums(y), convByUnfold(x, w, bias, g, oh, ow), 1e-12, 1e-12, JSON.stringify(g));
  }
});

test('1x1 conv is a matmul over channels', () => {
  const x = randT([2, 3, 4, 5], 'f64'),
    w = randT([6, 3, 1, 1], 'f64');
  const y = x.conv2d(w);
  // [n, c, h, w] -> [n, h, w, c] x [c, cOut] -> [n, cOut, h, w]
  const want = x
    .permute([0, 2, 3, 1])
    .matmul(w.reshape([6, 3]).T)
    .permute([0, 3, 1, 2])
    .contiguous();
  assertClose(nums(y), nums(want), 1e-13, 1e-13, '1x1');
});

test('conv1d equals conv2d with h = 1; unbatched equals batch of one', () => {
  const x = randT([2, 3, 9], 'f64'),
    w = randT([4, 3, 3], 'f64'),
    b = randT([4], 'f64');
  const o = { padding: 2, stride: 2, dilation: 2, bias: b };
  const y1 = x.conv1d(w, o);
  const y2 = x.unsqueeze(2).conv2d(w.unsqueeze(2), { padding: [0, 2], stride: [1, 2], dilation: [1, 2], bias: b });
  assert.equal(y1.shape, [2, 4, 5]); // floor((9 + 4 - 4 - 1) / 2) + 1
  assert.equal(nums(y1), nums(y2));
  const x0 = x.narrow(0, 0, 1).squeeze(0);
  const u = x0.conv1d(w, o);
  assert.equal(u.shape, [4, 5]);
  assert.equal(nums(u), nums(y1.narrow(0, 0, 1)));
  const x4 = randT([3, 5, 5]),
    w4 = randT([2, 3, 3, 3]);
  const u4 = x4.conv2d(w4, { padding: 1 });
  assert.equal(u4.shape, [2, 5, 5]);
  assert.equal(nums(u4), nums(x4.unsqueeze(0).conv2d(w4, { padding: 1 })));
});

test('every float dtype: the exact reference is rounded once from the f64 result', () => {
  setCpuExact(true);
  try {
    for (const dt of ['f32', 'f64', 'f16', 'bf16'] as DType[]) {
      const x = randT([2, 4, 6, 5], dt),
        w = randT([6, 2, 3, 3], dt),
        b = randT([6], dt);
      const o = { padding: 1, stride: [2, 1] as [number, number], groups: 2 };
      const y = x.conv2d(w, { ...o, bias: b });
      assert.is(y.dtype, dt);
      const exact = f64(x).conv2d(f64(w), { ...o, bias: f64(b) });
      assert.equal(nums(y), nums(exact.toDtype(dt)), dt);
      assert.ok(relErr(nums(y), nums(exact)) <= TOL[dt], dt);
      const y1 = x
        .narrow(2, 0, 1)
        .squeeze(2)
        .conv1d(w.narrow(2, 1, 1).squeeze(2), { padding: 1, groups: 2 });
      assert.is(y1.dtype, dt);
    }
  } finally {
    setCpuExact(null);
  }
});

test('non-contiguous input, weight and bias give the contiguous result', () => {
  const x = randT([2, 4, 5, 6]),
    w = randT([3, 4, 2, 3]),
    b = randT([3]);
  const want = nums(x.conv2d(w, { padding: 1, bias: b }));
  for (const k of LAYOUTS) {
    const X = withLayout(x, k),
      W = withLayout(w, k),
      B = withLayout(b, k === 'broadcast' ? 'contiguous' : k);
    const wantK = nums(X.ref.conv2d(W.ref, { padding: 1, bias: B.ref }));
    assert.equal(nums(X.x.conv2d(W.x, { padding: 1, bias: B.x })), wantK, `layout ${k}`);
    if (k !== 'broadcast') assert.equal(wantK, want, `ref ${k}`);
  }
  // a channels-last tensor viewed as NCHW
  const nhwc = x.permute([0, 2, 3, 1]).contiguous().permute([0, 3, 1, 2]);
  assert.equal(nums(nhwc.conv2d(w, { padding: 1, bias: b })), want);
  const x1 = randT([2, 3, 8]),
    w1 = randT([2, 3, 3]);
  for (const k of LAYOUTS) {
    const X = withLayout(x1, k);
    assert.equal(nums(X.x.conv1d(w1, { stride: 2 })), nums(X.ref.conv1d(w1, { stride: 2 })), `conv1d ${k}`);
  }
});

test('edge cases: empty batch, kernel as big as the input, size-1 everything, NaN', () => {
  const e = randT([0, 3, 5, 5]).conv2d(randT([2, 3, 3, 3]));
  assert.equal(e.shape, [0, 2, 3, 3]);
  const full = randT([1, 2, 3, 4], 'f64'),
    wf = randT([1, 2, 3, 4], 'f64');
  const dot = nums(full).reduce((s, v, i) => s + v * nums(wf)[i]!, 0);
  assertClose(nums(full.conv2d(wf)), [dot], 1e-13, 1e-13, 'whole-input kernel');
  assert.equal(nums(Tensor.from([[[[3]]]]).conv2d(Tensor.from([[[[-2]]]]))), [-6]);
  // NaN reaches only the outputs whose window covers it
  const xn = Tensor.from([[[1, 2, NaN, 4, 5, 6]]]);
  const yn = nums(xn.conv1d(Tensor.from([[[1, 1]]])));
  assert.equal(
    yn.map((v) => Number.isNaN(v)),
    [false, true, true, false, false],
  );
  assert.equal([yn[0], yn[3], yn[4]], [3, 9, 11]);
});

test('leaves no views behind', () => {
  const x = randT([3, 6]),
    w = randT([2, 3, 2]),
    b = randT([2]);
  const before = liveTensors().length;
  const y = x.conv1d(w, { bias: b });
  assert.is(liveTensors().length, before + 1);
  y.dispose();
});

test('bad inputs', () => {
  const x = randT([1, 4, 5, 5]),
    w = randT([2, 4, 3, 3]);
  throwsLike(() => x.toDtype('u8').conv2d(w.toDtype('u8')), DTypeError, ['conv2d', 'u8', '[1, 4, 5, 5]']);
  throwsLike(() => x.conv2d(w.toDtype('f64')), DTypeError, ['conv2d', '[1, 4, 5, 5] f32', '[2, 4, 3, 3] f64']);
  throwsLike(() => x.conv2d(w, { bias: Tensor.ones([2], { dtype: 'f16' }) }), DTypeError, ['conv2d', '[2] f16']);
  throwsLike(() => x.conv2d(w, { bias: Tensor.ones([3]) }), ShapeError, ['conv2d', 'bias', '[3] f32', '[2]']);
  throwsLike(() => x.conv2d(w, { bias: Tensor.ones([1, 2]) }), ShapeError, ['conv2d', 'bias', '[1, 2] f32']);
  throwsLike(() => randT([5, 5]).conv2d(w), ShapeError, ['conv2d', '[5, 5] f32', '[n, c, h, w]']);
  throwsLike(() => x.conv2d(randT([2, 4, 3])), ShapeError, ['conv2d', 'weight', '[2, 4, 3] f32']);
  throwsLike(() => x.conv2d(randT([2, 3, 3, 3])), ShapeError, [
    'conv2d',
    '[1, 4, 5, 5] f32',
    '[2, 3, 3, 3] f32',
    'channels',
  ]);
  throwsLike(() => x.conv2d(randT([3, 2, 3, 3]), { groups: 2 }), ShapeError, ['conv2d', 'groups 2', 'divisible']);
  throwsLike(() => x.conv2d(randT([2, 4, 3, 3]), { groups: 3 }), ShapeError, ['conv2d', 'groups 3']);
  throwsLike(() => x.conv2d(w, { groups: 0 }), RangeError, ['conv2d', 'groups']);
  throwsLike(() => x.conv2d(randT([2, 4, 6, 3])), ShapeError, ['conv2d', 'too small', '[2, 4, 6, 3]']);
  throwsLike(() => x.conv2d(w, { dilation: 3 }), ShapeError, ['conv2d', 'too small', 'dilation [3, 3]']);
  throwsLike(() => x.conv2d(w, { stride: 0 }), RangeError, ['conv2d', 'stride']);
  throwsLike(() => x.conv2d(w, { padding: -1 }), RangeError, ['conv2d', 'padding']);
  throwsLike(() => x.conv2d(w, { padding: [1, 0.5] }), RangeError, ['conv2d', 'padding']);
  throwsLike(() => randT([1, 2, 5]).conv1d(randT([1, 2, 2]), { padding: [1, 1] }), RangeError, ['conv1d', 'padding']);
  throwsLike(() => randT([1, 2, 2]).conv1d(randT([1, 2, 3])), ShapeError, ['conv1d', 'too small', '[1, 2, 2] f32']);
  throwsLike(() => randT([1, 2, 3, 4]).conv1d(randT([1, 2, 3])), ShapeError, [
    'conv1d',
    '[1, 2, 3, 4] f32',
    '[n, c, l]',
  ]);
  const gone = Tensor.ones([2]);
  gone.dispose();
  throwsLike(() => x.conv2d(w, { bias: gone }), DisposedError, ['conv2d']);
});

test('the npm start CNN: conv2d -> maxPool2d -> relu -> matmul -> softmax, checked by plain JS', () => {
  const x = randT([2, 1, 6, 6], 'f64'),
    w = randT([3, 1, 3, 3], 'f64'),
    b = randT([3], 'f64'),
    fc = randT([12, 4], 'f64');
  const feat = x.conv2d(w, { padding: 1, bias: b }).maxPool2d({ kernel: 3, stride: 3 }).relu();
  assert.equal(feat.shape, [2, 3, 2, 2]);
  const probs = feat.reshape([2, 12]).matmul(fc).softmax(-1);
  const xv = nums(x),
    wv = nums(w),
    bv = nums(b),
    fv = nums(fc);
  const at = (n: number, y: number, i: number) => (y < 0 || y > 5 || i < 0 || i > 5 ? 0 : xv[n * 36 + y * 6 + i]!);
  const want: number[] = [];
  for (let n = 0; n < 2; n++) {
    const f: number[] = [];
    for (let o = 0; o < 3; o++)
      for (let py = 0; py < 2; py++)
        for (let px = 0; px < 2; px++) {
          let m = -Infinity;
          for (let y = py * 3; y < py * 3 + 3; y++)
            for (let i = px * 3; i < px * 3 + 3; i++) {
              let s = bv[o]!;
              for (let a = 0; a < 3; a++)
                for (let c = 0; c < 3; c++) s += at(n, y + a - 1, i + c - 1) * wv[o * 9 + a * 3 + c]!;
              m = Math.max(m, s);
            }
          f.push(Math.max(m, 0));
        }
    const logits = [0, 1, 2, 3].map((j) => f.reduce((s, v, k) => s + v * fv[k * 4 + j]!, 0));
    const mx = Math.max(...logits),
      e = logits.map((l) => Math.exp(l - mx)),
      z = e.reduce((s, v) => s + v, 0);
    want.push(...e.map((v) => v / z));
  }
  assertClose(nums(probs), want, 1e-12, 1e-12, 'cnn');
});

test('the matrix-product path (im2col on the CPU GEMM) agrees with the exact reference: forward, transpose, weight gradient', () => {
  const cases: [number[], number[], Record<string, unknown>][] = [
    [[2, 4, 7, 6], [6, 2, 3, 3], { padding: 1, stride: [2, 1], groups: 2 }],
    [[1, 3, 9, 8], [4, 3, 3, 2], { dilation: 2, padding: [2, 1] }],
    [[2, 2, 5, 5], [3, 2, 1, 1], {}],
  ];
  for (const dt of ['f32', 'f64', 'f16', 'bf16'] as DType[]) {
    for (const [xs, ws, o] of cases) {
      const x = randT(xs, dt),
        w = randT(ws, dt),
        b = randT([ws[0]!], dt);
      const run = (exact: boolean) => {
        setCpuExact(exact);
        try {
          const y = x.conv2d(w, { ...o, bias: b });
          const t = y.convTranspose2d(w, { ...o, bias: randT([ws[1]! * ((o.groups as number) ?? 1)], dt, -1, 1) });
          const xr = x.detach();
          xr.requiresGrad = true;
          const wr = w.detach();
          wr.requiresGrad = true;
          xr.conv2d(wr, o).sum().backward();
          return [nums(y), nums(wr.grad!), nums(xr.grad!), t.shape];
        } finally {
          setCpuExact(null);
        }
      };
      const [ya, ga, xa, ta] = run(false);
      const [ye, ge, xe, te] = run(true);
      assert.equal(ta, te);
      for (const [what, a, e] of [
        ['output', ya, ye],
        ['weight gradient', ga, ge],
        ['input gradient', xa, xe],
      ] as const)
        assert.ok(
          relErr(a as number[], e as number[]) <= TOL[dt],
          `${dt} ${JSON.stringify(o)} ${what}: ${relErr(a as number[], e as number[])}`,
        );
    }
  }
});

test.run();
