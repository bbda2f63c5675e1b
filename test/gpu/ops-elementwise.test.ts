// Element-wise ops on the GPU against the CPU reference: unary, unary with parameters, binary
// (with broadcasting and scalars), comparisons, where, casts between every dtype pair, and the
// copy family (fill, contiguous, cat, sliceSet, copy2d), over every layout.
import { gpuSuite, checkOp, LAYOUTS, FLOAT_DTYPES, ALL_DTYPES, INT_DTYPES, type LayoutKind } from './harness.ts';
import * as assert from 'uvu/assert';
import { Tensor, UNARY_OPS, BINARY_OPS, CMP_OPS, type DType, type BinaryOp, type CmpOp } from '../../src/index.ts';
import { randT, randInts } from '../helpers.ts';

const s = gpuSuite('gpu/ops-elementwise');
const SHAPE = [9, 67];
const isInt = (d: DType) => INT_DTYPES.includes(d);

/** exact halves in [-10, 10): rounding ties, zeros and signs for round/sign/ceil/floor */
function halves(shape: number[], dtype: DType): Tensor {
  const h = randInts(shape, 40, 'f64').affine(0.5, -10);
  const out = h.toDtype(dtype);
  h.dispose();
  return out;
}

/** small ranges keep u8 products in range often and exercise wrapping sometimes */
function values(shape: number[], dtype: DType, lo = -3, hi = 3): Tensor {
  if (!isInt(dtype)) return randT(shape, dtype, lo, hi);
  return randInts(shape, dtype === 'u8' ? 40 : 1000, dtype);
}
function nonzero(shape: number[], dtype: DType): Tensor {
  if (!isInt(dtype)) {
    // |b| in [0.5, 3] with either sign
    const m = randT(shape, 'f64', 0.5, 3),
      sgn = randInts(shape, 2, 'f64').affine(2, -1);
    const out = m.mul(sgn).toDtype(dtype);
    m.dispose();
    sgn.dispose();
    return out;
  }
  const r = randInts(shape, 19, dtype);
  const out = r.add(1);
  r.dispose();
  return out;
}

// ---- unary ---------------------------------------------------------------------------------
const POSITIVE = new Set(['log', 'sqrt', 'recip']);
const ON_HALVES = new Set(['round', 'sign', 'ceil', 'floor', 'abs']);
for (const op of UNARY_OPS) {
  s.opTest(
    op,
    async () => {
      const make = (d: DType) => [
        ON_HALVES.has(op) ? halves(SHAPE, d) : POSITIVE.has(op) ? randT(SHAPE, d, 0.1, 3) : randT(SHAPE, d, -3, 3),
      ];
      await checkOp(op, FLOAT_DTYPES, LAYOUTS, make, ([x]) => x!.unary(op));
    },
    `unary ${op}`,
  );
}

// ---- unary with parameters ----------------------------------------------------------------
s.opTest('affine', async () => {
  await checkOp(
    'affine',
    FLOAT_DTYPES,
    LAYOUTS,
    (d) => [randT(SHAPE, d)],
    ([x]) => x!.affine(1.5, -0.25),
  );
});
s.opTest('powf', async () => {
  await checkOp(
    'powf',
    FLOAT_DTYPES,
    LAYOUTS,
    (d) => [randT(SHAPE, d, 0.1, 3)],
    ([x]) => x!.powf(2.5),
    { variant: 'x^2.5' },
  );
  await checkOp(
    'powf',
    FLOAT_DTYPES,
    LAYOUTS,
    (d) => [randT(SHAPE, d, 0.1, 3)],
    ([x]) => x!.powf(-0.5),
    { variant: 'x^-0.5' },
  );
  // a negative base with an integer exponent is defined (torch.pow(-2., 3.) = -8)
  await checkOp(
    'powf',
    FLOAT_DTYPES,
    LAYOUTS,
    (d) => [randT(SHAPE, d, -3, 3)],
    ([x]) => x!.powf(3),
    { variant: 'negative base ^3' },
  );
});
s.opTest('elu', async () => {
  await checkOp(
    'elu',
    FLOAT_DTYPES,
    LAYOUTS,
    (d) => [randT(SHAPE, d)],
    ([x]) => x!.elu(),
    { variant: 'alpha 1' },
  );
  await checkOp(
    'elu',
    FLOAT_DTYPES,
    LAYOUTS,
    (d) => [randT(SHAPE, d)],
    ([x]) => x!.elu(0.3),
    { variant: 'alpha 0.3' },
  );
});
s.opTest('clamp', async () => {
  await checkOp(
    'clamp',
    FLOAT_DTYPES,
    LAYOUTS,
    (d) => [randT(SHAPE, d)],
    ([x]) => x!.clamp(-0.5, 1.25),
  );
});
s.opTest('leakyRelu', async () => {
  await checkOp(
    'leakyRelu',
    FLOAT_DTYPES,
    LAYOUTS,
    (d) => [randT(SHAPE, d)],
    ([x]) => x!.leakyRelu(0.1),
  );
});

