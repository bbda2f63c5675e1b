// pagedAttention on the GPU (the paged kernel for f32, f16 and bf16; f64 composed: the blocks
// gathered per sequence, then the attention op) against the CPU: several sequences of different
// query and context lengths packed together, shuffled block tables (u32 and i64), block sizes 1
// to 16, GQA, a sliding window, long contexts whose keys split across blocks, every float dtype,
// q and the pools in every layout. Then the kernel and the composed path against each other and
// the CPU, the lengths given as device metadata and replayed from a captured graph with new
// values, a bad block id reported at the next readback, and device metadata refused where the
// GPU composes. The matrix-core decode kernel (pagedAttentionTuning.decode 'matrix') against the
// CPU on its own cases.
import * as assert from 'uvu/assert';
import { gpuSuite, checkOp, compareNorm, thrown, LAYOUTS, FLOAT_DTYPES } from './harness.ts';
import { Tensor, IndexError, TensorError, type DType, type Device } from '../../src/index.ts';
import { pagedAttention, pagedMetadata } from '../../src/ops/attention-paged.ts';
import { pagedAttentionKernel, pagedAttentionTuning } from '../../src/backends/gpu/attention-paged.ts';
import { composedPagedAttention } from '../../src/ops/attention-paged-composed.ts';
import { randT } from '../helpers.ts';

const s = gpuSuite('gpu/attention-paged');

interface Case {
  readonly name: string;
  readonly queryLens: number[];
  readonly contextLens: number[];
  readonly blocks: number;
  readonly bs: number;
  readonly hq: number;
  readonly hkv: number;
  readonly d: number;
  readonly window?: number;
  /** v's head dim, if not d */
  readonly dv?: number;
  readonly i64?: boolean;
}
const CASES: readonly Case[] = [
  { name: 'decode x3, GQA', queryLens: [1, 1, 1], contextLens: [5, 17, 9], blocks: 12, bs: 4, hq: 8, hkv: 2, d: 32 },
  { name: 'prefill + decode', queryLens: [7, 1], contextLens: [7, 30], blocks: 16, bs: 8, hq: 4, hkv: 4, d: 64 },
  { name: 'chunk after a prefix', queryLens: [5, 2], contextLens: [21, 2], blocks: 10, bs: 4, hq: 4, hkv: 1, d: 16 },
  { name: 'window 6', queryLens: [3, 1], contextLens: [14, 11], blocks: 9, bs: 4, hq: 4, hkv: 2, d: 16, window: 6 },
  // more than a chunk of keys (256) a token, split across blocks, with an empty sequence
  {
    name: 'long, split, GQA 4',
    queryLens: [1, 0, 3, 1],
    contextLens: [700, 5, 300, 2],
    blocks: 71,
    bs: 16,
    hq: 8,
    hkv: 2,
    d: 128,
    i64: true,
  },
  {
    name: 'block size 1, group 6',
    queryLens: [2, 1],
    contextLens: [40, 300],
    blocks: 347,
    bs: 1,
    hq: 6,
    hkv: 1,
    d: 80,
  },
  // chunks of more than 16 queries: the matrix-core prefill kernel for f16 and bf16, beside decodes
  {
    name: 'prefill chunks + decodes',
    queryLens: [40, 1, 70, 1],
    contextLens: [100, 50, 70, 3],
    blocks: 17,
    bs: 16,
    hq: 8,
    hkv: 2,
    d: 64,
  },
  // long contexts: the prefill kernel's key loop over many blocks of the table, beside decodes
  {
    name: 'prefill chunks, long contexts, + decodes',
    queryLens: [40, 1, 70, 1],
    contextLens: [600, 50, 1000, 300],
    blocks: 130,
    bs: 16,
    hq: 8,
    hkv: 2,
    d: 128,
  },
  {
    name: 'prefill, window 24, bs 1',
    queryLens: [33, 2],
    contextLens: [60, 9],
    blocks: 71,
    bs: 1,
    hq: 4,
    hkv: 4,
    d: 96,
    window: 24,
  },
  {
    name: 'prefill d 256 (FMA kernel), i64',
    queryLens: [20],
    contextLens: [45],
    blocks: 3,
    bs: 16,
    hq: 2,
    hkv: 1,
    d: 256,
    i64: true,
  },
  {
    name: 'dv 24, window 50',
    queryLens: [4, 1],
    contextLens: [90, 333],
    blocks: 31,
    bs: 16,
    hq: 6,
    hkv: 2,
    d: 40,
    dv: 24,
    window: 50,
  },
];

