// rope / ropeI / ropeThd and scaledDotProductAttention: known values, identities, float dtypes,
// non-contiguous inputs, grouped-query heads, causal masks, large scores, and errors.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { Tensor, type DType } from '../../src/index.ts';
import { DTypeError, ShapeError } from '../../src/core/errors.ts';
import { LAYOUTS, assertClose, nums, randT, withLayout, throwsWith } from '../helpers.ts';
import { gridRef } from '../attention-ref.ts';

const FLOATS: DType[] = ['f32', 'f64', 'f16', 'bf16'];
const TOLS: Record<string, number> = { f64: 1e-12, f32: 2e-6, f16: 2e-3, bf16: 1.6e-2 };
const sdpa = Tensor.scaledDotProductAttention;

// ---- rope -------------------------------------------------------------------------------------
test('rope / ropeI / ropeThd: known values', () => {
  const x = Tensor.from([1, 2, 3, 4], { dtype: 'f64', shape: [1, 1, 1, 4] });
  const cos = Tensor.from([[0, 1]], { dtype: 'f64' }),
    sin = Tensor.from([[1, 0]], { dtype: 'f64' });
  // halves: pairs (x0, x2) by angle 0 (cos 0, sin 1) and (x1, x3) by (cos 1, sin 0)
  assert.equal(nums(x.rope(cos, sin)), [-3, 2, 1, 4]);
  // interleaved: pairs (x0, x1) and (x2, x3)
  assert.equal(nums(x.ropeI(cos, sin)), [-2, 1, 3, 4]);
  assert.equal(nums(x.ropeThd(cos, sin)), [-3, 2, 1, 4]);
  // two positions with different angles: t picks the cos/sin row
  const x2 = Tensor.from([1, 0, 1, 0], { dtype: 'f64', shape: [1, 1, 2, 2] });
  const c2 = Tensor.from([[0.6], [0]], { dtype: 'f64' }),
    s2 = Tensor.from([[0.8], [-1]], { dtype: 'f64' });
  assertClose(nums(x2.rope(c2, s2)), [0.6, 0.8, 0, -1], 1e-15, 1e-15);
  assertClose(nums(x2.ropeI(c2, s2)), [0.6, 0.8, 0, -1], 1e-15, 1e-15);
});

/** loops straight from the definition; x laid out [b, s1, s2, d], t = s2 (or s1 for thd) */
function ropeRef(
  xv: number[],
  shape: number[],
  cv: number[],
  sv: number[],
  layout: 'halves' | 'interleaved' | 'thd',
): number[] {
  const [b, s1, s2, d] = shape as [number, number, number, number];
  const h = d / 2,
    out = [...xv];
  for (let i = 0; i < b * s1 * s2; i++) {
    const t = layout === 'thd' ? Math.floor(i / s2) % s1 : i % s2;
    for (let j = 0; j < h; j++) {
      const a = i * d + (layout === 'interleaved' ? 2 * j : j),
        c = layout === 'interleaved' ? a + 1 : a + h;
      const co = cv[t * h + j]!,
        si = sv[t * h + j]!;
      out[a] = xv[a]! * co - xv[c]! * si;
      out[c] = xv[c]! * co + xv[a]! * si;
    }
  }
  return out;
}

test('rope: every float dtype and layout against a loop', () => {
  for (const dt of FLOATS) {
    const x = randT([2, 3, 4, 6], dt),
      cos = randT([4, 3], dt),
      sin = randT([4, 3], dt);
    const xv = nums(x),
      cv = nums(cos),
      sv = nums(sin),
      tol = TOLS[dt]! * 2;
    assertClose(nums(x.rope(cos, sin)), ropeRef(xv, x.shape, cv, sv, 'halves'), tol, tol, `rope ${dt}`);
    assertClose(nums(x.ropeI(cos, sin)), ropeRef(xv, x.shape, cv, sv, 'interleaved'), tol, tol, `ropeI ${dt}`);
    const c3 = randT([3, 3], dt),
      s3 = randT([3, 3], dt);
    assertClose(nums(x.ropeThd(c3, s3)), ropeRef(xv, x.shape, nums(c3), nums(s3), 'thd'), tol, tol, `ropeThd ${dt}`);
  }
});

