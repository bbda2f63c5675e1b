// npm run bench:decode-attention -- [--bpm 2,3,4,6] [--groups 1,2]
// Decode attention at decode shapes (bf16, one query, causal bottom-right) on the GPU: the
// matrix-core kernel (flash.hip flash_dec, what scaledDotProductAttention takes) against the FMA
// kernel (attention.hip attn_decode), each with the merge where it splits the keys. Two times a
// case: GPU time between events around one call (host launch included where the host is the
// slower side), and per call in a captured graph of 20 calls, which is what a replayed decode step
// sees. --bpm also times flash_dec at other blocks-a-multiprocessor aims, --groups with that many
// warp groups a block (NVIDIA; 1: a block a split, merged by the second kernel). Outputs are checked
// against the FMA kernel's.
import { parseArgs } from 'node:util';
import { Tensor, Device } from '../src/index.ts';
import { flashDecode } from '../src/backends/gpu/flash.ts';
import { attentionKernel } from '../src/backends/gpu/attention.ts';
import { measureCopyGBs } from './ours.ts';
import { timeGpu } from './timing.ts';
import { setsFor, timingRules } from './cases.ts';

const { values: opt } = parseArgs({
  options: { bpm: { type: 'string', default: '' }, groups: { type: 'string', default: '' } },
});
const dev = Device.bestGpu();
if (!dev) throw new Error('bench:decode-attention: no GPU (no CUDA or ROCm device found)');
const copy = measureCopyGBs(dev);
console.log(`${dev.runtime.info.name}: copy ceiling ${copy.toFixed(0)} GB/s`);
const rules = timingRules(false);
const GRAPH_CALLS = 20;
type Fn = (q: Tensor, k: Tensor, v: Tensor) => Tensor;
// b, query heads, kv heads, keys, head dim
const SHAPES: [number, number, number, number, number][] = [
  [1, 32, 8, 200, 64],
  [1, 32, 8, 1000, 64],
  [1, 32, 8, 4096, 128],
  [1, 32, 8, 32768, 128],
  [1, 32, 8, 200, 128],
  [4, 32, 8, 2048, 128],
];
for (const [b, hq, hkv, tk, d] of SHAPES) {
  const kvBytes = 2 * b * hkv * tk * d * 2;
  // input sets rotate past the last-level cache
  const sets = setsFor(kvBytes);
  const ins = Array.from(
    { length: sets },
    () =>
      [
        Tensor.rand([b, hq, 1, d], { dtype: 'bf16', device: dev }),
        Tensor.rand([b, hkv, tk, d], { dtype: 'bf16', device: dev }),
        Tensor.rand([b, hkv, tk, d], { dtype: 'bf16', device: dev }),
      ] as const,
  );
  const p = { scale: 1 / Math.sqrt(d), diag: tk - 1, window: null, mask: null, outShape: [b, hq, 1, d] };
  const [q0, k0, v0] = ins[0]!;
  const ref = Array.from(await Tensor.wrap(attentionKernel(q0, k0, v0, p)).toArray(), Number);
  const fns: [string, Fn][] = [
    ['attn_decode (FMA)', (q, k, v) => Tensor.wrap(attentionKernel(q, k, v, p))],
    ['flash_dec', (q, k, v) => Tensor.wrap(flashDecode(q, k, v, p))],
  ];
  for (const bpm of opt.bpm.split(',').filter(Boolean).map(Number))
    fns.push([
      `flash_dec, ${bpm} a multiprocessor`,
      (q, k, v) => Tensor.wrap(flashDecode(q, k, v, p, { blocksPerMp: bpm })),
    ]);
  for (const groups of opt.groups.split(',').filter(Boolean).map(Number))
    fns.push([`flash_dec, ${groups} groups a block`, (q, k, v) => Tensor.wrap(flashDecode(q, k, v, p, { groups }))]);
  for (const [name, f] of fns) {
    const got = Array.from(await f(q0, k0, v0).toArray(), Number);
    let diff = 0;
    for (let i = 0; i < got.length; i++)
      diff = Number.isNaN(got[i]!) ? Infinity : Math.max(diff, Math.abs(got[i]! - ref[i]!));
    const t = timeGpu(dev, rules, (i) => {
      const [q, k, v] = ins[i % sets]!;
      f(q, k, v).dispose();
    });
    const g = dev.captureGraph(() => Array.from({ length: GRAPH_CALLS }, () => f(q0, k0, v0)));
    const tg = timeGpu(dev, rules, () => g.replay());
    g.dispose();
    const pct = (ms: number): string => `${((kvBytes / (ms / 1e3) / 1e9 / copy) * 100).toFixed(0)}%`;
    console.log(
      `b${b} ${hq}/${hkv} heads, ${tk} keys, d ${d}  ${name.padEnd(32)} one call ${(t.medianMs * 1e3).toFixed(2).padStart(7)} us (${pct(t.medianMs)})` +
        `  in a graph ${((tg.medianMs * 1e3) / GRAPH_CALLS).toFixed(2).padStart(7)} us (${pct(tg.medianMs / GRAPH_CALLS)})  max |diff| ${diff.toExponential(1)}`,
    );
  }
  for (const set of ins) for (const t of set) t.dispose();
}
