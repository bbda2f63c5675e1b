// localResponseNorm on the CPU: against the definition written out in f64 (PyTorch's: squares
// zero-padded by floor(size / 2) before and floor((size - 1) / 2) after the channel, averaged over
// size windows), at every float dtype, several ranks and layouts, even and odd windows, windows
// wider than the channels; its gradient against f64 central finite differences; the form composed
// from other ops that the GPU runs for even windows and f64 (run here on the CPU's ops); the
// module; errors.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { DTypeError, ShapeError, Tensor, TensorError, nn, type DType } from '../../src/index.ts';
import { localResponseNorm, localResponseNormBackward } from '../../src/ops/lrn.ts';
import * as gpuLrn from '../../src/backends/gpu/lrn.ts';
import { lrnBackwardComposed, lrnComposed } from '../../src/ops/lrn-composed.ts';
import { LAYOUTS, assertClose, nums, randT, throwsWith, withLayout } from '../helpers.ts';
import { gradCheck } from '../grad-check.ts';

/** y for x [n, c, ...] as PyTorch computes it: pad the squares, average each size window */
function reference(
  v: readonly number[],
  shape: readonly number[],
  size: number,
  alpha: number,
  beta: number,
  k: number,
) {
  const n = shape[0]!,
    c = shape[1]!;
  const inner = v.length / Math.max(n * c, 1);
  const before = Math.floor(size / 2);
  const out: number[] = new Array(v.length);
  for (let b = 0; b < n; b++)
    for (let i = 0; i < inner; i++) {
      // padded channel p holds channel p - before (zero outside [0, c))
      const sq = (p: number): number => {
        const ch = p - before;
        if (ch < 0 || ch >= c) return 0;
        const a = v[(b * c + ch) * inner + i]!;
        return a * a;
      };
      for (let ch = 0; ch < c; ch++) {
        let s = 0;
        for (let p = ch; p < ch + size; p++) s += sq(p);
        const at = (b * c + ch) * inner + i;
        out[at] = v[at]! / (k + (alpha * s) / size) ** beta;
      }
    }
  return out;
}

const TOLS: Record<string, number> = { f64: 1e-12, f32: 2e-6, f16: 1e-3, bf16: 8e-3 };

test('known values: an even window reaches one channel further back than forward', () => {
  const x = Tensor.from(new Float64Array([1, 2, 3]), { shape: [1, 3, 1] });
  const y = localResponseNorm(x, 2, { alpha: 1, beta: 1, k: 1 });
  // c0: 1 / (1 + 1/2 * 1); c1: 2 / (1 + 1/2 * (1 + 4)); c2: 3 / (1 + 1/2 * (4 + 9))
  assertClose(nums(Tensor.wrap(y)), [1 / 1.5, 2 / 3.5, 3 / 7.5], 1e-15, 0, 'size 2');
  const z = localResponseNorm(x, 3, { alpha: 3, beta: 0.5, k: 2 });
  // windows: {0,1}, {0,1,2}, {1,2}; alpha / size = 1
  assertClose(nums(Tensor.wrap(z)), [1 / Math.sqrt(7), 2 / Math.sqrt(16), 3 / Math.sqrt(15)], 1e-15, 0, 'size 3');
  for (const t of [x, y, z]) t.dispose();
});