// ---- binary ----------------------------------------------------------------------------------
/** [a shape, b shape] pairs: same, trailing broadcast, both sides broadcast */
const BIN_SHAPES: readonly [string, number[], number[]][] = [
  ['same shape', SHAPE, SHAPE],
  ['[9, 67] with [67]', SHAPE, [67]],
  ['[9, 1] with [1, 67]', [9, 1], [1, 67]],
  ['[2, 1, 5] with [3, 1]', [2, 1, 5], [3, 1]],
];
for (const op of BINARY_OPS) {
  s.opTest(
    op,
    async () => {
      for (const [variant, sa, sb] of BIN_SHAPES) {
        const make = (d: DType) => [values(sa, d), op === 'div' ? nonzero(sb, d) : values(sb, d)];
        await checkOp(op, ALL_DTYPES, LAYOUTS, make, ([a, b]) => a!.binary(op as BinaryOp, b!), { variant });
      }
      // a number operand takes the tensor's dtype
      await checkOp(
        op,
        ALL_DTYPES,
        LAYOUTS,
        (d) => [values(SHAPE, d)],
        ([a], d) => a!.binary(op as BinaryOp, isInt(d) ? 3 : 1.75),
        { variant: 'scalar' },
      );
    },
    `binary ${op}`,
  );
}

// ---- comparisons (u8 results, exact) ------------------------------------------------------
/** values on a coarse grid so that equal pairs are common */
function coarse(shape: number[], d: DType): Tensor {
  const g = randInts(shape, 5, 'f64');
  const out = (isInt(d) ? g : g.affine(0.5, -1)).toDtype(d);
  g.dispose();
  return out;
}
for (const op of CMP_OPS) {
  s.opTest(
    op,
    async () => {
      for (const [variant, sa, sb] of BIN_SHAPES) {
        await checkOp(
          op,
          ALL_DTYPES,
          LAYOUTS,
          (d) => [coarse(sa, d), coarse(sb, d)],
          ([a, b]) => a!.compare(op as CmpOp, b!),
          { variant },
        );
      }
      await checkOp(
        op,
        ALL_DTYPES,
        LAYOUTS,
        (d) => [coarse(SHAPE, d)],
        ([a]) => a!.compare(op as CmpOp, 1),
        { variant: 'scalar' },
      );
    },
    `compare ${op}`,
  );
}

// ---- where -----------------------------------------------------------------------------------
s.opTest('where', async () => {
  for (const cd of ['u8', 'u32', 'i64'] as const) {
    // 0, 1 or 2: any nonzero value is true
    const cond = (shape: number[]) => randInts(shape, 3, cd);
    await checkOp(
      'where',
      ALL_DTYPES,
      LAYOUTS,
      (d) => [cond(SHAPE), values(SHAPE, d), values(SHAPE, d)],
      ([c, a, b]) => Tensor.where(c!, a!, b!),
      { variant: `cond ${cd}` },
    );
    await checkOp(
      'where',
      ALL_DTYPES,
      LAYOUTS,
      (d) => [cond([9, 1]), values([67], d), values(SHAPE, d)],
      ([c, a, b]) => Tensor.where(c!, a!, b!),
      { variant: `cond ${cd}, broadcast` },
    );
    await checkOp(
      'where',
      ALL_DTYPES,
      LAYOUTS,
      (d) => [cond(SHAPE), values(SHAPE, d)],
      ([c, a], d) => Tensor.where(c!, a!, isInt(d) ? 7 : -1.5),
      { variant: `cond ${cd}, scalar b` },
    );
    await checkOp(
      'where',
      ALL_DTYPES,
      LAYOUTS,
      (d) => [cond(SHAPE), values(SHAPE, d)],
      ([c, b], d) => Tensor.where(c!, isInt(d) ? 7 : -1.5, b!),
      { variant: `cond ${cd}, scalar a` },
    );
  }
});

