// Grouped-query self-attention over a KV cache. q, k and v come from one fused projection
// (one GEMM instead of three); rotary embeddings are applied in the [b, t, heads, d] layout the
// projection produces; the new keys and values go into the cache, and attention reads the
// cache's narrowed views with the diagonal aligned bottom-right (the last query sees the last
// key), so prefill, chunked prefill and decode are one code path.
import { Tensor } from '../tensor/tensor.ts';
import type { Projection } from './linear.ts';
import type { RotaryEmbedding } from './rotary.ts';
import type { KVCache } from './kv-cache.ts';
import { tidy } from '../core/scope.ts';
import { TensorError } from '../core/errors.ts';
import { qkvToCache } from '../tensor/fused.ts';
import type { BlockFusion } from './mlp.ts';

export interface AttentionShape {
  readonly heads: number;
  readonly kvHeads: number;
  readonly headDim: number;
  /** sliding window in tokens (Mistral), null for none */
  readonly window: number | null;
}

/**
 * Positions held in device memory instead of the cache's host counter (a graph replays one
 * step for every position): ids u32 [t] where the new tokens go, and a u8 mask broadcastable to
 * [b, heads, t, maxLen] saying which cache entries each query sees.
 */
export interface DevicePositions {
  readonly ids: Tensor;
  readonly mask: Tensor;
  /** the mask for layers with a sliding window (also hiding keys older than the window) */
  readonly windowMask?: Tensor;
  /** the rotary rows at ids, gathered once for every layer of the step */
  readonly rope?: { readonly cos: Tensor; readonly sin: Tensor };
}

export class CausalSelfAttention {
  constructor(
    readonly qkv: Projection,
    readonly out: Projection,
    readonly shape: AttentionShape,
  ) {}

  /**
   * x [b, t, hidden] at cache position cache.length; writes the layer's keys and values. With
   * `fused`, x is RMS-normalised first and the residual added to the output.
   */
  forward(
    x: Tensor,
    layer: number,
    rope: RotaryEmbedding,
    cache: KVCache,
    at?: DevicePositions,
    fused: BlockFusion = {},
  ): Tensor {
    const { heads, kvHeads, headDim: d, window } = this.shape;
    const [b, t] = x.shape as [number, number];
    const pos = cache.length;
    return tidy(() => {
      let q: Tensor;
      if (b * t === 1) {
        // one token: projection, norm, rotary and the cache write are one call (one kernel on a GPU)
        const { cos, sin } = rope.tables();
        q = qkvToCache({
          x,
          weight: this.qkv.weight,
          bias: this.qkv.bias,
          norm: fused.norm ?? null,
          cos,
          sin,
          pos: at ? at.ids : pos,
          keys: cache.keys[layer]!,
          values: cache.values[layer]!,
          heads,
          kvHeads,
          headDim: d,
        });
      } else {
        const qkv = this.qkv.forward(x, { norm: fused.norm ?? null });
        const split = (start: number, n: number) => qkv.narrow(2, start * d, n * d).reshape([b, t, n, d]);
        const { cos, sin } = at ? (at.rope ?? rope.gather(at.ids)) : rope.at(pos, t);
        // q and k sit side by side in the projection: one rotary pass covers both
        const qk = split(0, heads + kvHeads).ropeThd(cos, sin);
        q = qk.narrow(2, 0, heads);
        const k = qk.narrow(2, heads, kvHeads).transpose(1, 2),
          v = split(heads + kvHeads, kvHeads).transpose(1, 2);
        if (at) cache.writeAt(layer, k, v, at.ids);
        else cache.write(layer, k, v);
      }
      let o: Tensor;
      if (at) {
        // the whole cache, masked on the device: no length is baked into the recorded work
        const all = cache.view(layer, cache.maxLen);
        const mask = window !== null ? at.windowMask : at.mask;
        if (!mask)
          throw new TensorError(
            `attention: layer ${layer} has a sliding window of ${window} but no window mask was given`,
          );
        o = Tensor.scaledDotProductAttention(q.transpose(1, 2), all.k, all.v, { mask });
      } else {
        const seen = cache.view(layer, pos + t);
        // one query sees every cached key unless a window or padding says otherwise
        const causal = t > 1 || window !== null ? 'bottom-right' : false;
        // the options spelled out: V8 (Node 20) builds conditional spreads on a slow path
        o = Tensor.scaledDotProductAttention(q.transpose(1, 2), seen.k, seen.v, {
          causal,
          window: window ?? undefined,
          mask: seen.mask ?? undefined,
        });
      }
      return this.out.forward(o.transpose(1, 2).reshape([b, t, heads * d]), { residual: fused.residual ?? null });
    });
  }

  dispose(): void {
    this.qkv.dispose();
    this.out.dispose();
  }
}