/** a table naming distinct blocks in a shuffled order */
function table(c: Case): Tensor {
  const per = Math.max(...c.contextLens.map((n) => Math.ceil(n / c.bs)));
  const ids = new Uint32Array(c.queryLens.length * per);
  let next = 0;
  c.contextLens.forEach((n, i) => {
    for (let j = 0; j < Math.ceil(n / c.bs); j++) ids[i * per + j] = (next++ * 5 + 3) % c.blocks;
  });
  const tb = Tensor.from(ids, { shape: [c.queryLens.length, per] });
  if (!c.i64) return tb;
  const wide = tb.toDtype('i64');
  tb.dispose();
  return wide;
}

s.opTest('pagedAttention', async () => {
  for (const c of CASES) {
    const t = c.queryLens.reduce((a, b) => a + b, 0);
    await checkOp(
      'pagedAttention',
      FLOAT_DTYPES,
      LAYOUTS,
      (dt: DType) => [
        randT([t, c.hq, c.d], dt),
        randT([c.blocks, c.bs, c.hkv, c.d], dt),
        randT([c.blocks, c.bs, c.hkv, c.dv ?? c.d], dt),
        table(c),
      ],
      ([q, k, v, tb]) =>
        Tensor.wrap(
          pagedAttention(q!, k!, v!, tb!, { queryLens: c.queryLens, contextLens: c.contextLens, window: c.window }),
        ),
      { variant: c.name, fixed: [3], tol: { f16: 1e-2, bf16: 2e-2 } },
    );
  }
});

const arr = async (t: Tensor): Promise<number[]> => Array.from(await t.toArray(), Number);
const params = (c: Case) => ({
  queryLens: c.queryLens,
  contextLens: c.contextLens,
  scale: 1 / Math.sqrt(c.d),
  window: c.window ?? null,
  blockSize: c.bs,
});

/** a case's random inputs on the CPU and copied to dev, and the CPU's result */
function onBoth(c: Case, dt: DType, dev: Device) {
  const t = c.queryLens.reduce((a, b) => a + b, 0);
  const q = randT([t, c.hq, c.d], dt),
    k = randT([c.blocks, c.bs, c.hkv, c.d], dt),
    v = randT([c.blocks, c.bs, c.hkv, c.dv ?? c.d], dt),
    tb = table(c);
  const [gq, gk, gv, gt] = [q, k, v, tb].map((x) => x.to(dev)) as [Tensor, Tensor, Tensor, Tensor];
  const ref = Tensor.wrap(
    pagedAttention(q, k, v, tb, { queryLens: c.queryLens, contextLens: c.contextLens, window: c.window }),
  );
  return { q, k, v, tb, gq, gk, gv, gt, ref };
}

s.test('pagedAttention: the kernel and the composed path agree with the CPU (f32, f16, bf16)', async (dev) => {
  if (dev.isCpu) return; // ROCM_TENSOR_GPU_TESTS_ON=cpu: these check the GPU's own paths
  for (const c of CASES) {
    for (const dt of ['f32', 'f16', 'bf16'] as const) {
      const { q, k, v, tb, gq, gk, gv, gt, ref } = onBoth(c, dt, dev);
      const kern = Tensor.wrap(pagedAttentionKernel(gq, gk, gv, gt, params(c)));
      const comp = Tensor.wrap(composedPagedAttention(gq, gk, gv, gt, params(c)));
      const want = await arr(ref.toDtype('f64'));
      const tol = dt === 'f32' ? 1e-5 : 2e-2;
      for (const [what, got] of [
        ['kernel', kern],
        ['composed', comp],
      ] as const) {
        const r = compareNorm(await arr(got.toDtype('f64')), want, tol);
        assert.ok(r.ok, `${c.name} ${dt} ${what} vs CPU: ${r.note}`);
      }
      const r = compareNorm(await arr(kern.toDtype('f64')), await arr(comp.toDtype('f64')), tol);
      assert.ok(r.ok, `${c.name} ${dt} kernel vs composed: ${r.note}`);
      for (const x of [q, k, v, tb, gq, gk, gv, gt, ref, kern, comp]) x.dispose();
    }
  }
});

