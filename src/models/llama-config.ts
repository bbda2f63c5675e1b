// Hugging Face config.json for the Llama family (model_type llama, mistral, qwen2), read into
// one record with every default spelled out. Both config styles are read: rope_theta and
// rope_scaling (transformers 4) and rope_parameters (transformers 5).
import { TensorError } from '../core/errors.ts';
import type { DType } from '../core/dtype.ts';
import type { RopeScaling } from '../nn/rotary.ts';

export const MODEL_TYPES = ['llama', 'mistral', 'qwen2'] as const;
export type ModelType = (typeof MODEL_TYPES)[number];

export interface LlamaConfig {
  readonly modelType: ModelType;
  readonly vocabSize: number;
  readonly hiddenSize: number;
  readonly intermediateSize: number;
  readonly layers: number;
  readonly heads: number;
  readonly kvHeads: number;
  readonly headDim: number;
  readonly rmsNormEps: number;
  readonly ropeTheta: number;
  readonly ropeScaling: RopeScaling;
  readonly maxPositions: number;
  readonly tieEmbeddings: boolean;
  /** q, k, v (and for llama's attention_bias also o) projections carry biases */
  readonly qkvBias: boolean;
  readonly outBias: boolean;
  readonly mlpBias: boolean;
  /** per layer: the sliding window in tokens, or null for full attention */
  readonly windows: readonly (number | null)[];
  readonly bosTokenId: number | null;
  readonly eosTokenIds: readonly number[];
  /** the dtype the checkpoint was saved in, when the config says */
  readonly dtype: DType | null;
}

type Json = Record<string, unknown>;

const TORCH_DTYPES: Record<string, DType> = { float32: 'f32', float16: 'f16', bfloat16: 'bf16', float64: 'f64' };

export function parseLlamaConfig(raw: unknown, where = 'config.json'): LlamaConfig {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw))
    throw new TensorError(`${where}: not a JSON object`);
  const c = raw as Json;
  const fail = (msg: string): never => {
    throw new TensorError(`${where}: ${msg}`);
  };
  const int = (key: string, def?: number): number => {
    const v = c[key] ?? def;
    if (typeof v !== 'number' || !Number.isInteger(v) || v < 1)
      return fail(`'${key}' must be a positive integer, got ${JSON.stringify(c[key])}`);
    return v;
  };
  const num = (key: string, def?: number): number => {
    const v = c[key] ?? def;
    if (typeof v !== 'number' || !Number.isFinite(v) || v <= 0)
      return fail(`'${key}' must be a positive number, got ${JSON.stringify(c[key])}`);
    return v;
  };
  const bool = (key: string, def: boolean): boolean => {
    const v = c[key] ?? def;
    if (typeof v !== 'boolean') return fail(`'${key}' must be true or false, got ${JSON.stringify(v)}`);
    return v;
  };

  const quant = c.quantization_config;
  if (quant !== undefined && quant !== null) {
    const method = typeof quant === 'object' && 'quant_method' in quant ? String(quant.quant_method) : 'unknown';
    fail(
      `quantization_config (quant_method '${method}'): quantized checkpoints are not supported; use a float16, bfloat16 or float32 checkpoint of the model`,
    );
  }
  const modelType = c.model_type;
  if (typeof modelType !== 'string' || !(MODEL_TYPES as readonly string[]).includes(modelType)) {
    fail(`model_type ${JSON.stringify(modelType)} is not supported (supported: ${MODEL_TYPES.join(', ')})`);
  }
  const type = modelType as ModelType;
  const act = c.hidden_act ?? 'silu';
  if (act !== 'silu') fail(`hidden_act '${String(act)}' is not supported (the Llama family uses silu)`);

  const hiddenSize = int('hidden_size'),
    heads = int('num_attention_heads');
  const kvHeads = int('num_key_value_heads', heads);
  if (heads % kvHeads !== 0) fail(`num_attention_heads ${heads} is not a multiple of num_key_value_heads ${kvHeads}`);
  const headDim = c.head_dim == null ? hiddenSize / heads : int('head_dim');
  if (!Number.isInteger(headDim) || headDim % 2 !== 0)
    fail(`head dim ${headDim} (hidden_size / num_attention_heads) must be an even integer`);
  const layers = int('num_hidden_layers');

  const rp = (c.rope_parameters ?? null) as Json | null;
  const ropeTheta = rp && typeof rp.rope_theta === 'number' ? rp.rope_theta : num('rope_theta', 10000);
  const ropeScaling = parseRopeScaling(rp ?? (c.rope_scaling as Json | null | undefined) ?? null, fail);

  const attentionBias = bool('attention_bias', false);
  const qkvBias = type === 'qwen2' ? true : attentionBias;
  const outBias = type === 'qwen2' ? false : attentionBias;

  const windows = slidingWindows(c, type, layers, fail);
  const eos = c.eos_token_id;
  const eosTokenIds =
    typeof eos === 'number' ? [eos] : Array.isArray(eos) ? eos.filter((x): x is number => typeof x === 'number') : [];
  const dt = (c.torch_dtype ?? c.dtype) as unknown;
  return {
    modelType: type,
    vocabSize: int('vocab_size'),
    hiddenSize,
    intermediateSize: int('intermediate_size'),
    layers,
    heads,
    kvHeads,
    headDim,
    rmsNormEps: num('rms_norm_eps', 1e-6),
    ropeTheta,
    ropeScaling,
    maxPositions: int('max_position_embeddings', 2048),
    tieEmbeddings: bool('tie_word_embeddings', false),
    qkvBias,
    outBias,
    mlpBias: bool('mlp_bias', false),
    windows,
    bosTokenId: typeof c.bos_token_id === 'number' ? c.bos_token_id : null,
    eosTokenIds,
    dtype: typeof dt === 'string' ? (TORCH_DTYPES[dt] ?? null) : null,
  };
}

