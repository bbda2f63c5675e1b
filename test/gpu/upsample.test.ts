// Upsampling on the GPU against the CPU reference: nearest (exact: a pure move, with PyTorch's
// f32 index formula, whose rounding the 2 -> 82 case exercises) and bilinear with and without
// alignCorners, up, down, identity, to size 1, over every float dtype and layout of x, and an
// output over 2^20 elements. Nearest also on the vector-row kernel (upsample_nearest_rows:
// rows of whole 16-byte vectors whose columns stay or double), with rows up, down and kept,
// through an aligned strided view, and beside the shapes that just miss it; bilinear also a
// 16-byte output vector a thread (upsample_bilinear_rows) where the output's rows allow.
// Exactly 2x on rows of aligned vectors takes the x2 kernels (upsample_nearest_x2,
// upsample_bilinear_x2): against the CPU over odd heights, short strips, one-vector rows,
// aligned views (rows, planes and columns narrowed, planes permuted, a broadcast batch), and bit
// for bit against the kernels they stand in for (the element kernel through a transposed x, the
// vector-row kernels through a misaligned one), NaN and infinities at the edges included, and
// at a size whose tasks outnumber the grid's threads. The outputs are poisoned (harness.ts).
import { gpuSuite, checkOp, LAYOUTS, FLOAT_DTYPES, cpuFrom, type LayoutKind } from './harness.ts';
import * as assert from 'uvu/assert';
import { randT, relErr, withLayout } from '../helpers.ts';
import { Device, Tensor, type DType } from '../../src/index.ts';

const s = gpuSuite('gpu/upsample');

const SIZES: readonly { name: string; x: number[]; h: number; w: number }[] = [
  { name: 'up [2, 3, 4, 5] -> 8x7', x: [2, 3, 4, 5], h: 8, w: 7 },
  { name: 'down [2, 3, 6, 7] -> 4x3', x: [2, 3, 6, 7], h: 4, w: 3 },
  { name: 'identity [2, 3, 4, 5]', x: [2, 3, 4, 5], h: 4, w: 5 },
  { name: 'double [1, 2, 3, 5] -> 6x10', x: [1, 2, 3, 5], h: 6, w: 10 },
  { name: 'f32 scale [1, 2, 2, 3] -> 82x7', x: [1, 2, 2, 3], h: 82, w: 7 },
  { name: 'to 1x1 [2, 2, 5, 4]', x: [2, 2, 5, 4], h: 1, w: 1 },
];
const BIG: readonly LayoutKind[] = ['contiguous', 'transposed'];
const BIG_CASE = { name: '[2, 9, 64, 64] -> 256x256 (1.2M elements)', x: [2, 9, 64, 64], h: 256, w: 256 };

s.opTest('upsampleNearest2d', async () => {
  for (const c of SIZES) {
    await checkOp(
      'upsampleNearest2d',
      FLOAT_DTYPES,
      LAYOUTS,
      (d) => [randT(c.x, d)],
      ([x]) => x!.upsampleNearest2d(c.h, c.w),
      { tol: 0, variant: c.name },
    );
  }
  await checkOp(
    'upsampleNearest2d',
    ['f32', 'f16'],
    BIG,
    (d) => [randT(BIG_CASE.x, d)],
    ([x]) => x!.upsampleNearest2d(BIG_CASE.h, BIG_CASE.w),
    { tol: 0, variant: BIG_CASE.name },
  );
});

