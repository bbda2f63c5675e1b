// softmax / logSoftmax, layerNorm, rmsNorm, batchNorm: known values, identities, float dtypes,
// non-contiguous inputs, large and infinite values, NaN, empty dims and errors.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { Tensor, type DType } from '../../src/index.ts';
import { DTypeError, ShapeError, TensorError } from '../../src/core/errors.ts';
import { LAYOUTS, assertClose, nums, randT, withLayout, throwsWith } from '../helpers.ts';

const FLOATS: DType[] = ['f32', 'f64', 'f16', 'bf16'];
/** output tolerance per dtype: one rounding of a value computed in f64 */
const TOLS: Record<string, number> = { f64: 1e-12, f32: 1e-6, f16: 1e-3, bf16: 8e-3 };
/** rows along the last dim of a contiguous number list */
function rows(v: number[], n: number): number[][] {
  const r: number[][] = [];
  for (let i = 0; i < v.length; i += n) r.push(v.slice(i, i + n));
  return r;
}

// ---- softmax ----------------------------------------------------------------------------------
test('softmax / logSoftmax: known values', () => {
  assertClose(
    nums(Tensor.from([1, 2, 3], { dtype: 'f64' }).softmax()),
    [0.09003057317038046, 0.24472847105479764, 0.6652409557748219],
    1e-14,
    0,
  );
  assertClose(
    nums(Tensor.from([1, 2, 3], { dtype: 'f64' }).logSoftmax()),
    [-2.4076059644443806, -1.4076059644443806, -0.4076059644443804],
    1e-14,
    0,
  );
  // along dim 0: columns [1, 1] and [3, 1]; sigmoid(2) = 0.8807970779778823
  assertClose(
    nums(
      Tensor.from(
        [
          [1, 3],
          [1, 1],
        ],
        { dtype: 'f64' },
      ).softmax(0),
    ),
    [0.5, 0.8807970779778823, 0.5, 0.11920292202211755],
    1e-14,
    0,
  );
  assert.equal(nums(Tensor.from([0, 0, 0, 0]).softmax()), [0.25, 0.25, 0.25, 0.25]);
  assert.equal(Tensor.from(5).softmax().itemSync(), 1);
  assert.equal(Tensor.from(5).logSoftmax(-1).itemSync(), 0);
});

test('softmax: large values do not overflow; -inf masks; rows of -inf and NaN give NaN', () => {
  for (const dt of FLOATS) {
    const big = dt === 'f16' ? 6e4 : 1e4;
    assert.equal(nums(Tensor.from([big, 0], { dtype: dt }).softmax()), [1, 0], dt);
    assertClose(nums(Tensor.from([big, big, big], { dtype: dt }).softmax()), [1 / 3, 1 / 3, 1 / 3], TOLS[dt]!, 0, dt);
    assertClose(
      nums(Tensor.from([big, 0], { dtype: dt }).logSoftmax()),
      [0, -Tensor.from([big], { dtype: dt }).itemSync()],
      1e-6,
      0,
      dt,
    );
    // -big and the next value below it that the dtype holds: the gap d decides the result
    const neg = Tensor.from([-big, -big * 1.0002], { dtype: dt });
    const [a, b] = nums(neg) as [number, number];
    const l = Math.log1p(Math.exp(b - a));
    assertClose(nums(neg.logSoftmax()), [-l, b - a - l], TOLS[dt]!, TOLS[dt]!, dt);
    assertClose(nums(neg.softmax()), [Math.exp(-l), Math.exp(b - a - l)], TOLS[dt]!, TOLS[dt]!, dt);
    assert.equal(nums(Tensor.from([-Infinity, 0, -Infinity], { dtype: dt }).softmax()), [0, 1, 0], dt);
    assert.equal(nums(Tensor.from([-Infinity, 0], { dtype: dt }).logSoftmax()), [-Infinity, 0], dt);
    const r = Tensor.from(
      [
        [-Infinity, -Infinity],
        [1, 1],
      ],
      { dtype: dt },
    );
    assertClose(nums(r.softmax()), [NaN, NaN, 0.5, 0.5], 0, 0, dt, true);
    assertClose(nums(r.logSoftmax()), [NaN, NaN, -Math.LN2, -Math.LN2], TOLS[dt]!, 0, dt, true);
    assertClose(
      nums(
        Tensor.from(
          [
            [1, NaN, 2],
            [0, 0, 0],
          ],
          { dtype: dt },
        ).softmax(),
      ),
      [NaN, NaN, NaN, 1 / 3, 1 / 3, 1 / 3],
      TOLS[dt]!,
      0,
      dt,
      true,
    );
  }
});

