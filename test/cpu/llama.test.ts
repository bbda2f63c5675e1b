// The Llama-family model on the CPU: logits against a plain-loop reference (each model type,
// tied and untied, GQA and MQA, windows, llama3 rope scaling off), prefill = token-by-token =
// chunked decoding through the KV cache, left-padded batches = single sequences, generation
// (greedy = argmax of the reference, stop ids, seeded sampling), and errors.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { Tensor, type DType } from '../../src/index.ts';
import { LlamaModel } from '../../src/models/llama.ts';
import { parseLlamaConfig } from '../../src/models/llama-config.ts';
import { generateIds } from '../../src/models/generate.ts';
import { MemoryWeights } from '../../src/nn/weights.ts';
import { TensorError } from '../../src/core/errors.ts';
import { tinyConfig, tinyWeights, type TinyOptions, type TinyType } from '../fixtures/tiny-llama.ts';
import { referenceLogits } from '../fixtures/reference-llama.ts';
import { assertClose, throwsWith } from '../helpers.ts';

async function build(type: TinyType, o: TinyOptions = {}, dtype: DType = 'f32', seed = 1) {
  const raw = tinyConfig(type, o);
  const weights = tinyWeights(raw, seed);
  const model = await LlamaModel.fromWeights(parseLlamaConfig(raw), new MemoryWeights(weights), {
    device: 'cpu',
    dtype,
  });
  return { raw, weights, model };
}
const idsT = (rows: number[][]) => Tensor.from(rows.flat(), { dtype: 'u32', shape: [rows.length, rows[0]!.length] });
const rowsOf = (t: Tensor) => {
  const [b, s, v] = t.shape as [number, number, number];
  const a = Array.from(t.toArraySync(), Number);
  return Array.from({ length: b * s }, (_, i) => a.slice(i * v, (i + 1) * v));
};

const VARIANTS: [string, TinyType, TinyOptions][] = [
  ['llama untied GQA', 'llama', {}],
  ['llama tied MQA', 'llama', { tied: true, kvHeads: 1 }],
  ['llama MHA, head_dim given', 'llama', { kvHeads: 4, headDim: 8 }],
  ['mistral window 3', 'mistral', { window: 3 }],
  ['qwen2 (qkv bias) tied', 'qwen2', { tied: true }],
];

test('llama: prefill logits equal the plain-loop reference for every variant', async () => {
  const ids = [1, 17, 42, 5, 88, 3, 9];
  for (const [name, type, o] of VARIANTS) {
    const { raw, weights, model } = await build(type, o);
    const cache = model.newCache(1, 16);
    const got = rowsOf(model.forward(idsT([ids]), cache));
    const exp = referenceLogits(raw, weights, ids);
    got.forEach((row, t) => assertClose(row, exp[t]!, 2e-4, 2e-4, `${name} position ${t}`));
    assert.is(cache.length, ids.length);
    model.dispose();
    cache.dispose();
  }
});

test('llama: prefill, token-by-token and chunked decoding agree through the cache', async () => {
  for (const [name, type, o] of VARIANTS) {
    const { model } = await build(type, o);
    const ids = [3, 14, 15, 92, 65, 35, 89, 79, 32];
    const full = rowsOf(model.forward(idsT([ids]), model.newCache(1, 12)));
    const c1 = model.newCache(1, 12);
    const step = ids.map((id) => rowsOf(model.forward(idsT([[id]]), c1))[0]!);
    const c2 = model.newCache(1, 12);
    const chunked = [
      ...rowsOf(model.forward(idsT([ids.slice(0, 4)]), c2)),
      ...rowsOf(model.forward(idsT([ids.slice(4)]), c2)),
    ];
    full.forEach((row, t) => {
      assertClose(step[t]!, row, 1e-5, 1e-5, `${name}: token-by-token at ${t}`);
      assertClose(chunked[t]!, row, 1e-5, 1e-5, `${name}: chunked at ${t}`);
    });
    model.dispose();
  }
});

