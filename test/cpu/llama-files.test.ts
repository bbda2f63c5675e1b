// Model folders on disk (safetensors, one file and sharded; tokenizer; generation config) for
// every model type, tied and untied: loading equals the in-memory model, dtype conversion on
// load, text in and text out, the chat template, and the `generate` CLI (--json, errors).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { Tensor } from '../../src/index.ts';
import { LlamaModel } from '../../src/models/llama.ts';
import { parseLlamaConfig } from '../../src/models/llama-config.ts';
import { PretrainedLlama } from '../../src/models/pretrained.ts';
import { MemoryWeights } from '../../src/nn/weights.ts';
import { FOLDERS, writeModelFolder } from '../fixtures/model-folders.ts';

const root = mkdtempSync(join(tmpdir(), 'rocm-tensor-models-'));
test.after(() => rmSync(root, { recursive: true, force: true }));
const ids = (xs: number[]) => Tensor.from(xs, { dtype: 'u32', shape: [1, xs.length] });
const logits = (m: LlamaModel, xs: number[]) =>
  Array.from(m.forward(ids(xs), m.newCache(1, xs.length)).toArraySync(), Number);

test('folders: loading from safetensors (one file and sharded) equals the in-memory model', async () => {
  for (const spec of FOLDERS) {
    const { dir, config, weights } = await writeModelFolder(root, spec);
    const disk = await PretrainedLlama.load(dir, { device: 'cpu' });
    const mem = await LlamaModel.fromWeights(parseLlamaConfig(config), new MemoryWeights(weights), { device: 'cpu' });
    const prompt = [disk.tokenizer!.bosId!, 40, 41, 300, 7];
    assert.equal(logits(disk.model, prompt), logits(mem, prompt), spec.name);
    assert.is(disk.model.weightBytes(), mem.weightBytes());
    disk.dispose();
    mem.dispose();
  }
});

test('folders: a bf16 model converted at load tracks the f32 one', async () => {
  const { dir } = await writeModelFolder(root, FOLDERS[1]!);
  const a = await PretrainedLlama.load(dir, { device: 'cpu', dtype: 'f32' });
  const b = await PretrainedLlama.load(dir, { device: 'cpu', dtype: 'bf16' });
  assert.is(b.model.dtype, 'bf16');
  const x = logits(a.model, [1, 2, 3, 4]),
    y = logits(b.model, [1, 2, 3, 4]);
  const err = Math.sqrt(x.reduce((s, v, i) => s + (v - y[i]!) ** 2, 0) / x.reduce((s, v) => s + v * v, 0));
  assert.ok(err < 5e-2, `bf16 vs f32 relative error ${err}`);
  a.dispose();
  b.dispose();
});

test('folders: text in, text out; chat template; stop ids from generation_config', async () => {
  const { dir } = await writeModelFolder(root, FOLDERS[3]!);
  const m = await PretrainedLlama.load(dir, { device: 'cpu' });
  const tok = m.tokenizer!;
  assert.ok(m.stopIds.length === 2, `two stop ids: ${m.stopIds}`);
  const got: number[] = [];
  let text = '';
  for await (const t of m.generate('The model turns text into', { maxTokens: 10, stopIds: [] })) {
    if (t.id !== null) got.push(t.id);
    text += t.text;
  }
  assert.is(got.length, 10);
  assert.is(text, tok.decode(got, { skipSpecialTokens: true }));
  const chat = m.encode('Hello', { chat: true });
  assert.is(chat[0], tok.bosId);
  assert.ok(tok.decode(chat).includes('<|start_header_id|>assistant<|end_header_id|>'), tok.decode(chat));
  const same: number[] = [];
  for await (const t of m.generate(chat, { maxTokens: 4, stopIds: [] })) if (t.id !== null) same.push(t.id);
  const viaChat: number[] = [];
  for await (const t of m.generate([{ role: 'user', content: 'Hello' }], { maxTokens: 4, stopIds: [] }))
    if (t.id !== null) viaChat.push(t.id);
  assert.equal(viaChat, same);
  m.dispose();
});