test('softmax: every float dtype against a loop; rows sum to 1; logSoftmax == log(softmax)', () => {
  for (const dt of FLOATS) {
    const x = randT([5, 7], dt, -6, 6);
    const xv = nums(x);
    const want = rows(xv, 7).flatMap((r) => {
      const s = r.reduce((a, v) => a + Math.exp(v), 0);
      return r.map((v) => Math.exp(v) / s);
    });
    const sm = nums(x.softmax(-1));
    assertClose(sm, want, TOLS[dt]!, 1e-7, `softmax ${dt}`);
    for (const r of rows(sm, 7))
      assert.ok(
        Math.abs(r.reduce((a, b) => a + b, 0) - 1) < 7 * TOLS[dt]!,
        `${dt} row sum ${r.reduce((a, b) => a + b, 0)}`,
      );
    const ls = nums(x.logSoftmax(1));
    assertClose(ls, want.map(Math.log), TOLS[dt]! * 4, TOLS[dt]! * 4, `logSoftmax ${dt}`);
  }
});

test('softmax: every dim of a 3-d tensor, non-contiguous inputs', async () => {
  const t = randT([3, 4, 5], 'f64', -3, 3);
  const v = nums(t);
  for (const dim of [0, 1, 2]) {
    const st = [20, 5, 1][dim]!,
      n = t.shape[dim]!;
    const want = v.map((_, p) => {
      const k = Math.floor(p / st) % n,
        base = p - k * st;
      let s = 0;
      for (let j = 0; j < n; j++) s += Math.exp(v[base + j * st]!);
      return Math.exp(v[p]!) / s;
    });
    assertClose(nums(t.softmax(dim - 3)), want, 1e-12, 0, `dim ${dim}`);
  }
  for (const kind of LAYOUTS) {
    const { x, ref } = withLayout(t, kind);
    for (const dim of [0, -1]) {
      assert.equal(await x.softmax(dim).toArray(), await ref.softmax(dim).toArray(), `${kind} ${dim}`);
      assert.equal(await x.logSoftmax(dim).toArray(), await ref.logSoftmax(dim).toArray(), `${kind} log ${dim}`);
    }
  }
});

test('softmax: empty and size-1 dims', () => {
  assert.equal(Tensor.zeros([2, 0]).softmax(-1).shape, [2, 0]);
  assert.equal(Tensor.zeros([0, 3]).softmax(0).shape, [0, 3]);
  assert.equal(nums(randT([3, 1]).softmax(-1)), [1, 1, 1]);
  assert.equal(nums(randT([3, 1]).logSoftmax(-1)), [0, 0, 0]);
});

test('softmax: errors', () => {
  throwsWith(() => Tensor.from([1, 2], { dtype: 'u8' }).softmax(), DTypeError, 'softmax', '[2] u8', 'f32');
  throwsWith(() => Tensor.from([1, 2], { dtype: 'i64' }).logSoftmax(), DTypeError, 'logSoftmax', 'i64');
  throwsWith(() => randT([2, 3]).softmax(2), ShapeError, 'softmax', 'dim 2', '[2, 3] f32');
  throwsWith(() => randT([2, 3]).logSoftmax(-3), ShapeError, 'logSoftmax', 'dim -3');
});