test('llama: a left-padded batch equals each prompt on its own, at prefill and decode', async () => {
  const { model } = await build('llama', { kvHeads: 1 });
  const a = [5, 6, 7, 8, 9, 10],
    b = [11, 12, 13];
  const single = (p: number[]) => {
    const c = model.newCache(1, 10);
    const pre = rowsOf(model.forward(idsT([p]), c, { lastOnly: true }))[0]!;
    const dec = rowsOf(model.forward(idsT([[40]]), c))[0]!;
    return [pre, dec];
  };
  const [pa, da] = single(a),
    [pb, db] = single(b);
  const c = model.newCache(2, 10);
  c.setPadding([0, 3]);
  const pre = rowsOf(model.forward(idsT([a, [0, 0, 0, ...b]]), c, { lastOnly: true }));
  const dec = rowsOf(model.forward(idsT([[40], [40]]), c));
  assertClose(pre[0]!, pa!, 1e-5, 1e-5, 'row 0 prefill');
  assertClose(pre[1]!, pb!, 1e-4, 1e-4, 'row 1 (padded) prefill');
  assertClose(dec[0]!, da!, 1e-5, 1e-5, 'row 0 decode');
  assertClose(dec[1]!, db!, 1e-4, 1e-4, 'row 1 (padded) decode');
  model.dispose();
});

test('llama: bf16 and f16 models track the f32 one', async () => {
  const ids = [1, 2, 3, 4, 5, 6];
  const ref = rowsOf((await build('llama')).model.forward(idsT([ids]), (await build('llama')).model.newCache(1, 8)));
  for (const dt of ['bf16', 'f16'] as const) {
    const { model } = await build('llama', {}, dt);
    const got = rowsOf(model.forward(idsT([ids]), model.newCache(1, 8)));
    const num = got.flat().reduce((s, x, i) => s + (x - ref.flat()[i]!) ** 2, 0),
      den = ref.flat().reduce((s, x) => s + x * x, 0);
    assert.ok(Math.sqrt(num / den) < (dt === 'bf16' ? 5e-2 : 1e-2), `${dt}: relative error ${Math.sqrt(num / den)}`);
    model.dispose();
  }
});

test('generate: greedy ids follow the reference argmax; stop ids end a sequence', async () => {
  const { raw, weights, model } = await build('qwen2', { tied: true });
  const prompt = [1, 30, 31, 32];
  const got: number[] = [];
  for await (const s of generateIds(model, [prompt], { maxTokens: 6, stopIds: [] })) got.push(s.ids[0]!);
  const seq = [...prompt];
  for (let i = 0; i < 6; i++) {
    const last = referenceLogits(raw, weights, seq).at(-1)!;
    seq.push(last.indexOf(Math.max(...last)));
  }
  assert.equal(got, seq.slice(prompt.length));
  // stopping at the first generated id: one step only
  const steps: (number | null)[][] = [];
  for await (const s of generateIds(model, [prompt], { maxTokens: 6, stopIds: [got[0]!] })) steps.push([...s.ids]);
  assert.equal(steps, [[got[0]!]]);
  model.dispose();
});

test('generate: batches of unequal prompts equal single runs; finished rows yield null', async () => {
  const { model } = await build('mistral', { window: 4 });
  const ps = [
    [1, 2, 3, 4, 5, 6, 7],
    [9, 8],
  ];
  const run = async (prompts: number[][], stopIds: number[] = []) => {
    const out: (number | null)[][] = [];
    for await (const s of generateIds(model, prompts, { maxTokens: 5, stopIds })) out.push([...s.ids]);
    return out;
  };
  const both = await run(ps);
  const one = await run([ps[0]!]),
    two = await run([ps[1]!]);
  assert.equal(
    both.map((r) => r[0]),
    one.map((r) => r[0]),
  );
  assert.equal(
    both.map((r) => r[1]),
    two.map((r) => r[0]),
  );
  const stopped = await run(ps, [two[1]![0]!]);
  const k = stopped.findIndex((r) => r[1] === two[1]![0]);
  assert.ok(k >= 0 && stopped.slice(k + 1).every((r) => r[1] === null), 'row 1 is null after its stop id');
  model.dispose();
});

