// The serving engine's decode graphs on the GPU: a bucket's replays give the logits of the eager
// paged step (batches padded to their bucket, buckets replayed with new tokens, slots, blocks
// and lengths), and concurrent greedy requests through an engine with decodeGraphs equal
// one-sequence generation, for a grouped-query and a sliding-window model in f32.
import { gpuSuite } from './harness.ts';
import * as assert from 'uvu/assert';
import { Tensor } from '../../src/index.ts';
import type { Device } from '../../src/device/device.ts';
import { LlamaModel } from '../../src/models/llama.ts';
import { parseLlamaConfig } from '../../src/models/llama-config.ts';
import { generateIds } from '../../src/models/generate.ts';
import { MemoryWeights } from '../../src/nn/weights.ts';
import { PagedKVCache } from '../../src/nn/paged-kv-cache.ts';
import { Engine } from '../../src/serve/engine.ts';
import { DecodeGraphs, type DecodeRow } from '../../src/serve/decode-graphs.ts';
import { relErr } from '../helpers.ts';
import { tinyConfig, tinyWeights, type TinyOptions, type TinyType } from '../fixtures/tiny-llama.ts';
import { engineIds } from '../fixtures/serve-model.ts';

const s = gpuSuite('gpu/serve-graphs', { needsRuntime: true });

const VARIANTS: [string, TinyType, TinyOptions][] = [
  ['llama GQA untied', 'llama', { hidden: 64, heads: 8, kvHeads: 2, ff: 96, layers: 3, vocab: 300 }],
  ['mistral window 5', 'mistral', { hidden: 64, heads: 4, kvHeads: 2, window: 5, vocab: 200 }],
];

async function load(type: TinyType, o: TinyOptions, device: Device) {
  const raw = tinyConfig(type, o);
  return LlamaModel.fromWeights(parseLlamaConfig(raw), new MemoryWeights(tinyWeights(raw, 3)), {
    device,
    dtype: 'f32',
  });
}

s.test('a bucket replays the eager paged step (padded batches, new values each replay)', async (dev) => {
  if (dev.isCpu) return; // ROCM_TENSOR_GPU_TESTS_ON=cpu: the CPU device has no graphs
  for (const [name, type, o] of VARIANTS) {
    const model = await load(type, o, dev);
    const c = model.config;
    const bs = 4,
      maxBlocks = 8;
    const cache = new PagedKVCache(
      { layers: c.layers, blocks: 40, blockSize: bs, kvHeads: c.kvHeads, headDim: c.headDim },
      dev,
      'f32',
    );
    model.rope.reserve(maxBlocks * bs);
    const u32 = (a: number[], shape?: number[]) =>
      Tensor.from(Uint32Array.from(a), { device: dev, ...(shape ? { shape } : {}) });
    // three sequences on shuffled blocks, their prompts read eagerly
    const blocks = [
      [7, 3, 30, 12, 5],
      [1, 22, 9, 14, 35],
      [2, 8, 19, 27, 33],
    ];
    const lens = [5, 9, 2];
    const tokens = lens.map((n, k) => Array.from({ length: n }, (_, i) => (i * 31 + k * 11 + 3) % c.vocabSize));
    const slotOf = (k: number, p: number) => blocks[k]![Math.floor(p / bs)]! * bs + (p % bs);
    const pre = model.forwardPaged(
      u32(tokens.flat()),
      u32(lens.flatMap((n) => Array.from({ length: n }, (_, i) => i))),
      cache,
      {
        slots: u32(lens.flatMap((n, k) => Array.from({ length: n }, (_, i) => slotOf(k, i)))),
        blockTable: u32(blocks.flat(), [3, 5]),
        queryLens: lens,
        contextLens: lens,
      },
      u32([0]),
    );
    await pre.toArray();
    const graphs = new DecodeGraphs(model, cache, maxBlocks);
    // steps over 3, 1, 3 and 2 of the sequences: buckets 4, 1, 4 (replayed) and 2
    for (const [step, who] of [[0, 1, 2], [1], [0, 1, 2], [2, 0]].entries()) {
      const rows: DecodeRow[] = who.map((k) => {
        const p = tokens[k]!.length;
        return { id: (p * 7 + k) % c.vocabSize, position: p, slot: slotOf(k, p), blocks: blocks[k]!, context: p + 1 };
      });
      const got = Array.from(await graphs.step(rows).toArray(), Number);
      // the eager step over the same inputs writes the same values to the same slots
      const eager = model.forwardPaged(
        u32(rows.map((r) => r.id)),
        u32(rows.map((r) => r.position)),
        cache,
        {
          slots: u32(rows.map((r) => r.slot)),
          blockTable: u32(
            who.flatMap((k) => blocks[k]!),
            [who.length, 5],
          ),
          queryLens: who.map(() => 1),
          contextLens: rows.map((r) => r.context),
        },
        u32(who.map((_, i) => i)),
      );
      const want = Array.from(await eager.toArray(), Number);
      const err = relErr(got, want);
      assert.ok(err < 1e-5, `${name} step ${step} (sequences ${who}): graph vs eager logits rel err ${err}`);
      who.forEach((k, i) => tokens[k]!.push(rows[i]!.id));
    }
    assert.equal(
      graphs.captured.sort((a, b) => a - b),
      [1, 2, 4],
    );
    graphs.dispose();
    cache.dispose();
    model.dispose();
  }
});

s.test('concurrent greedy requests with decode graphs equal one-sequence generation', async (dev) => {
  if (dev.isCpu) return;
  for (const [name, type, o] of VARIANTS) {
    const model = await load(type, o, dev);
    const v = model.config.vocabSize;
    const prompts = [3, 17, 1, 9, 5].map((n, k) => Array.from({ length: n }, (_, i) => (i * 13 + k * 7 + 1) % v));
    const want: number[][] = [];
    for (const p of prompts) {
      const out: number[] = [];
      for await (const st of generateIds(model, [p], { maxTokens: 12, stopIds: [] })) out.push(st.ids[0]!);
      want.push(out);
    }
    const e = new Engine(
      { model, vocabMask: null },
      { blockSize: 4, prefillChunk: 6, maxSeqLen: 48, kvBlocks: 30, decodeGraphs: true },
    );
    const got = await engineIds(e, prompts, 12);
    assert.equal(got, want, name);
    assert.is(e.stats().pool.used, 0);
    await e.close();
    model.dispose();
  }
});

s.run();