// ---- layerNorm / rmsNorm ----------------------------------------------------------------------
test('layerNorm: known values', () => {
  const x = Tensor.from([1, 2, 3], { dtype: 'f64' });
  assertClose(
    nums(x.layerNorm(Tensor.ones([3], { dtype: 'f64' }), null, 0)),
    [-1.224744871391589, 0, 1.224744871391589],
    1e-14,
    1e-15,
  );
  const w = Tensor.from([1, 2, 3], { dtype: 'f64' }),
    b = Tensor.from([0.5, 0.5, 0.5], { dtype: 'f64' });
  assertClose(nums(x.layerNorm(w, b, 0)), [-0.724744871391589, 0.5, 4.174234614174767], 1e-14, 0);
  // eps inside the square root: var 1 + eps 1
  assertClose(
    nums(Tensor.from([0, 2], { dtype: 'f64' }).layerNorm(Tensor.ones([2], { dtype: 'f64' }), null, 1)),
    [-Math.SQRT1_2, Math.SQRT1_2],
    1e-15,
    0,
  );
  // constant rows: zero variance, the output is the bias
  assert.equal(
    nums(
      Tensor.from([
        [4, 4],
        [7, 7],
      ]).layerNorm(Tensor.ones([2]), Tensor.from([1, -1])),
    ),
    [1, -1, 1, -1],
  );
});

test('rmsNorm: known values', () => {
  assertClose(
    nums(Tensor.from([3, 4], { dtype: 'f64' }).rmsNorm(Tensor.ones([2], { dtype: 'f64' }), 0)),
    [0.8485281374238571, 1.1313708498984762],
    1e-15,
    0,
  );
  assertClose(
    nums(
      Tensor.from(
        [
          [3, 4],
          [0, 0],
        ],
        { dtype: 'f64' },
      ).rmsNorm(Tensor.from([2, -1], { dtype: 'f64' }), 1e-6),
    ),
    [(3 * 2) / Math.sqrt(12.5 + 1e-6), -4 / Math.sqrt(12.5 + 1e-6), 0, 0],
    1e-15,
    0,
  );
  assertClose(
    nums(Tensor.from([1, 1], { dtype: 'f64' }).rmsNorm(Tensor.ones([2], { dtype: 'f64' }), 3)),
    [0.5, 0.5],
    1e-15,
    0,
  );
});

function normRef(xv: number[], h: number, w: number[], b: number[] | null, eps: number, rms: boolean): number[] {
  return rows(xv, h).flatMap((r) => {
    const mean = rms ? 0 : r.reduce((a, v) => a + v, 0) / h;
    const ms = r.reduce((a, v) => a + (v - mean) ** 2, 0) / h;
    return r.map((v, i) => ((v - mean) / Math.sqrt(ms + eps)) * w[i]! + (b ? b[i]! : 0));
  });
}

test('layerNorm / rmsNorm: every float dtype against a loop (3-d x)', () => {
  for (const dt of FLOATS) {
    const x = randT([2, 3, 8], dt, -3, 5),
      w = randT([8], dt),
      b = randT([8], dt);
    const xv = nums(x),
      wv = nums(w),
      bv = nums(b);
    const tol = TOLS[dt]! * 2;
    assertClose(nums(x.layerNorm(w, b, 1e-5)), normRef(xv, 8, wv, bv, 1e-5, false), tol, tol, `layerNorm ${dt}`);
    assertClose(nums(x.layerNorm(w, null)), normRef(xv, 8, wv, null, 1e-5, false), tol, tol, `layerNorm no bias ${dt}`);
    assertClose(nums(x.rmsNorm(w, 1e-6)), normRef(xv, 8, wv, null, 1e-6, true), tol, tol, `rmsNorm ${dt}`);
    assertClose(nums(x.rmsNorm(w)), normRef(xv, 8, wv, null, 1e-6, true), tol, tol, `rmsNorm default eps ${dt}`);
  }
});

