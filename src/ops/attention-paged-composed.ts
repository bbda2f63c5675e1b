// Paged attention composed from other ops, the GPU's path where the paged kernels do not apply
// (f64, head dims past 256; backends/gpu/attention-paged.ts has the kernels): per
// sequence, its blocks are gathered out of the pools (indexSelect over the block ids), viewed as
// one contiguous run of keys and values, and given with its queries to the attention op (causal,
// bottom-right: the last query sees the last key). It reads the pools in place but copies each
// sequence's blocks once per layer and step, and launches a few ops per sequence, so it costs
// what a plain attention over a contiguous cache costs plus that copy.
import { RawTensor } from '../device/raw-tensor.ts';
import type { PagedAttentionParams } from '../backends/paged-options.ts';
import { attention } from './attention.ts';
import { cat, reshape } from './copy.ts';
import { indexSelect } from './indexing.ts';
import { scoped } from './scoped.ts';

export function composedPagedAttention(
  q: RawTensor,
  kPool: RawTensor,
  vPool: RawTensor,
  blockTable: RawTensor,
  p: PagedAttentionParams,
): RawTensor {
  const [, hq, d] = q.layout.shape as [number, number, number];
  const [, bs, hkv] = kPool.layout.shape as [number, number, number];
  const dv = vPool.layout.shape[3]!;
  return scoped((keep) => {
    /** one sequence's ctx keys (or values) [1, hkv, ctx, dim] from its first nb block ids */
    const run = (pool: RawTensor, ids: RawTensor, nb: number, ctx: number, dim: number): RawTensor => {
      const blocks = keep(indexSelect(pool, ids, 0));
      const flat = keep(reshape(blocks, [1, nb * bs, hkv, dim]));
      return keep(keep(flat.narrow(1, 0, ctx)).transpose(1, 2));
    };
    const outs: RawTensor[] = [];
    let row = 0;
    for (let s = 0; s < p.queryLens.length; s++) {
      const tq = p.queryLens[s]!,
        ctx = p.contextLens[s]!;
      if (tq === 0) continue;
      const nb = Math.ceil(ctx / bs);
      const ids = keep(keep(keep(blockTable.narrow(0, s, 1)).squeeze(0)).narrow(0, 0, nb));
      const k = run(kPool, ids, nb, ctx, d),
        v = run(vPool, ids, nb, ctx, dv);
      const qs = keep(keep(keep(q.narrow(0, row, tq)).unsqueeze(0)).transpose(1, 2));
      const o = keep(attention(qs, k, v, { causal: 'bottom-right', scale: p.scale, window: p.window ?? undefined }));
      outs.push(keep(reshape(keep(o.transpose(1, 2)), [tq, hq, dv])));
      row += tq;
    }
    if (outs.length === 0) return RawTensor.empty([0, hq, dv], q.dtype, q.device);
    // one sequence: a view of its output, which outlives the temporaries
    if (outs.length === 1) return outs[0]!.view(outs[0]!.layout);
    return cat(outs, 0);
  });
}
