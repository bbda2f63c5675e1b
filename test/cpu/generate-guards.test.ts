// Generation never goes wrong in silence: non-finite logits stop it with an error naming the
// step (the sampler flags the row with NONFINITE_ID, read with the ids); the repetition,
// presence and frequency penalties match a host reference step by step; sampling options
// without a temperature sample; and ids the tokenizer cannot decode are never sampled.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Tensor, MemoryWeights, LlamaModel, parseLlamaConfig } from '../../src/index.ts';
import { saveSafetensors } from '../../src/io/safetensors.ts';
import { PretrainedLlama } from '../../src/models/pretrained.ts';
import { generateIds, type GenerateOptions } from '../../src/models/generate.ts';
import { NONFINITE_ID, Sampler, VocabMask } from '../../src/models/sampling.ts';
import { FOLDERS, writeModelFolder } from '../fixtures/model-folders.ts';
import { tinyConfig, tinyWeights } from '../fixtures/tiny-llama.ts';
import { throwsWith } from '../helpers.ts';

const root = mkdtempSync(join(tmpdir(), 'rocm-tensor-generate-guards-'));
test.after(() => rmSync(root, { recursive: true, force: true }));

const ids = (t: Tensor) => Array.from(t.toArraySync(), Number);
const PROMPT = [1, 17, 5, 33, 8];

async function run(m: LlamaModel, prompts: number[][], opts: GenerateOptions): Promise<(number | null)[][]> {
  const out: (number | null)[][] = [];
  for await (const s of generateIds(m, prompts, { stopIds: [], ...opts })) out.push([...s.ids]);
  return out;
}
async function model(edit?: (w: Record<string, Tensor>) => void): Promise<LlamaModel> {
  const config = tinyConfig('llama', { vocab: 96 });
  const w = tinyWeights(config, 3);
  edit?.(w);
  return LlamaModel.fromWeights(parseLlamaConfig(config), new MemoryWeights(w), { device: 'cpu' });
}

test('sampler: a row of NaN or +Infinity logits gets NONFINITE_ID (greedy and sampled); masked -Infinity is fine', () => {
  const x = Tensor.from([
    [0, 3, 1, 2],
    [0, NaN, 1, 2],
    [0, 1, Infinity, 2],
    [-Infinity, 1, -Infinity, 0.5],
  ]);
  const want = [1, NONFINITE_ID, NONFINITE_ID, 1];
  assert.equal(ids(new Sampler({ temperature: 0 }).sample(x)), want);
  assert.equal(ids(new Sampler({ temperature: 0 }).sample(x.toDtype('bf16'))), want);
  for (const o of [{ topK: 2 }, { topP: 0.9 }, {}, { topK: 3, topP: 0.5 }]) {
    const got = ids(new Sampler({ temperature: 0.01, seed: 1, ...o }).sample(x));
    assert.equal(got, want, JSON.stringify(o));
  }
});

test('generate: NaN weights stop generation with an error naming the step', async () => {
  const nan = await model((w) => {
    w['model.norm.weight'] = w['model.norm.weight']!.mul(NaN);
  });
  for (const temperature of [0, 0.8]) {
    try {
      await run(nan, [PROMPT], { maxTokens: 4, temperature, seed: 1 });
      assert.unreachable('NaN logits gave ids');
    } catch (e) {
      const m = (e as Error).message;
      assert.ok(m.includes('the logits of step 0 (the first new token) are not finite (NaN or infinity)'), m);
    }
  }
  // NaN that appears later: the embedding row of the third token generated
  const clean = await model();
  const greedy = (await run(clean, [PROMPT], { maxTokens: 6 })).map((r) => r[0]!);
  // the first token generated after the first one that is new: fed back, its embedding gives NaN
  const j = greedy.findIndex((id, i) => i > 0 && !PROMPT.includes(id) && !greedy.slice(0, i).includes(id));
  assert.ok(j > 0 && j < 4, `a new token among the first: ${greedy}`);
  const bad = greedy[j]!;
  const late = await model((w) => {
    const e = w['model.embed_tokens.weight']!;
    const row = Tensor.full([1, e.dim(1)], NaN);
    w['model.embed_tokens.weight'] = Tensor.cat([e.narrow(0, 0, bad), row, e.narrow(0, bad + 1, e.dim(0) - bad - 1)]);
  });
  try {
    await run(late, [PROMPT], { maxTokens: 6 });
    assert.unreachable('NaN logits gave ids');
  } catch (e) {
    assert.ok((e as Error).message.includes(`the logits of step ${j + 1} (new token ${j + 2})`), (e as Error).message);
  }
  // in a batch, the sequence is named: the first prompt's own continuation never meets the bad token
  const firsts: number[][] = [];
  for (const p of [
    [2, 3, 4],
    [9, 60, 61],
    [70, 12],
  ])
    if (!p.includes(bad) && !(await run(clean, [p], { maxTokens: 6 })).some((r) => r[0] === bad)) firsts.push(p);
  assert.ok(firsts.length > 0, 'a prompt that never meets the bad token');
  try {
    await run(late, [firsts[0]!, PROMPT], { maxTokens: 6 });
    assert.unreachable('NaN logits gave ids');
  } catch (e) {
    assert.ok((e as Error).message.includes(`step ${j + 1} (new token ${j + 2} of sequence 1)`), (e as Error).message);
  }
});