test('rope: identities (thd = permuted halves; angle then minus angle; pair norms kept)', async () => {
  const x = randT([2, 3, 5, 8], 'f64');
  const ang = randT([5, 4], 'f64', -3, 3);
  const cos = ang.cos(),
    sin = ang.sin(),
    nsin = sin.neg();
  const viaThd = x.permute([0, 2, 1, 3]).ropeThd(cos, sin).permute([0, 2, 1, 3]);
  assertClose(nums(viaThd), nums(x.rope(cos, sin)), 1e-15, 1e-15, 'thd');
  assertClose(nums(x.rope(cos, sin).rope(cos, nsin)), nums(x), 1e-12, 1e-12, 'rope back');
  assertClose(nums(x.ropeI(cos, sin).ropeI(cos, nsin)), nums(x), 1e-12, 1e-12, 'ropeI back');
  const xv = nums(x),
    yv = nums(x.ropeI(cos, sin));
  for (let p = 0; p < xv.length; p += 2)
    assert.ok(Math.abs(Math.hypot(xv[p]!, xv[p + 1]!) - Math.hypot(yv[p]!, yv[p + 1]!)) < 1e-12);
});

test('rope: non-contiguous x, cos, sin', async () => {
  const t = randT([2, 2, 3, 4], 'f32'),
    cos = randT([3, 2], 'f32'),
    sin = randT([3, 2], 'f32');
  for (const kind of LAYOUTS) {
    const { x, ref } = withLayout(t, kind);
    const { x: cx, ref: cr } = withLayout(cos, kind),
      { x: sx, ref: sr } = withLayout(sin, kind);
    assert.equal(await x.rope(cx, sx).toArray(), await ref.rope(cr, sr).toArray(), `rope ${kind}`);
    assert.equal(await x.ropeI(cx, sx).toArray(), await ref.ropeI(cr, sr).toArray(), `ropeI ${kind}`);
  }
  const thd = randT([2, 3, 2, 4], 'f32');
  const { x: tx } = withLayout(thd, 'transposed');
  assert.equal(await tx.ropeThd(cos, sin).toArray(), await thd.ropeThd(cos, sin).toArray(), 'ropeThd transposed');
});

test('rope: errors', () => {
  const x = randT([1, 2, 3, 4]);
  const c = Tensor.ones([3, 2]);
  throwsWith(
    () => x.rope(Tensor.ones([3, 4]), c),
    ShapeError,
    'rope',
    'cos',
    '[3, 2]',
    '[3, 4] f32',
    '[1, 2, 3, 4] f32',
  );
  throwsWith(() => x.ropeThd(c, c), ShapeError, 'ropeThd', 'cos', '[2, 2]', '[b, t, h, d]');
  throwsWith(
    () => randT([1, 2, 3, 5]).rope(Tensor.ones([3, 2]), Tensor.ones([3, 2])),
    ShapeError,
    'rope',
    'even',
    '[1, 2, 3, 5] f32',
  );
  throwsWith(() => randT([2, 3, 4]).ropeI(c, c), ShapeError, 'ropeI', '[b, h, t, d]', '[2, 3, 4] f32');
  throwsWith(() => x.rope(c, Tensor.ones([3, 2], { dtype: 'f16' })), DTypeError, 'rope', '[3, 2] f16');
  throwsWith(
    () =>
      Tensor.ones([1, 1, 1, 2], { dtype: 'u8' }).rope(
        Tensor.ones([1, 1], { dtype: 'u8' }),
        Tensor.ones([1, 1], { dtype: 'u8' }),
      ),
    DTypeError,
    'rope',
    'u8',
  );
});

