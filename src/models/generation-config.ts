// generation_config.json: the sampling defaults a model folder ships with (Hugging Face's
// do_sample, temperature, top_k, top_p, repetition_penalty, eos_token_id). Missing means greedy.
// Fields that would change the output but are not implemented here are named in one warning.
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { TensorError } from '../core/errors.ts';
import type { SamplingOptions } from './sampling.ts';

export interface GenerationDefaults {
  readonly sampling: SamplingOptions;
  readonly eosTokenIds: readonly number[] | null;
}

/** fields read here */
const USED = new Set([
  'do_sample',
  'temperature',
  'top_k',
  'top_p',
  'repetition_penalty',
  'presence_penalty',
  'frequency_penalty',
  'eos_token_id',
]);
/** fields that do not change what greedy or sampled generation of one sequence gives */
const NO_EFFECT = new Set([
  'bos_token_id',
  'pad_token_id',
  'decoder_start_token_id',
  'transformers_version',
  '_from_model_config',
  'use_cache',
  'cache_implementation',
  'output_attentions',
  'output_hidden_states',
  'output_scores',
  'output_logits',
  'return_dict_in_generate',
  'return_legacy_cache',
  'num_return_sequences',
  'remove_invalid_values',
]);
/** fields whose value here means "off": set so, nothing is lost by ignoring them */
const OFF: Readonly<Record<string, readonly unknown[]>> = {
  num_beams: [1],
  num_beam_groups: [1],
  diversity_penalty: [0],
  length_penalty: [1],
  early_stopping: [false],
  typical_p: [1],
  epsilon_cutoff: [0],
  eta_cutoff: [0],
  min_p: [null, 0],
  top_a: [null, 0],
  no_repeat_ngram_size: [0],
  encoder_no_repeat_ngram_size: [0],
  encoder_repetition_penalty: [1],
  min_length: [0],
  min_new_tokens: [null, 0],
  renormalize_logits: [false],
  guidance_scale: [null, 1],
  penalty_alpha: [null],
  bad_words_ids: [null],
  force_words_ids: [null],
  suppress_tokens: [null],
  begin_suppress_tokens: [null],
  forced_bos_token_id: [null],
  forced_eos_token_id: [null],
  sequence_bias: [null],
  exponential_decay_length_penalty: [null],
  max_time: [null],
  stop_strings: [null],
  constraints: [null],
  token_healing: [false],
  watermarking_config: [null],
};

/** reads the folder's generation_config.json; `warn` hears, once, of fields ignored that matter */
export async function readGenerationConfig(
  dir: string,
  warn: (message: string) => void = () => undefined,
): Promise<GenerationDefaults> {
  const path = join(dir, 'generation_config.json');
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch {
    return { sampling: {}, eosTokenIds: null };
  }
  let g: Record<string, unknown>;
  try {
    g = JSON.parse(text) as Record<string, unknown>;
  } catch (e) {
    throw new TensorError(`${path}: invalid JSON (${(e as Error).message})`);
  }
  if (typeof g !== 'object' || g === null || Array.isArray(g)) throw new TensorError(`${path}: not a JSON object`);
  const ignored = Object.entries(g).filter(
    ([k, v]) => !USED.has(k) && !NO_EFFECT.has(k) && !(k in OFF && OFF[k]!.includes(v)),
  );
  if (ignored.length)
    warn(
      `${path}: ${ignored.map(([k, v]) => `${k} ${JSON.stringify(v)}`).join(', ')} ${ignored.length === 1 ? 'is' : 'are'} not implemented and ignored`,
    );
  const num = (k: string): number | undefined => {
    const v = g[k];
    if (v === undefined || v === null) return undefined;
    if (typeof v !== 'number') throw new TensorError(`${path}: ${k} must be a number, got ${JSON.stringify(v)}`);
    return v;
  };
  const eos = g.eos_token_id;
  const eosTokenIds =
    typeof eos === 'number' ? [eos] : Array.isArray(eos) ? eos.filter((x): x is number => typeof x === 'number') : null;
  // the penalties apply to greedy search too, as in transformers
  const penalties: SamplingOptions = {
    ...(num('repetition_penalty') !== undefined ? { repetitionPenalty: num('repetition_penalty')! } : {}),
    ...(num('presence_penalty') !== undefined ? { presencePenalty: num('presence_penalty')! } : {}),
    ...(num('frequency_penalty') !== undefined ? { frequencyPenalty: num('frequency_penalty')! } : {}),
  };
  if (g.do_sample !== true) return { sampling: { temperature: 0, ...penalties }, eosTokenIds };
  const sampling: SamplingOptions = {
    temperature: num('temperature') ?? 1,
    ...(num('top_k') !== undefined ? { topK: num('top_k')! } : {}),
    ...(num('top_p') !== undefined ? { topP: num('top_p')! } : {}),
    ...penalties,
  };
  return { sampling, eosTokenIds };
}