test('layerNorm / rmsNorm: non-contiguous x, w, b; empty rows', async () => {
  const t = randT([4, 6], 'f64'),
    w = randT([6], 'f64'),
    b = randT([6], 'f64');
  const ww = withLayout(w, 'offset').x,
    bn = withLayout(b, 'narrowed').x;
  for (const kind of LAYOUTS) {
    const { x, ref } = withLayout(t, kind);
    assert.equal(await x.layerNorm(ww, bn).toArray(), await ref.layerNorm(w, b).toArray(), `layerNorm ${kind}`);
    assert.equal(await x.rmsNorm(ww).toArray(), await ref.rmsNorm(w).toArray(), `rmsNorm ${kind}`);
  }
  assert.equal(Tensor.zeros([0, 6]).layerNorm(Tensor.ones([6]), null).shape, [0, 6]);
  assert.equal(Tensor.zeros([3, 0]).rmsNorm(Tensor.ones([0])).shape, [3, 0]);
});

test('layerNorm / rmsNorm: errors', () => {
  const x = randT([2, 4]);
  throwsWith(
    () => x.layerNorm(Tensor.ones([3]), null),
    ShapeError,
    'layerNorm',
    'weight',
    '[4]',
    '[3] f32',
    '[2, 4] f32',
  );
  throwsWith(() => x.layerNorm(Tensor.ones([4]), Tensor.ones([1, 4])), ShapeError, 'layerNorm', 'bias', '[1, 4] f32');
  throwsWith(
    () => x.layerNorm(Tensor.ones([4], { dtype: 'f64' }), null),
    DTypeError,
    'layerNorm',
    '[2, 4] f32',
    '[4] f64',
  );
  throwsWith(() => x.layerNorm(Tensor.ones([4]), null, -1), RangeError, 'layerNorm', 'eps', '-1');
  throwsWith(() => x.rmsNorm(Tensor.ones([4]), NaN), RangeError, 'rmsNorm', 'eps');
  throwsWith(
    () => Tensor.from([1, 2], { dtype: 'u32' }).rmsNorm(Tensor.ones([2], { dtype: 'u32' })),
    DTypeError,
    'rmsNorm',
    'u32',
  );
  throwsWith(() => Tensor.from(1).rmsNorm(Tensor.ones([1])), ShapeError, 'rmsNorm', '[] f32');
  throwsWith(() => x.rmsNorm(Tensor.ones([2])), ShapeError, 'rmsNorm', '[2] f32', '[2, 4] f32');
});

// ---- batchNorm --------------------------------------------------------------------------------
test('batchNorm: known values, default eps, no weight / bias', () => {
  const x = Tensor.from([[[2], [5]]], { dtype: 'f64' });
  const o = {
    mean: Tensor.from([1, 3], { dtype: 'f64' }),
    variance: Tensor.from([3, 0.25], { dtype: 'f64' }),
    weight: Tensor.from([2, 1], { dtype: 'f64' }),
    bias: Tensor.from([0, 1], { dtype: 'f64' }),
    eps: 1,
  };
  assertClose(nums(x.batchNorm(o)), [1, 2.7888543819998317], 1e-15, 0);
  const one = { mean: Tensor.zeros([2], { dtype: 'f64' }), variance: Tensor.ones([2], { dtype: 'f64' }) };
  assertClose(
    nums(Tensor.from([[1, -2]], { dtype: 'f64' }).batchNorm(one)),
    [0.9999950000374997, -1.9999900000749994],
    1e-15,
    0,
  );
  assertClose(
    nums(
      Tensor.from([[1, -2]], { dtype: 'f64' }).batchNorm({
        ...one,
        weight: null,
        bias: Tensor.from([1, 1], { dtype: 'f64' }),
        eps: 0,
      }),
    ),
    [2, -1],
    1e-15,
    0,
  );
});

