// Trains a small Llama-style language model on a text file you name, prints the loss curve, then
// a sample of text it writes.
//
//   npx tsx examples/train-gpt.ts --text FILE [--tokenizer DIR] [--device cpu|rocm:0|cuda:0]
//       [--steps 300] [--batch 16] [--seq 128] [--layers 4] [--dim 128] [--heads 4] [--lr 3e-3]
//       [--sample 200] [--seed 1]
//
// Tokens are the file's bytes (a vocabulary of 256), or the ids of a Hugging Face tokenizer when
// --tokenizer names a folder with a tokenizer.json. The model is the same LlamaModel that loads
// Hugging Face checkpoints, built from fresh weights; its training forward carries gradients
// through every op, and AdamW with warm-up and cosine decay trains it.
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import {
  Device,
  LlamaModel,
  MemoryWeights,
  Tensor,
  TextTokenizer,
  generateIds,
  nn,
  optim,
  parseLlamaConfig,
  tidy,
} from '../src/index.ts';

const { values: args } = parseArgs({
  options: {
    text: { type: 'string' },
    tokenizer: { type: 'string' },
    device: { type: 'string' },
    steps: { type: 'string', default: '300' },
    batch: { type: 'string', default: '16' },
    seq: { type: 'string', default: '128' },
    layers: { type: 'string', default: '4' },
    dim: { type: 'string', default: '128' },
    heads: { type: 'string', default: '4' },
    lr: { type: 'string', default: '3e-3' },
    sample: { type: 'string', default: '200' },
    seed: { type: 'string', default: '1' },
  },
});
const int = (name: keyof typeof args): number => {
  const v = Number(args[name]);
  if (!Number.isInteger(v) || v < 1) throw new Error(`--${name} must be a positive integer, got ${args[name]}`);
  return v;
};
if (!args.text) {
  console.error('usage: npx tsx examples/train-gpt.ts --text FILE [--tokenizer DIR] [--device D] [--steps N] ...');
  process.exit(2);
}
const [steps, batch, seq, layers, dim, heads, sampleLen, seed] = (
  ['steps', 'batch', 'seq', 'layers', 'dim', 'heads', 'sample', 'seed'] as const
).map(int) as [number, number, number, number, number, number, number, number];
const lr = Number(args.lr);
if (!(lr > 0)) throw new Error(`--lr must be a positive number, got ${args.lr}`);
if (dim % heads !== 0 || (dim / heads) % 2 !== 0)
  throw new Error(`--dim ${dim} must split into --heads ${heads} heads of an even size`);
const device = args.device ? Device.parse(args.device) : (Device.bestGpu() ?? Device.cpu());

// ---- the data: token ids of the whole file ----------------------------------------------------
const text = readFileSync(args.text);
const tok = args.tokenizer ? await TextTokenizer.load(args.tokenizer) : null;
const data = tok
  ? Uint32Array.from(tok.encode(text.toString('utf8'), { addSpecialTokens: false }))
  : Uint32Array.from(text);
const vocab = tok ? tok.vocabSize : 256;
if (data.length < seq + 2) throw new Error(`${args.text}: ${data.length} tokens, fewer than --seq ${seq} + 2`);

