// pagedAttention against the contiguous attention op: several sequences of different query and
// context lengths packed together, shuffled block tables, GQA, sliding windows, every float
// dtype, non-contiguous q and pools, unused pool slots poisoned with NaN; the composed path the
// GPU runs is checked on the CPU the same way. Then the errors.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { Tensor, type DType } from '../../src/index.ts';
import { DTypeError, IndexError, ShapeError, TensorError } from '../../src/core/errors.ts';
import { pagedAttention } from '../../src/ops/attention-paged.ts';
import { composedPagedAttention } from '../../src/ops/attention-paged-composed.ts';
import { assertClose, nums, randT, throwsWith } from '../helpers.ts';

interface Case {
  queryLens: number[];
  contextLens: number[];
  bs: number;
  hq: number;
  hkv: number;
  d: number;
  window: number | null;
}

const CASES: Case[] = [
  { queryLens: [1], contextLens: [1], bs: 4, hq: 2, hkv: 2, d: 8, window: null },
  { queryLens: [5, 1, 1], contextLens: [5, 9, 17], bs: 4, hq: 4, hkv: 2, d: 8, window: null },
  { queryLens: [3, 1, 4], contextLens: [10, 16, 4], bs: 8, hq: 6, hkv: 2, d: 16, window: null },
  { queryLens: [1, 7, 2], contextLens: [12, 7, 30], bs: 4, hq: 4, hkv: 1, d: 4, window: 5 },
  { queryLens: [0, 2, 1], contextLens: [3, 2, 1], bs: 1, hq: 2, hkv: 1, d: 6, window: null },
];

/** pools with the sequences' keys and values in shuffled blocks, NaN everywhere else */
function build(c: Case, dt: DType, seed: number) {
  const seqs = c.queryLens.length;
  const need = c.contextLens.map((n) => Math.ceil(n / c.bs));
  const maxBlocks = Math.max(1, ...need);
  const nBlocks = need.reduce((a, b) => a + b, 0) + 3;
  // a fixed permutation of the block ids, so tables are neither sorted nor contiguous
  const order = Array.from({ length: nBlocks }, (_, i) => (i * 7 + seed) % nBlocks);
  if (new Set(order).size !== nBlocks) order.sort((a, b) => b - a);
  const table = new Uint32Array(seqs * maxBlocks);
  let next = 0;
  const per = c.bs * c.hkv * c.d;
  const kHost = new Float64Array(nBlocks * per).fill(NaN),
    vHost = new Float64Array(nBlocks * per).fill(NaN);
  const ks: Tensor[] = [],
    vs: Tensor[] = [];
  for (let s = 0; s < seqs; s++) {
    const ctx = c.contextLens[s]!;
    for (let i = 0; i < need[s]!; i++) table[s * maxBlocks + i] = order[next++]!;
    const k = randT([1, c.hkv, ctx, c.d], dt),
      v = randT([1, c.hkv, ctx, c.d], dt);
    ks.push(k);
    vs.push(v);
    const kv = nums(k),
      vv = nums(v);
    for (let h = 0; h < c.hkv; h++)
      for (let j = 0; j < ctx; j++) {
        const blk = table[s * maxBlocks + Math.floor(j / c.bs)]!;
        for (let e = 0; e < c.d; e++) {
          const at = ((blk * c.bs + (j % c.bs)) * c.hkv + h) * c.d + e;
          kHost[at] = kv[(h * ctx + j) * c.d + e]!;
          vHost[at] = vv[(h * ctx + j) * c.d + e]!;
        }
      }
  }
  const shape = [nBlocks, c.bs, c.hkv, c.d];
  const pool = (host: Float64Array) => Tensor.from(host, { shape, dtype: 'f64' }).toDtype(dt);
  const t = c.queryLens.reduce((a, b) => a + b, 0);
  const q = randT([t, c.hq, c.d], dt);
  return {
    q,
    kPool: pool(kHost),
    vPool: pool(vHost),
    table: Tensor.from(table, { shape: [seqs, maxBlocks] }),
    ks,
    vs,
  };
}

/** the contiguous attention op, one sequence at a time, packed like pagedAttention's output */
function reference(c: Case, q: Tensor, ks: Tensor[], vs: Tensor[]): number[] {
  const out: number[] = [];
  let row = 0;
  c.queryLens.forEach((tq, s) => {
    if (tq === 0) return;
    const qs = q.narrow(0, row, tq).unsqueeze(0).transpose(1, 2);
    const o = Tensor.scaledDotProductAttention(qs, ks[s]!, vs[s]!, {
      causal: 'bottom-right',
      window: c.window ?? undefined,
    });
    out.push(...nums(o.transpose(1, 2).contiguous()));
    row += tq;
  });
  return out;
}

