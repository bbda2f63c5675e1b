// topk on the GPU (hip-src/topk.hip, and the sort path past k = 256) against the CPU reference
// (the first k of the stable sort), exactly: values and indices, every dtype and layout,
// largest and smallest, many ties (the lower index must win), rows of one slice and rows of
// several (levels of candidates: a vocabulary row of 128256, rows of 2^20), many rows, the
// first and middle dims, k = 1, k = cols, k = 256 (the largest the kernel takes) and 257 (the
// sort path). Rows a block streams in several rounds (many rows: a block a row; the benchmark's
// [64, 128256]: slices of 4 rounds on 132 multiprocessors), sorted rows (every later element
// beats the bound, and a round's candidates overflow the append area; or none does) and rows of
// one value. Then NaN (the largest value), -0 against +0, full-range i64 and u32 keys, k = 0,
// and the errors, value by value.
import { gpuSuite, checkOp, LAYOUTS, ALL_DTYPES, FLOAT_DTYPES, cpuFrom, type LayoutKind } from './harness.ts';
import * as assert from 'uvu/assert';
import { Tensor, tidy } from '../../src/index.ts';
import { ShapeError } from '../../src/core/errors.ts';
import { tiedValues } from '../helpers.ts';

const s = gpuSuite('gpu/topk');

interface Variant {
  readonly name: string;
  readonly shape: number[];
  readonly dim: number;
  readonly ks: readonly number[];
  readonly spread: number;
  readonly layouts?: readonly LayoutKind[];
}
const BIG: readonly LayoutKind[] = ['contiguous', 'transposed', 'offset'];
const VARIANTS: readonly Variant[] = [
  { name: '[6, 37]', shape: [6, 37], dim: -1, ks: [1, 5, 37], spread: 12 },
  { name: 'dim 0 of [37, 6]', shape: [37, 6], dim: 0, ks: [3], spread: 12 },
  { name: 'middle dim of [3, 50, 4]', shape: [3, 50, 4], dim: 1, ks: [7], spread: 1000 },
  { name: 'one slice [3, 1000]', shape: [3, 1000], dim: -1, ks: [1, 50, 256, 257], spread: 60, layouts: BIG },
  { name: 'many rows [300, 40]', shape: [300, 40], dim: -1, ks: [8], spread: 30 },
  { name: 'two slices [2, 3000]', shape: [2, 3000], dim: -1, ks: [8, 64], spread: 3000, layouts: BIG },
  { name: 'long columns [5000, 3] dim 0', shape: [5000, 3], dim: 0, ks: [20], spread: 100000, layouts: BIG },
  {
    name: 'a vocabulary [2, 128256]',
    shape: [2, 128256],
    dim: -1,
    ks: [1, 50, 256],
    spread: 40000,
    layouts: ['contiguous', 'offset'],
  },
  { name: 'k = cols past 256 [2, 300]', shape: [2, 300], dim: -1, ks: [300], spread: 50, layouts: ['contiguous'] },
  // rows enough to fill 132 multiprocessors (4 blocks each): a block a row, 2 rounds of 4096
  // (3 of 2048 for 64-bit elements), every row start misaligned (offset: the scalar loads)
  {
    name: 'a block a row, several rounds [600, 5000]',
    shape: [600, 5000],
    dim: -1,
    ks: [20],
    spread: 100000,
    layouts: ['offset'],
  },
];

for (const part of ['indices', 'values'] as const) {
  s.opTest(
    'topk',
    async () => {
      for (const v of VARIANTS) {
        for (const k of v.ks) {
          for (const largest of [true, false]) {
            const variant = `${v.name} k=${k}${largest ? '' : ' smallest'}, ${part}`;
            await checkOp(
              'topk',
              ALL_DTYPES,
              v.layouts ?? LAYOUTS,
              (d) => [tiedValues(v.shape, d, v.spread)],
              ([x]) => x!.topk(k, { dim: v.dim, largest })[part],
              { variant, tol: 0 },
            );
          }
        }
      }
    },
    `topk: ${part} against the CPU, every dtype and layout, one slice and levels of slices, ties`,
  );
}

async function nums(t: Tensor): Promise<number[]> {
  return Array.from(await t.toArray(), Number);
}

