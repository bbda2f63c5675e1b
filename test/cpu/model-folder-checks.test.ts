// What a model folder holds that the model cannot use is never passed over in silence:
// quantized (integer) weights are refused by name, tensors the config does not use and
// generation_config fields that are not implemented are named in one warning, a shard path
// that leaves the folder is refused, and a Hub id given for a folder says how to get one.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Tensor, MemoryWeights, LlamaModel, parseLlamaConfig } from '../../src/index.ts';
import { Checkpoint, saveSafetensors } from '../../src/io/safetensors.ts';
import { PretrainedLlama } from '../../src/models/pretrained.ts';
import { readGenerationConfig } from '../../src/models/generation-config.ts';
import { FOLDERS, writeModelFolder } from '../fixtures/model-folders.ts';
import { tinyConfig, tinyWeights } from '../fixtures/tiny-llama.ts';

const root = mkdtempSync(join(tmpdir(), 'rocm-tensor-folder-checks-'));
test.after(() => rmSync(root, { recursive: true, force: true }));

/** a single-file folder (llama, tied) with its weights rewritten by `edit` */
async function folderWith(name: string, edit: (w: Record<string, Tensor>) => Record<string, Tensor>): Promise<string> {
  const { dir, weights } = await writeModelFolder(root, { ...FOLDERS[1]!, name });
  await saveSafetensors(join(dir, 'model.safetensors'), edit({ ...weights }));
  return dir;
}

async function loadError(dir: string): Promise<Error> {
  try {
    (await PretrainedLlama.load(dir, { device: 'cpu', onWarning: () => undefined })).dispose();
  } catch (e) {
    return e as Error;
  }
  throw new Error(`loading ${dir} did not fail`);
}

test('quantized weights: an integer weight is refused, naming the tensor and its dtype', async () => {
  const q = 'model.layers.0.self_attn.q_proj.weight';
  const dir = await folderWith('int8-weight', (w) => ({ ...w, [q]: w[q]!.mul(10).round().abs().toDtype('u8') }));
  const e = await loadError(dir);
  assert.ok(e.message.includes(`'${q}'`) && e.message.includes('dtype U8'), e.message);
  assert.ok(e.message.includes('quantized checkpoints'), e.message);
  // GPTQ/AWQ style: an I32 qweight where the weight should be
  const gptq = await folderWith('gptq', (w) => {
    const { [q]: dropped, ...rest } = w;
    return { ...rest, 'model.layers.0.self_attn.q_proj.qweight': dropped!.abs().toDtype('i64') };
  });
  const g = await loadError(gptq);
  assert.ok(g.message.includes("'model.layers.0.self_attn.q_proj.qweight'") && g.message.includes('I64'), g.message);
  // in memory too
  const config = tinyConfig('llama');
  const w = tinyWeights(config);
  const k = 'model.layers.1.mlp.up_proj.weight';
  w[k] = w[k]!.abs().toDtype('i64');
  try {
    await LlamaModel.fromWeights(parseLlamaConfig(config), new MemoryWeights(w), { device: 'cpu' });
    assert.unreachable('an i64 weight was converted to float');
  } catch (e) {
    assert.ok((e as Error).message.includes(`'${k}' has dtype i64`), (e as Error).message);
  }
});

test('quantized checkpoints: a quantization_config in config.json is refused before any weight is read', async () => {
  const { dir } = await writeModelFolder(root, { ...FOLDERS[1]!, name: 'quant-config' });
  const cfg = JSON.parse(readFileSync(join(dir, 'config.json'), 'utf8')) as Record<string, unknown>;
  cfg.quantization_config = { quant_method: 'gptq', bits: 4 };
  writeFileSync(join(dir, 'config.json'), JSON.stringify(cfg));
  const e = await loadError(dir);
  assert.ok(e.message.includes("quant_method 'gptq'") && e.message.includes('not supported'), e.message);
});

