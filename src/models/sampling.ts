// Picking the next token from logits [b, vocab], on the logits' device: greedy (argmax), or a
// draw from softmax(logits / temperature) restricted to the top-k tokens and then to the
// smallest prefix (by probability) whose mass reaches top-p. The draw is an inverse-CDF: one
// uniform number per row, uploaded from a seeded host generator (16 bytes, not a vocabulary's
// worth), compared against the prefix sums of the kept probabilities; the count of prefix
// sums below it is the drawn position. Only the chosen ids ever leave the device.
import { Tensor } from '../tensor/tensor.ts';
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
}

/** a seeded 32-bit generator (mulberry32): uniform numbers in [0, 1) for the draws */
function uniformStream(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let z = s;
    z = Math.imul(z ^ (z >>> 15), z | 1);
    z ^= z + Math.imul(z ^ (z >>> 7), z | 61);
    return ((z ^ (z >>> 14)) >>> 0) / 4294967296;
  };
}

export class Sampler {
  readonly temperature: number;
  readonly topK: number;
  readonly topP: number;
  private readonly next: () => number;

  constructor(opts: SamplingOptions = {}) {
    const t = opts.temperature ?? 0,
      k = opts.topK ?? 0,
      p = opts.topP ?? 1;
    if (typeof t !== 'number' || !Number.isFinite(t) || t < 0)
      throw new TensorError(`sampling: temperature must be a finite number >= 0, got ${String(t)}`);
    if (!Number.isInteger(k) || k < 0)
      throw new TensorError(`sampling: topK must be an integer >= 0, got ${String(k)}`);
    if (typeof p !== 'number' || !(p > 0 && p <= 1))
      throw new TensorError(`sampling: topP must be in (0, 1], got ${String(p)}`);
    this.temperature = t;
    this.topK = k;
    this.topP = p;
    this.next = uniformStream(opts.seed ?? Date.now());
  }

  get greedy(): boolean {
    return this.temperature === 0;
  }

  /** the next n uniform numbers of the stream sample() draws from (to upload ahead, e.g. for a graph) */
  draw(n: number): Float32Array {
    const u = new Float32Array(n);
    for (let i = 0; i < n; i++) u[i] = this.next();
    return u;
  }

  /**
   * logits [b, vocab] (any float dtype) -> token ids [b] (u32), on the logits' device. The
   * uniform numbers come from the seeded stream, or from `uniforms` [b, 1] f32 already on the
   * device (a replayed graph cannot upload).
   */
  sample(logits: Tensor, uniforms?: Tensor): Tensor {
    if (logits.rank !== 2)
      throw new TensorError(`sampling: logits must be [batch, vocab], got [${logits.shape.join(', ')}]`);
    const [b, vocab] = logits.shape as [number, number];
    if (this.greedy) return logits.argmax(-1);
    return tidy(() => {
      const x = (logits.dtype === 'f32' ? logits : logits.toDtype('f32')).affine(1 / this.temperature, 0);
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
      return ids ? ids.gather(pos.unsqueeze(1), 1).squeeze(1) : pos;
    });
  }
}