// ---- the model: a Llama config and fresh weights (normal(0, 0.02), norms at 1) ----------------
const ff = Math.ceil((8 * dim) / 3 / 16) * 16;
const config = parseLlamaConfig({
  architectures: ['LlamaForCausalLM'],
  model_type: 'llama',
  vocab_size: vocab,
  hidden_size: dim,
  intermediate_size: ff,
  num_hidden_layers: layers,
  num_attention_heads: heads,
  num_key_value_heads: heads,
  hidden_act: 'silu',
  max_position_embeddings: Math.max(seq, sampleLen + 16),
  rms_norm_eps: 1e-5,
  rope_theta: 10000,
  tie_word_embeddings: true,
  bos_token_id: 0,
  eos_token_id: 0,
  torch_dtype: 'float32',
});
let s = seed * 1000;
const normal = (shape: number[]): Tensor => Tensor.randn(shape, { seed: s++ }).affine(0.02, 0);
const weights: Record<string, Tensor> = {
  'model.embed_tokens.weight': normal([vocab, dim]),
  'model.norm.weight': Tensor.ones([dim]),
};
for (let l = 0; l < layers; l++) {
  const p = `model.layers.${l}`;
  weights[`${p}.input_layernorm.weight`] = Tensor.ones([dim]);
  weights[`${p}.post_attention_layernorm.weight`] = Tensor.ones([dim]);
  for (const n of ['q_proj', 'k_proj', 'v_proj', 'o_proj']) weights[`${p}.self_attn.${n}.weight`] = normal([dim, dim]);
  weights[`${p}.mlp.gate_proj.weight`] = normal([ff, dim]);
  weights[`${p}.mlp.up_proj.weight`] = normal([ff, dim]);
  weights[`${p}.mlp.down_proj.weight`] = normal([dim, ff]);
}
const model = await LlamaModel.fromWeights(config, new MemoryWeights(weights), { device, dtype: 'f32' });
for (const w of Object.values(weights)) w.dispose();
const params = model.parameters();
for (const p of params) p.requiresGrad = true;
const nParams = params.reduce((n, p) => n + p.numel, 0);
console.log(
  `device: ${device}; ${data.length} tokens (${tok ? 'tokenizer' : 'bytes'}, vocabulary ${vocab}); ` +
    `${layers} layers, d ${dim}, ${heads} heads, ff ${ff}: ${(nParams / 1e6).toFixed(2)}M parameters`,
);

// ---- training ----------------------------------------------------------------------------------
const opt = new optim.AdamW(params, { lr, weightDecay: 0.1 });
const warm = Math.max(1, Math.floor(steps / 20));
const sched = new optim.SequentialLR(
  opt,
  [
    new optim.LinearLR(opt, { startFactor: 0.05, endFactor: 1, totalIters: warm }),
    new optim.CosineAnnealingLR(opt, Math.max(1, steps - warm), { etaMin: lr / 10 }),
  ],
  [warm],
);
// windows of seq + 1 tokens at seeded random places: inputs and the next tokens
let r = seed >>> 0;
const nextRandom = (): number => {
  r = (Math.imul(r, 1664525) + 1013904223) >>> 0;
  return r / 2 ** 32;
};
function batchAt(): { ids: Tensor; targets: Tensor } {
  const inp = new Uint32Array(batch * seq),
    tgt = new BigInt64Array(batch * seq);
  for (let b = 0; b < batch; b++) {
    const at = Math.floor(nextRandom() * (data.length - seq - 1));
    inp.set(data.subarray(at, at + seq), b * seq);
    for (let i = 0; i < seq; i++) tgt[b * seq + i] = BigInt(data[at + i + 1]!);
  }
  return {
    ids: Tensor.from(inp, { shape: [batch, seq], device }),
    targets: Tensor.from(tgt, { device }),
  };
}

const curve: number[] = [];
const t0 = performance.now();
const every = Math.max(1, Math.floor(steps / 30));
for (let step = 1; step <= steps; step++) {
  const loss = tidy(() => {
    const { ids, targets } = batchAt();
    const l = nn.crossEntropy(model.forwardTrain(ids).reshape([batch * seq, vocab]), targets);
    l.backward();
    return l;
  });
  optim.clipGradNorm(params, 1).dispose();
  opt.step();
  opt.zeroGrad();
  sched.step();
  if (step % every === 0 || step === steps) {
    const v = loss.itemSync();
    curve.push(v);
    const bar = '#'.repeat(Math.max(1, Math.round((v / curve[0]!) * 40)));
    console.log(`step ${String(step).padStart(5)}  loss ${v.toFixed(3)}  ${bar}`);
  }
  loss.dispose();
}
const secs = (performance.now() - t0) / 1e3;
console.log(`${steps} steps in ${secs.toFixed(1)} s (${((steps * batch * seq) / secs).toFixed(0)} tokens/s)`);

// ---- a sample: the model continues the start of the file ---------------------------------------
for (const p of params) p.requiresGrad = false;
const prompt = Array.from(data.subarray(0, Math.min(16, data.length)));
const out: number[] = [];
for await (const st of generateIds(model, [prompt], {
  maxTokens: sampleLen,
  temperature: 0.8,
  topK: 40,
  seed,
  stopIds: [],
})) {
  out.push(st.ids[0]!);
}
const show = (ids: number[]): string => (tok ? tok.decode(ids) : Buffer.from(ids).toString('utf8'));
console.log(`\nsample:\n${show(prompt)}${show(out)}`);
opt.dispose();
model.dispose();
