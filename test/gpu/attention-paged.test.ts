// pagedAttention on the GPU (composed: the blocks gathered per sequence, then the attention op)
// against the CPU: several sequences of different query and context lengths packed together,
// shuffled block tables, GQA, a sliding window, every float dtype, q and the pools in every layout.
import { gpuSuite, checkOp, LAYOUTS, FLOAT_DTYPES } from './harness.ts';
import { Tensor, type DType } from '../../src/index.ts';
import { pagedAttention } from '../../src/ops/attention-paged.ts';
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
}
const CASES: readonly Case[] = [
  { name: 'decode x3, GQA', queryLens: [1, 1, 1], contextLens: [5, 17, 9], blocks: 12, bs: 4, hq: 8, hkv: 2, d: 32 },
  { name: 'prefill + decode', queryLens: [7, 1], contextLens: [7, 30], blocks: 16, bs: 8, hq: 4, hkv: 4, d: 64 },
  { name: 'chunk after a prefix', queryLens: [5, 2], contextLens: [21, 2], blocks: 10, bs: 4, hq: 4, hkv: 1, d: 16 },
  { name: 'window 6', queryLens: [3, 1], contextLens: [14, 11], blocks: 9, bs: 4, hq: 4, hkv: 2, d: 16, window: 6 },
];

/** a table naming distinct blocks in a shuffled order */
function table(c: Case): Tensor {
  const per = Math.max(...c.contextLens.map((n) => Math.ceil(n / c.bs)));
  const ids = new Uint32Array(c.queryLens.length * per);
  let next = 0;
  c.contextLens.forEach((n, i) => {
    for (let j = 0; j < Math.ceil(n / c.bs); j++) ids[i * per + j] = (next++ * 5 + 3) % c.blocks;
  });
  return Tensor.from(ids, { shape: [c.queryLens.length, per] });
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
        randT([c.blocks, c.bs, c.hkv, c.d], dt),
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

s.run();
