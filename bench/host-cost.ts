// The host cost of GPU ops without the driver: each op queued on a runtime that runs nothing
// (bench/null-runtime.ts), so the time is our TypeScript alone (argument checks, plans, views,
// allocation, tidy, packing arguments), microseconds an op, best of 15 batches. A real launch
// adds the driver's cost on top (about 3 us through koffi on an H200 host). The
// last rows decode with a Llama-3.2-1B-shaped model (bench/host-llm.ts), host time a token.
//   npm run bench:host [-- --filter REGEX]       bun bench/host-cost.ts
import { parseArgs } from 'node:util';
import { Tensor, tidy } from '../src/index.ts';
import { DECODE_LOOP, decodeSteps } from './decode-loop-run.ts';
import { nullDevice } from './null-runtime.ts';
import { llmHostCost } from './host-llm.ts';

const { values: opt } = parseArgs({ options: { filter: { type: 'string' } } });
const filter = opt.filter ? new RegExp(opt.filter, 'i') : null;
const dev = nullDevice();
const { H, FF, LAYERS } = DECODE_LOOP;
const t = (shape: number[]): Tensor => Tensor.empty(shape, 'bf16', dev);
// the decode loop of bench/decode-loop-run.ts: rmsNorm, gate and up GEMVs, silu * mul, down, add
const layers = Array.from({ length: LAYERS }, () => ({
  norm: t([H]),
  gate: t([FF, H]),
  up: t([FF, H]),
  down: t([H, FF]),
}));
const gateUps = layers.map(() => t([2 * FF, H]));
const { step, fusedStep } = decodeSteps(layers, gateUps);
const x = t([1, H]),
  g = t([1, FF]),
  u = t([1, FF]),
  w = t([H]),
  rows = t([8192, H]);
const table = t([50000, H]),
  ids = Tensor.empty([8192], 'u32', dev),
  ids8 = Tensor.empty([1, 8], 'u32', dev),
  logits = t([1, 128256]);
const img = t([32, 256, 56, 56]),
  kern = t([256, 256, 3, 3]),
  small = t([32, 64, 128, 128]);
const q1 = t([1, 32, 1, 128]),
  kc = t([1, 8, 4096, 128]),
  vc = t([1, 8, 4096, 128]);
const cases: [string, number, () => void][] = [
  ['decode step, op by op (56 ops, one tidy)', 56, () => step(x).dispose()],
  ['decode step, fused (16 ops, one tidy)', 16, () => fusedStep(x).dispose()],
  ['rmsNorm [1, 4096]', 1, () => x.rmsNorm(w, 1e-5).dispose()],
  ['matmul [1, 4096] x [14336, 4096]^T', 1, () => x.matmul(layers[0]!.gate.T).dispose()],
  ['silu [1, 14336]', 1, () => g.silu().dispose()],
  ['mul [1, 14336]', 1, () => g.mul(u).dispose()],
  ['add [1, 4096]', 1, () => x.add(x).dispose()],
  ['tidy(() => add [1, 4096])', 1, () => tidy(() => x.add(x)).dispose()],
  ['sum [8192, 4096] over the last dim', 1, () => rows.sum(-1).dispose()],
  ['softmax [8192, 4096]', 1, () => rows.softmax(-1).dispose()],
  ['layerNorm [8192, 4096]', 1, () => rows.layerNorm(w, w, 1e-5).dispose()],
  ['mul [8192, 4096] x [4096]', 1, () => rows.mul(w).dispose()],
  ['indexSelect 8192 rows of [50000, 4096]', 1, () => table.indexSelect(ids, 0).dispose()],
  ['embedding [1, 8] ids', 1, () => Tensor.embedding(ids8, table).dispose()],
  ['cat 2 x [8192, 4096] dim 1', 1, () => Tensor.cat([rows, rows], 1).dispose()],
  ['contiguous() of a transposed [8192, 4096]', 1, () => rows.T.contiguous().dispose()],
  [
    'topk k=50 [1, 128256]',
    1,
    () => {
      const r = logits.topk(50);
      r.values.dispose();
      r.indices.dispose();
    },
  ],
  ['argmax [1, 128256]', 1, () => logits.argmax(-1).dispose()],
  ['conv2d 3x3 [32, 256, 56, 56]', 1, () => img.conv2d(kern, { padding: 1 }).dispose()],
  ['maxPool2d 2x2 [32, 256, 56, 56]', 1, () => img.maxPool2d({ kernel: 2 }).dispose()],
  ['upsampleNearest2d x2 [32, 64, 128, 128]', 1, () => small.upsampleNearest2d(256, 256).dispose()],
  ['attention b1 32/8 heads, q 1, kv 4096, d 128', 1, () => Tensor.scaledDotProductAttention(q1, kc, vc).dispose()],
];
const where = typeof (globalThis as { Bun?: unknown }).Bun !== 'undefined' ? 'bun' : `node ${process.version}`;
console.log(`host cost a call, no driver (${where}; best of 15 batches)`);
for (const [name, ops, run] of cases) {
  if (filter && !filter.test(name)) continue;
  const reps = Math.max(20, Math.round(20000 / ops));
  for (let i = 0; i < reps; i++) run();
  let best = Infinity;
  for (let r = 0; r < 15; r++) {
    const t0 = performance.now();
    for (let i = 0; i < reps; i++) run();
    best = Math.min(best, ((performance.now() - t0) * 1e3) / reps);
  }
  console.log(
    `${name.padEnd(44)} ${best.toFixed(2).padStart(8)} us${ops > 1 ? `  (${(best / ops).toFixed(2)} us an op)` : ''}`,
  );
}
if (!filter || filter.test('llama 1B token')) {
  const { eagerUs, replayUs } = await llmHostCost(dev);
  console.log(`${'llama 1B token, eager (16 layers)'.padEnd(44)} ${eagerUs.toFixed(2).padStart(8)} us`);
  console.log(`${'llama 1B token, decode graph replay'.padEnd(44)} ${replayUs.toFixed(2).padStart(8)} us`);
}
