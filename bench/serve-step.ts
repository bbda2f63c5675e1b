// npm run bench:serve-step -- --model DIR [--device D] [--dtype bf16] [--decode fma,matrix] [--json PATH]
// npm run bench:serve-step -- --device null
//
// Where a serving step's time goes. The engine runs one forwardPaged a step over every running
// sequence (decode tokens, and prompt chunks while prompts are read); this times such steps at
// Llama shapes part by part, each part over every layer between device synchronizes: the whole
// step, paged attention, the KV writes, and the block's linear layers (q/k/v, output, gate/up,
// down); the rest (norms, rotary, embedding, the head, host gaps) is the difference. The steps:
// decode tokens of sequences with 1024 cached tokens, alone and with a 512-token prompt chunk,
// and a chunk alone. --device null runs Llama-3.1-8B's shapes with empty weights on the runtime
// that runs nothing (bench/null-runtime.ts): the figures are then our host time alone.
// --decode: the paged decode kernels to time (pagedAttentionTuning.decode), each over every step.
// JSON to bench/results/<date>-<gpu>-serve-step.json unless --json says where (not for null).
import { parseArgs } from 'node:util';
import { Device, Tensor, pagedAttentionTuning } from '../src/index.ts';
import type { DType } from '../src/core/dtype.ts';
import type { LlamaModel } from '../src/models/llama.ts';
import { PretrainedLlama } from '../src/models/pretrained.ts';
import { PagedKVCache } from '../src/nn/paged-kv-cache.ts';
import type { PagedStep } from '../src/nn/paged-attention.ts';
import { pagedAttention } from '../src/ops/attention-paged.ts';
import { LLAMA_8B, emptyLlama } from './host-llm.ts';
import { nullDevice } from './null-runtime.ts';
import { defaultResultsPath, writeResults } from './results-path.ts';

const { values: opt } = parseArgs({
  options: {
    model: { type: 'string' },
    device: { type: 'string' },
    dtype: { type: 'string' },
    blocks: { type: 'string', default: '20000' },
    decode: { type: 'string', default: 'fma' },
    json: { type: 'string' },
  },
});
const decodeKernels = opt.decode.split(',').filter(Boolean);
for (const k of decodeKernels)
  if (k !== 'fma' && k !== 'matrix')
    throw new Error(`bench:serve-step: --decode takes fma and matrix (comma-separated), got ${opt.decode}`);
const onNull = opt.device === 'null';
if (!onNull && !opt.model)
  throw new Error('bench:serve-step: give --model DIR (a Llama-family folder) or --device null');
const model: LlamaModel = onNull
  ? await emptyLlama(nullDevice(), LLAMA_8B)
  : (
      await PretrainedLlama.load(opt.model!, {
        device: opt.device ? Device.parse(opt.device) : Device.best(),
        ...(opt.dtype ? { dtype: opt.dtype as DType } : {}),
        onWarning: () => undefined,
      })
    ).model;
const dev = model.device;
const c = model.config;
const BS = 16;
const blocks = Number(opt.blocks);
const cache = new PagedKVCache(
  { layers: c.layers, blocks, blockSize: BS, kvHeads: c.kvHeads, headDim: c.headDim },
  dev,
  model.dtype,
);
model.rope.reserve(4096);
/** the block's projections (LlamaModel keeps its blocks to itself: a benchmark reaches in) */
type Proj = { forward(x: Tensor, o?: { act?: 'swiglu' }): Tensor; outFeatures: number; inFeatures: number };
const layers = (model as unknown as { blocks: { attn: { qkv: Proj; out: Proj }; mlp: { gateUp: Proj; down: Proj } }[] })
  .blocks;

/** ms a call, over `n` calls after one, between synchronizes */
function time(f: () => void, n: number): number {
  f();
  dev.synchronize();
  const t0 = performance.now();
  for (let i = 0; i < n; i++) f();
  dev.synchronize();
  return (performance.now() - t0) / n;
}

