// scaledDotProductAttention's masking options on the CPU reference: causal alignment top-left
// and bottom-right, sliding windows, u8 and additive masks (broadcast), rows that see no key,
// NaN propagation, and the errors. The expected values come from a grid reference written
// independently of src: an explicit visibility predicate and bias per (batch, head, i, j).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { Tensor, type DType } from '../../src/index.ts';
import { DTypeError, ShapeError, TensorError } from '../../src/core/errors.ts';
import { assertClose, nums, randT, throwsWith } from '../helpers.ts';
import { gridRef } from '../attention-ref.ts';

const sdpa = Tensor.scaledDotProductAttention;
const TOLS: Record<string, number> = { f64: 1e-12, f32: 2e-6, f16: 3e-3, bf16: 2e-2 };

const FLOATS: DType[] = ['f32', 'f64', 'f16', 'bf16'];
const qkv = (d: DType, tq: number, tk: number, hq = 4, hkv = 2, b = 2, hd = 8) =>
  [randT([b, hq, tq, hd], d), randT([b, hkv, tk, hd], d), randT([b, hkv, tk, hd + 2], d)] as const;

test('attention: bottom-right causal (tq < tk, tq = tk, tq > tk) against the grid', () => {
  for (const d of FLOATS) {
    for (const [tq, tk] of [
      [3, 7],
      [5, 5],
      [1, 9],
      [6, 3],
    ] as const) {
      const [q, k, v] = qkv(d, tq, tk);
      const got = nums(sdpa(q, k, v, { causal: 'bottom-right' }));
      assertClose(
        got,
        gridRef(q, k, v, (_b, _h, i, j) => j <= i + tk - tq),
        TOLS[d],
        TOLS[d],
        `${d} ${tq}x${tk}`,
      );
      // the first tq - tk queries see no key: zeros, not NaN
      if (tq > tk)
        assert.ok(
          got.slice(0, (tq - tk) * 10).every((x) => x === 0),
          `${d}: rows with no key are zero`,
        );
    }
  }
});

test("attention: 'top-left' is true, and equals bottom-right when tq = tk", () => {
  const [q, k, v] = qkv('f64', 4, 6);
  assert.equal(nums(sdpa(q, k, v, { causal: 'top-left' })), nums(sdpa(q, k, v, { causal: true })));
  const [q2, k2, v2] = qkv('f64', 5, 5);
  assert.equal(nums(sdpa(q2, k2, v2, { causal: 'bottom-right' })), nums(sdpa(q2, k2, v2, { causal: true })));
});

test('attention: sliding window, both alignments', () => {
  for (const d of FLOATS) {
    for (const [tq, tk, w] of [
      [6, 6, 2],
      [3, 8, 3],
      [8, 8, 1],
      [4, 10, 20],
    ] as const) {
      const [q, k, v] = qkv(d, tq, tk);
      for (const causal of ['top-left', 'bottom-right'] as const) {
        const diag = causal === 'top-left' ? 0 : tk - tq;
        const got = nums(sdpa(q, k, v, { causal, window: w }));
        assertClose(
          got,
          gridRef(q, k, v, (_b, _h, i, j) => j <= i + diag && j > i + diag - w),
          TOLS[d],
          TOLS[d],
          `${d} ${causal} ${tq}x${tk} w${w}`,
        );
      }
    }
  }
});

test('attention: u8 masks broadcast from [b, 1, 1, tk] (left padding) and [tq, tk]; with causal', () => {
  for (const d of FLOATS) {
    const tq = 5,
      tk = 5,
      pad = [2, 0];
    const [q, k, v] = qkv(d, tq, tk);
    const keyMask = Tensor.from(
      pad.flatMap((p) => Array.from({ length: tk }, (_, j) => (j >= p ? 1 : 0))),
      { dtype: 'u8', shape: [2, 1, 1, tk] },
    );
    const got = nums(sdpa(q, k, v, { causal: 'bottom-right', mask: keyMask }));
    assertClose(
      got,
      gridRef(q, k, v, (b, _h, i, j) => j <= i && j >= pad[b]!),
      TOLS[d],
      TOLS[d],
      `${d} left padding`,
    );
    assert.ok(
      got.every((x) => Number.isFinite(x)),
      `${d}: padded query rows are finite`,
    );
    const pattern = Tensor.from(
      Array.from({ length: tq * tk }, (_, n) => ((n * 7) % 3 === 0 ? 0 : 1)),
      { dtype: 'u8', shape: [tq, tk] },
    );
    assertClose(
      nums(sdpa(q, k, v, { mask: pattern })),
      gridRef(q, k, v, (_b, _h, i, j) => ((i * tk + j) * 7) % 3 !== 0),
      TOLS[d],
      TOLS[d],
      `${d} [tq, tk] mask`,
    );
  }
});

