// Grouped-query self-attention over the paged KV cache, for a step that packs the new tokens
// of several sequences (prefill chunks and single decode tokens alike) into one [1, tokens, hidden]
// row: one fused q/k/v projection for all of them, rotary at each token's own position, the new
// keys and values written to their slots, and paged attention reading each sequence's blocks.
import { Tensor } from '../tensor/tensor.ts';
import { tidy } from '../core/scope.ts';
import { pagedAttention } from '../ops/attention-paged.ts';
import type { CausalSelfAttention } from './attention.ts';
import type { BlockFusion } from './mlp.ts';
import type { PagedKVCache } from './paged-kv-cache.ts';

/** one step's batch layout, on the model's device where it is a tensor */
export interface PagedStep {
  /** u32 [tokens]: each token's slot in the pools (block * blockSize + offset) */
  readonly slots: Tensor;
  /** u32 [seqs, maxBlocks]: each sequence's blocks in order */
  readonly blockTable: Tensor;
  /** per sequence, its tokens in this step (consecutive, in sequence order) */
  readonly queryLens: readonly number[];
  /** per sequence, its tokens in the cache after this step */
  readonly contextLens: readonly number[];
  /**
   * the same lengths on the device (u32, pagedMetadata's layout), read by the GPU kernel when it
   * runs: a captured step replays with new lengths written there (PagedAttentionOptions.metadata)
   */
  readonly metadata?: Tensor;
}

/** x [1, tokens, hidden]; cos and sin [tokens, headDim / 2] at the tokens' positions */
export function pagedSelfAttention(
  attn: CausalSelfAttention,
  x: Tensor,
  layer: number,
  rot: { readonly cos: Tensor; readonly sin: Tensor },
  cache: PagedKVCache,
  step: PagedStep,
  fused: BlockFusion = {},
): Tensor {
  const { heads, kvHeads, headDim: d, window } = attn.shape;
  const t = x.dim(1);
  return tidy(() => {
    const qkv = attn.qkv.forward(x, { norm: fused.norm ?? null });
    const split = (start: number, n: number) => qkv.narrow(2, start * d, n * d).reshape([1, t, n, d]);
    const qk = split(0, heads + kvHeads).ropeThd(rot.cos, rot.sin);
    const q = qk.narrow(2, 0, heads).reshape([t, heads, d]);
    const k = qk.narrow(2, heads, kvHeads).reshape([t, kvHeads, d]);
    const v = split(heads + kvHeads, kvHeads).reshape([t, kvHeads, d]);
    cache.write(layer, k, v, step.slots);
    const o = Tensor.wrap(
      pagedAttention(q, cache.keys[layer]!, cache.values[layer]!, step.blockTable, {
        queryLens: step.queryLens,
        contextLens: step.contextLens,
        window,
        metadata: step.metadata ?? null,
      }),
    );
    return attn.out.forward(o.reshape([1, t, heads * d]), { residual: fused.residual ?? null });
  });
}