s.opTest(
  'topk',
  async (dev) => {
    for (const dtype of FLOAT_DTYPES) {
      // one slice and levels of slices: NaN first for the largest (in index order), absent from
      // the smallest until only NaN is left; -0 and +0 tie in index order
      for (const n of [11, 1000, 9000]) {
        const vals = Array.from({ length: n }, (_, i) => ((i * 7919) % 13) - 6);
        for (const i of [1, 4, n - 1]) vals[i] = NaN;
        vals[2] = -0;
        vals[5] = 0;
        vals[7] = -0;
        vals[8] = Infinity;
        vals[9] = -Infinity;
        const cpu = cpuFrom(vals, [n], dtype);
        const x = cpu.to(dev);
        for (const largest of [true, false]) {
          for (const k of [1, 4, n - 2, n]) {
            if (k > n) continue;
            const want = cpu.topk(k, { largest }),
              got = x.topk(k, { largest });
            const what = `${dtype} n=${n} k=${k}${largest ? '' : ' smallest'}`;
            assert.equal(await nums(got.indices), await nums(want.indices), `${what}: indices`);
            const gv = await nums(got.values),
              wv = await nums(want.values);
            // Object.is: NaN equals NaN, -0 differs from +0
            assert.ok(
              gv.every((a, i) => Object.is(a, wv[i]!)),
              `${what}: values ${gv.slice(0, 8).join(', ')}, expected ${wv.slice(0, 8).join(', ')}`,
            );
            if (largest) assert.ok(gv.slice(0, Math.min(k, 3)).every(Number.isNaN), `${what}: the NaNs come first`);
            else if (k <= n - 3) assert.ok(!gv.some(Number.isNaN), `${what}: no NaN among the smallest`);
          }
        }
      }
    }
  },
  'topk: NaN as the largest value, -0 and +0, infinities, one slice and levels',
);

s.opTest(
  'topk',
  async (dev) => {
    // keys beyond 2^53 and of both signs, and u32 at the top of its range
    const big = [
      2n ** 62n,
      -(2n ** 62n),
      2n ** 62n + 1n,
      -1n,
      0n,
      -(2n ** 63n),
      2n ** 63n - 1n,
      2n ** 62n,
      -(2n ** 62n) - 1n,
    ];
    for (const n of [big.length, 5000]) {
      const data = new BigInt64Array(n);
      for (let i = 0; i < n; i++) data[i] = big[i % big.length]! + (i < big.length ? 0n : BigInt(i % 3));
      const cpu = Tensor.from(data, { dtype: 'i64' });
      const x = cpu.to(dev);
      for (const largest of [true, false]) {
        const k = Math.min(n, 7);
        assert.equal(
          await nums(x.topk(k, { largest }).indices),
          await nums(cpu.topk(k, { largest }).indices),
          `i64 n=${n}${largest ? '' : ' smallest'}`,
        );
      }
    }
    const u = cpuFrom([0xffffffff, 0, 0x80000000, 0x7fffffff, 0xffffffff, 1], [6], 'u32');
    assert.equal(await nums(u.to(dev).topk(3).indices), [0, 4, 2]);
    assert.equal(await nums(u.to(dev).topk(3, { largest: false }).indices), [1, 5, 3]);
  },
  'topk: full-range i64 and u32 keys',
);

s.opTest(
  'topk',
  async (dev) => {
    // rows of 2^20: three levels of candidates
    for (const [dtype, largest] of [
      ['f32', true],
      ['bf16', false],
    ] as const) {
      const cpu = tiedValues([4, 1 << 20], dtype, 1 << 20);
      const x = cpu.to(dev);
      for (const k of [1, 50]) {
        const got = x.topk(k, { largest }),
          want = cpu.topk(k, { largest });
        const what = `${dtype} [4, 2^20] k=${k}${largest ? '' : ' smallest'}`;
        assert.equal(await nums(got.indices), await nums(want.indices), `${what}: indices`);
        assert.equal(await nums(got.values), await nums(want.values), `${what}: values`);
      }
    }
  },
  'topk: rows of 2^20',
);