const opts = (c: Case) => ({ queryLens: c.queryLens, contextLens: c.contextLens, window: c.window });

test('pagedAttention equals the contiguous attention op (every float dtype, GQA, windows, shuffled blocks)', () => {
  for (const dt of ['f64', 'f32', 'f16', 'bf16'] as DType[]) {
    CASES.forEach((c, i) => {
      const b = build(c, dt, i + 1);
      const want = reference(c, b.q, b.ks, b.vs);
      const got = Tensor.wrap(pagedAttention(b.q, b.kPool, b.vPool, b.table, opts(c)));
      assert.equal(got.shape, [b.q.dim(0), c.hq, c.d]);
      assert.is(got.dtype, dt);
      // the same sums in the same order: equal, not just close
      assert.equal(nums(got), want, `${dt} case ${i}`);
    });
  }
});

test('pagedAttention: non-contiguous q and pools, i64 block table', () => {
  const c = CASES[2]!;
  const b = build(c, 'f32', 5);
  const want = reference(c, b.q, b.ks, b.vs);
  // q stored transposed; pools as windows of wider tensors (a head dim with room around it)
  const q = b.q.transpose(0, 1).contiguous().transpose(0, 1);
  const wide = (p: Tensor) => Tensor.cat([p, p.narrow(3, 0, 3)], 3).narrow(3, 0, c.d);
  const kPool = wide(b.kPool),
    vPool = wide(b.vPool);
  assert.not.ok(q.isContiguous() || kPool.isContiguous());
  const table = b.table.toDtype('i64');
  assert.equal(nums(Tensor.wrap(pagedAttention(q, kPool, vPool, table, opts(c)))), want);
  assert.equal(nums(Tensor.wrap(composedPagedAttention(q, kPool, vPool, table, checkedParams(c, kPool)))), want);
});

/** the parameters the op's check hands its backends */
function checkedParams(c: Case, pool: Tensor) {
  return {
    queryLens: c.queryLens,
    contextLens: c.contextLens,
    scale: 1 / Math.sqrt(c.d),
    window: c.window,
    blockSize: pool.dim(1),
  };
}

test('the composed path (what the GPU runs) equals the CPU one', () => {
  for (const dt of ['f32', 'bf16'] as DType[]) {
    CASES.forEach((c, i) => {
      const b = build(c, dt, i + 3);
      const cpu = nums(Tensor.wrap(pagedAttention(b.q, b.kPool, b.vPool, b.table, opts(c))));
      const composed = Tensor.wrap(composedPagedAttention(b.q, b.kPool, b.vPool, b.table, checkedParams(c, b.kPool)));
      assert.equal(composed.shape, [b.q.dim(0), c.hq, c.d]);
      assertClose(nums(composed), cpu, 0, 0, `${dt} case ${i}`);
    });
  }
});

test('pagedAttention: errors name the op, the shapes and the dtypes', () => {
  const c = CASES[1]!;
  const b = build(c, 'f32', 2);
  const run =
    (o: Partial<Parameters<typeof pagedAttention>[4]>, q = b.q, k = b.kPool, table = b.table) =>
    () =>
      pagedAttention(q, k, b.vPool, table, { ...opts(c), ...o });
  throwsWith(run({ queryLens: [5, 1] }), TensorError, 'pagedAttention: queryLens must be 3 integers');
  throwsWith(run({ queryLens: [5, 1, 2] }), ShapeError, 'queryLens add up to 8, q has 7 tokens');
  throwsWith(run({ contextLens: [5, 9, 99] }), ShapeError, 'sequence 2 has 99 tokens', 'holds 5 blocks of 4');
  throwsWith(run({ contextLens: [4, 9, 17] }), ShapeError, 'sequence 0 has 5 queries but only 4 tokens');
  throwsWith(run({ window: 0 }), RangeError, 'window must be a positive integer');
  throwsWith(run({}, b.q.toDtype('f64')), DTypeError, 'pagedAttention');
  throwsWith(run({}, b.q.reshape([7, 2, 16])), ShapeError, 'q and the key pool have different head dims');
  throwsWith(run({}, b.q.narrow(1, 0, 3)), ShapeError, 'query heads 3 are not a multiple of kv heads 2');
  throwsWith(run({}, b.q, b.kPool.narrow(0, 0, 2)), ShapeError, 'same blocks, block size and heads');
  throwsWith(run({}, b.q, b.kPool, b.table.toDtype('f32')), DTypeError, 'block table must be u32 or i64');
  const bad = b.table.contiguous();
  bad.indexSet(Tensor.from([0], { dtype: 'u32' }), Tensor.full([1, bad.dim(1)], 1000, { dtype: 'u32' }), 0);
  throwsWith(run({}, b.q, b.kPool, bad), IndexError, 'sequence 0 names block 1000');
});

test.run();
