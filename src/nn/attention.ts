// Grouped-query self-attention over a KV cache. q, k and v come from one fused projection
// (one GEMM instead of three); rotary embeddings are applied in the [b, t, heads, d] layout the
// projection produces; the new keys and values go into the cache, and attention reads the
// cache's narrowed views with the diagonal aligned bottom-right (the last query sees the last
// key), so prefill, chunked prefill and decode are one code path.
import { Tensor } from '../tensor.ts';
import type { Linear } from './linear.ts';
import type { RotaryEmbedding } from './rotary.ts';
import type { KVCache } from './kv-cache.ts';
import { tidy } from '../scope.ts';

export interface AttentionShape {
  readonly heads: number; readonly kvHeads: number; readonly headDim: number;
  /** sliding window in tokens (Mistral), null for none */
  readonly window: number | null;
}

export class CausalSelfAttention {
  constructor(
    readonly qkv: Linear,
    readonly out: Linear,
    readonly shape: AttentionShape,
  ) {}

  /** x [b, t, hidden] at cache position cache.length; writes the layer's keys and values */
  forward(x: Tensor, layer: number, rope: RotaryEmbedding, cache: KVCache): Tensor {
    const { heads, kvHeads, headDim: d, window } = this.shape;
    const [b, t] = x.shape as [number, number];
    const pos = cache.length;
    return tidy(() => {
      const qkv = this.qkv.forward(x);
      const split = (start: number, n: number) => qkv.narrow(2, start * d, n * d).reshape([b, t, n, d]);
      const { cos, sin } = rope.at(pos, t);
      const q = split(0, heads).ropeThd(cos, sin);
      const k = split(heads, kvHeads).ropeThd(cos, sin);
      const v = split(heads + kvHeads, kvHeads);
      cache.write(layer, k.transpose(1, 2), v.transpose(1, 2));
      const seen = cache.view(layer, pos + t);
      // one query sees every cached key unless a window or padding says otherwise
      const causal = t > 1 || window !== null ? 'bottom-right' : false;
      const o = Tensor.scaledDotProductAttention(q.transpose(1, 2), seen.k, seen.v, {
        causal,
        ...(window !== null ? { window } : {}),
        ...(seen.mask ? { mask: seen.mask } : {}),
      });
      return this.out.forward(o.transpose(1, 2).reshape([b, t, heads * d]));
    });
  }

  dispose(): void { this.qkv.dispose(); this.out.dispose(); }
}