// ---- attention --------------------------------------------------------------------------------
/** plain loops: scores = q k^T * scale, masked (j > i) when causal, softmax over keys, times v */
const attnRef = (q: Tensor, k: Tensor, v: Tensor, causal: boolean, scale: number): number[] =>
  gridRef(
    q,
    k,
    v,
    (_b, _h, i, j) => !causal || j <= i,
    () => 0,
    scale,
  );

test('attention: known values (two keys, causal, default scale, huge scores)', () => {
  const f = (v: number[], shape: number[]) => Tensor.from(v, { dtype: 'f64', shape });
  // scores 0 and ln 3 -> weights 1/4, 3/4 -> 4/4 + 24/4 = 7
  const k = f([0, Math.log(3)], [1, 1, 2, 1]),
    v = f([4, 8], [1, 1, 2, 1]);
  assertClose(nums(sdpa(f([1], [1, 1, 1, 1]), k, v, { scale: 1 })), [7], 1e-15, 0);
  // causal, top-left: query 0 sees key 0 only, query 1 both
  assertClose(nums(sdpa(f([1, 1], [1, 1, 2, 1]), k, v, { scale: 1, causal: true })), [4, 7], 1e-15, 0);
  // default scale 1/sqrt(4): q.k = [0, 4 ln 3], scaled [0, 2 ln 3] -> weights 1/10, 9/10
  const q4 = f([1, 1, 1, 1], [1, 1, 1, 4]);
  const k4 = f([0, 0, 0, 0, Math.log(3), Math.log(3), Math.log(3), Math.log(3)], [1, 1, 2, 4]);
  assertClose(nums(sdpa(q4, k4, v)), [0.4 + 7.2], 1e-14, 0);
  // scores near 1e4 must not overflow
  const big = sdpa(f([100], [1, 1, 1, 1]), f([100, 99.9], [1, 1, 2, 1]), f([1, 5], [1, 1, 2, 1]), { scale: 1 });
  assertClose(nums(big), [1 + (4 * Math.exp(-10)) / (1 + Math.exp(-10))], 1e-12, 0);
  // more queries than keys, causal: queries past the last key see them all
  const q3 = f([0, 0, 0], [1, 1, 3, 1]);
  assertClose(nums(sdpa(q3, k, v, { causal: true })), [4, 6, 6], 1e-15, 0);
});

test('attention: every float dtype against plain loops (GQA, causal, tq != tk, dv != d)', () => {
  for (const dt of FLOATS) {
    const q = randT([2, 4, 3, 8], dt),
      k = randT([2, 2, 5, 8], dt),
      v = randT([2, 2, 5, 6], dt);
    const tol = TOLS[dt]! * 3;
    for (const causal of [false, true]) {
      assertClose(
        nums(sdpa(q, k, v, { causal })),
        attnRef(q, k, v, causal, 1 / Math.sqrt(8)),
        tol,
        tol,
        `${dt} causal ${causal}`,
      );
    }
    assertClose(nums(sdpa(q, k, v, { scale: 0.7 })), attnRef(q, k, v, false, 0.7), tol, tol, `${dt} scale`);
  }
});

test('attention: grouped heads equal explicitly repeated kv heads; heads map floor(h / group)', () => {
  const q = randT([1, 6, 2, 4], 'f64'),
    k = randT([1, 2, 3, 4], 'f64'),
    v = randT([1, 2, 3, 4], 'f64');
  const rep = (t: Tensor) =>
    Tensor.cat(
      [0, 0, 0, 1, 1, 1].map((h) => t.narrow(1, h, 1)),
      1,
    );
  assertClose(nums(sdpa(q, k, v, { causal: true })), nums(sdpa(q, rep(k), rep(v), { causal: true })), 1e-14, 1e-14);
  // a wrong mapping (h % hkv) would differ
  const alt = (t: Tensor) =>
    Tensor.cat(
      [0, 1, 0, 1, 0, 1].map((h) => t.narrow(1, h, 1)),
      1,
    );
  const a = nums(sdpa(q, k, v)),
    b = nums(sdpa(q, alt(k), alt(v)));
  assert.ok(a.some((x, i) => Math.abs(x - b[i]!) > 1e-6));
});

