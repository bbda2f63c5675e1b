// The self-test of `npm start` / `rocm-tensor selftest`: every op on the chosen device against
// the CPU reference on fresh random data, one row per (op, dtype). On the CPU itself the
// reference is the same op computed in f64, so the row shows the dtype's own rounding error.
// An op with no path on the device yet is "not on this device yet", not a failure.
import { Tensor } from '../tensor/tensor.ts';
import { Device } from '../device/device.ts';
import { DTYPES, FLOAT_DTYPES, type DType } from '../core/dtype.ts';
import { NotOnDeviceError } from '../core/errors.ts';
import { UNARY_OPS, BINARY_OPS, CMP_OPS } from '../core/op-types.ts';

export type Status = 'pass' | 'FAIL' | 'not on this device yet' | 'error';
export interface Row {
  op: string;
  dtype: DType;
  maxErr: number;
  status: Status;
  detail?: string;
}

interface Case {
  op: string;
  dtypes: readonly DType[];
  /** inputs on the CPU, in dtype `d` */
  make(d: DType, seed: number): Tensor[];
  run(xs: Tensor[]): Tensor;
}

const F: readonly DType[] = FLOAT_DTYPES;
const ALL: readonly DType[] = DTYPES;
const TOL: Record<DType, number> = { f64: 1e-10, f32: 1e-4, f16: 1e-2, bf16: 3e-2, u8: 0, u32: 0, i64: 0 };

const rnd = (shape: number[], d: DType, seed: number, lo = -2, hi = 2): Tensor => {
  if (d === 'u8' || d === 'u32' || d === 'i64')
    return Tensor.rand(shape, { seed, dtype: 'f64' }).affine(50, 0).floor().toDtype(d);
  return Tensor.rand(shape, { seed, dtype: 'f64' })
    .affine(hi - lo, lo)
    .toDtype(d);
};
const ids = (n: number, hi: number, seed: number): Tensor =>
  Tensor.rand([n], { seed, dtype: 'f64' }).affine(hi, 0).floor().toDtype('u32');

