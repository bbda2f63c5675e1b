// Reductions on the GPU against the CPU reference: sum, mean, min, max, argmin, argmax over the
// last dim, the first dim, middle dims, every dim and no dim, short rows (one warp a row), long
// rows (one block a row), few long runs (split into segments and folded by a second kernel) and
// column reductions (colreduce.hip: 'columns:' cases, and the first-dim ones), for every dtype
// and layout. Then NaN handling and first-index ties, checked value by value.
import { gpuSuite, checkOp, LAYOUTS, ALL_DTYPES, INT_DTYPES, cpuFrom, type LayoutKind } from './harness.ts';
import * as assert from 'uvu/assert';
import { Tensor, REDUCE_OPS, type DType, type ReduceOp } from '../../src/index.ts';
import { randT, randInts } from '../helpers.ts';

const s = gpuSuite('gpu/reduce');
const isInt = (d: DType) => INT_DTYPES.includes(d);
const isArg = (op: ReduceOp) => op === 'argmin' || op === 'argmax';

/**
 * Fresh values for `op`: arg ops get few distinct values (many ties: the first index must win);
 * integer sums get the full u8 range (they wrap) and wide u32/i64 values.
 */
function values(shape: number[], dtype: DType, op: ReduceOp): Tensor {
  if (isArg(op) || op === 'min' || op === 'max') {
    if (isInt(dtype)) return randInts(shape, 7, dtype);
    // steps of 0.25 in [-2, 2): exact in every float dtype, ties everywhere
    const h = randInts(shape, 16, 'f64').affine(0.25, -2);
    const out = h.toDtype(dtype);
    h.dispose();
    return out;
  }
  if (isInt(dtype)) return randInts(shape, dtype === 'u8' ? 256 : dtype === 'u32' ? 4e9 : 2 ** 40, dtype);
  return randT(shape, dtype, -3, 3);
}

interface Variant {
  readonly name: string;
  readonly shape: number[];
  readonly dims: number | number[] | undefined;
  readonly keepdim: boolean;
  /** the big cases run fewer layouts: the CPU reference dominates the suite's time */
  readonly layouts?: readonly LayoutKind[];
}
const BIG: readonly LayoutKind[] = ['contiguous', 'transposed', 'offset'];
const VARIANTS: readonly Variant[] = [
  { name: 'last dim of [9, 67]', shape: [9, 67], dims: -1, keepdim: false },
  { name: 'first dim of [9, 67]', shape: [9, 67], dims: 0, keepdim: false },
  { name: 'dim 1 of [5, 6, 7] keepdim', shape: [5, 6, 7], dims: 1, keepdim: true },
  { name: 'dims [0, 2] of [5, 6, 7]', shape: [5, 6, 7], dims: [0, 2], keepdim: false },
  { name: 'every dim of [9, 67]', shape: [9, 67], dims: undefined, keepdim: false },
  { name: 'no dim of [4, 5]', shape: [4, 5], dims: [], keepdim: false },
  { name: 'long rows [3, 5001]', shape: [3, 5001], dims: -1, keepdim: false },
  // few long runs: split into segments, folded by reduce_*_final
  { name: 'one long run [2, 30000] dim 1', shape: [2, 30000], dims: 1, keepdim: true, layouts: BIG },
  { name: 'long columns [1500, 40] dim 0', shape: [1500, 40], dims: 0, keepdim: false, layouts: BIG },
  { name: 'every dim of [300, 500]', shape: [300, 500], dims: undefined, keepdim: false, layouts: BIG },
  // down columns (colreduce.hip): a batch dim and a column count no vector width divides; few
  // rows (the tile widens); merged reduced dims; long columns split into segments
  { name: 'columns: dim 1 of [3, 70, 37]', shape: [3, 70, 37], dims: 1, keepdim: false },
  { name: 'columns: dim 0 of [5, 600]', shape: [5, 600], dims: 0, keepdim: true },
  { name: 'columns: dims [0, 1] of [12, 10, 48]', shape: [12, 10, 48], dims: [0, 1], keepdim: false },
  {
    name: 'columns: dim 0 of [3000, 264]',
    shape: [3000, 264],
    dims: 0,
    keepdim: false,
    layouts: ['contiguous', 'offset', 'narrowed', 'broadcast'],
  },
];

for (const op of REDUCE_OPS) {
  s.opTest(op, async () => {
    for (const v of VARIANTS) {
      // arg ops need exactly one dim: the dispatcher rejects the others on both devices alike
      if (isArg(op) && (v.dims === undefined || Array.isArray(v.dims))) continue;
      // min/max/arg results are elements of the input: exact; sums round differently
      const exact = op !== 'sum' && op !== 'mean';
      await checkOp(
        op,
        ALL_DTYPES,
        v.layouts ?? LAYOUTS,
        (d) => [values(v.shape, d, op)],
        ([x]) => x!.reduce(op, v.dims, v.keepdim),
        { variant: v.name, ...(exact ? { tol: 0 } : {}) },
      );
    }
  });
}

// ---- NaN and ties, value by value ---------------------------------------------------------

const FLOATS: readonly DType[] = ['f32', 'f64', 'f16', 'bf16'];

async function nums(t: Tensor): Promise<number[]> {
  return Array.from(await t.toArray(), Number);
}

