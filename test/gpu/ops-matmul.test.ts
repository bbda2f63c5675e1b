// matmul on the GPU (rocBLAS / cuBLAS) against the CPU reference: plain, batched, broadcast
// batch dims, transposed operands (as views: the GPU path maps them onto BLAS transposes),
// vectors, and operands whose strides BLAS cannot take directly (broadcast rows), in every
// float dtype and every layout.
import { gpuSuite, checkOp, LAYOUTS, FLOAT_DTYPES, INT_DTYPES } from './harness.ts';
import { type DType } from '../../src/index.ts';
import { randT } from '../helpers.ts';

const s = gpuSuite('gpu/ops-matmul');
const r = (shape: number[], d: DType) => randT(shape, d, -1, 1);

/** [variant, a shape, b shape, how b is used] */
const CASES: readonly [string, number[], number[], 'b' | 'bT' | 'aT'][] = [
  ['[33, 29] x [29, 47]', [33, 29], [29, 47], 'b'],
  ['batched [3, 17, 29] x [3, 29, 23]', [3, 17, 29], [3, 29, 23], 'b'],
  ['broadcast batch [2, 1, 17, 29] x [3, 29, 23]', [2, 1, 17, 29], [3, 29, 23], 'b'],
  ['batch x plain [3, 17, 29] x [29, 23]', [3, 17, 29], [29, 23], 'b'],
  ['plain x batch [17, 29] x [4, 29, 23]', [17, 29], [4, 29, 23], 'b'],
  ['a x b.T, b [47, 29]', [33, 29], [47, 29], 'bT'],
  ['a.T x b, a [29, 33]', [29, 33], [29, 47], 'aT'],
  ['batched a x b.T, b [3, 23, 29]', [3, 17, 29], [3, 23, 29], 'bT'],
  ['vector x matrix [29] x [29, 47]', [29], [29, 47], 'b'],
  ['matrix x vector [33, 29] x [29]', [33, 29], [29], 'b'],
  ['vector . vector [29] x [29]', [29], [29], 'b'],
  ['k = 1', [33, 1], [1, 47], 'b'],
  ['m = 1, n = 1', [1, 64], [64, 1], 'b'],
  // one row of x against a weight's transpose goes to the GEMV kernels (gemv-fused.hip): 16-byte
  // loads where k and the layouts allow (the offset and narrowed layouts do not), else scalar
  ['GEMV [1, 256] x W.T, W [300, 256]', [1, 256], [300, 256], 'bT'],
  ['GEMV vector [256] x W.T, W [96, 256]', [256], [96, 256], 'bT'],
  ['GEMV batched [1, 1, 264] x W.T, W [77, 264]', [1, 1, 264], [77, 264], 'bT'],
  ['GEMV odd k [1, 37] x W.T, W [50, 37]', [1, 37], [50, 37], 'bT'],
  ['GEMV long k [1, 14344] x W.T, W [40, 14344]', [1, 14344], [40, 14344], 'bT'],
  ['GEMV n = 1 [1, 64] x W.T, W [1, 64]', [1, 64], [1, 64], 'bT'],
  ['2 rows (BLAS) [2, 64] x W.T, W [33, 64]', [2, 64], [33, 64], 'bT'],
];

/** the product has one element ([1, k] x [k, 1], [k] x [k], [1, k] x [1, k]^T) */
function single(sa: number[], sb: number[], how: 'b' | 'bT' | 'aT'): boolean {
  const rows = sa.length === 1 ? 1 : how === 'aT' ? sa.at(-1)! : sa.at(-2)!;
  const cols = sb.length === 1 ? 1 : how === 'bT' ? sb.at(-2)! : sb.at(-1)!;
  return rows === 1 && cols === 1 && sa.length <= 2 && sb.length <= 2;
}

s.opTest(
  'matmul',
  async () => {
    for (const [variant, sa, sb, how] of CASES) {
      await checkOp(
        'matmul',
        FLOAT_DTYPES,
        LAYOUTS,
        (d) => [r(sa, d), r(sb, d)],
        ([a, b]) => {
          if (how === 'bT') return a!.matmul(b!.transpose(-2, -1));
          if (how === 'aT') return a!.transpose(-2, -1).matmul(b!);
          return a!.matmul(b!);
        },
        {
          variant,
          // one output element is one dot product: where its terms cancel, f32 rounding in the
          // sum is a larger share of the result than any norm over many outputs would show
          ...(single(sa, sb, how) ? { tol: { f32: 1e-4 } } : {}),
        },
      );
    }
  },
  'matmul: shapes, batches, transposes, vectors',
);

s.opTest(
  'matmul',
  async () => {
    // long inner dim: accumulation error stays within the dtype's tolerance
    await checkOp(
      'matmul',
      FLOAT_DTYPES,
      ['contiguous', 'transposed'],
      (d) => [r([256, 1024], d), r([1024, 128], d)],
      ([a, b]) => a!.matmul(b!),
      { variant: '[256, 1024] x [1024, 128]' },
    );
    await checkOp(
      'matmul',
      ['f32', 'bf16'],
      ['contiguous'],
      (d) => [r([8, 192, 64], d), r([8, 64, 192], d)],
      ([a, b]) => a!.matmul(b!),
      { variant: 'batched [8, 192, 64] x [8, 64, 192]' },
    );
  },
  'matmul: larger problems',
);

s.opTest(
  'matmul',
  async () => {
    // integer matmul is rejected on both devices with the same error class
    await checkOp(
      'matmul',
      INT_DTYPES,
      ['contiguous'],
      (d) => [r([4, 5], 'f32').toDtype(d), r([5, 3], 'f32').toDtype(d)],
      ([a, b]) => a!.matmul(b!),
      { variant: 'integer dtypes (rejected)' },
    );
  },
  'matmul: integer dtypes are rejected alike',
);

s.run();
