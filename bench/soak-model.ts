// The model bench/soak.ts generates with: random weights in the shape of a real Llama-family
// model, made on the device one weight at a time as the loader asks for it (no checkpoint, no
// Python, never two copies of the model), or a Hugging Face folder when one is given.
import { Tensor, type Device, type DType } from '../src/index.ts';
import { LlamaModel } from '../src/models/llama.ts';
import { parseLlamaConfig } from '../src/models/llama-config.ts';
import { PretrainedLlama } from '../src/models/pretrained.ts';
import type { WeightInfo, WeightSource } from '../src/nn/weights.ts';

interface Shape {
  hidden: number;
  ff: number;
  layers: number;
  heads: number;
  kvHeads: number;
  headDim: number;
  vocab: number;
  tied: boolean;
}

/** the shapes of scripts/llm/make_random_model.py, and a tiny one for the CPU */
export const SOAK_SHAPES: Readonly<Record<string, Shape>> = {
  tiny: { hidden: 64, ff: 160, layers: 2, heads: 4, kvHeads: 2, headDim: 16, vocab: 512, tied: false },
  '1b': { hidden: 2048, ff: 8192, layers: 16, heads: 32, kvHeads: 8, headDim: 64, vocab: 128256, tied: true },
  '8b': { hidden: 4096, ff: 14336, layers: 32, heads: 32, kvHeads: 8, headDim: 128, vocab: 128256, tied: false },
};

/** config.json of a Llama 3 model of this shape */
function configOf(s: Shape): Record<string, unknown> {
  return {
    architectures: ['LlamaForCausalLM'],
    model_type: 'llama',
    vocab_size: s.vocab,
    hidden_size: s.hidden,
    intermediate_size: s.ff,
    num_hidden_layers: s.layers,
    num_attention_heads: s.heads,
    num_key_value_heads: s.kvHeads,
    head_dim: s.headDim,
    hidden_act: 'silu',
    max_position_embeddings: 131072,
    rms_norm_eps: 1e-5,
    rope_theta: 500000,
    rope_scaling: {
      rope_type: 'llama3',
      factor: 32,
      low_freq_factor: 1,
      high_freq_factor: 4,
      original_max_position_embeddings: 8192,
    },
    tie_word_embeddings: s.tied,
    attention_bias: false,
    mlp_bias: false,
    bos_token_id: 1,
    eos_token_id: 2,
    torch_dtype: 'bfloat16',
  };
}

/** every weight's name and shape, as a Hugging Face checkpoint names them */
function weightShapes(s: Shape): Map<string, number[]> {
  const m = new Map<string, number[]>([['model.embed_tokens.weight', [s.vocab, s.hidden]]]);
  const q = s.heads * s.headDim,
    kv = s.kvHeads * s.headDim;
  for (let l = 0; l < s.layers; l++) {
    const p = `model.layers.${l}`;
    m.set(`${p}.input_layernorm.weight`, [s.hidden]);
    m.set(`${p}.post_attention_layernorm.weight`, [s.hidden]);
    m.set(`${p}.self_attn.q_proj.weight`, [q, s.hidden]);
    m.set(`${p}.self_attn.k_proj.weight`, [kv, s.hidden]);
    m.set(`${p}.self_attn.v_proj.weight`, [kv, s.hidden]);
    m.set(`${p}.self_attn.o_proj.weight`, [s.hidden, q]);
    m.set(`${p}.mlp.gate_proj.weight`, [s.ff, s.hidden]);
    m.set(`${p}.mlp.up_proj.weight`, [s.ff, s.hidden]);
    m.set(`${p}.mlp.down_proj.weight`, [s.hidden, s.ff]);
  }
  m.set('model.norm.weight', [s.hidden]);
  if (!s.tied) m.set('lm_head.weight', [s.vocab, s.hidden]);
  return m;
}

/** random weights made when loaded: norms at 1, the rest N(0, 1/fan-in) (activations stay O(1)) */
class RandomWeights implements WeightSource {
  readonly label = 'random weights';
  private n = 0;
  constructor(
    private readonly shapes: ReadonlyMap<string, number[]>,
    private readonly seed: number,
  ) {}
  has(name: string): boolean {
    return this.shapes.has(name);
  }
  info(name: string): WeightInfo {
    return { shape: this.shapes.get(name)!, dtype: 'f32' };
  }
  async load(name: string, opts: { device: Device; dtype: DType }): Promise<Tensor> {
    const shape = this.shapes.get(name)!;
    if (shape.length === 1) return Tensor.ones(shape, opts);
    const r = Tensor.randn(shape, { seed: this.seed + this.n++, device: opts.device });
    const scaled = r.mul(1 / Math.sqrt(shape[1]!));
    r.dispose();
    if (opts.dtype === 'f32') return scaled;
    const out = scaled.toDtype(opts.dtype);
    scaled.dispose();
    return out;
  }
}

export interface SoakModel {
  readonly model: LlamaModel;
  /** what was loaded, in words */
  readonly what: string;
  dispose(): void;
}

/** a random model of `shape` on `dev`, or the model of a Hugging Face folder */
export async function soakModel(
  dev: Device,
  opts: { shape: string; dir?: string; dtype: DType; seed: number },
): Promise<SoakModel> {
  if (opts.dir) {
    const p = await PretrainedLlama.load(opts.dir, { device: dev, dtype: opts.dtype });
    return { model: p.model, what: `${opts.dir} (${opts.dtype})`, dispose: () => p.dispose() };
  }
  const s = SOAK_SHAPES[opts.shape];
  if (!s) throw new Error(`bench:soak: unknown --shape ${opts.shape} (${Object.keys(SOAK_SHAPES).join(', ')})`);
  const model = await LlamaModel.fromWeights(
    parseLlamaConfig(configOf(s)),
    new RandomWeights(weightShapes(s), opts.seed),
    {
      device: dev,
      dtype: opts.dtype,
    },
  );
  const params = model.weightBytes() / (opts.dtype === 'f32' ? 4 : 2);
  return {
    model,
    what: `random ${opts.shape}-shaped Llama (${(params / 1e9).toFixed(params < 1e8 ? 4 : 2)}B parameters, ${opts.dtype})`,
    dispose: () => model.dispose(),
  };
}