// ---- casts: every dtype pair, exact ----------------------------------------------------------
/** a source with the edge cases of its dtype in the first row */
function castSource(d: DType): Tensor {
  const shape = [9, 33];
  let base: Tensor;
  let special: number[];
  switch (d) {
    case 'u8':
      base = randInts(shape, 256, 'u8');
      special = [0, 1, 127, 128, 255];
      break;
    case 'u32':
      base = randInts(shape, 2 ** 32 - 1, 'u32');
      special = [0, 255, 256, 65504, 65520, 2 ** 24 + 1, 2 ** 32 - 1];
      break;
    case 'i64': {
      const r = randT(shape, 'f64', -(2 ** 40), 2 ** 40);
      const t = r.floor();
      base = t.toDtype('i64');
      r.dispose();
      t.dispose();
      special = [0, -1, 255, 256, -256, 2 ** 32, 2 ** 32 + 7, -(2 ** 33) + 3, 2 ** 24 + 1];
      break;
    }
    default:
      base = randT(shape, d, -300, 300);
      special = [
        0,
        -0,
        0.5,
        -0.5,
        1.5,
        2.5,
        -2.5,
        255.75,
        256,
        -1,
        -255.5,
        65504,
        Infinity,
        -Infinity,
        ...(d === 'f16' ? [] : [65520, 1e-8, 2 ** 31 + 2 ** 20, -(2 ** 31)]),
      ];
  }
  const row = Tensor.from(special, { dtype: d }).reshape([1, special.length]);
  base.narrow(0, 0, 1).narrow(1, 0, special.length).sliceSet(row, 0, 0);
  row.dispose();
  return base;
}
s.opTest(
  'cast',
  async () => {
    for (const from of ALL_DTYPES) {
      for (const to of ALL_DTYPES) {
        await checkOp(
          'cast',
          [from],
          LAYOUTS,
          (d) => [castSource(d)],
          ([x]) => x!.toDtype(to),
          { variant: `to ${to}`, tol: 0 },
        );
      }
    }
  },
  'cast: every dtype pair',
);

// ---- fill / constSet -------------------------------------------------------------------------
s.opTest('fill', async () => {
  await checkOp(
    'fill',
    ALL_DTYPES,
    LAYOUTS,
    (d) => [values(SHAPE, d)],
    ([x], d) => x!.fill(isInt(d) ? 7 : -2.75),
  );
  // a value that rounds differently per dtype
  await checkOp(
    'fill',
    FLOAT_DTYPES,
    LAYOUTS,
    (d) => [values(SHAPE, d)],
    ([x]) => x!.fill(1 / 3),
    { variant: '1/3' },
  );
});
s.opTest(
  'fill',
  async (dev) => {
    // only the view is written: the rest of the storage keeps its values
    const base = Tensor.zeros([4, 10], { device: dev });
    base.narrow(1, 2, 5).narrow(0, 1, 2).fill(3);
    const got = Array.from((await base.toArray()) as Float32Array);
    const want = Array.from({ length: 40 }, (_, i) =>
      Math.floor(i / 10) >= 1 && Math.floor(i / 10) <= 2 && i % 10 >= 2 && i % 10 < 7 ? 3 : 0,
    );
    assert.equal(got, want);
    base.dispose();
  },
  'fill: a narrowed view leaves its neighbours alone',
);