/** the penalties on the host, as transformers (repetition) and OpenAI (presence, frequency) define them */
function penalize(logits: number[], seen: Set<number>, counts: Map<number, number>, r: number, p: number, f: number) {
  return logits.map((x, id) => {
    let y = x;
    if (seen.has(id)) y = y < 0 ? y * r : y / r;
    const c = counts.get(id) ?? 0;
    return y - f * c - (c > 0 ? p : 0);
  });
}

test('penalties: greedy ids equal a host reference applying them to full forwards, step by step', async () => {
  const m = await model();
  const cases = [
    { repetitionPenalty: 1.8, presencePenalty: 0, frequencyPenalty: 0 },
    { repetitionPenalty: 1, presencePenalty: 1.5, frequencyPenalty: 0.7 },
    { repetitionPenalty: 1.3, presencePenalty: 0.4, frequencyPenalty: 0.9 },
  ];
  const plain = (await run(m, [PROMPT], { maxTokens: 10 })).map((r) => r[0]!);
  for (const c of cases) {
    const got = (await run(m, [PROMPT], { maxTokens: 10, ...c })).map((r) => r[0]!);
    const seq = [...PROMPT],
      seen = new Set(PROMPT),
      counts = new Map<number, number>(),
      exp: number[] = [];
    for (let s = 0; s < 10; s++) {
      const cache = m.newCache(1, seq.length);
      const out = m.forward(Tensor.from(seq, { dtype: 'u32', shape: [1, seq.length] }), cache, { lastOnly: true });
      const row = penalize(
        Array.from(out.toArraySync(), Number),
        seen,
        counts,
        c.repetitionPenalty,
        c.presencePenalty,
        c.frequencyPenalty,
      );
      const next = row.indexOf(Math.max(...row));
      exp.push(next);
      seq.push(next);
      seen.add(next);
      counts.set(next, (counts.get(next) ?? 0) + 1);
      out.dispose();
      cache.dispose();
    }
    assert.equal(got, exp, JSON.stringify(c));
    assert.not.equal(got, plain, `the penalties change the ids: ${JSON.stringify(c)}`);
  }
  // per sequence in a batch: each row is penalized by its own history
  const c = cases[2]!;
  const batch = await run(m, [[3, 4], PROMPT], { maxTokens: 10, ...c });
  const alone = (await run(m, [PROMPT], { maxTokens: 10, ...c })).map((r) => r[0]!);
  const row1 = batch.map((r) => r[1]!);
  assert.equal(row1.slice(0, 3), alone.slice(0, 3), 'row 1 starts as the same prompt alone does');
  // sampled too: a penalty strong enough makes every token new
  const fresh = (await run(m, [PROMPT], { maxTokens: 12, temperature: 1, seed: 9, presencePenalty: 1e4 })).map(
    (r) => r[0]!,
  );
  assert.is(new Set(fresh).size, fresh.length, `presence penalty: no repeats in ${fresh}`);
  throwsWith(() => new Sampler({ repetitionPenalty: 0 }), Error, 'repetitionPenalty');
  throwsWith(() => new Sampler({ presencePenalty: NaN }), Error, 'presencePenalty');
  throwsWith(
    () => new Sampler({ repetitionPenalty: 1.2 }).sample(Tensor.zeros([1, 4])),
    Error,
    'penalties need the ids seen so far',
  );
});

