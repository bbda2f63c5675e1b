// npm run bench:paged-attention -- [--small]
//
// One layer's paged attention at a Llama-3.1-8B's shapes (32 query heads, 8 kv heads, head dim
// 128, bf16, blocks of 16): decode steps (one query a sequence) and prefill chunks, through the
// op as the serving engine calls it and through the composed path (a gather of each sequence's
// blocks, then the attention op), milliseconds a call. --small: tiny shapes (the CPU, f32).
import { parseArgs } from 'node:util';
import { Device, Tensor } from '../src/index.ts';
import { pagedAttention } from '../src/ops/attention-paged.ts';
import { composedPagedAttention } from '../src/ops/attention-paged-composed.ts';

const { values: opt } = parseArgs({ options: { small: { type: 'boolean', default: false } } });
const dev = Device.bestGpu() ?? Device.cpu();
const small = opt.small || dev.isCpu;
const dtype = small ? 'f32' : 'bf16';
const [hq, hkv, d, bs] = small ? [4, 2, 16, 4] : [32, 8, 128, 16];
const nb = small ? 64 : 8192;
const CASES: readonly (readonly [number, number, number])[] = small
  ? [
      [1, 1, 32],
      [2, 8, 32],
    ]
  : [
      [1, 1, 2048],
      [16, 1, 2048],
      [64, 1, 1024],
      [1, 512, 1024],
      [4, 512, 2048],
    ];
const kp = Tensor.randn([nb, bs, hkv, d], { seed: 1, device: dev, dtype });
const vp = Tensor.randn([nb, bs, hkv, d], { seed: 2, device: dev, dtype });

function time(f: () => Tensor, n: number): number {
  f().dispose();
  dev.synchronize();
  const t0 = performance.now();
  for (let i = 0; i < n; i++) f().dispose();
  dev.synchronize();
  return (performance.now() - t0) / n;
}

console.log(`bench:paged-attention on ${dev}: hq ${hq}, hkv ${hkv}, d ${d}, ${dtype}, blocks of ${bs}`);
for (const [seqs, qlen, ctx] of CASES) {
  const mb = Math.ceil(ctx / bs);
  // each sequence's blocks spread over the pool
  const ids = Uint32Array.from({ length: seqs * mb }, (_, i) => (i * 7919) % nb);
  const table = Tensor.from(ids, { shape: [seqs, mb], device: dev });
  const q = Tensor.randn([seqs * qlen, hq, d], { seed: 3, device: dev, dtype });
  const lens = { queryLens: Array<number>(seqs).fill(qlen), contextLens: Array<number>(seqs).fill(ctx) };
  const op = time(() => Tensor.wrap(pagedAttention(q, kp, vp, table, lens)), small ? 3 : 20);
  const composed = time(
    () =>
      Tensor.wrap(
        composedPagedAttention(q, kp, vp, table, { ...lens, scale: 1 / Math.sqrt(d), window: null, blockSize: bs }),
      ),
    small ? 3 : 5,
  );
  console.log(
    `  ${seqs} sequences x ${qlen} queries, context ${ctx}: op ${op.toFixed(3)} ms, composed ${composed.toFixed(3)} ms`,
  );
  q.dispose();
  table.dispose();
}
kp.dispose();
vp.dispose();
