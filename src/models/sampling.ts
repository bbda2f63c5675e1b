// Picking the next token from logits [b, vocab], on the logits' device: greedy (argmax), or a
// draw from softmax(logits / temperature) restricted to the top-k tokens and then to the
// smallest prefix (by probability) whose mass reaches top-p. The draw is an inverse-CDF: one
// uniform number per row, uploaded from a seeded host generator (16 bytes, not a vocabulary's
// worth), compared against the prefix sums of the kept probabilities; the count of prefix
// sums below it is the drawn position. Only the chosen ids ever leave the device.
//
// Before the choice: ids the tokenizer cannot decode are cut out (VocabMask), and the
// repetition, presence and frequency penalties change the logits of the ids seen so far
// (TokenHistory, kept on the device and updated in place, so a captured graph replays it).
// After it, a row whose logits were not finite (NaN or infinity) gets NONFINITE_ID instead of
// an id. The test reuses what the choice computes anyway (the maximum logit, which argmax
// takes NaN for, or the probability mass, which NaN or infinity turns into NaN), so it costs a
// few kernels over [b] elements and no extra read: the host sees it in the ids it reads.
import { Tensor, type DeviceLike } from '../tensor/tensor.ts';
import { TensorError } from '../core/errors.ts';
import { tidy } from '../core/scope.ts';

export interface SamplingOptions {
  /** 0 = greedy (the default); otherwise logits are divided by it */
  temperature?: number;
  /** keep only the k most likely tokens (0 or undefined: all) */
  topK?: number;
  /** keep the most likely tokens up to this probability mass (1 or undefined: all) */
  topP?: number;
  /** seeds the uniform numbers of the draws (default: from the clock) */
  seed?: number;
  /**
   * Hugging Face's repetition_penalty (> 0; 1 or undefined: off): the logit of every id in the
   * prompt or generated so far is divided by it where positive and multiplied where negative
   */
  repetitionPenalty?: number;
  /** subtracted once from the logit of every id generated so far (OpenAI's presence_penalty; 0: off) */
  presencePenalty?: number;
  /** subtracted from the logit of every id generated so far, once per time it was generated
   *  (OpenAI's frequency_penalty; 0: off) */
  frequencyPenalty?: number;
}

/** the id a row gets when its logits were not finite (NaN or infinity): no token has it */
export const NONFINITE_ID = 0xffffffff;

/** how errors name each option: the API's names, or (from the command line) the flags typed */
export type OptionNames = Readonly<Record<keyof SamplingOptions, string>>;
export const API_NAMES: OptionNames = {
  temperature: 'temperature',
  topK: 'topK',
  topP: 'topP',
  seed: 'seed',
  repetitionPenalty: 'repetitionPenalty',
  presencePenalty: 'presencePenalty',
  frequencyPenalty: 'frequencyPenalty',
};

type Checked = Required<Omit<SamplingOptions, 'seed'>> & { seed: number | undefined };

/** checks sampling options, naming the offending one as `names` says; fills in the defaults */
export function checkSamplingOptions(opts: SamplingOptions, names: OptionNames = API_NAMES): Checked {
  const fail = (k: keyof SamplingOptions, want: string, v: unknown): never => {
    throw new TensorError(`sampling: ${names[k]} must be ${want}, got ${String(v)}`);
  };
  const t = opts.temperature ?? 0,
    k = opts.topK ?? 0,
    p = opts.topP ?? 1;
  if (typeof t !== 'number' || !Number.isFinite(t) || t < 0) fail('temperature', 'a finite number >= 0', t);
  if (!Number.isInteger(k) || k < 0) fail('topK', 'an integer >= 0', k);
  if (typeof p !== 'number' || !(p > 0 && p <= 1)) fail('topP', 'in (0, 1]', p);
  if (opts.seed !== undefined && !Number.isSafeInteger(opts.seed)) fail('seed', 'an integer', opts.seed);
  const r = opts.repetitionPenalty ?? 1;
  if (typeof r !== 'number' || !Number.isFinite(r) || r <= 0) fail('repetitionPenalty', 'a finite number > 0', r);
  const pres = opts.presencePenalty ?? 0,
    freq = opts.frequencyPenalty ?? 0;
  if (typeof pres !== 'number' || !Number.isFinite(pres)) fail('presencePenalty', 'a finite number', pres);
  if (typeof freq !== 'number' || !Number.isFinite(freq)) fail('frequencyPenalty', 'a finite number', freq);
  return {
    temperature: t,
    topK: k,
    topP: p,
    seed: opts.seed,
    repetitionPenalty: r,
    presencePenalty: pres,
    frequencyPenalty: freq,
  };
}