s.opTest(
  'max',
  async (dev) => {
    for (const dtype of FLOATS) {
      // row 0 has NaNs at 5 and 9; row 1 none; long rows split into segments too
      for (const n of [16, 40000]) {
        const vals = Array.from({ length: 2 * n }, (_, i) => ((i * 7919) % 13) - 6);
        vals[5] = NaN;
        vals[9] = NaN;
        const x = cpuFrom(vals, [2, n], dtype).to(dev);
        const mx = await nums(x.max(1)),
          mn = await nums(x.min(1));
        const amx = await nums(x.argmax(1)),
          amn = await nums(x.argmin(1));
        assert.ok(
          Number.isNaN(mx[0]!) && Number.isNaN(mn[0]!),
          `${dtype} n=${n}: min/max of a row with NaN: ${mn[0]}, ${mx[0]}`,
        );
        assert.equal([amx[0], amn[0]], [5, 5], `${dtype} n=${n}: argmax/argmin take the first NaN`);
        assert.equal([mx[1], mn[1]], [6, -6], `${dtype} n=${n}: row without NaN`);
        const row1 = vals.slice(n);
        assert.equal(
          [amx[1], amn[1]],
          [row1.indexOf(6), row1.indexOf(-6)],
          `${dtype} n=${n}: first index among equals`,
        );
        const all = await nums(x.max());
        assert.ok(Number.isNaN(all[0]!), `${dtype} n=${n}: max over every dim`);
      }
    }
  },
  'NaN propagates in min/max and wins argmin/argmax; first index among ties',
);

s.opTest(
  'argmax',
  async (dev) => {
    for (const dtype of ALL_DTYPES) {
      // one value repeated: index 0 must win across warps, blocks and segments
      for (const n of [33, 3000, 60000]) {
        const x = Tensor.full([2, n], 3, { dtype, device: dev });
        assert.equal(await nums(x.argmax(1)), [0, 0], `${dtype} n=${n}: argmax of a constant row`);
        assert.equal(await nums(x.argmin(1)), [0, 0], `${dtype} n=${n}: argmin of a constant row`);
        // reducing dim 0 of a contiguous [n, 2]: down the columns (colreduce.hip; segments for long ones)
        const cols = Tensor.full([n, 2], 3, { dtype, device: dev });
        assert.equal(await nums(cols.argmax(0)), [0, 0], `${dtype} n=${n}: argmax down the columns`);
        assert.equal(await nums(cols.argmin(0)), [0, 0], `${dtype} n=${n}: argmin down the columns`);
      }
    }
  },
  'argmin/argmax: the first index wins at every scale',
);

s.opTest(
  'max',
  async (dev) => {
    for (const dtype of FLOATS) {
      // column 1 has NaNs at rows 5 and 9, the others none; long columns split into segments
      for (const n of [16, 40000]) {
        const vals = Array.from({ length: 3 * n }, (_, i) => ((i * 7919) % 13) - 6);
        vals[5 * 3 + 1] = NaN;
        vals[9 * 3 + 1] = NaN;
        const x = cpuFrom(vals, [n, 3], dtype).to(dev);
        const mx = await nums(x.max(0)),
          mn = await nums(x.min(0));
        const amx = await nums(x.argmax(0)),
          amn = await nums(x.argmin(0));
        assert.ok(
          Number.isNaN(mx[1]!) && Number.isNaN(mn[1]!),
          `${dtype} n=${n}: min/max of a column with NaN: ${mn[1]}, ${mx[1]}`,
        );
        assert.equal([amx[1], amn[1]], [5, 5], `${dtype} n=${n}: argmax/argmin down a column take the first NaN`);
        const col0 = vals.filter((_, i) => i % 3 === 0);
        assert.equal([mx[0], mn[0]], [6, -6], `${dtype} n=${n}: column without NaN`);
        assert.equal(
          [amx[0], amn[0]],
          [col0.indexOf(6), col0.indexOf(-6)],
          `${dtype} n=${n}: first index among equals down a column`,
        );
      }
    }
  },
  'down columns: NaN propagates in min/max and wins argmin/argmax; first index among ties',
);

s.opTest(
  'sum',
  async (dev) => {
    // a column sum split into segments folds its partials in a fixed order: the same bits twice
    for (const dtype of ['f32', 'bf16'] as DType[]) {
      const x = randT([20000, 300], dtype, -3, 3).to(dev);
      const a = await x.sum(0).toArray(),
        b = await x.sum(0).toArray();
      assert.equal(Array.from(a, Number), Array.from(b, Number), `${dtype}: two column sums differ`);
    }
  },
  'sum down columns is deterministic',
);

s.opTest(
  'sum',
  async (dev) => {
    // -inf and +inf make NaN; an empty run sums to 0 and averages to NaN
    const x = cpuFrom([1, -Infinity, Infinity, 2, 3, 4], [2, 3], 'f32').to(dev);
    const r = await nums(x.sum(1));
    assert.ok(Number.isNaN(r[0]!), `inf - inf: ${r[0]}`);
    assert.is(r[1], 9);
    const e = Tensor.zeros([3, 0], { device: dev });
    assert.equal(await nums(e.sum(1)), [0, 0, 0]);
    assert.ok((await nums(e.mean(1))).every(Number.isNaN), 'mean of an empty run is NaN');
  },
  'sum: infinities, empty runs',
);

s.run();