s.opTest(
  'topk',
  async (dev) => {
    // the benchmark's batch of logits: 8 slices a row of 16032 (4 rounds each) on 132
    // multiprocessors, then 64 rows of 400 candidates
    for (const [dtype, largest] of [
      ['bf16', true],
      ['f32', false],
    ] as const) {
      const cpu = tiedValues([64, 128256], dtype, 1 << 16);
      const x = cpu.to(dev);
      const got = x.topk(50, { largest }),
        want = cpu.topk(50, { largest });
      const what = `${dtype} [64, 128256] k=50${largest ? '' : ' smallest'}`;
      assert.equal(await nums(got.indices), await nums(want.indices), `${what}: indices`);
      assert.equal(await nums(got.values), await nums(want.values), `${what}: values`);
    }
  },
  'topk: the [64, 128256] batch, slices of several rounds',
);

s.opTest(
  'topk',
  async (dev) => {
    // sorted rows: ascending with the largest wanted, each later element beats the bound and every
    // round's candidates overflow the append area (selects between pieces of a round); descending,
    // none passes after the first round; the same for the smallest the other way round. Ties
    // where the dtype rounds (bf16) or the steps are below 1 (u8). A block a row ([600, 20000]:
    // rows enough to fill 132 multiprocessors, 5 rounds a row) and slices ([2, 300000]: 3 levels).
    // Then rows of one value: every element ties.
    for (const dtype of ['f32', 'bf16', 'i64', 'u8'] as const) {
      for (const [rows, cols] of [
        [600, 20000],
        [2, 300000],
      ] as const) {
        for (const descending of [false, true]) {
          const step = dtype === 'u8' ? 255 / cols : 1,
            from = descending ? (dtype === 'u8' ? 255 : cols / 2) : dtype === 'u8' ? 0 : -cols / 2;
          const cpu = tidy(() =>
            Tensor.arange(0, cols, 1, { dtype: 'f64' })
              .affine(descending ? -step : step, from)
              .floor()
              .reshape([1, cols])
              .expand([rows, cols])
              .contiguous()
              .toDtype(dtype),
          );
          const x = cpu.to(dev);
          for (const [largest, k] of [
            [true, 256],
            [false, 37],
          ] as const) {
            const got = x.topk(k, { largest }),
              want = cpu.topk(k, { largest });
            const what = `${dtype} [${rows}, ${cols}] sorted ${descending ? 'descending' : 'ascending'} k=${k}${largest ? '' : ' smallest'}`;
            assert.equal(await nums(got.indices), await nums(want.indices), `${what}: indices`);
            assert.equal(await nums(got.values), await nums(want.values), `${what}: values`);
            got.values.dispose();
            got.indices.dispose();
            want.values.dispose();
            want.indices.dispose();
          }
          cpu.dispose();
          x.dispose();
        }
      }
      const one = Tensor.full([3, 9000], 7, { dtype }),
        g = one.to(dev);
      for (const largest of [true, false]) {
        const got = g.topk(50, { largest }),
          want = one.topk(50, { largest });
        assert.equal(
          await nums(got.indices),
          await nums(want.indices),
          `${dtype} [3, 9000] of one value${largest ? '' : ' smallest'}: indices`,
        );
      }
    }
  },
  'topk: sorted rows and rows of one value (the bound, overflowing rounds, ties)',
);

s.opTest(
  'topk',
  async (dev) => {
    for (const dtype of ALL_DTYPES) {
      const x = tiedValues([3, 5], dtype, 10).to(dev);
      const z = x.topk(0);
      assert.equal(z.values.shape, [3, 0]);
      assert.equal(z.indices.shape, [3, 0]);
      assert.equal(x.topk(0, { dim: 0 }).values.shape, [0, 5]);
      const e = Tensor.zeros([0, 4], { dtype, device: dev }).topk(2);
      assert.equal(e.values.shape, [0, 2]);
      const scalar = Tensor.full([], 5, { dtype, device: dev }).topk(1);
      assert.equal(await nums(scalar.values), [5]);
      assert.equal(await nums(scalar.indices), [0]);
      assert.equal(scalar.values.shape, []);
      assert.is(scalar.indices.dtype, 'u32');
      assert.is(scalar.values.dtype, dtype);
      assert.throws(
        () => x.topk(6),
        (e: unknown) =>
          e instanceof ShapeError && /topk: k = 6 is larger than dim 1 of size 5/.test((e as Error).message),
      );
    }
  },
  'topk: k = 0, empty and 0-d tensors, k past the dim',
);

s.run();
