// Quick checks of the GPU glue for the elementwise family, casts, copies and batchNorm against
// the CPU: one or two dtypes and layouts per path (contiguous kernels, strided kernels, number
// operands, wide where conditions, views deeper than the Geom record, dnn batch norm). The broad
// sweep over every dtype and layout is ops-elementwise.test.ts and ops-dnn.test.ts.
import { gpuSuite, checkOp } from './harness.ts';
import * as assert from 'uvu/assert';
import { Tensor, type DType } from '../../src/index.ts';
import { randT, randInts } from '../helpers.ts';

const s = gpuSuite('gpu/ops-glue-smoke');
const SHAPE = [5, 33];
const FL: readonly DType[] = ['f32', 'f16'];
const DENSE_AND_VIEW = ['contiguous', 'transposed'] as const;

s.test('unary: exp, relu (contiguous and strided)', async () => {
  await checkOp(
    'exp',
    FL,
    DENSE_AND_VIEW,
    (d) => [randT(SHAPE, d)],
    ([x]) => x!.exp(),
  );
  await checkOp(
    'relu',
    ['bf16', 'f64'],
    ['offset', 'narrowed'],
    (d) => [randT(SHAPE, d)],
    ([x]) => x!.relu(),
  );
});

s.test('paramUnary: affine, clamp', async () => {
  await checkOp(
    'affine',
    FL,
    DENSE_AND_VIEW,
    (d) => [randT(SHAPE, d)],
    ([x]) => x!.affine(-1.5, 0.25),
  );
  await checkOp(
    'clamp',
    ['f64'],
    ['broadcast'],
    (d) => [randT(SHAPE, d)],
    ([x]) => x!.clamp(-0.5, 0.75),
  );
});

s.test('binary: same shape, broadcast, numbers', async () => {
  await checkOp(
    'add',
    ['f32', 'u8'],
    DENSE_AND_VIEW,
    (d) => [randT(SHAPE, d, 0, 50), randT(SHAPE, d, 0, 50)],
    ([a, b]) => a!.add(b!),
  );
  await checkOp(
    'sub',
    ['i64', 'bf16'],
    ['contiguous'],
    (d) => [randT([4, 1, 6], d, -9, 9), randT([3, 1], d, -9, 9)],
    ([a, b]) => a!.sub(b!),
    { variant: 'broadcast both' },
  );
  // float add/sub/mul with a number take the affine kernel; the rest a one-element tensor
  await checkOp(
    'mul',
    FL,
    DENSE_AND_VIEW,
    (d) => [randT(SHAPE, d)],
    ([a]) => a!.mul(-2.5),
    { variant: 'number' },
  );
  await checkOp(
    'sub',
    ['f64'],
    ['narrowed'],
    (d) => [randT(SHAPE, d)],
    ([a]) => a!.sub(0.3),
    { variant: 'number' },
  );
  await checkOp(
    'div',
    ['f32', 'u32', 'i64'],
    DENSE_AND_VIEW,
    (d) => [randInts(SHAPE, 1000, d)],
    ([a]) => a!.div(7),
    { variant: 'number' },
  );
  await checkOp(
    'maximum',
    ['f16'],
    ['offset'],
    (d) => [randT(SHAPE, d)],
    ([a]) => a!.maximum(0.5),
    { variant: 'number' },
  );
});

s.test('binary: an i64 number beyond 2^53 wraps like the CPU', async (dev) => {
  const a = Tensor.from([1, -2, 3], { dtype: 'i64' });
  const want = a.add(2 ** 62 + 2 ** 61).toArraySync();
  const g = a.to(dev);
  const got = await g.add(2 ** 62 + 2 ** 61).toArray();
  assert.equal(Array.from(got as BigInt64Array), Array.from(want as BigInt64Array));
});

s.test('compare: tensor, broadcast, number', async () => {
  const coarse = (shape: number[], d: DType) => randInts(shape, 4, 'f64').toDtype(d);
  await checkOp(
    'lt',
    ['f32', 'u8'],
    DENSE_AND_VIEW,
    (d) => [coarse(SHAPE, d), coarse(SHAPE, d)],
    ([a, b]) => a!.compare('lt', b!),
  );
  await checkOp(
    'eq',
    ['bf16', 'i64'],
    ['contiguous', 'broadcast'],
    (d) => [coarse(SHAPE, d), coarse([33], d)],
    ([a, b]) => a!.compare('eq', b!),
    { variant: 'broadcast' },
  );
  await checkOp(
    'ge',
    ['f64'],
    ['narrowed'],
    (d) => [coarse(SHAPE, d)],
    ([a]) => a!.compare('ge', 2),
    { variant: 'number' },
  );
});