// widths of 16: whole vectors of every float dtype (2, 4 or 8 elements); 12 and 20: whole
// vectors of f32/f64 only (f16/bf16 take the element kernel). The x2 cases (and the aligned
// x2 views below) now take upsample_nearest_x2 on their contiguous and broadcast layouts; the
// others stay on upsample_nearest_rows.
const ROWS_CASES: readonly { name: string; x: number[]; h: number; w: number }[] = [
  { name: 'x2 [2, 3, 5, 16] -> 10x32', x: [2, 3, 5, 16], h: 10, w: 32 },
  { name: 'rows 5 -> 7, columns x2 [2, 3, 5, 16] -> 7x32', x: [2, 3, 5, 16], h: 7, w: 32 },
  { name: 'rows 5 -> 3, columns kept [2, 3, 5, 16] -> 3x16', x: [2, 3, 5, 16], h: 3, w: 16 },
  { name: 'rows x4, columns kept [1, 2, 3, 12] -> 12x12', x: [1, 2, 3, 12], h: 12, w: 12 },
  { name: 'x2 [1, 2, 3, 20] -> 6x40', x: [1, 2, 3, 20], h: 6, w: 40 },
  { name: 'columns x3 [1, 2, 3, 16] -> 6x48 (element kernel)', x: [1, 2, 3, 16], h: 6, w: 48 },
];

s.opTest(
  'upsampleNearest2d',
  async () => {
    for (const c of ROWS_CASES) {
      await checkOp(
        'upsampleNearest2d',
        FLOAT_DTYPES,
        LAYOUTS,
        (d) => [randT(c.x, d)],
        ([x]) => x!.upsampleNearest2d(c.h, c.w),
        { tol: 0, variant: c.name },
      );
    }
    // a view whose rows are whole vectors but not packed: rows 1..5 of 9, the plane strides 9 rows
    await checkOp(
      'upsampleNearest2d',
      FLOAT_DTYPES,
      ['contiguous', 'broadcast'],
      (d) => [randT([2, 3, 9, 16], d)],
      ([x]) => x!.narrow(2, 1, 5).upsampleNearest2d(10, 32),
      { tol: 0, variant: 'rows 1..5 of [2, 3, 9, 16] -> 10x32' },
    );
    await checkOp(
      'upsampleNearest2d',
      FLOAT_DTYPES,
      BIG,
      (d) => [randT([2, 9, 64, 64], d)],
      ([x]) => x!.upsampleNearest2d(128, 128),
      { tol: 0, variant: 'x2 [2, 9, 64, 64] -> 128x128' },
    );
  },
  'upsampleNearest2d: the vector-row kernel (and x2 beside it)',
);

s.opTest('upsampleNearest1d', async () => {
  for (const [l, n] of [
    [5, 11],
    [2, 82],
    [7, 3],
    [4, 4],
    [16, 32],
    [16, 16],
  ] as const) {
    await checkOp(
      'upsampleNearest1d',
      FLOAT_DTYPES,
      LAYOUTS,
      (d) => [randT([2, 3, l], d)],
      ([x]) => x!.upsampleNearest1d(n),
      { tol: 0, variant: `[2, 3, ${l}] -> ${n}` },
    );
  }
});

// output widths of whole 16-byte vectors (8 and 16: every dtype; 12: f32/f64 only) go a vector
// a thread (upsample_bilinear_rows), up, down and x2 (which, without alignCorners and from
// aligned rows, takes upsample_bilinear_x2 instead)
const BILINEAR_ROWS: readonly { name: string; x: number[]; h: number; w: number }[] = [
  { name: 'rows: [2, 3, 5, 7] -> 10x16', x: [2, 3, 5, 7], h: 10, w: 16 },
  { name: 'rows: down [1, 2, 8, 16] -> 4x8', x: [1, 2, 8, 16], h: 4, w: 8 },
  { name: 'rows: [2, 2, 5, 6] -> 9x12', x: [2, 2, 5, 6], h: 9, w: 12 },
  { name: 'rows: x2 [1, 2, 16, 16] -> 32x32', x: [1, 2, 16, 16], h: 32, w: 32 },
  { name: 'rows: one column [1, 2, 3, 1] -> 6x8', x: [1, 2, 3, 1], h: 6, w: 8 },
];