function parseRopeScaling(s: Json | null, fail: (m: string) => never): RopeScaling {
  if (s === null) return { type: 'default' };
  const type = s.rope_type ?? s.type ?? 'default';
  const factor = (): number => {
    const f = s.factor;
    if (typeof f !== 'number' || !(f > 0))
      return fail(`rope scaling '${String(type)}' needs a positive factor, got ${JSON.stringify(f)}`);
    return f;
  };
  switch (type) {
    case 'default':
      return { type: 'default' };
    case 'linear':
      return { type: 'linear', factor: factor() };
    case 'llama3': {
      const need = (k: string): number => {
        const v = s[k];
        if (typeof v !== 'number' || !(v > 0))
          return fail(`rope scaling 'llama3' needs a positive ${k}, got ${JSON.stringify(v)}`);
        return v;
      };
      return {
        type: 'llama3',
        factor: factor(),
        lowFreqFactor: need('low_freq_factor'),
        highFreqFactor: need('high_freq_factor'),
        originalMaxPositions: need('original_max_position_embeddings'),
      };
    }
    default:
      return fail(`rope scaling type '${String(type)}' is not supported (supported: default, linear, llama3)`);
  }
}

function slidingWindows(c: Json, type: ModelType, layers: number, fail: (m: string) => never): (number | null)[] {
  // MistralConfig's own default when the key is absent
  const w = 'sliding_window' in c ? c.sliding_window : type === 'mistral' ? 4096 : null;
  const win =
    w == null
      ? null
      : typeof w === 'number' && Number.isInteger(w) && w > 0
        ? w
        : fail(`'sliding_window' must be a positive integer or null, got ${JSON.stringify(w)}`);
  const kinds = c.layer_types;
  if (Array.isArray(kinds)) {
    if (kinds.length !== layers) fail(`'layer_types' has ${kinds.length} entries for ${layers} layers`);
    return kinds.map((k) => (k === 'sliding_attention' ? win : null));
  }
  if (type === 'mistral') return new Array<number | null>(layers).fill(win);
  if (type === 'qwen2') {
    // Qwen2 windows only the layers from max_window_layers on, and only when asked to
    if (c.use_sliding_window !== true || win === null) return new Array<number | null>(layers).fill(null);
    const from = typeof c.max_window_layers === 'number' ? c.max_window_layers : layers;
    return Array.from({ length: layers }, (_, i) => (i >= from ? win : null));
  }
  return new Array<number | null>(layers).fill(null);
}
