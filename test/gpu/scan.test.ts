// cumsum on the GPU (hip-src/scan.hip: a block a row, walked in chunks of the block's threads x
// 16 elements) against the CPU reference: rows shorter than a thread's share, partial and whole
// chunks, several chunks, rows of whole 16-byte vectors and not, every dim, every float dtype
// and layout; integer dtypes rejected alike.
import { gpuSuite, checkOp, LAYOUTS, FLOAT_DTYPES, INT_DTYPES } from './harness.ts';
import * as assert from 'uvu/assert';
import { Tensor, type DType } from '../../src/index.ts';
import { randT } from '../helpers.ts';

const s = gpuSuite('gpu/scan');

const CASES: readonly { shape: number[]; dim: number; layouts?: boolean }[] = [
  { shape: [3, 5], dim: 1, layouts: true },
  { shape: [6, 4, 3], dim: 0, layouts: true },
  { shape: [2, 256], dim: 1, layouts: true },
  { shape: [3, 257], dim: -1, layouts: true },
  { shape: [1000, 3], dim: 0 },
  { shape: [2, 70000], dim: 1 },
  // a chunk of 256 threads x 16 is 4096: exactly one, one and a bit, several (16-byte vectors
  // for every dtype: 4096 and 12288 are multiples of 8)
  { shape: [5, 4096], dim: 1, layouts: true },
  { shape: [3, 4100], dim: 1, layouts: true },
  { shape: [2, 12288], dim: -1 },
  { shape: [300, 48], dim: 1, layouts: true },
];

s.opTest(
  'cumsum',
  async () => {
    for (const c of CASES) {
      await checkOp(
        'cumsum',
        FLOAT_DTYPES,
        c.layouts ? LAYOUTS : ['contiguous'],
        (d: DType) => [randT(c.shape, d, 0, 1)],
        ([x]) => x!.cumsum(c.dim),
        { variant: `[${c.shape.join(', ')}] dim ${c.dim}`, tol: { f32: 2e-6, f16: 4e-3, bf16: 2e-2 } },
      );
    }
    await checkOp(
      'cumsum',
      INT_DTYPES,
      ['contiguous'],
      (d) => [Tensor.ones([3, 4], { dtype: d })],
      ([x]) => x!.cumsum(1),
      { variant: 'integer dtypes (rejected)' },
    );
  },
  'cumsum: block sizes, recursion, dims, every float dtype and layout',
);

s.test('cumsum: probabilities reach 1 at the end of a 128k row', async (dev) => {
  const p = randT([2, 131072], 'f32', 0, 1, dev).softmax(-1);
  const last = await p.cumsum(-1).narrow(1, 131071, 1).toArray();
  for (const x of last) assert.ok(Math.abs(Number(x) - 1) < 1e-4, `last prefix sum ${x}`);
});

s.run();