/** where the matrix-core decode kernel takes the short sequences: f16/bf16, head dims to 128 */
const MATRIX_DECODE_CASES: readonly Case[] = [
  // Llama-like groups: one 16-row tile a kv head, contexts of 1, below and past a key block
  {
    name: 'decodes, GQA 4, d 128',
    queryLens: [1, 1, 1, 1, 1],
    contextLens: [1, 15, 300, 64, 129],
    blocks: 41,
    bs: 16,
    hq: 16,
    hkv: 4,
    d: 128,
  },
  // a group of 8 times 3 queries: two row tiles; beside a long chunk (the prefill kernel)
  {
    name: 'chunks of 3 and 16, GQA 8, a long chunk, d 64',
    queryLens: [3, 1, 40, 16],
    contextLens: [40, 900, 60, 16],
    blocks: 72,
    bs: 16,
    hq: 16,
    hkv: 2,
    d: 64,
    i64: true,
  },
  {
    name: 'MHA, window 30, bs 5, d 80',
    queryLens: [1, 4, 1],
    contextLens: [100, 70, 5],
    blocks: 37,
    bs: 5,
    hq: 4,
    hkv: 4,
    d: 80,
    window: 30,
  },
  {
    name: 'GQA 4, window 100, d 100',
    queryLens: [4, 1],
    contextLens: [300, 2000],
    blocks: 151,
    bs: 16,
    hq: 8,
    hkv: 2,
    d: 100,
    window: 100,
  },
];

s.test('pagedAttention: the matrix-core decode kernel agrees with the CPU (f16, bf16)', async (dev) => {
  if (dev.isCpu) return; // ROCM_TENSOR_GPU_TESTS_ON=cpu: these check the GPU's own paths
  const was = pagedAttentionTuning.decode;
  pagedAttentionTuning.decode = 'matrix';
  try {
    for (const c of MATRIX_DECODE_CASES) {
      for (const dt of ['f16', 'bf16'] as const) {
        const { q, k, v, tb, gq, gk, gv, gt, ref } = onBoth(c, dt, dev);
        const kern = Tensor.wrap(pagedAttentionKernel(gq, gk, gv, gt, params(c)));
        const r = compareNorm(await arr(kern.toDtype('f64')), await arr(ref.toDtype('f64')), 2e-2);
        assert.ok(r.ok, `${c.name} ${dt} matrix decode vs CPU: ${r.note}`);
        for (const x of [q, k, v, tb, gq, gk, gv, gt, ref, kern]) x.dispose();
      }
    }
  } finally {
    pagedAttentionTuning.decode = was;
  }
});