test('attention: non-contiguous q, k, v; size-1 and empty dims', async () => {
  const q = randT([2, 2, 3, 4], 'f32'),
    k = randT([2, 2, 5, 4], 'f32'),
    v = randT([2, 2, 5, 4], 'f32');
  for (const kind of LAYOUTS) {
    const Q = withLayout(q, kind),
      K = withLayout(k, kind),
      V = withLayout(v, kind);
    assert.equal(
      await sdpa(Q.x, K.x, V.x, { causal: true }).toArray(),
      await sdpa(Q.ref, K.ref, V.ref, { causal: true }).toArray(),
      kind,
    );
  }
  // one key: the output is that key's value row
  const v1 = randT([1, 1, 1, 3], 'f64');
  assert.equal(nums(sdpa(randT([1, 1, 4, 2], 'f64'), randT([1, 1, 1, 2], 'f64'), v1)), [
    ...nums(v1),
    ...nums(v1),
    ...nums(v1),
    ...nums(v1),
  ]);
  assert.equal(
    sdpa(Tensor.zeros([1, 2, 0, 4]), Tensor.zeros([1, 1, 3, 4]), Tensor.zeros([1, 1, 3, 5])).shape,
    [1, 2, 0, 5],
  );
  // no keys: an empty weighted sum, zeros
  assert.equal(nums(sdpa(randT([1, 1, 2, 4]), Tensor.zeros([1, 1, 0, 4]), Tensor.zeros([1, 1, 0, 2]))), [0, 0, 0, 0]);
  // NaN in a query row stays in that row
  const qn = Tensor.from([NaN, 0, 1, 0], { dtype: 'f64', shape: [1, 1, 2, 2] });
  const out = nums(sdpa(qn, randT([1, 1, 2, 2], 'f64'), randT([1, 1, 2, 2], 'f64')));
  assert.ok(Number.isNaN(out[0]!) && Number.isNaN(out[1]!) && Number.isFinite(out[2]!) && Number.isFinite(out[3]!));
});

test('attention: errors', () => {
  const q = randT([1, 4, 2, 8]),
    k = randT([1, 2, 3, 8]),
    v = randT([1, 2, 3, 8]);
  throwsWith(
    () => sdpa(randT([1, 3, 2, 8]), k, v),
    ShapeError,
    'scaledDotProductAttention',
    'query heads 3',
    'kv heads 2',
    '[1, 3, 2, 8] f32',
  );
  throwsWith(
    () => sdpa(q, randT([2, 2, 3, 8]), randT([2, 2, 3, 8])),
    ShapeError,
    'scaledDotProductAttention',
    'batch',
    '[2, 2, 3, 8] f32',
  );
  throwsWith(
    () => sdpa(q, randT([1, 2, 3, 4]), v),
    ShapeError,
    'scaledDotProductAttention',
    'head dims',
    '[1, 2, 3, 4] f32',
  );
  throwsWith(
    () => sdpa(q, k, randT([1, 2, 4, 8])),
    ShapeError,
    'scaledDotProductAttention',
    'same heads and length',
    '[1, 2, 4, 8] f32',
  );
  throwsWith(() => sdpa(randT([4, 2, 8]), k, v), ShapeError, 'scaledDotProductAttention', '4-d', '[4, 2, 8] f32');
  throwsWith(() => sdpa(q, k, randT([1, 2, 3, 8], 'f64')), DTypeError, 'scaledDotProductAttention', '[1, 2, 3, 8] f64');
  throwsWith(() => sdpa(q, k, v, { scale: NaN }), RangeError, 'scaledDotProductAttention', 'scale');
  throwsWith(
    () =>
      sdpa(
        Tensor.ones([1, 1, 1, 1], { dtype: 'u32' }),
        Tensor.ones([1, 1, 1, 1], { dtype: 'u32' }),
        Tensor.ones([1, 1, 1, 1], { dtype: 'u32' }),
      ),
    DTypeError,
    'scaledDotProductAttention',
    'u32',
  );
});

test.run();