test('matches the definition at every float dtype, rank and window', () => {
  const cases: { shape: number[]; size: number; alpha: number; beta: number; k: number }[] = [
    { shape: [2, 7, 3, 4], size: 5, alpha: 1e-4, beta: 0.75, k: 1 },
    { shape: [2, 6, 5], size: 2, alpha: 0.3, beta: 0.6, k: 1.5 },
    { shape: [1, 5, 2, 2, 3], size: 4, alpha: 2, beta: 1.2, k: 0.5 },
    { shape: [3, 3, 4, 2], size: 7, alpha: 1, beta: 0.75, k: 2 },
    { shape: [2, 9, 2, 3], size: 1, alpha: 0.5, beta: 0.5, k: 1 },
    { shape: [2, 4, 3, 3], size: 16, alpha: 0.9, beta: 0.01, k: 1e-5 },
  ];
  for (const dtype of ['f64', 'f32', 'f16', 'bf16'] as DType[])
    for (const cs of cases) {
      const x = randT(cs.shape, dtype);
      const want = reference(nums(x), cs.shape, cs.size, cs.alpha, cs.beta, cs.k);
      const y = Tensor.wrap(localResponseNorm(x, cs.size, cs));
      assert.equal(y.shape, cs.shape);
      assert.is(y.dtype, dtype);
      assertClose(nums(y), want, TOLS[dtype]!, TOLS[dtype]! * 1e-2, `${dtype} ${cs.shape} size ${cs.size}`);
      x.dispose();
      y.dispose();
    }
});

test('every layout gives the contiguous answer', () => {
  for (const kind of LAYOUTS) {
    const t = randT([3, 5, 4, 4], 'f64');
    const { x, ref } = withLayout(t, kind);
    const want = reference(nums(ref), ref.shape, 3, 0.7, 0.8, 1.1);
    const y = Tensor.wrap(localResponseNorm(x, 3, { alpha: 0.7, beta: 0.8, k: 1.1 }));
    assertClose(nums(y), want, 1e-12, 1e-14, kind);
    for (const u of new Set([t, x, ref, y])) u.dispose();
  }
  // channels last in memory: a permuted view
  const base = randT([2, 4, 4, 6], 'f64');
  const x = base.permute([0, 3, 1, 2]);
  const c = x.contiguous();
  const y = Tensor.wrap(localResponseNorm(x, 4, { alpha: 1, beta: 0.75, k: 1 }));
  assertClose(nums(y), reference(nums(c), c.shape, 4, 1, 0.75, 1), 1e-12, 1e-14, 'permuted');
  for (const u of [base, x, c, y]) u.dispose();
});

test('NaN propagates to the channels whose window holds it; empty batches are empty', () => {
  const v = new Float64Array(2 * 5).fill(0.5);
  v[2] = Number.NaN; // batch 0, channel 2
  const x = Tensor.from(v, { shape: [2, 5, 1] });
  const y = nums(Tensor.wrap(localResponseNorm(x, 3)));
  // channels 1..3 of batch 0 see the NaN; channels 0 and 4 and all of batch 1 do not
  assert.equal(
    y.map((a) => Number.isNaN(a)),
    [false, true, true, true, false, false, false, false, false, false],
  );
  const e = Tensor.zeros([0, 3, 4]);
  const ye = Tensor.wrap(localResponseNorm(e, 3));
  assert.equal(ye.shape, [0, 3, 4]);
  for (const t of [x, e, ye]) t.dispose();
});

test('gradient: f64 central finite differences, odd and even windows, non-contiguous', () => {
  gradCheck('lrn size 3', ([x]) => Tensor.wrap(localResponseNorm(x!, 3, { alpha: 0.8, beta: 0.75, k: 1.2 })), [
    [2, 5, 2, 3],
  ]);
  gradCheck('lrn size 4', ([x]) => Tensor.wrap(localResponseNorm(x!, 4, { alpha: 1.5, beta: 1.3, k: 0.7 })), [
    [2, 6, 3],
  ]);
  gradCheck('lrn size 1', ([x]) => Tensor.wrap(localResponseNorm(x!, 1, { alpha: 2, beta: 0.5, k: 1 })), [[1, 3, 4]]);
  gradCheck('lrn size wider than c', ([x]) => Tensor.wrap(localResponseNorm(x!, 9, { alpha: 1, beta: 2, k: 1 })), [
    [2, 3, 2, 2],
  ]);
  gradCheck(
    'lrn transposed input',
    ([x]) => Tensor.wrap(localResponseNorm(x!.transpose(2, 3), 5, { alpha: 1, beta: 0.75, k: 1 })),
    [[2, 6, 3, 4]],
  );
  gradCheck('nn.LocalResponseNorm', ([x]) => new nn.LocalResponseNorm(2, { alpha: 0.5 }).forward(x!), [[3, 4, 2]]);
});

