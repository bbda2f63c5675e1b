// Token generation over a KV cache: prefill the (left-padded) prompts, then one token per step,
// on a GPU replayed from a graph captured after the prefill (one launch per token). The sampled
// ids stay on the device and feed the next step directly; the host reads each step's ids back
// only after queuing the following steps, so the readback's wait overlaps the GPU's work.
// A step whose logits were not finite shows in those ids (NONFINITE_ID) and stops generation
// with an error naming the step: no extra read, no extra wait.
import { Tensor } from '../tensor/tensor.ts';
import { TensorError } from '../core/errors.ts';
import { tidy } from '../core/scope.ts';
import {
  API_NAMES,
  NONFINITE_ID,
  Sampler,
  flagNonFinite,
  type OptionNames,
  type SampleContext,
  type SamplingOptions,
  type VocabMask,
} from './sampling.ts';
import type { LlamaModel } from './llama.ts';
import type { KVCache } from '../nn/kv-cache.ts';
import { DecodeGraph } from './decode-graph.ts';
import type { HostArray } from '../core/dtype.ts';

// steps queued beyond the one whose ids the host waits for
const AHEAD = 2;

export interface GenerateOptions extends SamplingOptions {
  /** new tokens at most per sequence (default 128) */
  maxTokens?: number;
  /** ids that end a sequence (default: the model's eos ids); the stop id itself is yielded */
  stopIds?: readonly number[];
  /** id written into the left padding of shorter prompts (default: the first stop id, else 0) */
  padId?: number;
  /** replay the decode step from a GPU graph captured once (default: true on a GPU) */
  graph?: boolean;
  /** ids never to sample, e.g. those the tokenizer cannot decode (PretrainedLlama passes its own) */
  vocabMask?: VocabMask | null;
  /** how errors name the options (the command line passes its flags) */
  optionNames?: OptionNames & { readonly maxTokens: string };
}

export interface GenerateStep {
  /** 0 for the token that follows the prompt */
  readonly step: number;
  /** one new id per sequence; null for a sequence that has already stopped */
  readonly ids: readonly (number | null)[];
}

export interface GenerateTimings {
  /** prompt tokens (without padding) and the seconds until the first new ids were on the host */
  prefillTokens: number;
  prefillSeconds: number;
  /** new tokens after the first (summed over the batch's running sequences) and their seconds */
  decodeTokens: number;
  decodeSeconds: number;
}