const positive = new Set(['log', 'sqrt', 'recip']);
export const CASES: Case[] = [
  ...UNARY_OPS.map(
    (op): Case => ({
      op,
      dtypes: F,
      make: (d, s) => [positive.has(op) ? rnd([64, 33], d, s, 0.1, 3) : rnd([64, 33], d, s)],
      run: ([x]) => x!.unary(op),
    }),
  ),
  { op: 'affine', dtypes: F, make: (d, s) => [rnd([64, 33], d, s)], run: ([x]) => x!.affine(1.5, -0.25) },
  { op: 'powf', dtypes: F, make: (d, s) => [rnd([64, 33], d, s, 0.1, 2)], run: ([x]) => x!.powf(2.5) },
  { op: 'elu', dtypes: F, make: (d, s) => [rnd([64, 33], d, s)], run: ([x]) => x!.elu(0.7) },
  { op: 'clamp', dtypes: F, make: (d, s) => [rnd([64, 33], d, s)], run: ([x]) => x!.clamp(-0.5, 0.75) },
  { op: 'leakyRelu', dtypes: F, make: (d, s) => [rnd([64, 33], d, s)], run: ([x]) => x!.leakyRelu(0.1) },
  ...BINARY_OPS.map(
    (op): Case => ({
      op,
      dtypes: op === 'div' ? F : ALL,
      make: (d, s) => [rnd([16, 1, 33], d, s, 0.5, 2), rnd([4, 33], d, s + 1, 0.5, 2)],
      run: ([a, b]) => a!.binary(op, b!),
    }),
  ),
  ...CMP_OPS.map(
    (op): Case => ({
      op,
      dtypes: ALL,
      make: (d, s) => [rnd([8, 33], d, s), rnd([33], d, s + 1)],
      run: ([a, b]) => a!.compare(op, b!),
    }),
  ),
  {
    op: 'where',
    dtypes: ALL,
    make: (d, s) => [rnd([8, 33], 'f32', s).gt(0), rnd([8, 33], d, s + 1), rnd([33], d, s + 2)],
    run: ([c, a, b]) => Tensor.where(c!, a!, b!),
  },
  {
    op: 'toDtype(f16)',
    dtypes: ['f32', 'f64', 'bf16'],
    make: (d, s) => [rnd([64, 33], d, s)],
    run: ([x]) => x!.toDtype('f16'),
  },
  {
    op: 'toDtype(f32)',
    dtypes: ['f16', 'bf16', 'u8', 'i64'],
    make: (d, s) => [rnd([64, 33], d, s)],
    run: ([x]) => x!.toDtype('f32'),
  },
  { op: 'contiguous', dtypes: ALL, make: (d, s) => [rnd([33, 64], d, s)], run: ([x]) => x!.T.contiguous() },
  {
    op: 'cat',
    dtypes: ALL,
    make: (d, s) => [rnd([5, 7], d, s), rnd([5, 3], d, s + 1)],
    run: ([a, b]) => Tensor.cat([a!, b!], 1),
  },
  { op: 'sum', dtypes: ALL, make: (d, s) => [rnd([16, 65], d, s)], run: ([x]) => x!.sum(1) },
  { op: 'max', dtypes: ALL, make: (d, s) => [rnd([16, 65], d, s)], run: ([x]) => x!.max(0) },
  { op: 'mean', dtypes: F, make: (d, s) => [rnd([16, 65], d, s)], run: ([x]) => x!.mean([0, 1]) },
  { op: 'argmax', dtypes: F, make: (d, s) => [rnd([16, 65], d, s)], run: ([x]) => x!.argmax(1) },
  { op: 'argmin', dtypes: F, make: (d, s) => [rnd([16, 65], d, s)], run: ([x]) => x!.argmin(0) },
  {
    op: 'matmul',
    dtypes: F,
    make: (d, s) => [rnd([3, 17, 40], d, s), rnd([40, 23], d, s + 1)],
    run: ([a, b]) => a!.matmul(b!),
  },
  {
    op: 'conv1d',
    dtypes: F,
    make: (d, s) => [rnd([2, 4, 20], d, s), rnd([6, 2, 3], d, s + 1)],
    run: ([x, w]) => x!.conv1d(w!, { padding: 1, groups: 2 }),
  },
  {
    op: 'conv2d',
    dtypes: F,
    make: (d, s) => [rnd([2, 3, 9, 9], d, s), rnd([4, 3, 3, 3], d, s + 1)],
    run: ([x, w]) => x!.conv2d(w!, { padding: 1, stride: 2 }),
  },
  {
    op: 'convTranspose1d',
    dtypes: F,
    make: (d, s) => [rnd([2, 4, 9], d, s), rnd([4, 3, 3], d, s + 1)],
    run: ([x, w]) => x!.convTranspose1d(w!, { stride: 2 }),
  },
  {
    op: 'convTranspose2d',
    dtypes: F,
    make: (d, s) => [rnd([2, 4, 5, 5], d, s), rnd([4, 3, 3, 3], d, s + 1)],
    run: ([x, w]) => x!.convTranspose2d(w!, { stride: 2, padding: 1, outputPadding: 1 }),
  },
  { op: 'maxPool2d', dtypes: F, make: (d, s) => [rnd([2, 3, 8, 8], d, s)], run: ([x]) => x!.maxPool2d({ kernel: 2 }) },
  {
    op: 'avgPool2d',
    dtypes: F,
    make: (d, s) => [rnd([2, 3, 8, 8], d, s)],
    run: ([x]) => x!.avgPool2d({ kernel: 3, stride: 2, padding: 1 }),
  },
  {
    op: 'upsampleNearest2d',
    dtypes: F,
    make: (d, s) => [rnd([2, 3, 4, 5], d, s)],
    run: ([x]) => x!.upsampleNearest2d(8, 7),
  },
  {
    op: 'upsampleBilinear2d',
    dtypes: F,
    make: (d, s) => [rnd([2, 3, 4, 5], d, s)],
    run: ([x]) => x!.upsampleBilinear2d(8, 7),
  },
  // exactly 2x from rows of whole 16-byte vectors: the x2 kernels (upsample.hip)
  {
    op: 'upsampleNearest2d x2',
    dtypes: F,
    make: (d, s) => [rnd([2, 3, 5, 16], d, s)],
    run: ([x]) => x!.upsampleNearest2d(10, 32),
  },
  {
    op: 'upsampleBilinear2d x2',
    dtypes: F,
    make: (d, s) => [rnd([2, 3, 5, 16], d, s)],
    run: ([x]) => x!.upsampleBilinear2d(10, 32),
  },
  {
    op: 'indexSelect',
    dtypes: ALL,
    make: (d, s) => [rnd([10, 6], d, s), ids(7, 10, s + 1)],
    run: ([x, i]) => x!.indexSelect(i!, 0),
  },
  {
    op: 'gather',
    dtypes: ALL,
    make: (d, s) => [rnd([10, 6], d, s), ids(60, 6, s + 1).reshape([10, 6])],
    run: ([x, i]) => x!.gather(i!, 1),
  },
  {
    op: 'scatterAdd',
    dtypes: F,
    make: (d, s) => [rnd([10, 6], d, s), ids(18, 10, s + 1).reshape([3, 6]), rnd([3, 6], d, s + 2)],
    run: ([x, i, u]) => x!.scatterAdd(i!, u!, 0),
  },
  {
    op: 'indexAdd',
    dtypes: F,
    make: (d, s) => [rnd([10, 6], d, s), ids(4, 10, s + 1), rnd([4, 6], d, s + 2)],
    run: ([x, i, u]) => x!.indexAdd(i!, u!, 0),
  },
  { op: 'softmax', dtypes: F, make: (d, s) => [rnd([16, 100], d, s, -8, 8)], run: ([x]) => x!.softmax(-1) },
  { op: 'logSoftmax', dtypes: F, make: (d, s) => [rnd([16, 100], d, s, -8, 8)], run: ([x]) => x!.logSoftmax(-1) },
  {
    op: 'layerNorm',
    dtypes: F,
    make: (d, s) => [rnd([16, 96], d, s), rnd([96], d, s + 1), rnd([96], d, s + 2)],
    run: ([x, w, b]) => x!.layerNorm(w!, b!, 1e-5),
  },
  {
    op: 'rmsNorm',
    dtypes: F,
    make: (d, s) => [rnd([16, 96], d, s), rnd([96], d, s + 1)],
    run: ([x, w]) => x!.rmsNorm(w!, 1e-6),
  },
  {
    op: 'rope',
    dtypes: F,
    make: (d, s) => [rnd([2, 3, 5, 8], d, s), rnd([5, 4], d, s + 1), rnd([5, 4], d, s + 2)],
    run: ([x, c, si]) => x!.rope(c!, si!),
  },
  {
    op: 'ropeI',
    dtypes: F,
    make: (d, s) => [rnd([2, 3, 5, 8], d, s), rnd([5, 4], d, s + 1), rnd([5, 4], d, s + 2)],
    run: ([x, c, si]) => x!.ropeI(c!, si!),
  },
  {
    op: 'ropeThd',
    dtypes: F,
    make: (d, s) => [rnd([2, 5, 3, 8], d, s), rnd([5, 4], d, s + 1), rnd([5, 4], d, s + 2)],
    run: ([x, c, si]) => x!.ropeThd(c!, si!),
  },
  {
    op: 'batchNorm',
    dtypes: F,
    make: (d, s) => [rnd([2, 3, 4, 4], d, s), rnd([3], d, s + 1), rnd([3], d, s + 2, 0.5, 2)],
    run: ([x, m, v]) => x!.batchNorm({ mean: m!, variance: v! }),
  },
  {
    op: 'scaledDotProductAttention',
    dtypes: F,
    make: (d, s) => [rnd([1, 4, 6, 8], d, s), rnd([1, 2, 7, 8], d, s + 1), rnd([1, 2, 7, 8], d, s + 2)],
    run: ([q, k, v]) => Tensor.scaledDotProductAttention(q!, k!, v!, { causal: true }),
  },
  { op: 'argsort', dtypes: ALL, make: (d, s) => [rnd([8, 21], d, s)], run: ([x]) => x!.argsort(-1) },
  {
    op: 'sort',
    dtypes: ALL,
    make: (d, s) => [rnd([3, 3000], d, s)],
    run: ([x]) => x!.sort(-1, { descending: true }).indices,
  },
  { op: 'topk', dtypes: ALL, make: (d, s) => [rnd([8, 3000], d, s)], run: ([x]) => x!.topk(5).indices },
];

