// Paged attention: the queries of several sequences packed along one dim, each sequence's keys
// and values read from shared pools of fixed-size blocks through its row of a block table (the
// serving engine's KV cache). The CPU reads the blocks in place. The GPU runs the paged kernels
// for the whole step (backends/gpu/attention-paged.ts: one FMA launch for every token, and the
// matrix cores for f16/bf16 chunks of more than 16 queries) for f32, f16 and bf16 with head dims
// up to 256; f64 and wider heads compose other ops (attention-paged-composed.ts), which gather
// each sequence's blocks and run the attention op per sequence.
import { DTypeError, ShapeError, TensorError } from '../core/errors.ts';
import type { RawTensor } from '../device/raw-tensor.ts';
import type { PagedAttentionArgs, PagedAttentionOptions } from '../backends/paged-options.ts';
import { FLOATS, sameDevice, sig } from '../backends/checks.ts';
import { pagedAttention as cpuPaged } from '../backends/cpu/attention-paged.ts';
import { floats } from './nn.ts';
import { composedPagedAttention } from './attention-paged-composed.ts';
import { pagedAttentionKernel, pagedKernelApplies } from '../backends/gpu/attention-paged.ts';

export { pagedMetadata } from '../backends/paged-options.ts';
import { defineOp } from './registry.ts';

const OP = 'pagedAttention';

function lengths(name: string, v: unknown, n: number | null, all: () => string): number[] {
  if (!Array.isArray(v) || (n !== null && v.length !== n) || !v.every((x) => Number.isInteger(x) && x >= 0))
    throw new TensorError(
      `${OP}: ${name} must be ${n === null ? 'a list of' : `${n}`} integers >= 0 (one per sequence), got ${JSON.stringify(v)} (${all()})`,
    );
  return v as number[];
}

export const pagedAttention = defineOp({
  name: OP,
  family: 'attention',
  summary:
    'q [tokens, hq, d] of several sequences, k/v pools [blocks, blockSize, hkv, d] read through a block table [seqs, maxBlocks]: causal, sliding window, GQA',
  dtypes: FLOATS,
  check: (
    q: RawTensor,
    keyPool: RawTensor,
    valuePool: RawTensor,
    blockTable: RawTensor,
    o: PagedAttentionOptions,
  ): PagedAttentionArgs => {
    floats(OP, q, keyPool, valuePool);
    sameDevice(OP, q, blockTable);
    const all = (): string =>
      `q ${sig(q)}, key pool ${sig(keyPool)}, value pool ${sig(valuePool)}, block table ${sig(blockTable)}`;
    if (q.rank !== 3 || keyPool.rank !== 4 || valuePool.rank !== 4 || blockTable.rank !== 2)
      throw new ShapeError(
        `${OP}: want q [tokens, heads, d], pools [blocks, blockSize, kvHeads, d], block table [seqs, maxBlocks]; got ${all()}`,
      );
    if (blockTable.dtype !== 'u32' && blockTable.dtype !== 'i64')
      throw new DTypeError(`${OP}: the block table must be u32 or i64 block ids, got ${sig(blockTable)}`);
    const [t, hq, d] = q.layout.shape as [number, number, number];
    const [nb, bs, hkv, kd] = keyPool.layout.shape as [number, number, number, number];
    const [vnb, vbs, vh] = valuePool.layout.shape as [number, number, number];
    const [seqs, maxBlocks] = blockTable.layout.shape as [number, number];
    if (vnb !== nb || vbs !== bs || vh !== hkv)
      throw new ShapeError(`${OP}: the key and value pools must have the same blocks, block size and heads (${all()})`);
    if (kd !== d) throw new ShapeError(`${OP}: q and the key pool have different head dims (${all()})`);
    if (bs < 1) throw new ShapeError(`${OP}: the block size must be at least 1 (${all()})`);
    if (hkv === 0 || hq % hkv !== 0)
      throw new ShapeError(`${OP}: query heads ${hq} are not a multiple of kv heads ${hkv} (${all()})`);
    const queryLens = lengths('queryLens', o.queryLens, seqs, all);
    const contextLens = lengths('contextLens', o.contextLens, seqs, all);
    const total = queryLens.reduce((a, b) => a + b, 0);
    if (total !== t) throw new ShapeError(`${OP}: queryLens add up to ${total}, q has ${t} tokens (${all()})`);
    queryLens.forEach((n, s) => {
      const ctx = contextLens[s]!;
      if (n > ctx)
        throw new ShapeError(`${OP}: sequence ${s} has ${n} queries but only ${ctx} tokens in the cache (${all()})`);
      if (ctx > maxBlocks * bs)
        throw new ShapeError(
          `${OP}: sequence ${s} has ${ctx} tokens, its block table row holds ${maxBlocks} blocks of ${bs} (${all()})`,
        );
    });
    const scale = o.scale ?? 1 / Math.sqrt(d);
    if (typeof scale !== 'number' || !Number.isFinite(scale))
      throw new RangeError(`${OP}: scale must be a finite number, got ${String(scale)} (${all()})`);
    const window = o.window ?? null;
    if (window !== null && (!Number.isInteger(window) || window < 1))
      throw new RangeError(`${OP}: window must be a positive integer, got ${String(window)} (${all()})`);
    const metadata = o.metadata ?? null;
    if (metadata !== null) {
      sameDevice(OP, q, metadata);
      if (
        metadata.dtype !== 'u32' ||
        metadata.rank !== 1 ||
        metadata.layout.shape[0] !== 2 * seqs + 1 ||
        !metadata.isContiguous()
      )
        throw new ShapeError(
          `${OP}: metadata must be a contiguous u32 [${2 * seqs + 1}] (2 * seqs + 1, pagedMetadata's layout), got ${sig(metadata)} (${all()})`,
        );
    }
    return [q, keyPool, valuePool, blockTable, { queryLens, contextLens, scale, window, blockSize: bs, metadata }];
  },
  cpu: cpuPaged,
  // the kernel where it applies; f64 and head dims past 256 compose gathers and the attention op
  gpu: (q, keyPool, valuePool, blockTable, p) => {
    if (pagedKernelApplies(q, keyPool, valuePool)) return pagedAttentionKernel(q, keyPool, valuePool, blockTable, p);
    if (p.metadata)
      throw new TensorError(
        `${OP}: device metadata needs the paged kernel (f32, f16 or bf16, head dims up to 256); q ${sig(q)}, key pool ${sig(keyPool)}, value pool ${sig(valuePool)} compose other ops, which read queryLens and contextLens on the host: leave metadata out`,
      );
    return composedPagedAttention(q, keyPool, valuePool, blockTable, p);
  },
  grad: 'missing',
});
