// argsort and sort on the GPU (hip-src/sort.hip) against the CPU reference, exactly: every
// dtype and layout, on each path: short rows (the bitonic kernel, up to 256), rows of one radix
// block (257 to 4096: every tile size, 1 to 16 items a thread), long rows (tiles of 4096, or
// 2048 for 64-bit keys, a pass per 8-bit digit: 1 for u8, 2 for f16/bf16, 4, 8 for f64/i64;
// the tiles' offsets by a decoupled look-back, rows of few values whose passes over one digit
// move nothing),
// the last, first and middle dims, descending, many ties (the order among equals must be the
// index order). Then NaN placement, -0 against +0, full 64-bit i64 keys, a vocabulary row and
// rows of 2^20, and the empty and 0-d cases, value by value.
import { gpuSuite, checkOp, LAYOUTS, ALL_DTYPES, FLOAT_DTYPES, cpuFrom, type LayoutKind } from './harness.ts';
import * as assert from 'uvu/assert';
import { Tensor } from '../../src/index.ts';
import { tiedValues } from '../helpers.ts';

const s = gpuSuite('gpu/sort');

interface Variant {
  readonly name: string;
  readonly shape: number[];
  readonly dim: number;
  readonly spread: number;
  readonly layouts?: readonly LayoutKind[];
}
const BIG: readonly LayoutKind[] = ['contiguous', 'transposed', 'offset'];
const VARIANTS: readonly Variant[] = [
  { name: 'last dim of [6, 37], ties', shape: [6, 37], dim: -1, spread: 16 },
  { name: 'first dim of [37, 6], ties', shape: [37, 6], dim: 0, spread: 16 },
  { name: 'middle dim of [3, 50, 4]', shape: [3, 50, 4], dim: 1, spread: 1000 },
  { name: 'rows of 1 and 2', shape: [5, 2], dim: -1, spread: 4 },
  { name: 'dim of size 1', shape: [7, 1], dim: -1, spread: 4 },
  { name: '1-d [300]', shape: [300], dim: 0, spread: 64 },
  { name: 'many short rows [700, 9]', shape: [700, 9], dim: -1, spread: 8 },
  { name: 'bitonic at its limit [5, 256]', shape: [5, 256], dim: -1, spread: 40 },
  // one radix block a row, 2, 4, 8 and 16 items a thread (64-bit keys past 2048 take the long
  // path on devices with 48 KiB of shared memory a block)
  { name: 'radix rows [4, 257]', shape: [4, 257], dim: -1, spread: 30, layouts: BIG },
  { name: 'radix rows [3, 1000]', shape: [3, 1000], dim: -1, spread: 60 },
  { name: 'radix rows [3, 2048]', shape: [3, 2048], dim: -1, spread: 100, layouts: BIG },
  { name: 'radix rows [2, 4096]', shape: [2, 4096], dim: -1, spread: 5000, layouts: BIG },
  { name: 'radix rows of dim 0 [600, 5]', shape: [600, 5], dim: 0, spread: 50, layouts: BIG },
  // long rows: several tiles, the last one partial
  { name: 'long rows [2, 5000]', shape: [2, 5000], dim: -1, spread: 300, layouts: BIG },
  { name: 'long columns [4100, 3] dim 0', shape: [4100, 3], dim: 0, spread: 100000, layouts: BIG },
  { name: 'one long row [1, 70000]', shape: [1, 70000], dim: -1, spread: 1000, layouts: ['contiguous'] },
  { name: 'a vocabulary row [2, 128256]', shape: [2, 128256], dim: -1, spread: 20000, layouts: ['contiguous'] },
  // long rows of three values: digit passes where the whole row holds one digit (copied in place)
  {
    name: 'long rows of 3 values [3, 20000]',
    shape: [3, 20000],
    dim: -1,
    spread: 3,
    layouts: ['contiguous', 'offset'],
  },
];

for (const op of ['argsort', 'sort'] as const) {
  s.opTest(op, async () => {
    for (const v of VARIANTS) {
      for (const descending of [false, true]) {
        const variant = `${v.name}${descending ? ', descending' : ''}`;
        const run = ([x]: Tensor[]) =>
          op === 'argsort' ? x!.argsort(v.dim, { descending }) : x!.sort(v.dim, { descending }).indices;
        await checkOp(op, ALL_DTYPES, v.layouts ?? LAYOUTS, (d) => [tiedValues(v.shape, d, v.spread)], run, {
          variant,
          tol: 0,
        });
        if (op === 'sort') {
          await checkOp(
            op,
            ALL_DTYPES,
            v.layouts ?? LAYOUTS,
            (d) => [tiedValues(v.shape, d, v.spread)],
            ([x]) => x!.sort(v.dim, { descending }).values,
            { variant: `${variant}, values`, tol: 0 },
          );
        }
      }
    }
  });
}

// ---- NaN, signed zeros, 64-bit keys, value by value -----------------------------------------

async function nums(t: Tensor): Promise<number[]> {
  return Array.from(await t.toArray(), Number);
}