const CLI = fileURLToPath(new URL('../../src/cli/main.ts', import.meta.url));
function cli(args: string[], env: Record<string, string> = {}) {
  const bun = typeof (process.versions as Record<string, string | undefined>).bun === 'string';
  const argv = bun ? [CLI, ...args] : ['--import', 'tsx', CLI, ...args];
  return spawnSync(process.execPath, argv, {
    encoding: 'utf8',
    env: { ...process.env, ROCM_TENSOR_DEVICE: 'cpu', ...env },
  });
}

test('cli: generate --json on the CPU; --ids; errors', async () => {
  const { dir } = await writeModelFolder(root, FOLDERS[0]!);
  const r = cli([
    'generate',
    dir,
    '--prompt',
    'Keys and values',
    '--max-tokens',
    '6',
    '--temperature',
    '0',
    '--device',
    'cpu',
    '--json',
  ]);
  assert.is(r.status, 0, r.stderr);
  const out = JSON.parse(r.stdout) as Record<string, unknown>;
  for (const k of ['ids', 'text', 'prefillTokensPerS', 'decodeTokensPerS', 'loadSeconds'])
    assert.ok(k in out, `--json has ${k}: ${r.stdout}`);
  assert.ok(Array.isArray(out.ids) && (out.ids as number[]).length >= 1 && (out.ids as number[]).length <= 6);
  const m = await PretrainedLlama.load(dir, { device: 'cpu' });
  const exp: number[] = [];
  for await (const t of m.generate('Keys and values', { maxTokens: 6, temperature: 0, chat: true }))
    if (t.id !== null) exp.push(t.id);
  assert.equal(out.ids, exp, 'the CLI gives the library ids (chat template on by default)');
  m.dispose();
  const withIds = cli([
    'generate',
    dir,
    '--ids',
    '1,2,3',
    '--max-tokens',
    '3',
    '--seed',
    '4',
    '--temperature',
    '0.8',
    '--top-k',
    '20',
    '--device',
    'cpu',
    '--json',
  ]);
  assert.is(withIds.status, 0, withIds.stderr);
  const bad = cli(['generate', dir, '--device', 'cpu']);
  assert.ok(bad.status !== 0 && bad.stderr.includes('--prompt'), bad.stderr);
  const badT = cli(['generate', dir, '--ids', '1', '--temperature', 'hot', '--device', 'cpu']);
  assert.ok(badT.status !== 0 && badT.stderr.includes('--temperature'), badT.stderr);
  const missing = cli(['generate', join(root, 'nope'), '--ids', '1', '--device', 'cpu']);
  assert.ok(missing.status !== 0 && missing.stderr.includes('config.json'), missing.stderr);
});

test('cli: generate as a rank of a launched job (WORLD_SIZE 2): --device refused; a rank without a GPU told so', async () => {
  const { dir } = await writeModelFolder(root, FOLDERS[0]!);
  const job = { RANK: '1', WORLD_SIZE: '2', LOCAL_RANK: '1', MASTER_ADDR: '127.0.0.1', MASTER_PORT: '29999' };
  const dev = cli(['generate', dir, '--ids', '1,2', '--device', 'cpu'], job);
  assert.ok(
    dev.status !== 0 &&
      dev.stderr.includes('started as one of 2 ranks (WORLD_SIZE), each on GPU LOCAL_RANK; leave out --device cpu'),
    dev.stderr,
  );
  const noGpu = cli(['generate', dir, '--ids', '1,2'], {
    ...job,
    ROCM_TENSOR_HIP_LIB: '/nonexistent/libamdhip64.so',
    ROCM_TENSOR_CUDA_LIB: '/nonexistent/libcuda.so',
  });
  assert.ok(noGpu.status !== 0 && /each rank needs a GPU|LOCAL_RANK 1 needs/.test(noGpu.stderr), noGpu.stderr);
  const badEnv = cli(['generate', dir, '--ids', '1,2'], { ...job, MASTER_PORT: '' });
  assert.ok(badEnv.status !== 0 && badEnv.stderr.includes('MASTER_PORT is not set'), badEnv.stderr);
});

test.run();