test('PretrainedLlama: topK, topP or a seed without a temperature sample; temperature 0 stays greedy', async () => {
  const { dir } = await writeModelFolder(root, FOLDERS[0]!);
  const m = await PretrainedLlama.load(dir, { device: 'cpu' });
  const gen = async (o: GenerateOptions) => {
    const out: number[] = [];
    for await (const t of m.generate([1, 40, 41, 300], { maxTokens: 12, stopIds: [], ...o }))
      if (t.id !== null) out.push(t.id);
    return out;
  };
  const greedy = await gen({});
  assert.equal(await gen({ temperature: 0, topK: 40, seed: 1 }), greedy);
  for (const o of [{ seed: 1 }, { topK: 300, seed: 2 }, { topP: 0.99, seed: 3 }]) {
    assert.not.equal(await gen(o), greedy, `${JSON.stringify(o)} samples`);
    assert.equal(await gen(o), await gen(o), `${JSON.stringify(o)} is reproducible`);
  }
  m.dispose();
});

test('ids the tokenizer cannot decode are never sampled: the model vocabulary larger than the tokenizer', async () => {
  // 400 rows for the tokenizer's 384 tokens, with rows 390 and 391 the most likely by far
  const { dir } = await writeModelFolder(root, { ...FOLDERS[0]!, name: 'wide-vocab', shardBytes: 0 });
  const config = tinyConfig('llama', {
    hidden: 64,
    heads: 4,
    kvHeads: 2,
    ff: 128,
    layers: 2,
    vocab: 400,
    bos: 378,
    eos: 383,
  });
  const w = tinyWeights(config, 5);
  const head = w['lm_head.weight']!;
  const v = Tensor.randn([1, 64], { seed: 77 }).mul(100);
  w['lm_head.weight'] = Tensor.cat([head.narrow(0, 0, 390), v, v.neg(), head.narrow(0, 392, 8)]);
  writeFileSync(join(dir, 'config.json'), JSON.stringify(config));
  rmSync(join(dir, 'model.safetensors'), { force: true });
  await saveSafetensors(join(dir, 'model.safetensors'), w);
  const raw = await LlamaModel.fromWeights(parseLlamaConfig(config), new MemoryWeights(w), { device: 'cpu' });
  const unmasked = (await run(raw, [[1, 40, 41]], { maxTokens: 4 })).map((r) => r[0]!);
  assert.ok(
    unmasked.every((id) => id === 390 || id === 391),
    `without the mask the model picks 390/391: ${unmasked}`,
  );
  const m = await PretrainedLlama.load(dir, { device: 'cpu' });
  assert.is(m.vocabMask?.limit, 384);
  for (const o of [{ temperature: 0 }, { temperature: 1, seed: 4 }, { temperature: 1, topK: 50, seed: 5 }]) {
    let text = '';
    const got: number[] = [];
    for await (const t of m.generate('Keys and values', { maxTokens: 8, stopIds: [], ...o })) {
      if (t.id !== null) got.push(t.id);
      text += t.text;
    }
    assert.is(got.length, 8);
    assert.ok(
      got.every((id) => id < 384),
      `${JSON.stringify(o)}: only ids the tokenizer has: ${got}`,
    );
    assert.is(text, m.tokenizer!.decode(got, { skipSpecialTokens: true }));
  }
  m.dispose();
});

test('vocabulary mask: holes below the last allowed id are masked, the tail is cut', () => {
  const allowed = new Uint8Array([1, 0, 1, 1, 0, 0]);
  const mask = VocabMask.of(allowed, 'cpu')!;
  assert.is(mask.limit, 4);
  assert.is(mask.excluded, 3);
  const x = Tensor.from([
    [0, 9, 1, 2, 9, 9],
    [5, 9, 1, 2, 9, 9],
  ]);
  assert.equal(ids(new Sampler({ temperature: 0 }).sample(x, undefined, { mask })), [3, 0]);
  const drawn = new Set(
    ids(
      new Sampler({ temperature: 5, seed: 2 }).sample(x.narrow(0, 0, 1).expand([400, 6]).contiguous(), undefined, {
        mask,
      }),
    ),
  );
  assert.ok(
    [...drawn].every((id) => allowed[id] === 1),
    `only allowed ids: ${[...drawn]}`,
  );
  assert.is(drawn.size, 3);
  assert.is(VocabMask.of(new Uint8Array([1, 1, 1]), 'cpu'), null);
  mask.dispose();
});

test.run();
