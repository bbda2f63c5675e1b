// How a Llama-family model splits over the ranks of a tensor-parallel job (Megatron-style):
// attention by heads (each rank holds heads / n query heads and kvHeads / n key/value heads, so
// a query head's key/value head is on its own rank), the MLP by intermediate features. q, k, v,
// gate and up are column-parallel (rows of their weights split), o_proj and down_proj
// row-parallel (columns split, the partial sums all-reduced); the embedding, the norms and the LM
// head are replicated. Plain arithmetic over the config, checked on the CPU.
import { ShapeError } from '../core/errors.ts';
import type { LlamaConfig } from './llama-config.ts';

export interface LlamaShard {
  readonly rank: number;
  readonly size: number;
  /** query heads, key/value heads and intermediate (MLP) features on this rank */
  readonly heads: number;
  readonly kvHeads: number;
  readonly ff: number;
}

/** the part of a weight [out, in] (or a bias [out], dim 0) one rank loads */
export interface WeightSlice {
  readonly dim: 0 | 1;
  readonly start: number;
  readonly length: number;
}

export interface ShardSlices {
  /** rows of q_proj (and its bias) */
  readonly q: WeightSlice;
  /** rows of k_proj and v_proj (and their biases) */
  readonly kv: WeightSlice;
  /** columns of o_proj (its bias is whole, added after the all-reduce) */
  readonly o: WeightSlice;
  /** rows of gate_proj and up_proj each (and their biases): the fused gate_up keeps both blocks */
  readonly gateUp: WeightSlice;
  /** columns of down_proj (its bias is whole) */
  readonly down: WeightSlice;
}

const gcd = (a: number, b: number): number => (b === 0 ? a : gcd(b, a % b));

/** rank `rank` of `size`; a config whose heads, key/value heads or MLP do not split is refused */
export function llamaShard(c: LlamaConfig, rank: number, size: number): LlamaShard {
  if (!Number.isInteger(size) || size < 1 || !Number.isInteger(rank) || rank < 0 || rank >= size) {
    throw new ShapeError(`tensor parallelism: rank ${rank} of ${size} is not a rank (0 .. ${size - 1})`);
  }
  const bad = [
    ['num_attention_heads', c.heads],
    ['num_key_value_heads', c.kvHeads],
    ['intermediate_size', c.intermediateSize],
  ]
    .filter(([, n]) => (n as number) % size !== 0)
    .map(([k, n]) => `${k} ${n}`);
  if (bad.length) {
    const g = gcd(gcd(c.heads, c.kvHeads), c.intermediateSize);
    const fits = Array.from({ length: Math.min(g, 64) }, (_, i) => i + 1).filter((n) => g % n === 0);
    throw new ShapeError(
      `tensor parallelism over ${size} ranks: ${bad.join(', ')} ${bad.length > 1 ? 'do' : 'does'} not divide by ${size} ` +
        `(each rank holds whole query and key/value heads and an equal part of the MLP); rank counts that fit this model: ${fits.join(', ')}`,
    );
  }
  return { rank, size, heads: c.heads / size, kvHeads: c.kvHeads / size, ff: c.intermediateSize / size };
}

export function shardSlices(s: LlamaShard, headDim: number): ShardSlices {
  const part = (dim: 0 | 1, per: number): WeightSlice => ({ dim, start: s.rank * per, length: per });
  return {
    q: part(0, s.heads * headDim),
    kv: part(0, s.kvHeads * headDim),
    o: part(1, s.heads * headDim),
    gateUp: part(0, s.ff),
    down: part(1, s.ff),
  };
}