test('the backward op at every dtype equals its f64 answer rounded', () => {
  const shape = [2, 6, 3, 2];
  const x64 = randT(shape, 'f64'),
    g64 = randT(shape, 'f64');
  const p = { size: 4, alpha: 0.9, beta: 0.75, k: 1 };
  const y64 = localResponseNorm(x64, p.size, p);
  const want = nums(Tensor.wrap(localResponseNormBackward(x64, y64, g64, p)));
  for (const dtype of ['f32', 'f16', 'bf16'] as DType[]) {
    const x = x64.toDtype(dtype),
      g = g64.toDtype(dtype);
    const y = localResponseNorm(x, p.size, p);
    const dx = Tensor.wrap(localResponseNormBackward(x, y, g, p));
    assert.is(dx.dtype, dtype);
    // inputs rounded to dtype: the tolerance covers that rounding
    assertClose(nums(dx), want, dtype === 'f32' ? 1e-5 : dtype === 'f16' ? 5e-3 : 4e-2, 2e-2, dtype);
    for (const t of [x, g, y, dx]) t.dispose();
  }
  for (const t of [x64, g64, y64]) t.dispose();
});

test('the composed form equals the reference: every dtype, odd and even windows, views', () => {
  const cases: { shape: number[]; size: number; alpha: number; beta: number; k: number }[] = [
    { shape: [2, 7, 3, 4], size: 4, alpha: 1.3, beta: 0.75, k: 1 },
    { shape: [2, 6, 5], size: 2, alpha: 0.3, beta: 0.6, k: 1.5 },
    { shape: [1, 5, 2, 2, 3], size: 16, alpha: 2, beta: 1.2, k: 0.5 },
    { shape: [3, 4, 2, 2], size: 5, alpha: 1, beta: 0.75, k: 2 },
    { shape: [2, 3, 2], size: 1, alpha: 0.5, beta: 0.5, k: 1 },
  ];
  const tol: Record<string, number> = { f64: 1e-12, f32: 1e-5, f16: 2e-3, bf16: 1.6e-2 };
  for (const dtype of ['f64', 'f32', 'f16', 'bf16'] as DType[])
    for (const cs of cases)
      for (const kind of ['contiguous', 'transposed'] as const) {
        const t = randT(cs.shape, dtype);
        const { x, ref } = withLayout(t, kind);
        const p = { size: cs.size, alpha: cs.alpha, beta: cs.beta, k: cs.k };
        const what = `${dtype} ${kind} ${cs.shape} size ${cs.size}`;
        const y = Tensor.wrap(lrnComposed(x, p));
        assert.is(y.dtype, dtype);
        assertClose(
          nums(y),
          reference(nums(ref), cs.shape, cs.size, cs.alpha, cs.beta, cs.k),
          tol[dtype]!,
          tol[dtype]! / 10,
          what,
        );
        // the gradient: against the CPU's backward op (itself checked by finite differences above)
        const g = randT(cs.shape, dtype);
        const dx = Tensor.wrap(lrnBackwardComposed(x, g, p));
        const y64 = localResponseNorm(x.toDtype('f64'), p.size, p);
        const want = Tensor.wrap(localResponseNormBackward(x.toDtype('f64'), y64, g.toDtype('f64'), p));
        assert.is(dx.dtype, dtype);
        assertClose(nums(dx), nums(want), tol[dtype]! * 4, tol[dtype]!, `${what} backward`);
        for (const u of new Set([t, x, ref, y, g, dx, y64, want])) u.dispose();
      }
});