// ---- copies -----------------------------------------------------------------------------------
s.opTest('contiguous', async () => {
  await checkOp(
    'contiguous',
    ALL_DTYPES,
    LAYOUTS,
    (d) => [values(SHAPE, d)],
    ([x]) => x!.contiguous(),
  );
  await checkOp(
    'contiguous',
    ALL_DTYPES,
    LAYOUTS,
    (d) => [values([4, 5, 6], d)],
    ([x]) => x!.permute([2, 0, 1]).contiguous(),
    { variant: 'permuted 3-d' },
  );
  await checkOp(
    'contiguous',
    ALL_DTYPES,
    ['contiguous'],
    (d) => [values([40, 30], d)],
    ([x]) => x!.slice(0, 1, 39, 3).slice(1, 2, undefined, 2).contiguous(),
    { variant: 'stepped slices' },
  );
});
s.opTest('cat', async () => {
  await checkOp(
    'cat',
    ALL_DTYPES,
    LAYOUTS,
    (d) => [values(SHAPE, d), values([4, 67], d)],
    (ts) => Tensor.cat(ts, 0),
    { variant: 'dim 0' },
  );
  await checkOp(
    'cat',
    ALL_DTYPES,
    LAYOUTS,
    (d) => [values(SHAPE, d), values([9, 5], d), values([9, 1], d)],
    (ts) => Tensor.cat(ts, 1),
    { variant: 'dim 1, three' },
  );
  // row copies (copy_rows): rows of whole 16-byte units where aligned, a 3-d cat whose leading
  // dims merge into one row stride, and rows enough to loop the grid
  await checkOp(
    'cat',
    ALL_DTYPES,
    LAYOUTS,
    (d) => [values([6, 32], d), values([6, 16], d)],
    (ts) => Tensor.cat(ts, 1),
    { variant: 'dim 1, 16-byte rows' },
  );
  await checkOp(
    'cat',
    ALL_DTYPES,
    LAYOUTS,
    (d) => [values([3, 4, 24], d), values([3, 4, 8], d)],
    (ts) => Tensor.cat(ts, 2),
    { variant: 'dim 2 of 3-d' },
  );
  await checkOp(
    'cat',
    ['f32', 'bf16', 'u8'],
    ['contiguous', 'offset'],
    (d) => [values([1500, 700], d), values([1500, 36], d)],
    (ts) => Tensor.cat(ts, 1),
    { variant: 'dim 1, large' },
  );
});
const DST_LAYOUTS: readonly LayoutKind[] = ['contiguous', 'transposed', 'narrowed', 'offset'];
s.opTest('sliceSet', async () => {
  await checkOp(
    'sliceSet',
    ALL_DTYPES,
    DST_LAYOUTS,
    (d) => [values(SHAPE, d), values([4, 67], d)],
    ([dst, src]) => dst!.sliceSet(src!, 0, 3),
    { variant: 'dim 0' },
  );
  await checkOp(
    'sliceSet',
    ALL_DTYPES,
    DST_LAYOUTS,
    (d) => [values(SHAPE, d), values([9, 5], d)],
    ([dst, src]) => dst!.sliceSet(src!, 1, 60),
    { variant: 'dim 1' },
  );
  // a broadcast source into a plain destination
  await checkOp(
    'sliceSet',
    ALL_DTYPES,
    ['broadcast'],
    (d) => [values(SHAPE, d), values([4, 67], d)],
    ([dst, src]) => dst!.sliceSet(src!, 0, 5),
    { variant: 'broadcast src', fixed: [0] },
  );
});
s.opTest('copy2d', async () => {
  const p = { rows: 7, cols: 9, srcStride: 13, dstStride: 11, srcOffset: 5, dstOffset: 2 };
  await checkOp(
    'copy2d',
    ALL_DTYPES,
    ['contiguous', 'narrowed', 'offset'],
    (d) => [values([100], d), values([80], d)],
    ([src, dst]) => {
      Tensor.copy2d(src!, dst!, p);
      return dst!;
    },
  );
});

// ---- sizes: empty tensors, and more elements than one grid covers --------------------------
s.opTest(
  'add',
  async () => {
    const big = [1100, 1031]; // > multiprocessors * 32 blocks * 256 threads on any current GPU
    await checkOp(
      'add',
      ['f32', 'bf16'],
      ['contiguous', 'transposed'],
      (d) => [randT(big, d), randT(big, d)],
      ([a, b]) => a!.add(b!),
      { variant: 'large' },
    );
    await checkOp(
      'add',
      ['f32'],
      ['contiguous'],
      (d) => [randT([0, 5], d), randT([0, 5], d)],
      ([a, b]) => a!.add(b!),
      { variant: 'empty' },
    );
  },
  'add: large and empty',
);
s.opTest(
  'exp',
  async () => {
    await checkOp(
      'exp',
      ['f16'],
      ['contiguous'],
      (d) => [randT([1100, 1031], d)],
      ([x]) => x!.exp(),
      { variant: 'large' },
    );
    await checkOp(
      'exp',
      ['f32'],
      ['contiguous'],
      (d) => [randT([0], d)],
      ([x]) => x!.exp(),
      { variant: 'empty' },
    );
  },
  'exp: large and empty',
);
s.opTest(
  'cast',
  async () => {
    await checkOp(
      'cast',
      ['f32'],
      ['contiguous', 'transposed'],
      (d) => [randT([1100, 1031], d)],
      ([x]) => x!.toDtype('bf16'),
      { variant: 'large to bf16', tol: 0 },
    );
  },
  'cast: large',
);

s.run();
