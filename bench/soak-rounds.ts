// One round of bench/soak.ts: a generation drawn from a seeded generator the way a server sees
// them: a batch of 1-13 prompts of 16-300 tokens, greedy, sampled or penalized, with the decode
// graph or eagerly, and ended in one of the ways a request ends: run out, stop ids, the client
// going away (the consumer stops reading), or an error thrown from the streaming callback.
import type { LlamaModel } from '../src/models/llama.ts';
import { generateIds, type GenerateOptions } from '../src/models/generate.ts';

export type Ending = 'complete' | 'stop-ids' | 'abort' | 'stream-error';

export interface RoundPlan {
  readonly batch: number;
  readonly promptLengths: readonly number[];
  readonly mode: 'greedy' | 'sampled' | 'penalized';
  readonly graph: boolean;
  readonly maxTokens: number;
  readonly ending: Ending;
  /** abort and stream-error: the step at which the consumer stops or throws */
  readonly at: number;
}

export interface RoundResult {
  readonly tokens: number;
  readonly steps: number;
}

/** a seeded generator: integers in [0, n) */
export function lcg(seed: number): (n: number) => number {
  let x = seed >>> 0;
  return (n) => {
    x = (Math.imul(x, 1664525) + 1013904223) >>> 0;
    return Math.floor((x / 2 ** 32) * n);
  };
}

const ENDINGS: readonly Ending[] = ['complete', 'stop-ids', 'abort', 'stream-error'];
const MODES = ['greedy', 'sampled', 'penalized'] as const;

/** the next round: `maxNew` bounds the new tokens per sequence */
export function planRound(r: (n: number) => number, maxNew: number, graphs: boolean): RoundPlan {
  const batch = 1 + r(13);
  const maxTokens = 1 + r(maxNew);
  return {
    batch,
    promptLengths: Array.from({ length: batch }, () => 16 + r(285)),
    mode: MODES[r(MODES.length)]!,
    // a server may run some requests eagerly: one round in five without the graph
    graph: graphs && r(5) !== 0,
    maxTokens,
    ending: ENDINGS[r(ENDINGS.length)]!,
    at: r(maxTokens),
  };
}

/**
 * Rounds of the largest batch, prompts and length, one per mode, run before the first sample:
 * what the library grows to the largest size seen so far (the ones of single-id writes, sized by
 * the largest KV cache) or sets up once (BLAS handles, kernels) is then in place, so a later
 * sample that differs is a leak.
 */
export function primingRounds(graphs: boolean, maxNew: number): RoundPlan[] {
  const base = {
    batch: 13,
    promptLengths: new Array<number>(13).fill(300),
    maxTokens: maxNew,
    ending: 'complete',
    at: 0,
  } as const;
  const plans: RoundPlan[] = MODES.map((mode) => ({ ...base, mode, graph: graphs }));
  if (graphs) plans.push({ ...base, mode: 'sampled', graph: false });
  return plans;
}

/** thrown by the streaming callback of a stream-error round */
export class StreamError extends Error {}

export async function runRound(model: LlamaModel, p: RoundPlan, r: (n: number) => number): Promise<RoundResult> {
  const vocab = model.config.vocabSize;
  const prompts = p.promptLengths.map((n) => Array.from({ length: n }, () => 3 + r(vocab - 3)));
  const seed = r(2 ** 30);
  const opts: GenerateOptions = {
    maxTokens: p.maxTokens,
    graph: p.graph,
    // random weights rarely pick a given id: 2% of the vocabulary stops a sequence
    stopIds: p.ending === 'stop-ids' ? Array.from({ length: Math.ceil(vocab / 50) }, () => r(vocab)) : [],
    ...(p.mode === 'sampled' ? { temperature: 0.8, topK: r(2) ? 50 : 0, topP: r(2) ? 0.9 : 1, seed } : {}),
    ...(p.mode === 'penalized'
      ? { temperature: 0.7, seed, repetitionPenalty: 1.2, presencePenalty: 0.3, frequencyPenalty: 0.1 }
      : {}),
  };
  let tokens = 0,
    steps = 0;
  // what a server's streaming callback does with each step; it throws in a stream-error round
  const onStep = (ids: readonly (number | null)[]): void => {
    if (p.ending === 'stream-error' && steps === p.at) throw new StreamError(`stream closed at step ${steps}`);
    tokens += ids.filter((x) => x !== null).length;
    steps++;
  };
  try {
    for await (const st of generateIds(model, prompts, opts)) {
      if (p.ending === 'abort' && steps === p.at) break;
      onStep(st.ids);
    }
  } catch (e) {
    if (!(e instanceof StreamError)) throw e;
  }
  return { tokens, steps };
}
