// generation_config.json: the sampling defaults a model folder ships with (Hugging Face's
// do_sample, temperature, top_k, top_p, eos_token_id). Missing or unreadable means greedy.
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { TensorError } from '../core/errors.ts';
import type { SamplingOptions } from './sampling.ts';

export interface GenerationDefaults {
  readonly sampling: SamplingOptions;
  readonly eosTokenIds: readonly number[] | null;
}

export async function readGenerationConfig(dir: string): Promise<GenerationDefaults> {
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
  const num = (k: string) => (typeof g[k] === 'number' ? (g[k] as number) : undefined);
  const eos = g.eos_token_id;
  const eosTokenIds =
    typeof eos === 'number' ? [eos] : Array.isArray(eos) ? eos.filter((x): x is number => typeof x === 'number') : null;
  if (g.do_sample !== true) return { sampling: { temperature: 0 }, eosTokenIds };
  const sampling: SamplingOptions = {
    temperature: num('temperature') ?? 1,
    ...(num('top_k') !== undefined ? { topK: num('top_k')! } : {}),
    ...(num('top_p') !== undefined ? { topP: num('top_p')! } : {}),
  };
  return { sampling, eosTokenIds };
}