interface StepCase {
  readonly decodes: number;
  readonly chunk: number;
}
const CASES: StepCase[] = [
  { decodes: 1, chunk: 0 },
  { decodes: 64, chunk: 0 },
  { decodes: 256, chunk: 0 },
  { decodes: 0, chunk: 512 },
  { decodes: 16, chunk: 512 },
  { decodes: 64, chunk: 512 },
  { decodes: 256, chunk: 512 },
];
const CTX = 1024;
const rows: Record<string, number | string>[] = [];
console.log(
  `bench:serve-step on ${dev} (${onNull ? 'null runtime: host time alone' : dev.runtime.info.name}), ${c.layers} layers, ${model.dtype}`,
);
for (const kernel of decodeKernels)
  for (const { decodes, chunk } of CASES) {
    pagedAttentionTuning.decode = kernel as 'fma' | 'matrix';
    const seqs = decodes + (chunk ? 1 : 0);
    const maxBlocks = Math.ceil(CTX / BS);
    const table = new Uint32Array(seqs * maxBlocks);
    const ids: number[] = [],
      pos: number[] = [],
      slots: number[] = [],
      queryLens: number[] = [],
      contextLens: number[] = [];
    let next = 0;
    for (let s = 0; s < seqs; s++) {
      const q = s < decodes ? 1 : chunk;
      for (let b = 0; b < maxBlocks; b++) table[s * maxBlocks + b] = next++ % blocks;
      for (let p = CTX - q; p < CTX; p++) {
        ids.push((p * 7919 + s) % c.vocabSize);
        pos.push(p);
        slots.push(table[s * maxBlocks + Math.floor(p / BS)]! * BS + (p % BS));
      }
      queryLens.push(q);
      contextLens.push(CTX);
    }
    const t = ids.length;
    const up = (a: ArrayLike<number>, shape?: number[]) =>
      Tensor.from(Uint32Array.from(a), { device: dev, ...(shape ? { shape } : {}) });
    const step: PagedStep = { slots: up(slots), blockTable: up(table, [seqs, maxBlocks]), queryLens, contextLens };
    const idsT = up(ids),
      posT = up(pos),
      rowsT = up(Array.from({ length: seqs }, (_, i) => i));
    const q = Tensor.randn([t, c.heads, c.headDim], { seed: 1, device: dev, dtype: model.dtype });
    const k = Tensor.randn([t, c.kvHeads, c.headDim], { seed: 2, device: dev, dtype: model.dtype });
    const x = Tensor.randn([1, t, c.hiddenSize], { seed: 3, device: dev, dtype: model.dtype });
    const whole = time(() => model.forwardPaged(idsT, posT, cache, step, rowsT).dispose(), 10);
    const attention = time(() => {
      for (let l = 0; l < c.layers; l++)
        Tensor.wrap(
          pagedAttention(q, cache.keys[l]!, cache.values[l]!, step.blockTable, { queryLens, contextLens }),
        ).dispose();
    }, 5);
    const kvWrite = time(() => {
      for (let l = 0; l < c.layers; l++) cache.write(l, k, k, step.slots);
    }, 5);
    const linears = time(() => {
      for (const b of layers) {
        b.attn.qkv.forward(x).dispose();
        b.attn.out.forward(x).dispose();
        const h = b.mlp.gateUp.forward(x, { act: 'swiglu' });
        b.mlp.down.forward(h).dispose();
        h.dispose();
      }
    }, 5);
    const flops = layers.reduce(
      (a, b) =>
        a +
        2 *
          t *
          [b.attn.qkv, b.attn.out, b.mlp.gateUp, b.mlp.down].reduce((s, p) => s + p.inFeatures * p.outFeatures, 0),
      0,
    );
    const what = `${decodes} decode${decodes === 1 ? '' : 's'}${chunk ? ` + a ${chunk}-token chunk` : ''} (${t} tokens)`;
    const row = {
      step: what,
      decodeKernel: kernel,
      tokens: t,
      wholeMs: whole,
      attentionMs: attention,
      kvWriteMs: kvWrite,
      linearsMs: linears,
      restMs: whole - attention - kvWrite - linears,
      linearTflops: flops / (linears / 1e3) / 1e12,
    };
    rows.push(row);
    const f = (v: number) => v.toFixed(2).padStart(7);
    console.log(
      `  ${kernel.padEnd(6)} ${what.padEnd(44)} step ${f(whole)} ms | attention ${f(attention)} | KV writes ${f(kvWrite)} | linears ${f(linears)} (${row.linearTflops.toFixed(0)} TFLOP/s) | rest ${f(row.restMs)}`,
    );
    for (const z of [q, k, x, idsT, posT, rowsT, step.slots, step.blockTable]) z.dispose();
  }
if (!onNull) {
  const path = opt.json ?? defaultResultsPath(dev.runtime.info.name, 'serve-step');
  const at = writeResults(path, {
    bench: 'serve-step',
    date: new Date().toISOString(),
    gpu: dev.runtime.info.name,
    model: opt.model,
    dtype: model.dtype,
    contextTokens: CTX,
    blockSize: BS,
    rows,
  });
  console.log(`wrote ${at}`);
}
cache.dispose();
model.dispose();