test('attention: additive masks (finite biases and -Infinity) and their u8 twins', () => {
  for (const d of FLOATS) {
    const [q, k, v] = qkv(d, 3, 6);
    const biasT = randT([1, 4, 3, 6], d, -1, 1);
    const bv = nums(biasT);
    const got = nums(sdpa(q, k, v, { mask: biasT }));
    const tol = d === 'f16' || d === 'bf16' ? TOLS[d]! * 2 : TOLS[d]!;
    assertClose(
      got,
      gridRef(
        q,
        k,
        v,
        () => true,
        (_b, h, i, j) => bv[(h * 3 + i) * 6 + j]!,
      ),
      tol,
      tol,
      `${d} bias`,
    );
    const keep = [1, 0, 1, 1, 0, 1];
    const u8 = Tensor.from(keep, { dtype: 'u8', shape: [6] });
    const add = Tensor.from(
      keep.map((x) => (x ? 0 : -Infinity)),
      { dtype: d, shape: [6] },
    );
    assert.equal(
      nums(sdpa(q, k, v, { mask: add })),
      nums(sdpa(q, k, v, { mask: u8 })),
      `${d}: -Infinity bias = u8 mask`,
    );
  }
});

test('attention: a fully masked row is zeros; NaN in q still shows', () => {
  const [q, k, v] = qkv('f32', 2, 3, 1, 1, 1);
  const none = Tensor.zeros([1, 1, 2, 3], { dtype: 'u8' });
  assert.ok(nums(sdpa(q, k, v, { mask: none })).every((x) => x === 0));
  const qn = Tensor.from([NaN, ...nums(q).slice(1)], { shape: q.shape });
  const mask = Tensor.ones([3], { dtype: 'u8' });
  const out = nums(sdpa(qn, k, v, { mask }));
  assert.ok(
    out.slice(0, 10).every((x) => Number.isNaN(x)),
    'the NaN query row is NaN',
  );
  assert.ok(
    out.slice(10).every((x) => Number.isFinite(x)),
    'the other row is finite',
  );
});

test('attention: masking errors', () => {
  const [q, k, v] = qkv('f32', 3, 4);
  throwsWith(
    () => sdpa(q, k, v, { causal: 'left' as never }),
    TensorError,
    'scaledDotProductAttention',
    'causal',
    'bottom-right',
  );
  throwsWith(() => sdpa(q, k, v, { window: 2 }), TensorError, 'scaledDotProductAttention', 'window', 'causal');
  throwsWith(
    () => sdpa(q, k, v, { causal: true, window: 0 }),
    RangeError,
    'scaledDotProductAttention',
    'window',
    'positive',
  );
  throwsWith(() => sdpa(q, k, v, { causal: true, window: 1.5 }), RangeError, 'window');
  throwsWith(
    () => sdpa(q, k, v, { mask: Tensor.ones([3, 5], { dtype: 'u8' }) }),
    ShapeError,
    'scaledDotProductAttention',
    'mask [3, 5] u8',
    '[2, 4, 3, 4]',
  );
  throwsWith(
    () => sdpa(q, k, v, { mask: Tensor.ones([2, 2, 4, 3, 4], { dtype: 'u8' }) }),
    ShapeError,
    'mask',
    'broadcast',
  );
  throwsWith(
    () => sdpa(q, k, v, { mask: Tensor.ones([3, 4], { dtype: 'f64' }) }),
    DTypeError,
    'scaledDotProductAttention',
    'mask [3, 4] f64',
    'u8',
  );
  throwsWith(() => sdpa(q, k, v, { mask: Tensor.ones([3, 4], { dtype: 'u32' }) }), DTypeError, 'mask');
  const m = Tensor.ones([4], { dtype: 'u8' });
  m.dispose();
  throwsWith(() => sdpa(q, k, v, { mask: m }), Error, 'dispose');
});

test.run();