s.test('where: u8 and wide conditions, numbers', async () => {
  await checkOp(
    'where',
    ['f32', 'i64'],
    DENSE_AND_VIEW,
    (d) => [randInts(SHAPE, 2, 'u8'), randT(SHAPE, d, -9, 9), randT(SHAPE, d, -9, 9)],
    ([c, a, b]) => Tensor.where(c!, a!, b!),
    { variant: 'cond u8' },
  );
  await checkOp(
    'where',
    ['f16'],
    ['contiguous', 'offset'],
    (d) => [randInts([5, 1], 3, 'i64'), randT(SHAPE, d)],
    ([c, a]) => Tensor.where(c!, a!, -1.5),
    { variant: 'cond i64, broadcast, number b' },
  );
  await checkOp(
    'where',
    ['u32'],
    ['contiguous'],
    () => [randInts(SHAPE, 3, 'u32')],
    ([c]) => Tensor.where(c!, 4, 9),
    { variant: 'cond u32, two numbers (f32)' },
  );
});

s.test('cast: contiguous and strided', async () => {
  await checkOp(
    'cast',
    ['f32'],
    DENSE_AND_VIEW,
    (d) => [randT(SHAPE, d, -300, 300)],
    ([x]) => x!.toDtype('f16'),
    { tol: 0, variant: 'to f16' },
  );
  await checkOp(
    'cast',
    ['i64'],
    ['contiguous', 'narrowed'],
    (d) => [randInts(SHAPE, 2 ** 30, d)],
    ([x]) => x!.toDtype('bf16'),
    { tol: 0, variant: 'to bf16' },
  );
  await checkOp(
    'cast',
    ['f64'],
    ['broadcast'],
    (d) => [randT(SHAPE, d, -300, 300)],
    ([x]) => x!.toDtype('u8'),
    { tol: 0, variant: 'to u8' },
  );
});

s.test('copies: contiguous, cat, sliceSet, fill', async () => {
  await checkOp(
    'contiguous',
    ['f16', 'i64'],
    ['transposed', 'broadcast'],
    (d) => [randT(SHAPE, d, -9, 9)],
    ([x]) => x!.contiguous(),
  );
  await checkOp(
    'cat',
    ['u8'],
    DENSE_AND_VIEW,
    (d) => [randT(SHAPE, d, 0, 200), randT([2, 33], d, 0, 200)],
    (ts) => Tensor.cat(ts, 0),
  );
  await checkOp(
    'sliceSet',
    ['f32'],
    ['transposed'],
    (d) => [randT(SHAPE, d), randT([5, 4], d)],
    ([dst, src]) => dst!.sliceSet(src!, 1, 10),
  );
  await checkOp(
    'fill',
    ['bf16', 'i64'],
    ['contiguous', 'narrowed'],
    (d) => [randT(SHAPE, d)],
    ([x]) => x!.fill(1 / 3),
  );
});

s.test('copy: a rank-10 view no Geom merge can flatten is copied slice by slice', async (dev) => {
  const shape = [2, 2, 2, 2, 2, 2, 2, 2, 2, 3];
  const order = shape.map((_, i) => shape.length - 1 - i);
  const x = randT(shape, 'f32');
  const want = x.permute(order).contiguous().toArraySync();
  const g = x.to(dev);
  const got = await g.permute(order).contiguous().toArray();
  assert.equal(Array.from(got as Float32Array), Array.from(want as Float32Array));
});

s.test('batchNorm: weight and bias, defaults, views', async () => {
  const make = (xs: number[], affine: boolean) => (d: DType) => {
    const c = xs[1]!;
    return [
      randT(xs, d),
      randT([c], d, -0.5, 0.5),
      randT([c], d, 0.2, 2),
      ...(affine ? [randT([c], d, 0.5, 1.5), randT([c], d)] : []),
    ];
  };
  await checkOp(
    'batchNorm',
    ['f32', 'f16'],
    DENSE_AND_VIEW,
    make([2, 3, 4, 5], true),
    ([x, m, v, w, b]) => x!.batchNorm({ mean: m!, variance: v!, weight: w!, bias: b!, eps: 1e-5 }),
    { variant: 'affine' },
  );
  await checkOp(
    'batchNorm',
    ['bf16'],
    ['contiguous', 'broadcast'],
    make([4, 3], false),
    ([x, m, v]) => x!.batchNorm({ mean: m!, variance: v! }),
    { variant: '[n, c], no affine' },
  );
});

s.run();