function maxRelErr(a: Float64Array, b: Float64Array): number {
  let m = 0;
  for (let i = 0; i < b.length; i++) {
    const x = a[i]!,
      y = b[i]!;
    if (Number.isNaN(x) || Number.isNaN(y)) {
      if (!(Number.isNaN(x) && Number.isNaN(y))) return Infinity;
      continue;
    }
    if (x === y) continue;
    m = Math.max(m, Math.abs(x - y) / Math.max(1, Math.abs(y)));
  }
  return m;
}

async function numbers(t: Tensor): Promise<Float64Array> {
  return Float64Array.from(await t.toArray(), Number);
}

export async function runSelftest(
  device: Device,
  onRow?: (r: Row, i: number, total: number) => void,
  filter?: RegExp,
): Promise<Row[]> {
  const cases = CASES.filter((c) => !filter || filter.test(c.op));
  const total = cases.reduce((a, c) => a + c.dtypes.length, 0);
  const rows: Row[] = [];
  let seed = Date.now() % 100000;
  for (const c of cases) {
    for (const d of c.dtypes) {
      const row = await runCase(c, d, device, (seed += 10));
      rows.push(row);
      onRow?.(row, rows.length, total);
    }
  }
  return rows;
}

async function runCase(c: Case, d: DType, device: Device, seed: number): Promise<Row> {
  const inputs = c.make(d, seed);
  const made: Tensor[] = [...inputs];
  try {
    let ref: Tensor;
    if (device.isCpu) {
      // reference in f64 (float inputs widened; index inputs kept)
      const wide = inputs.map((t) =>
        d !== 'f64' && t.dtype === d && (d === 'f32' || d === 'f16' || d === 'bf16') ? t.toDtype('f64') : t,
      );
      made.push(...wide);
      ref = c.run(wide);
    } else {
      ref = c.run(inputs);
    }
    made.push(ref);
    let got: Tensor;
    try {
      const moved = inputs.map((t) => t.to(device));
      made.push(...moved);
      got = c.run(moved);
      made.push(got);
    } catch (e) {
      if (e instanceof NotOnDeviceError) return { op: c.op, dtype: d, maxErr: NaN, status: 'not on this device yet' };
      throw e;
    }
    const [a, b] = [await numbers(got), await numbers(ref)];
    const err = a.length === b.length ? maxRelErr(a, b) : Infinity;
    const tol = TOL[got.dtype === 'u8' || got.dtype === 'u32' || got.dtype === 'i64' ? got.dtype : d];
    return { op: c.op, dtype: d, maxErr: err, status: err <= tol ? 'pass' : 'FAIL' };
  } catch (e) {
    return { op: c.op, dtype: d, maxErr: NaN, status: 'error', detail: (e as Error).message.split('\n')[0] };
  } finally {
    for (const t of made) t.dispose();
  }
}