/** a seeded 32-bit generator (mulberry32): uniform numbers in [0, 1) for the draws */
export function uniformStream(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let z = s;
    z = Math.imul(z ^ (z >>> 15), z | 1);
    z ^= z + Math.imul(z ^ (z >>> 7), z | 61);
    return ((z ^ (z >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * Ids a model can produce that are never to be sampled, such as the rows of an embedding larger
 * than the tokenizer's vocabulary (Qwen2.5: 151,936 rows for 151,665 tokens). Made once per
 * model: ids past the last allowed one are cut off the logits (a view, free), holes below it
 * get -Infinity from a mask added to the logits.
 */
export class VocabMask {
  private constructor(
    /** the model's vocabulary (the logits' width) */
    readonly vocab: number,
    /** the logits' columns kept: every allowed id is below it */
    readonly limit: number,
    /** [limit] f32: 0 where allowed, -Infinity where not; null when every id below limit is allowed */
    readonly mask: Tensor | null,
    /** how many ids are left out */
    readonly excluded: number,
  ) {}

  /** `allowed[id]` nonzero for the ids that may be sampled; null when that is every id */
  static of(allowed: Uint8Array, device: DeviceLike): VocabMask | null {
    const vocab = allowed.length;
    let limit = 0,
      excluded = 0;
    for (let i = 0; i < vocab; i++) {
      if (allowed[i]) limit = i + 1;
      else excluded++;
    }
    if (excluded === 0) return null;
    if (limit === 0) throw new TensorError(`sampling: none of the ${vocab} ids may be sampled`);
    let mask: Tensor | null = null;
    if (excluded > vocab - limit) {
      const m = new Float32Array(limit);
      for (let i = 0; i < limit; i++) if (!allowed[i]) m[i] = -Infinity;
      mask = Tensor.from(m, { device });
    }
    return new VocabMask(vocab, limit, mask, excluded);
  }

  /** logits [b, vocab] -> [b, limit] with the left-out ids at -Infinity (f32 where a mask is added) */
  apply(logits: Tensor): Tensor {
    if (logits.dim(1) !== this.vocab)
      throw new TensorError(`sampling: logits have ${logits.dim(1)} columns, the vocabulary mask ${this.vocab}`);
    const x = this.limit < this.vocab ? logits.narrow(1, 0, this.limit) : logits;
    if (!this.mask) return x;
    return (x.dtype === 'f32' ? x : x.toDtype('f32')).add(this.mask);
  }

  dispose(): void {
    this.mask?.dispose();
  }
}

/**
 * The ids each sequence has seen, on the device, for the penalties: `seen` [b, vocab] u8 (in the
 * prompt or generated: repetitionPenalty), `counts` [b, vocab] f32 (times generated: presence
 * and frequency). record() updates them in place, so a captured decode step replays it.
 */
export class TokenHistory {
  readonly seen: Tensor | null;
  readonly counts: Tensor | null;
  private readonly seenFlat: Tensor | null;
  private readonly countsFlat: Tensor | null;
  /** [b] u32: each row's first element in the flat views */
  private readonly rowStart: Tensor;
  private readonly ones: Tensor | null;

  constructor(
    prompts: readonly (readonly number[])[],
    readonly vocab: number,
    device: DeviceLike,
    what: { seen: boolean; counts: boolean },
  ) {
    const b = prompts.length;
    this.rowStart = Tensor.from(
      Uint32Array.from(prompts, (_, i) => i * vocab),
      { device },
    );
    this.seen = this.seenFlat = this.ones = this.counts = this.countsFlat = null;
    if (what.seen) {
      const host = new Uint8Array(b * vocab);
      prompts.forEach((p, i) => {
        for (const id of p) if (id >= 0 && id < vocab) host[i * vocab + id] = 1;
      });
      this.seenFlat = Tensor.from(host, { device });
      this.seen = this.seenFlat.reshape([b, vocab]);
      this.ones = Tensor.ones([b], { dtype: 'u8', device });
    }
    if (what.counts) {
      this.countsFlat = Tensor.zeros([b * vocab], { device });
      this.counts = this.countsFlat.reshape([b, vocab]);
    }
  }

  /** adds one chosen id per row: ids [b] u32, in range (Sampler.choose's, not sample()'s flagged ids) */
  record(ids: Tensor): void {
    tidy(() => {
      const at = ids.add(this.rowStart);
      if (this.seenFlat) this.seenFlat.indexSet(at, this.ones!, 0);
      if (this.countsFlat) this.countsFlat.indexSet(at, this.countsFlat.indexSelect(at, 0).add(1), 0);
    });
  }

  dispose(): void {
    for (const t of [this.seen, this.seenFlat, this.counts, this.countsFlat, this.rowStart, this.ones]) t?.dispose();
  }
}

/** a draw: the ids chosen (in range) and, per row, whether the logits were finite (u8) */
export interface Choice {
  readonly ids: Tensor;
  readonly finite: Tensor;
}

/** a choice's ids with NONFINITE_ID in the rows whose logits were not finite */
export function flagNonFinite(c: Choice): Tensor {
  return Tensor.where(c.finite, c.ids, NONFINITE_ID);
}

/** what a draw takes besides the logits */
export interface SampleContext {
  /** ids never to sample */
  readonly mask?: VocabMask | null;
  /** the ids seen so far (needed by the penalties) */
  readonly history?: TokenHistory | null;
}

export class Sampler {
  readonly temperature: number;
  readonly topK: number;
  readonly topP: number;
  readonly repetitionPenalty: number;
  readonly presencePenalty: number;
  readonly frequencyPenalty: number;
  private readonly next: () => number;

  constructor(opts: SamplingOptions = {}, names: OptionNames = API_NAMES) {
    const o = checkSamplingOptions(opts, names);
    this.temperature = o.temperature;
    this.topK = o.topK;
    this.topP = o.topP;
    this.repetitionPenalty = o.repetitionPenalty;
    this.presencePenalty = o.presencePenalty;
    this.frequencyPenalty = o.frequencyPenalty;
    this.next = uniformStream(o.seed ?? Date.now());
  }

  get greedy(): boolean {
    return this.temperature === 0;
  }

  /** any penalty is on: sample() needs a TokenHistory */
  get penalized(): boolean {
    return this.repetitionPenalty !== 1 || this.presencePenalty !== 0 || this.frequencyPenalty !== 0;
  }

  /** the history the penalties need for these prompts (null when no penalty is on) */
  history(prompts: readonly (readonly number[])[], vocab: number, device: DeviceLike): TokenHistory | null {
    if (!this.penalized) return null;
    return new TokenHistory(prompts, vocab, device, {
      seen: this.repetitionPenalty !== 1,
      counts: this.presencePenalty !== 0 || this.frequencyPenalty !== 0,
    });
  }

  /** the next n uniform numbers of the stream sample() draws from (to upload ahead, e.g. for a graph) */
  draw(n: number): Float32Array {
    const u = new Float32Array(n);
    for (let i = 0; i < n; i++) u[i] = this.next();
    return u;
  }

  /**
   * logits [b, vocab] (any float dtype) -> token ids [b] (u32), on the logits' device; a row
   * whose logits are not finite gets NONFINITE_ID. The uniform numbers come from the seeded
   * stream, or from `uniforms` [b, 1] f32 already on the device (a replayed graph cannot
   * upload). With penalties on, `ctx.history` holds the ids seen so far; the caller records
   * each step's ids into it (TokenHistory.record).
   */
  sample(logits: Tensor, uniforms?: Tensor, ctx: SampleContext = {}): Tensor {
    return tidy(() => flagNonFinite(this.choose(logits, uniforms, ctx)));
  }

  /**
   * What sample() gives, in two parts: `ids` [b] u32, always in range (what a next step can be
   * fed and a history record), and `finite` [b] u8, 0 for a row whose logits were not finite.
   * flagNonFinite() puts them together.
   */
  choose(logits: Tensor, uniforms?: Tensor, ctx: SampleContext = {}): Choice {
    if (logits.rank !== 2)
      throw new TensorError(`sampling: logits must be [batch, vocab], got [${logits.shape.join(', ')}]`);
    const history = ctx.history ?? null;
    if (this.penalized && !history)
      throw new TensorError(
        'sampling: the repetition, presence and frequency penalties need the ids seen so far: pass ctx.history (sampler.history(prompts, vocab, device))',
      );
    const b = logits.dim(0);
    return tidy(() => {
      let x = ctx.mask ? ctx.mask.apply(logits) : logits;
      if (this.penalized) x = this.penalize(x.dtype === 'f32' ? x : x.toDtype('f32'), history!);
      const vocab = x.dim(1);
      if (this.greedy) {
        const ids = x.argmax(-1);
        // argmax takes NaN as the largest value: the maximum is NaN when a logit is, +Infinity when one is
        return { ids, finite: x.gather(ids.unsqueeze(1), 1).reshape([b]).lt(Infinity) };
      }
      x = (x.dtype === 'f32' ? x : x.toDtype('f32')).affine(1 / this.temperature, 0);
      const k = this.topK > 0 ? Math.min(this.topK, vocab) : vocab;
      // the kept tokens, most likely first (ties: the lower id first): top-k selects them
      // without sorting the vocabulary; top-p alone needs the whole row in order
      let values = x,
        ids: Tensor | null = null;
      if (k < vocab || this.topP < 1) {
        const s = k < vocab ? x.topk(k) : x.sort(-1, { descending: true });
        values = s.values;
        ids = s.indices;
      }
      let probs = values.softmax(-1);
      let cdf = probs.cumsum(-1);
      // the softmax's mass is 1, or NaN when a logit is NaN or infinite (topk and sort keep NaN first)
      const finite = cdf
        .narrow(1, k - 1, 1)
        .reshape([b])
        .gt(0.5);
      if (this.topP < 1) {
        // keep a token while the mass before it is below top-p: the most likely always stays
        const keep = cdf.sub(probs).lt(this.topP);
        probs = Tensor.where(keep, probs, 0);
        cdf = probs.cumsum(-1);
      }
      const total = cdf.narrow(1, k - 1, 1);
      const u = uniforms ?? Tensor.from(this.draw(b), { shape: [b, 1], device: logits.device });
      const threshold = u.mul(total);
      // rounding can leave every prefix sum below the threshold: clamp to the last kept token
      const pos = cdf
        .lt(threshold)
        .toDtype('u32')
        .sum(-1)
        .minimum(k - 1);
      return { ids: ids ? ids.gather(pos.unsqueeze(1), 1).squeeze(1) : pos, finite };
    });
  }

  /** the penalties on f32 logits [b, n] (n <= the history's vocabulary: a cut-off tail was never sampled) */
  private penalize(x: Tensor, h: TokenHistory): Tensor {
    const n = x.dim(1);
    const cut = (t: Tensor) => (n < h.vocab ? t.narrow(1, 0, n) : t);
    let y = x;
    if (this.repetitionPenalty !== 1 && h.seen) {
      const r = this.repetitionPenalty;
      y = Tensor.where(cut(h.seen), Tensor.where(y.lt(0), y.mul(r), y.div(r)), y);
    }
    if ((this.presencePenalty !== 0 || this.frequencyPenalty !== 0) && h.counts) {
      const c = cut(h.counts);
      let sub = c.mul(this.frequencyPenalty);
      if (this.presencePenalty !== 0) sub = sub.add(Tensor.where(c.gt(0), this.presencePenalty, 0));
      y = y.sub(sub);
    }
    return y;
  }
}