test('generate: seeded sampling repeats; another seed differs; errors', async () => {
  const { model } = await build('llama');
  const run = async (seed: number) => {
    const out: number[] = [];
    for await (const s of generateIds(model, [[1, 2, 3]], {
      maxTokens: 12,
      temperature: 1.5,
      topK: 40,
      topP: 0.95,
      seed,
      stopIds: [],
    }))
      out.push(s.ids[0]!);
    return out;
  };
  const a = await run(7),
    b = await run(7),
    c = await run(8);
  assert.equal(a, b);
  assert.not.equal(a, c);
  let err: unknown = null;
  try {
    for await (const _ of generateIds(model, [[1, 500]])) void _;
  } catch (e) {
    err = e;
  }
  assert.ok(
    err instanceof TensorError && err.message.includes('500') && err.message.includes('vocabulary'),
    String(err),
  );
  err = null;
  try {
    for await (const _ of generateIds(model, [[]])) void _;
  } catch (e) {
    err = e;
  }
  assert.ok(err instanceof TensorError, String(err));
  const cache = model.newCache(1, 3);
  throwsWith(() => model.forward(idsT([[1, 2, 3, 4]]), cache), Error, 'KVCache', 'exceed', '3');
  throwsWith(
    () => model.forward(Tensor.from([1, 2], { dtype: 'u32' }), cache),
    TensorError,
    'forward',
    '[batch, tokens]',
  );
  model.dispose();
});

test('llama config: defaults, both rope styles, windows, and errors', () => {
  const c = parseLlamaConfig(
    tinyConfig('llama', {
      ropeScaling: {
        rope_type: 'llama3',
        factor: 8,
        low_freq_factor: 1,
        high_freq_factor: 4,
        original_max_position_embeddings: 8192,
      },
    }),
  );
  assert.equal(c.ropeScaling, {
    type: 'llama3',
    factor: 8,
    lowFreqFactor: 1,
    highFreqFactor: 4,
    originalMaxPositions: 8192,
  });
  assert.is(c.headDim, 8);
  assert.equal(c.eosTokenIds, [2]);
  const v5 = parseLlamaConfig({
    ...tinyConfig('llama'),
    rope_theta: undefined,
    rope_parameters: { rope_type: 'linear', factor: 2, rope_theta: 5000 },
  });
  assert.is(v5.ropeTheta, 5000);
  assert.equal(v5.ropeScaling, { type: 'linear', factor: 2 });
  assert.equal(parseLlamaConfig(tinyConfig('mistral', { window: 7 })).windows, [7, 7]);
  assert.equal(
    parseLlamaConfig({ ...tinyConfig('qwen2'), use_sliding_window: true, sliding_window: 5, max_window_layers: 1 })
      .windows,
    [null, 5],
  );
  const q = parseLlamaConfig(tinyConfig('qwen2'));
  assert.ok(q.qkvBias && !q.outBias);
  throwsWith(
    () => parseLlamaConfig({ ...tinyConfig('llama'), model_type: 'gpt2' }),
    TensorError,
    'model_type',
    'gpt2',
    'llama, mistral, qwen2',
  );
  throwsWith(() => parseLlamaConfig({ ...tinyConfig('llama'), num_key_value_heads: 3 }), TensorError, 'multiple');
  throwsWith(() => parseLlamaConfig({ ...tinyConfig('llama'), hidden_size: 'x' }), TensorError, 'hidden_size');
  throwsWith(
    () => parseLlamaConfig({ ...tinyConfig('llama'), rope_scaling: { rope_type: 'yarn', factor: 4 } }),
    TensorError,
    'yarn',
    'not supported',
  );
  throwsWith(() => parseLlamaConfig({ ...tinyConfig('llama'), hidden_act: 'gelu' }), TensorError, 'gelu');
});

test('llama: weights with a wrong shape or missing name are named in the error', async () => {
  const raw = tinyConfig('llama');
  const w = tinyWeights(raw);
  const bad = { ...w, 'model.layers.1.mlp.up_proj.weight': Tensor.zeros([47, 32]) };
  let err: unknown = null;
  try {
    await LlamaModel.fromWeights(parseLlamaConfig(raw), new MemoryWeights(bad), { device: 'cpu' });
  } catch (e) {
    err = e;
  }
  assert.ok(err instanceof TensorError && /up_proj\.weight.*\[47, 32\].*\[48, 32\]/.test(err.message), String(err));
  const missing = { ...w };
  delete missing['model.norm.weight'];
  err = null;
  try {
    await LlamaModel.fromWeights(parseLlamaConfig(raw), new MemoryWeights(missing), { device: 'cpu' });
  } catch (e) {
    err = e;
  }
  assert.ok(err instanceof TensorError && err.message.includes("missing weight 'model.norm.weight'"), String(err));
});

test.run();