test('batchNorm: every float dtype against a loop (4-d and 2-d x), non-contiguous', async () => {
  for (const dt of FLOATS) {
    for (const shape of [
      [2, 3, 2, 2],
      [4, 3],
    ]) {
      const x = randT(shape, dt),
        mean = randT([3], dt),
        variance = randT([3], dt, 0.1, 2),
        weight = randT([3], dt),
        bias = randT([3], dt);
      const inner = shape.slice(2).reduce((a, b) => a * b, 1);
      const [mv, vv, wv, bv] = [mean, variance, weight, bias].map(nums) as [number[], number[], number[], number[]];
      const want = nums(x).map((v, p) => {
        const c = Math.floor(p / inner) % 3;
        return ((v - mv[c]!) / Math.sqrt(vv[c]! + 1e-5)) * wv[c]! + bv[c]!;
      });
      const tol = TOLS[dt]! * 2;
      assertClose(nums(x.batchNorm({ mean, variance, weight, bias })), want, tol, tol, `${dt} ${shape}`);
    }
  }
  const t = randT([3, 4, 5], 'f64'),
    mean = randT([4], 'f64'),
    variance = randT([4], 'f64', 0.5, 1);
  for (const kind of LAYOUTS) {
    const { x, ref } = withLayout(t, kind);
    assert.equal(
      await x.batchNorm({ mean: withLayout(mean, 'offset').x, variance }).toArray(),
      await ref.batchNorm({ mean, variance }).toArray(),
      kind,
    );
  }
});

test('batchNorm: half data with f32 per-channel tensors, alone or beside half ones', () => {
  for (const dt of ['f16', 'bf16'] as const) {
    const x = randT([2, 3, 4], dt),
      mean = randT([3], 'f32', -0.5, 0.5),
      variance = randT([3], 'f32', 0.5, 2),
      weight = randT([3], dt, 0.5, 1.5),
      bias = randT([3], 'f32');
    const xv = nums(x),
      mv = nums(mean),
      vv = nums(variance),
      wv = nums(weight),
      bv = nums(bias);
    const want = xv.map((v, p) => {
      const c = Math.floor(p / 4) % 3;
      return ((v - mv[c]!) / Math.sqrt(vv[c]! + 1e-5)) * wv[c]! + bv[c]!;
    });
    const y = x.batchNorm({ mean, variance, weight, bias });
    assert.equal(y.dtype, dt);
    assertClose(nums(y), want, 1e-2, 1e-2, dt);
  }
});

test('batchNorm: errors', () => {
  const x = randT([2, 3, 4]);
  const ok = { mean: Tensor.zeros([3]), variance: Tensor.ones([3]) };
  throwsWith(
    () => x.batchNorm({ ...ok, mean: Tensor.zeros([4]) }),
    ShapeError,
    'batchNorm',
    'mean',
    '[3]',
    '[4] f32',
    '[2, 3, 4] f32',
  );
  throwsWith(() => x.batchNorm({ ...ok, weight: Tensor.ones([2]) }), ShapeError, 'batchNorm', 'weight', '[2] f32');
  throwsWith(() => x.batchNorm({ ...ok, bias: Tensor.ones([3], { dtype: 'bf16' }) }), DTypeError, 'batchNorm', 'bf16');
  // half data takes its per-channel tensors in its own dtype or f32, nothing else
  const h = randT([2, 3, 4], 'bf16');
  throwsWith(
    () => h.batchNorm({ mean: Tensor.zeros([3], { dtype: 'f64' }), variance: Tensor.ones([3], { dtype: 'bf16' }) }),
    DTypeError,
    'batchNorm',
    'bf16 or f32',
    '[3] f64',
  );
  throwsWith(
    () => h.batchNorm({ mean: Tensor.zeros([3], { dtype: 'f16' }), variance: Tensor.ones([3], { dtype: 'bf16' }) }),
    DTypeError,
    'batchNorm',
    '[3] f16',
  );
  throwsWith(() => Tensor.ones([3]).batchNorm(ok), ShapeError, 'batchNorm', '[n, c, ...]', '[3] f32');
  throwsWith(() => x.batchNorm({ ...ok, eps: -1 }), RangeError, 'batchNorm', 'eps');
  throwsWith(() => x.batchNorm({ mean: ok.mean } as never), TensorError, 'batchNorm', 'variance');
});

test.run();