test('nn.LocalResponseNorm: PyTorch defaults, equal to the op', () => {
  const m = new nn.LocalResponseNorm(5);
  assert.equal([m.size, m.alpha, m.beta, m.k], [5, 1e-4, 0.75, 1]);
  const x = randT([2, 8, 3, 3], 'f32', -20, 20);
  const a = m.forward(x),
    b = Tensor.wrap(localResponseNorm(x, 5));
  assert.equal(nums(a), nums(b));
  assert.equal(m.parameters().length, 0);
  for (const t of [x, a, b]) t.dispose();
  throwsWith(() => new nn.LocalResponseNorm(0), RangeError, 'LocalResponseNorm', 'size');
});

test('errors name the op, the shapes and the dtypes', () => {
  const x2 = Tensor.zeros([2, 3]);
  throwsWith(() => localResponseNorm(x2, 3), ShapeError, 'localResponseNorm', '[2, 3]');
  const x = Tensor.zeros([1, 3, 2]);
  throwsWith(() => localResponseNorm(x, 0), RangeError, 'localResponseNorm', 'size', '0');
  throwsWith(() => localResponseNorm(x, 2.5), RangeError, 'localResponseNorm', 'size');
  throwsWith(() => localResponseNorm(x, 3, { alpha: Number.NaN }), RangeError, 'localResponseNorm', 'alpha');
  throwsWith(() => localResponseNorm(x, 3, { k: Number.POSITIVE_INFINITY }), RangeError, 'localResponseNorm', 'k');
  throwsWith(() => localResponseNorm(x, 3, null as never), TensorError, 'localResponseNorm', 'options');
  const xi = Tensor.zeros([1, 3, 2], { dtype: 'u32' });
  throwsWith(() => localResponseNorm(xi, 3), DTypeError, 'localResponseNorm', 'u32');
  const y = localResponseNorm(x, 3);
  const g16 = Tensor.zeros([1, 3, 2], { dtype: 'f16' });
  throwsWith(
    () => localResponseNormBackward(x, y, g16, { size: 3, alpha: 1e-4, beta: 0.75, k: 1 }),
    ShapeError,
    'localResponseNormBackward',
    'dy',
    'f16',
  );
  for (const t of [x2, x, xi, y, g16]) t.dispose();
});

test("the GPU backend refuses what MIOpen's / cuDNN's LRN does not take, before any device work", () => {
  const x = Tensor.zeros([1, 20, 2]);
  const p = { size: 17, alpha: 1e-4, beta: 0.75, k: 1 };
  throwsWith(() => gpuLrn.localResponseNorm(x, p), RangeError, 'localResponseNorm', 'size 17', '1..16');
  throwsWith(() => gpuLrn.localResponseNorm(x, { ...p, size: 5, k: 1e-6 }), RangeError, 'k 0.000001', 'k >= ');
  throwsWith(
    () => gpuLrn.localResponseNormBackward(x, x, x, { ...p, size: 5, beta: 0.001 }),
    RangeError,
    'localResponseNormBackward',
    'beta 0.001',
  );
  assert.equal(gpuLrn.GPU_LRN_LIMITS, { minSize: 1, maxSize: 16, minK: 1e-5, minBeta: 0.01 });
  // the library runs odd windows in f32, f16 and bf16; the rest is composed
  const base = { alpha: 1e-4, beta: 0.75, k: 1 };
  const x64 = Tensor.zeros([1, 4, 2], { dtype: 'f64' });
  assert.equal(
    [
      gpuLrn.libraryTakes(x, { ...base, size: 5 }),
      gpuLrn.libraryTakes(x, { ...base, size: 4 }),
      gpuLrn.libraryTakes(x64, { ...base, size: 5 }),
    ],
    [true, false, false],
  );
  throwsWith(() => gpuLrn.localResponseNorm(x, { ...base, size: 4 }), TensorError, 'composed');
  x64.dispose();
  x.dispose();
});

test.run();