for (const alignCorners of [false, true]) {
  s.opTest(
    'upsampleBilinear2d',
    async () => {
      for (const c of [...SIZES, ...BILINEAR_ROWS]) {
        await checkOp(
          'upsampleBilinear2d',
          FLOAT_DTYPES,
          LAYOUTS,
          (d) => [randT(c.x, d)],
          ([x]) => x!.upsampleBilinear2d(c.h, c.w, alignCorners),
          { variant: `${c.name}, alignCorners ${alignCorners}` },
        );
      }
      await checkOp(
        'upsampleBilinear2d',
        ['f32', 'bf16'],
        BIG,
        (d) => [randT(BIG_CASE.x, d)],
        ([x]) => x!.upsampleBilinear2d(BIG_CASE.h, BIG_CASE.w, alignCorners),
        { variant: `${BIG_CASE.name}, alignCorners ${alignCorners}` },
      );
    },
    `upsampleBilinear2d alignCorners ${alignCorners}`,
  );
}

// ---- exactly 2x (upsample_nearest_x2, upsample_bilinear_x2) ---------------------------------------
// widths of 8, 24, 40: whole vectors of every dtype (1, 3, 5 of f16/bf16); 4: f32/f64 only.
// Heights 1, 4 (one whole strip of 4 input rows), 5, 9, 13 (a short last strip).
const X2_CASES: readonly { name: string; x: number[] }[] = [
  { name: 'x2 [1, 1, 1, 8]: one row of one vector', x: [1, 1, 1, 8] },
  { name: 'x2 [1, 3, 4, 16]: whole strips', x: [1, 3, 4, 16] },
  { name: 'x2 [2, 3, 5, 8]', x: [2, 3, 5, 8] },
  { name: 'x2 [3, 5, 9, 24]', x: [3, 5, 9, 24] },
  { name: 'x2 [2, 7, 13, 40]: tasks past one block', x: [2, 7, 13, 40] },
  { name: 'x2 [1, 2, 3, 4]: vectors of f32/f64 only', x: [1, 2, 3, 4] },
];
const x2Size = (x: readonly number[]): [number, number] => [2 * x[2]!, 2 * x[3]!];

// views whose rows stay whole aligned vectors, so they still take the x2 kernels: rows and
// planes narrowed (strides of the wider tensor), columns narrowed by whole vectors of every
// dtype (an offset of 16 elements), planes permuted (sC < sN no longer holds), a broadcast batch
const X2_VIEWS: readonly { name: string; base: number[]; view: (x: Tensor) => Tensor }[] = [
  { name: 'rows 2..6 of [2, 3, 9, 16]', base: [2, 3, 9, 16], view: (x) => x.narrow(2, 2, 5) },
  { name: 'planes 1..3 of [2, 5, 3, 16]', base: [2, 5, 3, 16], view: (x) => x.narrow(1, 1, 3) },
  { name: 'columns 16..39 of [2, 2, 5, 48]', base: [2, 2, 5, 48], view: (x) => x.narrow(3, 16, 24) },
  {
    name: '[3, 2, 5, 16] as [2, 3, 5, 16] (planes permuted)',
    base: [3, 2, 5, 16],
    view: (x) => x.permute([1, 0, 2, 3]),
  },
  { name: '[1, 3, 6, 8] broadcast to [4, 3, 6, 8]', base: [1, 3, 6, 8], view: (x) => x.broadcastAs([4, 3, 6, 8]) },
];

s.opTest(
  'upsampleNearest2d',
  async () => {
    for (const c of X2_CASES) {
      const [h, w] = x2Size(c.x);
      await checkOp(
        'upsampleNearest2d',
        FLOAT_DTYPES,
        LAYOUTS,
        (d) => [randT(c.x, d)],
        ([x]) => x!.upsampleNearest2d(h, w),
        { tol: 0, variant: c.name },
      );
    }
    for (const v of X2_VIEWS) {
      await checkOp(
        'upsampleNearest2d',
        FLOAT_DTYPES,
        ['contiguous'],
        (d) => [randT(v.base, d)],
        ([x]) => {
          const xv = v.view(x!);
          return xv.upsampleNearest2d(2 * xv.shape[2]!, 2 * xv.shape[3]!);
        },
        { tol: 0, variant: v.name },
      );
    }
  },
  'upsampleNearest2d: exactly 2x (upsample_nearest_x2)',
);

