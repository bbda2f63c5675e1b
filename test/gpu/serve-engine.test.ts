// The serving engine on the GPU: the paged step's logits against the contiguous-cache forward
// of the same model (a prompt read in chunks over shuffled blocks, then a decode token), and
// concurrent greedy requests against one-sequence generation, for each model type in f32.
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
import { relErr } from '../helpers.ts';
import { tinyConfig, tinyWeights, type TinyOptions, type TinyType } from '../fixtures/tiny-llama.ts';
import { engineIds } from '../fixtures/serve-model.ts';

const s = gpuSuite('gpu/serve-engine');

const VARIANTS: [string, TinyType, TinyOptions][] = [
  ['llama GQA untied', 'llama', { hidden: 64, heads: 8, kvHeads: 2, ff: 96, layers: 3, vocab: 300 }],
  ['mistral window 5', 'mistral', { hidden: 64, heads: 4, kvHeads: 2, window: 5, vocab: 200 }],
  ['qwen2 bias tied', 'qwen2', { hidden: 64, heads: 4, kvHeads: 4, tied: true, vocab: 211 }],
];

async function load(type: TinyType, o: TinyOptions, device: Device) {
  const raw = tinyConfig(type, o);
  return LlamaModel.fromWeights(parseLlamaConfig(raw), new MemoryWeights(tinyWeights(raw, 3)), {
    device,
    dtype: 'f32',
  });
}

s.test(
  'the paged step gives the contiguous forward logits (chunks over shuffled blocks, then a decode)',
  async (dev) => {
    for (const [name, type, o] of VARIANTS) {
      const model = await load(type, o, dev);
      const c = model.config;
      const prompt = Array.from({ length: 11 }, (_, i) => (i * 37 + 5) % c.vocabSize);
      const bs = 4;
      const blocks = [6, 2, 9]; // 12 slots: the prompt and one more token
      const cache = new PagedKVCache(
        { layers: c.layers, blocks: 10, blockSize: bs, kvHeads: c.kvHeads, headDim: c.headDim },
        dev,
        'f32',
      );
      model.rope.reserve(32);
      const u32 = (a: number[], shape?: number[]) =>
        Tensor.from(Uint32Array.from(a), { device: dev, ...(shape ? { shape } : {}) });
      const table = u32(blocks, [1, 3]);
      /** the paged logits of the last of tokens [from, to) */
      const paged = (tokens: number[], from: number, to: number) => {
        const pos = Array.from({ length: to - from }, (_, i) => from + i);
        return model.forwardPaged(
          u32(tokens.slice(from, to)),
          u32(pos),
          cache,
          {
            slots: u32(pos.map((p) => blocks[Math.floor(p / bs)]! * bs + (p % bs))),
            blockTable: table,
            queryLens: [to - from],
            contextLens: [to],
          },
          u32([to - from - 1]),
        );
      };
      paged(prompt, 0, 6);
      const pre = await paged(prompt, 6, 11).toArray();
      const ref = model.newCache(1, 16);
      const full = model.forward(Tensor.from(Uint32Array.from(prompt), { device: dev, shape: [1, 11] }), ref, {
        lastOnly: true,
      });
      const err = relErr(Array.from(pre, Number), Array.from(await full.toArray(), Number));
      assert.ok(err < 2e-5, `${name}: prefill logits rel err ${err}`);
      const next = 7;
      const dec = await paged([...prompt, next], 11, 12).toArray();
      const refDec = model.forward(Tensor.from(Uint32Array.from([next]), { device: dev, shape: [1, 1] }), ref);
      const err2 = relErr(Array.from(dec, Number), Array.from(await refDec.toArray(), Number));
      assert.ok(err2 < 2e-5, `${name}: decode logits rel err ${err2}`);
      cache.dispose();
      ref.dispose();
      model.dispose();
    }
  },
);

s.test('concurrent greedy requests equal one-sequence generation', async (dev) => {
  for (const [name, type, o] of VARIANTS) {
    const model = await load(type, o, dev);
    const v = model.config.vocabSize;
    const prompts = [3, 17, 1, 9].map((n, k) => Array.from({ length: n }, (_, i) => (i * 13 + k * 7 + 1) % v));
    const want: number[][] = [];
    for (const p of prompts) {
      const out: number[] = [];
      for await (const st of generateIds(model, [p], { maxTokens: 10, stopIds: [] })) out.push(st.ids[0]!);
      want.push(out);
    }
    const e = new Engine({ model, vocabMask: null }, { blockSize: 4, prefillChunk: 6, maxSeqLen: 48, kvBlocks: 14 });
    const got = await engineIds(e, prompts, 10);
    assert.equal(got, want, name);
    assert.is(e.stats().pool.used, 0);
    await e.close();
    model.dispose();
  }
});

s.run();
