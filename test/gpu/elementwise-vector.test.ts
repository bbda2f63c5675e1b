// The contiguous elementwise loops of hip-src/elementwise.h against the CPU reference where
// they are easiest to get wrong: mixed-width operands (where's u8 condition, compares, casts)
// that take N-element vectors of different byte widths, sizes that end in a partial tile and a
// scalar tail, several blocks, and offset views that must fall back to the scalar loop.
import { gpuSuite, checkOp, FLOAT_DTYPES, ALL_DTYPES, INT_DTYPES, type LayoutKind } from './harness.ts';
import { Tensor, BINARY_OPS, type DType } from '../../src/index.ts';
import { randT, randInts } from '../helpers.ts';

const s = gpuSuite('gpu/elementwise-vector');
// 37: one partial tile; 70001: several blocks, a partial last tile and a tail for every N
const SIZES: readonly number[][] = [[37], [70001]];
const LAYOUTS: readonly LayoutKind[] = ['contiguous', 'offset'];
const isInt = (d: DType) => INT_DTYPES.includes(d);
const values = (shape: number[], d: DType): Tensor =>
  isInt(d) ? randInts(shape, d === 'u8' ? 200 : 100000, d) : randT(shape, d, -4, 4);

s.opTest(
  'where',
  async () => {
    for (const shape of SIZES) {
      await checkOp(
        'where',
        ALL_DTYPES,
        LAYOUTS,
        (d) => [randInts(shape, 2, 'u8'), values(shape, d), values(shape, d)],
        ([c, a, b]) => Tensor.where(c!, a!, b!),
        { variant: `[${shape.join(', ')}]`, tol: 0 },
      );
    }
  },
  'where: u8 condition beside wider data',
);

s.opTest(
  'lt',
  async () => {
    for (const shape of SIZES) {
      await checkOp(
        'lt',
        ALL_DTYPES,
        LAYOUTS,
        (d) => [values(shape, d), values(shape, d)],
        ([a, b]) => a!.lt(b!),
        { variant: `[${shape.join(', ')}]` },
      );
    }
  },
  'lt: u8 output beside wider inputs',
);

const CASTS: readonly [DType, DType][] = [
  ['f32', 'bf16'],
  ['bf16', 'f32'],
  ['f32', 'f16'],
  ['f64', 'u8'],
  ['u8', 'f64'],
  ['i64', 'bf16'],
  ['u32', 'f64'],
  ['f64', 'f32'],
];
for (const [from, to] of CASTS) {
  s.opTest(
    'cast',
    async () => {
      for (const shape of SIZES) {
        await checkOp(
          'cast',
          [from],
          LAYOUTS,
          (d) => [values(shape, d)],
          ([x]) => x!.toDtype(to),
          { variant: `to ${to} [${shape.join(', ')}]`, tol: 0 },
        );
      }
    },
    `cast ${from} -> ${to}: mixed widths`,
  );
}

s.opTest(
  'add',
  async () => {
    for (const shape of SIZES) {
      await checkOp(
        'add',
        ALL_DTYPES,
        LAYOUTS,
        (d) => [values(shape, d), values(shape, d)],
        ([a, b]) => a!.add(b!),
        { variant: `[${shape.join(', ')}]` },
      );
    }
  },
  'add: tiles and tails for every width',
);

s.opTest(
  'gelu',
  async () => {
    // wide range: large negative inputs, where 0.5x(1 + tanh(u)) cancels, and saturation
    for (const shape of SIZES) {
      await checkOp(
        'gelu',
        FLOAT_DTYPES,
        LAYOUTS,
        (d) => [randT(shape, d, -12, 12)],
        ([x]) => x!.gelu(),
        { variant: `[-12, 12] [${shape.join(', ')}]` },
      );
    }
  },
  'gelu: exp form over a wide range',
);

s.opTest(
  'exp',
  async () => {
    for (const shape of SIZES) {
      await checkOp(
        'exp',
        FLOAT_DTYPES,
        LAYOUTS,
        (d) => [randT(shape, d)],
        ([x]) => x!.exp(),
        { variant: `[${shape.join(', ')}]` },
      );
    }
  },
  'exp: unary tiles for every width',
);

// Broadcast rows (binary.hip's _rows kernels): the output merged to [R1, R0, C] with each input
// along C or one value a row; C a whole number of vectors for f32 and f64 but not always for
// the 16-bit types (60), so near misses take the strided kernel beside them
const ROWS: readonly [number[], number[]][] = [
  [[37, 64], [64]],
  [
    [37, 64],
    [37, 1],
  ],
  [[37, 60], [60]],
  [
    [3, 5, 40],
    [3, 1, 40],
  ],
  [
    [3, 5, 40],
    [5, 1],
  ],
  [
    [4, 1, 24],
    [1, 6, 24],
  ],
  [[2, 3, 80], [80]],
];
const nonzero = (shape: number[], d: DType): Tensor => randT(shape, d, 0.5, 4);
for (const op of BINARY_OPS) {
  s.opTest(
    op,
    async () => {
      for (const [sa, sb] of ROWS) {
        await checkOp(
          op,
          FLOAT_DTYPES,
          LAYOUTS,
          (d) => [values(sa, d), op === 'div' ? nonzero(sb, d) : values(sb, d)],
          ([a, b]) => a!.binary(op, b!),
          { variant: `[${sa.join(', ')}] with [${sb.join(', ')}]` },
        );
        await checkOp(
          op,
          FLOAT_DTYPES,
          LAYOUTS,
          (d) => [values(sb, d), op === 'div' ? nonzero(sa, d) : values(sa, d)],
          ([b, a]) => b!.binary(op, a!),
          { variant: `[${sb.join(', ')}] with [${sa.join(', ')}]` },
        );
      }
      await checkOp(
        op,
        FLOAT_DTYPES,
        LAYOUTS,
        (d) => [values([37, 64], d)],
        ([a]) => a!.binary(op, 1.75),
        { variant: '[37, 64] with a number' },
      );
    },
    `binary ${op}: broadcast rows`,
  );
}

s.run();