for (const alignCorners of [false, true]) {
  s.opTest(
    'upsampleBilinear2d',
    async () => {
      for (const c of X2_CASES) {
        const [h, w] = x2Size(c.x);
        await checkOp(
          'upsampleBilinear2d',
          FLOAT_DTYPES,
          LAYOUTS,
          (d) => [randT(c.x, d)],
          ([x]) => x!.upsampleBilinear2d(h, w, alignCorners),
          { variant: `${c.name}, alignCorners ${alignCorners}` },
        );
      }
      for (const v of X2_VIEWS) {
        await checkOp(
          'upsampleBilinear2d',
          FLOAT_DTYPES,
          ['contiguous'],
          (d) => [randT(v.base, d)],
          ([x]) => {
            const xv = v.view(x!);
            return xv.upsampleBilinear2d(2 * xv.shape[2]!, 2 * xv.shape[3]!, alignCorners);
          },
          { variant: `${v.name}, alignCorners ${alignCorners}` },
        );
      }
    },
    `upsampleBilinear2d: exactly 2x (upsample_bilinear_x2 without alignCorners), alignCorners ${alignCorners}`,
  );
}

// the same values through each kernel, raw bits equal: the x2 kernel (x contiguous), the
// element kernel (x every other column of a wider tensor: columns not unit-stride) and, for
// bilinear, the vector-row kernel (x 3 elements into its storage: not 16-byte aligned)
function paths(x: Tensor): { x2: Tensor; element: Tensor; rows: Tensor } {
  const [n, c, h, w] = x.shape as [number, number, number, number];
  const element = Tensor.stack([x, x], 4)
    .reshape([n, c, h, 2 * w])
    .slice(3, 0, 2 * w, 2);
  return { x2: x, element, rows: withLayout(x, 'offset').x };
}

async function sameBits(what: string, got: Tensor, want: Tensor): Promise<void> {
  const a = await got.toRawArray(),
    b = await want.toRawArray();
  assert.is(a.length, b.length, `${what}: lengths`);
  // compare bits, not values (-0 and 0 differ); a NaN of f32 or f64 may carry any payload
  const bits = (t: typeof a): ArrayLike<number | bigint> =>
    t instanceof Float32Array
      ? new Uint32Array(t.buffer, t.byteOffset, t.length)
      : t instanceof Float64Array
        ? new BigUint64Array(t.buffer, t.byteOffset, t.length)
        : t;
  const ab = bits(a),
    bb = bits(b);
  for (let i = 0; i < b.length; i++) {
    if (ab[i] === bb[i]) continue;
    if ((a instanceof Float32Array || a instanceof Float64Array) && Number.isNaN(a[i]) && Number.isNaN(b[i] as number))
      continue;
    assert.unreachable(
      `${what}: element ${i} is ${a[i]} (bits ${ab[i]}), the other kernel gives ${b[i]} (bits ${bb[i]})`,
    );
  }
}

/** x [n, c, h, w] of random values, with NaN and infinities where the edge cells decide: column
 *  1 of row 0 (read at weight 0 by output (0, 0)), row 1's first cell (read at weight 0 by output
 *  row 0), the last cell (read twice by the clamps), the first cell of a vector (read by the
 *  vector to its left) */
function specials(shape: number[], dtype: DType): Tensor {
  const [n, c, h, w] = shape as [number, number, number, number];
  const v = Array.from(randT(shape, 'f64').toArraySync(), Number);
  const at = (ni: number, ci: number, r: number, k: number): number => ((ni * c + ci) * h + r) * w + k;
  v[at(0, 0, 0, 1)] = Infinity;
  if (h > 1) v[at(0, 0, 1, 0)] = -Infinity;
  v[at(n - 1, c - 1, h - 1, w - 1)] = NaN;
  if (w > 8) v[at(0, c - 1, h >> 1, 8)] = NaN;
  return Tensor.from(v, { shape, dtype });
}