test('tensors the config does not use: one warning with their count and a few names', async () => {
  const extra = {
    'model.vision_tower.proj.weight': Tensor.zeros([2, 2]),
    'model.layers.7.mlp.up_proj.weight': Tensor.zeros([2]),
    'lm_head.weight': Tensor.zeros([384, 64]), // the config ties the head: this one is not read
    'model.layers.0.self_attn.rotary_emb.inv_freq': Tensor.zeros([8]), // a buffer nobody reads
  };
  const dir = await folderWith('extra-tensors', (w) => ({ ...w, ...extra }));
  const warnings: string[] = [];
  const m = await PretrainedLlama.load(dir, { device: 'cpu', onWarning: (s) => warnings.push(s) });
  m.dispose();
  assert.is(warnings.length, 1, `one warning: ${JSON.stringify(warnings)}`);
  const w = warnings[0]!;
  assert.ok(w.includes('3 tensors are not used by the llama model'), w);
  for (const n of ['model.vision_tower.proj.weight', 'model.layers.7.mlp.up_proj.weight', 'lm_head.weight'])
    assert.ok(w.includes(`'${n}'`), w);
  assert.not.ok(w.includes('inv_freq'), w);
  // a clean folder warns of nothing
  const clean: string[] = [];
  (
    await PretrainedLlama.load((await writeModelFolder(root, FOLDERS[3]!)).dir, {
      device: 'cpu',
      onWarning: (s) => clean.push(s),
    })
  ).dispose();
  assert.equal(clean, []);
});

test('generation_config.json: repetition_penalty is read; fields not implemented are named once', async () => {
  const dir = join(root, 'gen-config');
  mkdirSync(dir, { recursive: true });
  writeFileSync(
    join(dir, 'generation_config.json'),
    JSON.stringify({
      do_sample: true,
      temperature: 0.7,
      top_p: 0.8,
      repetition_penalty: 1.05,
      num_beams: 4,
      min_p: 0.1,
      no_repeat_ngram_size: 0, // off: nothing lost
      typical_p: 1.0,
      bos_token_id: 1,
      pad_token_id: 0,
      transformers_version: '4.45.0',
    }),
  );
  const warnings: string[] = [];
  const g = await readGenerationConfig(dir, (s) => warnings.push(s));
  assert.equal(g.sampling, { temperature: 0.7, topP: 0.8, repetitionPenalty: 1.05 });
  assert.is(warnings.length, 1, JSON.stringify(warnings));
  assert.ok(warnings[0]!.includes('num_beams 4, min_p 0.1 are not implemented and ignored'), warnings[0]);
  // greedy configs keep the penalty (transformers applies it to greedy search too)
  writeFileSync(join(dir, 'generation_config.json'), JSON.stringify({ repetition_penalty: 1.2 }));
  assert.equal((await readGenerationConfig(dir)).sampling, { temperature: 0, repetitionPenalty: 1.2 });
});

test('a sharded index naming a shard outside its folder is refused', async () => {
  const { dir } = await writeModelFolder(root, { ...FOLDERS[0]!, name: 'escape' });
  const indexPath = join(dir, 'model.safetensors.index.json');
  const index = JSON.parse(readFileSync(indexPath, 'utf8')) as { weight_map: Record<string, string> };
  const [name, shard] = Object.entries(index.weight_map)[0]!;
  const other = join(root, 'other');
  mkdirSync(other, { recursive: true });
  writeFileSync(join(other, 'model.safetensors'), readFileSync(join(dir, shard)));
  for (const outside of ['../other/model.safetensors', join(other, 'model.safetensors')]) {
    const moved = { ...index, weight_map: { ...index.weight_map, [name]: outside } };
    writeFileSync(indexPath, JSON.stringify(moved));
    try {
      await (await Checkpoint.open(dir)).close();
      assert.unreachable(`shard ${outside} outside the folder was opened`);
    } catch (e) {
      const m = (e as Error).message;
      assert.ok(m.includes(`shard '${outside}'`) && m.includes('outside the index'), m);
    }
  }
  // a shard in a subfolder is inside
  mkdirSync(join(dir, 'sub'));
  writeFileSync(join(dir, 'sub', 'a.safetensors'), readFileSync(join(dir, shard)));
  writeFileSync(
    indexPath,
    JSON.stringify({ ...index, weight_map: { ...index.weight_map, [name]: 'sub/a.safetensors' } }),
  );
  await (await Checkpoint.open(dir)).close();
});

test('a Hub id given as the model folder says models are not downloaded and how to get the folder', async () => {
  const e = await loadError('meta-llama/Llama-3.2-1B');
  assert.ok(e.message.includes('looks like a Hugging Face Hub id'), e.message);
  assert.ok(e.message.includes('huggingface-cli download meta-llama/Llama-3.2-1B --local-dir Llama-3.2-1B'), e.message);
  // any other missing folder still names the config it could not read
  const m = await loadError(join(root, 'nope'));
  assert.ok(m.message.includes('config.json'), m.message);
});

test.run();
