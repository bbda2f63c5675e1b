// The generation guards on the GPU, with the decode step replayed from a captured graph:
// non-finite logits stop generation naming the step (the flag read with the ids), the
// repetition, presence and frequency penalties and the vocabulary mask give the CPU's ids.
import { gpuSuite } from './harness.ts';
import * as assert from 'uvu/assert';
import { Tensor } from '../../src/index.ts';
import type { Device } from '../../src/device/device.ts';
import { LlamaModel } from '../../src/models/llama.ts';
import { parseLlamaConfig } from '../../src/models/llama-config.ts';
import { generateIds, type GenerateOptions } from '../../src/models/generate.ts';
import { NONFINITE_ID, Sampler, VocabMask } from '../../src/models/sampling.ts';
import { MemoryWeights } from '../../src/nn/weights.ts';
import { tinyConfig, tinyWeights } from '../fixtures/tiny-llama.ts';

const s = gpuSuite('gpu/generate-guards');
const PROMPT = [1, 17, 5, 33, 8];

async function pair(dev: Device, edit?: (w: Record<string, Tensor>) => void) {
  const raw = tinyConfig('llama', { hidden: 64, heads: 8, kvHeads: 2, ff: 96, layers: 3, vocab: 300 });
  const w = tinyWeights(raw, 3);
  edit?.(w);
  const cfg = parseLlamaConfig(raw);
  const src = new MemoryWeights(w);
  return {
    cpu: await LlamaModel.fromWeights(cfg, src, { device: 'cpu', dtype: 'f32' }),
    gpu: await LlamaModel.fromWeights(cfg, src, { device: dev, dtype: 'f32' }),
  };
}
async function run(m: LlamaModel, prompts: number[][], opts: GenerateOptions): Promise<(number | null)[][]> {
  const out: (number | null)[][] = [];
  for await (const st of generateIds(m, prompts, { stopIds: [], ...opts })) out.push([...st.ids]);
  return out;
}
async function failure(p: Promise<unknown>): Promise<string> {
  try {
    await p;
  } catch (e) {
    return (e as Error).message;
  }
  return 'no error';
}

s.test('sampler on the GPU: NaN and +Infinity rows get NONFINITE_ID (greedy, sampled, bf16)', async (dev) => {
  const rows = [
    [0, 3, 1, 2],
    [0, NaN, 1, 2],
    [0, 1, Infinity, 2],
    [-Infinity, 1, -Infinity, 0.5],
  ];
  const want = [1, NONFINITE_ID, NONFINITE_ID, 1];
  for (const dtype of ['f32', 'bf16'] as const) {
    const x = Tensor.from(rows, { device: dev }).toDtype(dtype);
    assert.equal(Array.from(await new Sampler().sample(x).toArray(), Number), want, `greedy ${dtype}`);
    for (const o of [{ topK: 2 }, { topP: 0.9 }, {}]) {
      const got = Array.from(await new Sampler({ temperature: 0.01, seed: 1, ...o }).sample(x).toArray(), Number);
      assert.equal(got, want, `${dtype} ${JSON.stringify(o)}`);
    }
  }
});

s.test('generate on the GPU (graph): NaN weights stop generation naming the step, as on the CPU', async (dev) => {
  const { cpu: clean, gpu: cleanGpu } = await pair(dev);
  const greedy = (await run(clean, [PROMPT], { maxTokens: 16 })).map((r) => r[0]!);
  const j = greedy.findIndex((id, i) => i > 0 && !PROMPT.includes(id) && !greedy.slice(0, i).includes(id));
  assert.ok(j > 0 && j < 14, `a new token after the first, early enough: ${greedy}`);
  const bad = greedy[j]!;
  const { cpu, gpu } = await pair(dev, (w) => {
    const e = w['model.embed_tokens.weight']!;
    const row = Tensor.full([1, e.dim(1)], NaN);
    w['model.embed_tokens.weight'] = Tensor.cat([e.narrow(0, 0, bad), row, e.narrow(0, bad + 1, e.dim(0) - bad - 1)]);
  });
  // greedy: the NaN shows when the bad token is fed back
  const opts = { maxTokens: 16 };
  const want = await failure(run(cpu, [PROMPT], opts));
  assert.ok(want.includes(`step ${j + 1} (new token ${j + 2}) are not finite`), want);
  assert.is(await failure(run(gpu, [PROMPT], opts)), want, 'greedy: the GPU as the CPU');
  // sampled (the draws need not meet the bad token): a NaN final norm fails the first step
  const nanNorm = await pair(dev, (w) => {
    w['model.norm.weight'] = w['model.norm.weight']!.mul(NaN);
  });
  for (const o of [
    { temperature: 0.7, topK: 20, seed: 3 },
    { temperature: 1, topP: 0.9, seed: 4 },
  ]) {
    const e = await failure(run(nanNorm.cpu, [PROMPT], { maxTokens: 4, ...o }));
    assert.ok(e.includes('step 0 (the first new token) are not finite'), e);
    assert.is(await failure(run(nanNorm.gpu, [PROMPT], { maxTokens: 4, ...o })), e, `${JSON.stringify(o)}: GPU as CPU`);
  }
  nanNorm.cpu.dispose();
  nanNorm.gpu.dispose();
  for (const m of [clean, cleanGpu, cpu, gpu]) m.dispose();
});

s.test('penalties and the vocabulary mask on the GPU (graph and eager) give the CPU ids', async (dev) => {
  const { cpu, gpu } = await pair(dev);
  const allowed = new Uint8Array(300).fill(1);
  for (let i = 250; i < 300; i++) allowed[i] = 0; // a tail cut off
  for (const i of [3, 40, 41, 77]) allowed[i] = 0; // holes masked
  const cpuMask = VocabMask.of(allowed, 'cpu')!,
    gpuMask = VocabMask.of(allowed, dev)!;
  const cases: GenerateOptions[] = [
    { repetitionPenalty: 1.8 },
    { presencePenalty: 1.5, frequencyPenalty: 0.7 },
    { repetitionPenalty: 1.3, presencePenalty: 0.4, frequencyPenalty: 0.9 },
    { repetitionPenalty: 1.3, frequencyPenalty: 0.5, temperature: 0.9, topK: 30, seed: 5 },
  ];
  for (const c of cases) {
    for (const masked of [false, true]) {
      const o = (m: VocabMask): GenerateOptions => ({ maxTokens: 16, ...c, ...(masked ? { vocabMask: m } : {}) });
      const exp = await run(cpu, [PROMPT, [2, 9]], o(cpuMask));
      for (const graph of [true, false]) {
        const got = await run(gpu, [PROMPT, [2, 9]], { ...o(gpuMask), graph });
        assert.equal(got, exp, `${JSON.stringify(c)} masked ${masked} graph ${graph}`);
      }
      if (masked)
        assert.ok(
          exp.flat().every((id) => id === null || allowed[id] === 1),
          `${exp}`,
        );
    }
  }
  cpuMask.dispose();
  gpuMask.dispose();
  cpu.dispose();
  gpu.dispose();
});

s.run();