s.opTest(
  'upsampleBilinear2d',
  async (dev) => {
    for (const dtype of ['f32', 'f16', 'bf16'] as const) {
      for (const c of X2_CASES) {
        if (c.x[3]! % (dtype === 'f32' ? 4 : 8) !== 0) continue;
        for (const special of [false, true]) {
          const p = paths((special ? specials(c.x, dtype) : randT(c.x, dtype)).to(dev));
          const [h, w] = x2Size(c.x);
          const what = `bilinear ${dtype} ${c.name}${special ? ' with NaN and infinities' : ''}`;
          const y = p.x2.upsampleBilinear2d(h, w, false);
          await sameBits(`${what}: x2 vs the element kernel`, y, p.element.upsampleBilinear2d(h, w, false));
          await sameBits(`${what}: x2 vs the vector-row kernel`, y, p.rows.upsampleBilinear2d(h, w, false));
        }
      }
    }
  },
  'upsampleBilinear2d x2: bit for bit the element and vector-row kernels, NaN and infinities included',
);

s.opTest(
  'upsampleNearest2d',
  async (dev) => {
    for (const dtype of FLOAT_DTYPES) {
      for (const c of X2_CASES) {
        const p = paths(specials(c.x, dtype).to(dev));
        const [h, w] = x2Size(c.x);
        await sameBits(
          `nearest ${dtype} ${c.name}: x2 vs the element kernel`,
          p.x2.upsampleNearest2d(h, w),
          p.element.upsampleNearest2d(h, w),
        );
      }
    }
  },
  'upsampleNearest2d x2: bit for bit the element kernel',
);

// more tasks (planes * strips of 4 rows * output vectors a row) than the grid has threads
// (launch1d: at most 32 blocks of 256 a multiprocessor), so the kernels' task loop turns:
// against the element kernel bit for bit, and the last plane against the CPU
s.opTest(
  'upsampleBilinear2d',
  async (dev) => {
    const [n, c, h, w] = [16, 64, 128, 128];
    const x = randT([n, c, h, w], 'f32').to(dev);
    const tasks = n * c * (h / 4) * ((2 * w) / 4),
      threads = dev.runtime.info.multiprocessors * 32 * 256;
    assert.ok(tasks > threads, `${tasks} tasks do not outnumber the grid's ${threads} threads`);
    const p = paths(x);
    const y = p.x2.upsampleBilinear2d(2 * h, 2 * w, false);
    await sameBits(
      'bilinear f32 [16, 64, 128, 128] x2 vs the element kernel',
      y,
      p.element.upsampleBilinear2d(2 * h, 2 * w, false),
    );
    await sameBits(
      'nearest f32 [16, 64, 128, 128] x2 vs the element kernel',
      p.x2.upsampleNearest2d(2 * h, 2 * w),
      p.element.upsampleNearest2d(2 * h, 2 * w),
    );
    const lastPlane = (t: Tensor): Tensor => t.narrow(0, n - 1, 1).narrow(1, c - 1, 1);
    const want = Array.from(
      lastPlane(x)
        .to(Device.cpu())
        .upsampleBilinear2d(2 * h, 2 * w, false)
        .toArraySync(),
      Number,
    );
    const got = Array.from(await lastPlane(y).contiguous().toArray(), Number);
    const e = relErr(got, want);
    assert.ok(e <= 1e-5, `the last plane against the CPU: relative error ${e}`);
  },
  'upsample x2: more tasks than the grid has threads',
);

s.opTest(
  'upsampleBilinear2d',
  async (dev) => {
    // [[0, 1], [2, 3]] to 3x3: corners kept with alignCorners, half-pixel centres without
    const x = cpuFrom([0, 1, 2, 3], [1, 1, 2, 2], 'f32').to(dev);
    assert.equal(
      Array.from(await x.upsampleBilinear2d(3, 3, true).toArray(), Number),
      [0, 0.5, 1, 1, 1.5, 2, 2, 2.5, 3],
    );
    const half = Array.from(await x.upsampleBilinear2d(4, 4, false).toArray(), Number);
    assert.equal(half.slice(0, 4), [0, 0.25, 0.75, 1]);
    assert.equal(half.slice(12), [2, 2.25, 2.75, 3]);
  },
  'upsampleBilinear2d: values by hand',
);

s.run();
