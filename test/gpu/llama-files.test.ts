// Model folders loaded onto the GPU (safetensors streamed through the staging buffer, converted
// on the device) against the CPU, for every model type and dtype; and, where python3 has torch
// and transformers (the GPU machine), Hugging Face's AutoModelForCausalLM on the same folders:
// greedy ids identical for 64 new tokens in f32, prefill logits within bf16 tolerance in bf16.
import { gpuSuite } from './harness.ts';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { Tensor } from '../../src/index.ts';
import type { LlamaModel } from '../../src/models/llama.ts';
import { PretrainedLlama } from '../../src/models/pretrained.ts';
import { generateIds } from '../../src/models/generate.ts';
import { relErr } from '../helpers.ts';
import { FOLDERS, writeModelFolder } from '../fixtures/model-folders.ts';

const s = gpuSuite('gpu/llama-files');
const root = mkdtempSync(join(tmpdir(), 'rocm-tensor-gpu-models-'));
const PROMPT = [379, 40, 41, 300, 7, 99, 123, 5, 250];
const TOL: Record<string, number> = { f32: 2e-5, bf16: 4e-2, f16: 8e-3 };

async function prefill(m: LlamaModel, prompt: number[]): Promise<number[]> {
  const c = m.newCache(1, prompt.length);
  const l = m.forward(Tensor.from(prompt, { dtype: 'u32', shape: [1, prompt.length], device: m.device }), c);
  const out = Array.from(await l.toArray(), Number);
  l.dispose();
  c.dispose();
  return out;
}

s.test('folders on the GPU: logits equal the CPU in f32, bf16 and f16 for every model type', async (dev) => {
  for (const spec of FOLDERS) {
    const { dir } = await writeModelFolder(root, spec);
    const cpu = await PretrainedLlama.load(dir, { device: 'cpu', dtype: 'f32' });
    const exp = await prefill(cpu.model, PROMPT);
    cpu.dispose();
    for (const dtype of ['f32', 'bf16', 'f16'] as const) {
      const g = await PretrainedLlama.load(dir, { device: dev, dtype });
      const e = relErr(await prefill(g.model, PROMPT), exp);
      assert.ok(e <= TOL[dtype]!, `${spec.name} ${dtype}: relative error ${e.toExponential(2)}`);
      g.dispose();
    }
  }
});

function hasTransformers(): string | null {
  const r = spawnSync(
    'python3',
    ['-c', 'import torch, transformers; assert torch.cuda.is_available(); print(transformers.__version__)'],
    { encoding: 'utf8' },
  );
  return r.status === 0 ? r.stdout.trim() : null;
}
const hf = s.device && !s.device.isCpu ? hasTransformers() : null;
const SCRIPT = fileURLToPath(new URL('../../scripts/llm/hf_reference.py', import.meta.url));

const HF_TEST = 'folders against Hugging Face transformers: greedy ids (f32, 64 tokens) and bf16 prefill logits';
if (s.device && !hf) {
  console.log(
    'gpu/llama-files: the transformers cross-check is skipped: python3 with torch (CUDA) and transformers was not found',
  );
  test.skip(HF_TEST, () => {});
}
if (hf)
  s.test(HF_TEST, async (dev) => {
    const lines: string[] = [];
    for (const spec of FOLDERS) {
      const { dir } = await writeModelFolder(root, spec);
      const out = join(root, `${spec.name}.json`);
      const r = spawnSync('python3', [SCRIPT, dir, out, '--prompt', PROMPT.join(','), '--new', '64'], {
        encoding: 'utf8',
      });
      assert.is(r.status, 0, `hf_reference.py ${spec.name}: ${r.stderr.slice(-2000)}`);
      const ref = JSON.parse(readFileSync(out, 'utf8')) as { greedy: number[]; logits: number[] };
      const f32 = await PretrainedLlama.load(dir, { device: dev, dtype: 'f32' });
      const ours: number[] = [];
      for await (const st of generateIds(f32.model, [PROMPT], { maxTokens: 64, stopIds: [] })) ours.push(st.ids[0]!);
      f32.dispose();
      assert.equal(ours, ref.greedy, `${spec.name}: greedy ids in f32`);
      const bf = await PretrainedLlama.load(dir, { device: dev, dtype: 'bf16' });
      const e = relErr(await prefill(bf.model, PROMPT), ref.logits);
      bf.dispose();
      lines.push(`${spec.name}: 64 greedy ids equal; bf16 prefill logits relative error ${e.toExponential(2)}`);
      assert.ok(e < 3e-2, `${spec.name}: bf16 logits relative error ${e}`);
    }
    console.log(`gpu/llama-files: transformers ${hf}:\n  ${lines.join('\n  ')}`);
  });

process.on('exit', () => rmSync(root, { recursive: true, force: true }));
s.run();
