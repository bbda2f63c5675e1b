// The Llama-family model on the GPU against the same model on the CPU reference: prefill and
// decode logits for each model type in f32, bf16 and f16; greedy generation ids in f32; a
// left-padded batch against single runs; sampling frequencies on the device.
import { gpuSuite } from './harness.ts';
import * as assert from 'uvu/assert';
import { Tensor, type DType } from '../../src/index.ts';
import type { Device } from '../../src/device/device.ts';
import { LlamaModel } from '../../src/models/llama.ts';
import { parseLlamaConfig } from '../../src/models/llama-config.ts';
import { generateIds } from '../../src/models/generate.ts';
import { Sampler } from '../../src/models/sampling.ts';
import { MemoryWeights } from '../../src/nn/weights.ts';
import { relErr } from '../helpers.ts';
import { tinyConfig, tinyWeights, type TinyOptions, type TinyType } from '../fixtures/tiny-llama.ts';

const s = gpuSuite('gpu/llama');

const VARIANTS: [string, TinyType, TinyOptions][] = [
  ['llama GQA untied', 'llama', { hidden: 64, heads: 8, kvHeads: 2, ff: 96, layers: 3, vocab: 300 }],
  ['llama MQA tied, head dim 32', 'llama', { hidden: 128, heads: 4, kvHeads: 1, ff: 160, tied: true, vocab: 257 }],
  ['mistral window 5', 'mistral', { hidden: 64, heads: 4, kvHeads: 2, window: 5, vocab: 200 }],
  ['qwen2 bias tied', 'qwen2', { hidden: 64, heads: 4, kvHeads: 4, tied: true, vocab: 211 }],
];
const TOL: Record<string, number> = { f32: 2e-5, bf16: 4e-2, f16: 8e-3 };

async function pair(type: TinyType, o: TinyOptions, dev: Device, dtype: DType) {
  const raw = tinyConfig(type, o);
  const w = new MemoryWeights(tinyWeights(raw, 3));
  const cfg = parseLlamaConfig(raw);
  return {
    cpu: await LlamaModel.fromWeights(cfg, w, { device: 'cpu', dtype: 'f32' }),
    gpu: await LlamaModel.fromWeights(cfg, w, { device: dev, dtype }),
  };
}
const ids = (rows: number[][], dev?: Device) =>
  Tensor.from(rows.flat(), { dtype: 'u32', shape: [rows.length, rows[0]!.length], ...(dev ? { device: dev } : {}) });
const f32 = async (t: Tensor) => Array.from(await t.toArray(), Number);

s.test(
  'llama: GPU prefill and decode logits equal the CPU reference (f32, bf16, f16; every model type)',
  async (dev) => {
    const prompt = [1, 7, 33, 99, 120, 4, 56, 2, 8, 150, 11];
    for (const [name, type, o] of VARIANTS) {
      for (const dtype of ['f32', 'bf16', 'f16'] as const) {
        const { cpu, gpu } = await pair(type, o, dev, dtype);
        const cc = cpu.newCache(1, 16),
          gc = gpu.newCache(1, 16);
        const exp = [await f32(cpu.forward(ids([prompt]), cc))],
          got = [await f32(gpu.forward(ids([prompt], dev), gc))];
        for (const t of [17, 3, 101]) {
          exp.push(await f32(cpu.forward(ids([[t]]), cc)));
          got.push(await f32(gpu.forward(ids([[t]], dev), gc)));
        }
        got.forEach((g, i) => {
          const e = relErr(g, exp[i]!);
          assert.ok(
            e <= TOL[dtype]!,
            `${name} ${dtype} ${i === 0 ? 'prefill' : `decode ${i}`}: relative error ${e.toExponential(2)} > ${TOL[dtype]}`,
          );
        });
        cpu.dispose();
        gpu.dispose();
        cc.dispose();
        gc.dispose();
      }
    }
  },
);

s.test('llama: greedy generation on the GPU (f32) gives the CPU ids; padded batches equal single runs', async (dev) => {
  const [, type, o] = VARIANTS[0]!;
  const { cpu, gpu } = await pair(type, o, dev, 'f32');
  const run = async (m: LlamaModel, prompts: number[][]) => {
    const out: (number | null)[][] = [];
    for await (const st of generateIds(m, prompts, { maxTokens: 12, stopIds: [] })) out.push([...st.ids]);
    return out;
  };
  const a = [1, 5, 9, 200, 31],
    b = [44, 45];
  assert.equal(await run(gpu, [a]), await run(cpu, [a]), 'greedy ids, GPU vs CPU');
  const both = await run(gpu, [a, b]);
  assert.equal(
    both.map((r) => r[0]),
    (await run(gpu, [a])).map((r) => r[0]),
    'batch row 0',
  );
  assert.equal(
    both.map((r) => r[1]),
    (await run(gpu, [b])).map((r) => r[0]),
    'batch row 1 (left-padded)',
  );
  cpu.dispose();
  gpu.dispose();
});

s.test('sampling on the GPU: top-k/top-p supports and frequencies; same draws as the CPU for a seed', async (dev) => {
  const logits = [1.0, 2.5, -1.0, 0.3, 2.0, -3.0, 0.0, 1.7];
  const n = 20000;
  const x = Tensor.from(Array.from({ length: n }, () => logits).flat(), { shape: [n, 8], device: dev });
  const m = Math.max(...logits),
    e = logits.map((v) => Math.exp(v - m)),
    z = e.reduce((p, q) => p + q, 0);
  const c = new Array<number>(8).fill(0);
  for (const id of await new Sampler({ temperature: 1, seed: 2 }).sample(x).toArray()) c[Number(id)]!++;
  const chi = e.reduce((acc, ei, i) => acc + (c[i]! - (n * ei) / z) ** 2 / ((n * ei) / z), 0);
  assert.ok(chi < 24.3, `chi-square ${chi.toFixed(1)}, counts ${c}`);
  const k = new Array<number>(8).fill(0);
  for (const id of await new Sampler({ temperature: 1, topK: 3, topP: 0.9, seed: 2 }).sample(x).toArray())
    k[Number(id)]!++;
  assert.ok(
    k.every((cnt, i) => [1, 4, 7].includes(i) || cnt === 0),
    `top-k 3: ${k}`,
  );
  const cpuX = Tensor.from(Array.from({ length: 64 }, () => logits).flat(), { shape: [64, 8] });
  const gpuX = cpuX.to(dev);
  const cpuIds = Array.from(new Sampler({ temperature: 0.8, topP: 0.9, seed: 77 }).sample(cpuX).toArraySync(), Number);
  const gpuIds = Array.from(
    await new Sampler({ temperature: 0.8, topP: 0.9, seed: 77 }).sample(gpuX).toArray(),
    Number,
  );
  assert.equal(gpuIds, cpuIds);
});

s.run();