s.opTest(
  'sort',
  async (dev) => {
    for (const dtype of FLOAT_DTYPES) {
      // short rows (one launch) and long ones (global merge): NaN last ascending, first descending,
      // NaNs among themselves and -0 / +0 in index order
      for (const n of [11, 1000, 6000]) {
        const vals = Array.from({ length: n }, (_, i) => ((i * 7919) % 13) - 6);
        for (const i of [1, 4, n - 1]) vals[i] = NaN;
        vals[2] = -0;
        vals[5] = 0;
        vals[7] = -0;
        vals[8] = Infinity;
        vals[9] = -Infinity;
        const cpu = cpuFrom(vals, [n], dtype);
        const x = cpu.to(dev);
        for (const descending of [false, true]) {
          const want = cpu.sort(0, { descending }),
            got = x.sort(0, { descending });
          const what = `${dtype} n=${n}${descending ? ' descending' : ''}`;
          assert.equal(await nums(got.indices), await nums(want.indices), `${what}: indices`);
          const gv = await nums(got.values),
            wv = await nums(want.values);
          // Object.is: NaN equals NaN, -0 differs from +0
          assert.ok(
            gv.every((a, i) => Object.is(a, wv[i]!)),
            `${what}: values ${gv.slice(0, 12).join(', ')}, expected ${wv.slice(0, 12).join(', ')}`,
          );
          const nan = descending ? gv.slice(0, 3) : gv.slice(n - 3);
          assert.ok(nan.every(Number.isNaN), `${what}: the NaNs go ${descending ? 'first' : 'last'}`);
          // -0 keeps its sign: values are the input elements, gathered by index
          assert.ok(
            gv.some((a) => Object.is(a, -0)),
            `${what}: -0 survives`,
          );
        }
      }
    }
  },
  'sort: NaN placement, -0 and +0 tie in index order, infinities, on each path',
);

s.opTest(
  'argsort',
  async (dev) => {
    // keys beyond 2^53 and of both signs: compared as signed 64-bit integers
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
    for (const n of [big.length, 1000, 5000]) {
      const data = new BigInt64Array(n);
      for (let i = 0; i < n; i++) data[i] = big[i % big.length]! + (i < big.length ? 0n : BigInt(i % 3));
      const cpu = Tensor.from(data, { dtype: 'i64' });
      const x = cpu.to(dev);
      for (const descending of [false, true]) {
        assert.equal(
          await nums(x.argsort(0, { descending })),
          await nums(cpu.argsort(0, { descending })),
          `i64 n=${n}${descending ? ' descending' : ''}`,
        );
      }
    }
    // u32 keys at the top of the range, where a signed compare would go wrong
    const u = cpuFrom([0xffffffff, 0, 0x80000000, 0x7fffffff, 0xffffffff, 1], [6], 'u32');
    assert.equal(await nums(u.to(dev).argsort()), [1, 5, 3, 2, 0, 4]);
  },
  'argsort: full-range i64 and u32 keys',
);

s.opTest(
  'argsort',
  async (dev) => {
    // rows of 2^20: 256 tiles a row; f32 (4 passes, ping-pong workspaces) and bf16 (2 passes)
    for (const [dtype, descending] of [
      ['f32', false],
      ['bf16', true],
    ] as const) {
      const cpu = tiedValues([8, 1 << 20], dtype, 1 << 20);
      const got = cpu.to(dev).argsort(-1, { descending });
      const want = cpu.argsort(-1, { descending });
      const a = await got.toArray(),
        b = want.toArraySync();
      let bad = -1;
      for (let i = 0; i < b.length && bad < 0; i++) if (a[i] !== b[i]) bad = i;
      assert.is(
        bad,
        -1,
        `${dtype} [8, 2^20]${descending ? ' descending' : ''}: first difference at ${bad}: got ${a[bad]}, expected ${b[bad]}`,
      );
    }
    // rows of one value: every pass over one digit
    for (const dtype of ALL_DTYPES) {
      const cpu = Tensor.full([2, 9000], 3, { dtype });
      assert.equal(
        await nums(cpu.to(dev).argsort(-1, { descending: true })),
        await nums(cpu.argsort(-1, { descending: true })),
        `${dtype} [2, 9000] of one value`,
      );
    }
  },
  'argsort: rows of 2^20 (256 tiles a row: look-back chains over many blocks), rows of one value',
);

s.opTest(
  'argsort',
  async (dev) => {
    for (const dtype of ALL_DTYPES) {
      const e = Tensor.zeros([3, 0], { dtype, device: dev });
      assert.equal(e.argsort(-1).shape, [3, 0]);
      assert.equal(e.sort(0).values.shape, [3, 0]);
      const scalar = Tensor.full([], 5, { dtype, device: dev });
      const r = scalar.sort();
      assert.equal(await nums(r.indices), [0]);
      assert.equal(await nums(r.values), [5]);
      assert.equal(r.indices.shape, []);
      assert.is(r.indices.dtype, 'u32');
      assert.is(r.values.dtype, dtype);
    }
  },
  'argsort / sort: empty and 0-d tensors',
);

s.run();