s.test('pagedAttention: lengths as device metadata, replayed from a graph with new values', async (dev) => {
  if (dev.isCpu) return; // ROCM_TENSOR_GPU_TESTS_ON=cpu: these check the GPU's own paths
  // a decode batch of 3 sequences; each replay moves every sequence one token on
  const hq = 8,
    hkv = 2,
    d = 64,
    bs = 16,
    blocks = 40,
    maxBlocks = 12;
  const ids = new Uint32Array(3 * maxBlocks);
  for (let i = 0; i < ids.length; i++) ids[i] = (i * 7 + 5) % blocks;
  const tb = Tensor.from(ids, { shape: [3, maxBlocks] });
  const k = randT([blocks, bs, hkv, d], 'bf16'),
    v = randT([blocks, bs, hkv, d], 'bf16'),
    q = randT([3, hq, d], 'bf16');
  const [gq, gk, gv, gt] = [q, k, v, tb].map((x) => x.to(dev)) as [Tensor, Tensor, Tensor, Tensor];
  const queryLens = [1, 1, 1];
  let contextLens = [17, 100, 1];
  const meta = Tensor.from(pagedMetadata(queryLens, contextLens), { device: dev });
  const g = dev.captureGraph(() =>
    Tensor.wrap(pagedAttention(gq, gk, gv, gt, { queryLens, contextLens, metadata: meta })),
  );
  for (let round = 0; round < 3; round++) {
    if (round > 0) {
      contextLens = contextLens.map((n, i) => n + 1 + 20 * i * round);
      dev.upload(meta.storage.ptrAt(0), pagedMetadata(queryLens, contextLens));
    }
    g.replay();
    const ref = Tensor.wrap(pagedAttention(q, k, v, tb, { queryLens, contextLens }));
    const eager = Tensor.wrap(pagedAttention(gq, gk, gv, gt, { queryLens, contextLens }));
    const want = await arr(ref.toDtype('f64'));
    const r = compareNorm(await arr(g.outputs.toDtype('f64')), want, 2e-2);
    assert.ok(r.ok, `round ${round} (contexts ${contextLens.join(', ')}), replay vs CPU: ${r.note}`);
    // the graph keeps the key splits of its capture's lengths, the eager call picks its own: the
    // sums' order differs, by a rounding of the output at most
    const same = compareNorm(await arr(g.outputs.toDtype('f64')), await arr(eager.toDtype('f64')), 1e-2);
    assert.ok(same.ok, `round ${round}: replay vs eager: ${same.note}`);
    ref.dispose();
    eager.dispose();
  }
  g.dispose();
  for (const x of [q, k, v, tb, gq, gk, gv, gt, meta]) x.dispose();
});

s.test('pagedAttention: a block id past the pools is an IndexError at the next readback', async (dev) => {
  if (dev.isCpu) return; // ROCM_TENSOR_GPU_TESTS_ON=cpu: these check the GPU's own paths
  const tb = Tensor.from(new Uint32Array([0, 1, 2, 9]), { shape: [2, 2], device: dev });
  const k = randT([4, 4, 1, 16], 'f32', -1, 1, dev),
    v = randT([4, 4, 1, 16], 'f32', -1, 1, dev),
    q = randT([2, 2, 16], 'f32', -1, 1, dev);
  const o = Tensor.wrap(pagedAttention(q, k, v, tb, { queryLens: [1, 1], contextLens: [8, 6] }));
  let err: unknown = null;
  try {
    await o.toArray();
  } catch (e) {
    err = e;
  }
  assert.ok(err instanceof IndexError, `expected an IndexError, got ${String(err)}`);
  assert.match(String((err as Error).message), /pagedAttention: id 9 at position \[1, 1\]/);
  for (const x of [tb, k, v, q, o]) x.dispose();
});

s.test('pagedAttention: device metadata is refused where the GPU composes (f64)', (dev) => {
  if (dev.isCpu) return; // ROCM_TENSOR_GPU_TESTS_ON=cpu: these check the GPU's own paths
  const tb = Tensor.from(new Uint32Array([0, 1]), { shape: [1, 2], device: dev });
  const k = randT([2, 4, 1, 16], 'f64', -1, 1, dev),
    v = randT([2, 4, 1, 16], 'f64', -1, 1, dev),
    q = randT([1, 2, 16], 'f64', -1, 1, dev);
  const meta = Tensor.from(pagedMetadata([1], [6]), { device: dev });
  const e = thrown(
    () => pagedAttention(q, k, v, tb, { queryLens: [1], contextLens: [6], metadata: meta }),
    'f64 with metadata',
  );
  assert.ok(e instanceof TensorError && /device metadata needs the paged kernel/.test(e.message), e.message);
  for (const x of [tb, k, v, q, meta]) x.dispose();
});

s.run();
