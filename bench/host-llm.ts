// The host cost of a Llama-family token without the driver: a model in Llama-3.2-1B's shapes
// (16 layers, hidden 2048, 32/8 heads of 64, bf16) whose weights are empty tensors on the null
// runtime, greedy decoding after a 128-token prompt, eagerly and replayed from the decode graph.
// The time is our TypeScript alone: what a token costs the host before any kernel runs.
import { Tensor, type Device } from '../src/index.ts';
import { LlamaModel } from '../src/models/llama.ts';
import { parseLlamaConfig } from '../src/models/llama-config.ts';
import { MemoryWeights } from '../src/nn/weights.ts';
import { generateIds, type GenerateTimings } from '../src/models/generate.ts';

/** a Llama-family model's shapes, for models of empty weights */
export interface EmptyLlamaShape {
  readonly hidden: number;
  readonly heads: number;
  readonly kvHeads: number;
  readonly headDim: number;
  readonly ff: number;
  readonly layers: number;
  readonly vocab: number;
  /** the head shares the embedding's weight */
  readonly tied: boolean;
}

export const LLAMA_1B: EmptyLlamaShape = {
  hidden: 2048,
  heads: 32,
  kvHeads: 8,
  headDim: 64,
  ff: 8192,
  layers: 16,
  vocab: 128256,
  tied: true,
};
export const LLAMA_8B: EmptyLlamaShape = {
  hidden: 4096,
  heads: 32,
  kvHeads: 8,
  headDim: 128,
  ff: 14336,
  layers: 32,
  vocab: 128256,
  tied: false,
};

/** a bf16 model of these shapes whose weights are empty tensors (meant for the null runtime) */
export async function emptyLlama(dev: Device, s: EmptyLlamaShape): Promise<LlamaModel> {
  const { hidden: H, heads, kvHeads: KV, headDim: D, ff: FF, vocab: V } = s;
  const config = parseLlamaConfig({
    architectures: ['LlamaForCausalLM'],
    model_type: 'llama',
    vocab_size: V,
    hidden_size: H,
    intermediate_size: FF,
    num_hidden_layers: s.layers,
    num_attention_heads: heads,
    num_key_value_heads: KV,
    head_dim: D,
    hidden_act: 'silu',
    max_position_embeddings: 8192,
    rms_norm_eps: 1e-5,
    rope_theta: 500000,
    tie_word_embeddings: s.tied,
    bos_token_id: 1,
    eos_token_id: 2,
    torch_dtype: 'bfloat16',
  });
  const e = (shape: number[]): Tensor => Tensor.empty(shape, 'bf16', dev);
  const w: Record<string, Tensor> = { 'model.embed_tokens.weight': e([V, H]), 'model.norm.weight': e([H]) };
  if (!s.tied) w['lm_head.weight'] = e([V, H]);
  for (let l = 0; l < s.layers; l++) {
    const p = `model.layers.${l}`;
    w[`${p}.input_layernorm.weight`] = e([H]);
    w[`${p}.post_attention_layernorm.weight`] = e([H]);
    w[`${p}.self_attn.q_proj.weight`] = e([heads * D, H]);
    w[`${p}.self_attn.k_proj.weight`] = e([KV * D, H]);
    w[`${p}.self_attn.v_proj.weight`] = e([KV * D, H]);
    w[`${p}.self_attn.o_proj.weight`] = e([H, heads * D]);
    w[`${p}.mlp.gate_proj.weight`] = e([FF, H]);
    w[`${p}.mlp.up_proj.weight`] = e([FF, H]);
    w[`${p}.mlp.down_proj.weight`] = e([H, FF]);
  }
  try {
    return await LlamaModel.fromWeights(config, new MemoryWeights(w), { device: dev, dtype: 'bf16' });
  } finally {
    // the model holds what it loaded (views or fused copies)
    for (const t of Object.values(w)) t.dispose();
  }
}

/** microseconds of host time a decoded token, eager and replayed, best of `runs` runs of `tokens` */
export async function llmHostCost(dev: Device, tokens = 256, runs = 3): Promise<{ eagerUs: number; replayUs: number }> {
  const model = await emptyLlama(dev, LLAMA_1B);
  const prompt = Array.from({ length: 128 }, (_, i) => (i * 7919) % LLAMA_1B.vocab);
  const perToken = async (n: number, graph: boolean): Promise<number> => {
    const t: GenerateTimings = { prefillTokens: 0, prefillSeconds: 0, decodeTokens: 0, decodeSeconds: 0 };
    for await (const st of generateIds(model, [prompt], { maxTokens: n, stopIds: [], graph }, t)) void st;
    return (t.decodeSeconds / t.decodeTokens) * 1e6;
  };
  await perToken(16, false);
  await perToken(16, true);
  let eagerUs = Infinity,
    replayUs = Infinity;
  for (let r = 0; r < runs; r++) {
    eagerUs = Math.min(eagerUs, await perToken(tokens, false));
    replayUs = Math.min(replayUs, await perToken(tokens, true));
  }
  model.dispose();
  return { eagerUs, replayUs };
}
