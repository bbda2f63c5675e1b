// localResponseNorm on the GPU against the CPU reference: every float dtype and input layout
// (outputs poisoned); odd windows in f32 / f16 / bf16 through MIOpen / cuDNN, even windows and f64
// through the form composed from other ops; windows wider than the channels, ranks 3 to 5; its
// backward op and the gradient through backward(); and the sizes, k and beta the GPU refuses,
// refused by name.
import * as assert from 'uvu/assert';
import { gpuSuite, checkOp, LAYOUTS, FLOAT_DTYPES, thrown } from './harness.ts';
import { Tensor, type DType } from '../../src/index.ts';
import { localResponseNorm, localResponseNormBackward } from '../../src/ops/lrn.ts';
import { randT } from '../helpers.ts';

const s = gpuSuite('gpu/lrn');

// [variant, shape, size, alpha, beta, k]
const CASES: readonly [string, number[], number, number, number, number][] = [
  ['size 5, defaults', [2, 8, 5, 6], 5, 1e-4, 0.75, 1],
  ['size 3, large alpha', [2, 7, 4, 3], 3, 2, 0.75, 1],
  ['size 4 (even: composed)', [3, 6, 5, 2], 4, 1.5, 0.9, 0.8],
  ['size 2 (even: composed)', [2, 5, 7], 2, 1, 1, 1],
  ['size 1', [2, 4, 3, 3], 1, 0.7, 0.5, 1.2],
  ['size 16, wider than c', [2, 5, 3, 4], 16, 1, 0.6, 1],
  ['size 15, 40 channels', [2, 40, 3, 3], 15, 1, 0.75, 2],
  ['rank 5', [2, 6, 2, 3, 2], 3, 1, 0.75, 1],
];
// the libraries compute in the data's dtype; f16 over a window of squares rounds a few times
const TOL: Partial<Record<DType, number>> = { f32: 1e-5, f16: 1e-2, bf16: 1e-2 };

s.opTest('localResponseNorm', async () => {
  for (const [variant, shape, size, alpha, beta, k] of CASES)
    await checkOp(
      'localResponseNorm',
      FLOAT_DTYPES,
      LAYOUTS,
      (d) => [randT(shape, d, -3, 3)],
      ([x]) => Tensor.wrap(localResponseNorm(x!, size, { alpha, beta, k })),
      { variant, tol: TOL },
    );
});

s.opTest('localResponseNormBackward', async () => {
  for (const [variant, shape, size, alpha, beta, k] of CASES) {
    const p = { size, alpha, beta, k };
    // x and dy in every layout; y from x on each device, as autograd saves it
    await checkOp(
      'localResponseNormBackward',
      FLOAT_DTYPES,
      LAYOUTS,
      (d) => [randT(shape, d, -3, 3), randT(shape, d, -1, 1)],
      ([x, g]) => {
        const y = localResponseNorm(x!, size, p);
        try {
          return Tensor.wrap(localResponseNormBackward(x!, y, g!, p));
        } finally {
          y.dispose();
        }
      },
      { variant, tol: { f32: 1e-4, f16: 2e-2, bf16: 3e-2 } },
    );
  }
});

s.test('localResponseNorm: gradients through backward() against the CPU', async () => {
  for (const [variant, shape, size, alpha, beta, k] of CASES.slice(0, 4))
    await checkOp(
      'localResponseNorm',
      FLOAT_DTYPES,
      LAYOUTS,
      (d) => [randT(shape, d, -3, 3), randT(shape, d, -1, 1)],
      ([x, g]) => {
        x!.requiresGrad = true;
        Tensor.wrap(localResponseNorm(x!, size, { alpha, beta, k })).backward(g!);
        return x!.grad!;
      },
      { variant: `grad ${variant}`, tol: { f32: 1e-4, f16: 2e-2, bf16: 3e-2 }, fixed: [1] },
    );
});

s.test("localResponseNorm: sizes, k and beta outside the libraries' range are refused by name", (dev) => {
  // the CPU takes any window (the harness's CPU self-check runs this file too)
  if (dev.isCpu) return;
  const x = randT([1, 20, 3], 'f32').to(dev);
  const e1 = thrown(() => localResponseNorm(x, 17), 'size 17');
  assert.ok(e1 instanceof RangeError && /localResponseNorm: size 17 is outside 1\.\.16/.test(e1.message), e1.message);
  const e2 = thrown(() => localResponseNorm(x, 3, { k: 0 }), 'k 0');
  assert.ok(e2 instanceof RangeError && /k 0 is below/.test(e2.message), e2.message);
  const e3 = thrown(() => localResponseNorm(x, 3, { beta: 0 }), 'beta 0');
  assert.ok(e3 instanceof RangeError && /beta 0 is below/.test(e3.message), e3.message);
  x.dispose();
});

s.run();