/** ids of several prompts; yields each step's new ids. `timings` is filled in as it goes. */
export async function* generateIds(
  model: LlamaModel,
  prompts: readonly (readonly number[])[],
  opts: GenerateOptions = {},
  timings?: GenerateTimings,
): AsyncGenerator<GenerateStep> {
  const names = opts.optionNames ?? { ...API_NAMES, maxTokens: 'maxTokens' };
  const maxTokens = opts.maxTokens ?? 128;
  if (!Number.isInteger(maxTokens) || maxTokens < 1)
    throw new TensorError(`generate: ${names.maxTokens} must be a positive integer, got ${String(maxTokens)}`);
  if (prompts.length === 0 || prompts.some((p) => p.length === 0))
    throw new TensorError('generate: every prompt needs at least one token');
  const vocab = model.config.vocabSize;
  for (const p of prompts) {
    const bad = p.find((id) => !Number.isInteger(id) || id < 0 || id >= vocab);
    if (bad !== undefined) throw new TensorError(`generate: token id ${bad} is outside the vocabulary [0, ${vocab})`);
  }
  const stops = new Set(opts.stopIds ?? model.config.eosTokenIds);
  const pad = opts.padId ?? [...stops][0] ?? 0;
  const sampler = new Sampler(opts, names);
  if (opts.vocabMask && opts.vocabMask.vocab !== vocab)
    throw new TensorError(`generate: the vocabulary mask is for ${opts.vocabMask.vocab} ids, the model has ${vocab}`);
  const b = prompts.length,
    len = Math.max(...prompts.map((p) => p.length));
  const pads = prompts.map((p) => len - p.length);
  const flat = new Uint32Array(b * len);
  prompts.forEach((p, i) => {
    flat.fill(pad, i * len, i * len + pads[i]!);
    flat.set(p, i * len + pads[i]!);
  });

  const cache = model.newCache(b, len + maxTokens);
  let history: SampleContext['history'] = null;
  let ctx: SampleContext = {};
  const useGraph = (opts.graph ?? true) && !model.device.isCpu;
  const t0 = performance.now();
  let dg: DecodeGraph | null = null;
  // steps queued on the device, oldest first, each with its ids' readback already queued (so a
  // replay that rewrites the graph's output cannot overtake it). Waiting on the oldest while
  // AHEAD later steps run keeps the GPU busy while the host wakes and handles a token.
  // `feed`: an eager step's chosen ids (never flagged), what the next step is fed
  const queue: { ids: Tensor; feed: Tensor | null; host: Promise<HostArray> }[] = [];
  const enqueue = (ids: Tensor, feed: Tensor | null): void => {
    queue.push({ ids, feed, host: ids.toArray() });
  };
  const eager = (ids: Tensor): void => {
    const r = step(model, ids, cache, sampler, ctx);
    enqueue(r.out, r.feed);
  };
  try {
    history = sampler.history(prompts, vocab, model.device);
    ctx = { mask: opts.vocabMask ?? null, history };
    cache.setPadding(pads);
    const ids = Tensor.from(flat, { shape: [b, len], device: model.device });
    try {
      eager(ids);
    } finally {
      ids.dispose();
    }
    const done = new Array<boolean>(b).fill(false);
    let tFirst = 0,
      decoded = 0;
    for (let s = 0; s < maxTokens && queue.length > 0; s++) {
      // s steps are read, queue.length are queued: maxTokens in all
      while (s + queue.length < maxTokens && queue.length <= AHEAD) {
        // the chosen ids of the last eager step (a graph feeds itself after its first step)
        const prev = queue[queue.length - 1]!.feed;
        if (useGraph) {
          dg ??= new DecodeGraph(model, cache, sampler, prev!, maxTokens - 1, ctx);
          enqueue(dg.replay(), null);
        } else {
          const col = prev!.reshape([b, 1]);
          try {
            eager(col);
          } finally {
            col.dispose();
          }
        }
      }
      const cur = queue.shift()!;
      let host: number[];
      try {
        host = Array.from(await cur.host, Number);
      } finally {
        // also when the readback fails (a device error is reported there)
        release(cur);
      }
      const out = host.map((id, i) => (done[i] ? null : id));
      const bad = out.indexOf(NONFINITE_ID);
      if (bad >= 0) {
        throw new TensorError(
          `generate: the logits of step ${s} (${s === 0 ? 'the first new token' : `new token ${s + 1}`}${b > 1 ? ` of sequence ${bad}` : ''}) are not finite (NaN or infinity): ` +
            `the weights hold NaN or infinity, or the activations overflow ${model.dtype}${model.dtype === 'f16' ? ' (try bf16 or f32)' : ''}`,
        );
      }
      if (s === 0) {
        tFirst = performance.now();
        if (timings)
          Object.assign(timings, {
            prefillTokens: prompts.reduce((a, p) => a + p.length, 0),
            prefillSeconds: (tFirst - t0) / 1e3,
          });
      } else {
        decoded += out.filter((x) => x !== null).length;
        if (timings)
          Object.assign(timings, { decodeTokens: decoded, decodeSeconds: (performance.now() - tFirst) / 1e3 });
      }
      out.forEach((id, i) => {
        if (id !== null && stops.has(id)) done[i] = true;
      });
      yield { step: s, ids: out };
      if (done.every(Boolean)) break;
    }
  } finally {
    for (const q of queue) {
      q.host.catch(() => undefined); // steps queued past a stop or an early exit: nobody reads them
      release(q);
    }
    dg?.dispose();
    history?.dispose();
    cache.dispose();
  }
}

/** an eager step's tensors (a replayed graph's output belongs to the graph) */
function release(q: { ids: Tensor; feed: Tensor | null }): void {
  if (!q.feed) return;
  q.ids.dispose();
  q.feed.dispose();
}

/**
 * One forward of ids [b, t] and a draw from the last position's logits: `out` [b] for the host
 * (NONFINITE_ID in a row whose logits were not finite), `feed` [b] the chosen ids for the next step.
 */
function step(
  model: LlamaModel,
  ids: Tensor,
  cache: KVCache,
  sampler: Sampler,
  ctx: SampleContext,
): { out: Tensor; feed: Tensor } {
  const logits = model.forward(ids, cache, { lastOnly: true });
  try {
    // a scope: what the draw makes besides its two results is freed, also when it throws
    return tidy(() => {
      const c = sampler.choose(logits.reshape([logits.dim(0), logits.dim(2)]), undefined, ctx);
      // every rank feeds and records rank 0's ids
      model.shareIds(c.ids);
      ctx.history?.record(c.ids);
      return { out: flagNonFinite(c), feed: c.ids };
    });
  } finally {
    logits.dispose();
  }
}
