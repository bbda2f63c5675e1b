// Paged attention on the CPU: each sequence's keys and values are read from the pools through
// its row of the block table, block by block, into one contiguous f64 run per kv head; the
// scores, the softmax and the weighted sum then follow the contiguous attention reference term
// for term (same order of sums), so the two agree exactly before the final rounding.
import { getElem } from '../../core/dtype.ts';
import { IndexError } from '../../core/errors.ts';
import type { RawTensor } from '../../device/raw-tensor.ts';
import type { PagedAttentionParams } from '../paged-options.ts';
import { fromNumbers, readNumbers } from './util.ts';

/** a pool's values for one sequence and kv head: [ctx, d] f64, in position order */
function gatherRows(
  pool: RawTensor,
  blocks: Float64Array,
  row: number,
  ctx: number,
  h: number,
  bs: number,
): Float64Array {
  const [, , , d] = pool.layout.shape as [number, number, number, number];
  const [s0, s1, s2, s3] = pool.layout.strides as [number, number, number, number];
  const host = pool.storage.host;
  const dt = pool.dtype;
  const direct = dt === 'f32' || dt === 'f64';
  const out = new Float64Array(ctx * d);
  for (let j = 0; j < ctx; j++) {
    const blk = blocks[row + Math.floor(j / bs)]!;
    const base = pool.layout.offset + blk * s0 + (j % bs) * s1 + h * s2;
    for (let e = 0; e < d; e++) {
      const at = base + e * s3;
      out[j * d + e] = direct ? (host as Float32Array)[at]! : getElem(dt, host, at);
    }
  }
  return out;
}

export function pagedAttention(
  q: RawTensor,
  kPool: RawTensor,
  vPool: RawTensor,
  blockTable: RawTensor,
  p: PagedAttentionParams,
): RawTensor {
  const [t, hq, d] = q.layout.shape as [number, number, number];
  const [nBlocks, bs, hkv] = kPool.layout.shape as [number, number, number];
  const dv = vPool.layout.shape[3]!;
  const maxBlocks = blockTable.layout.shape[1]!;
  const { scale, window, queryLens, contextLens } = p;
  const qv = readNumbers(q);
  const table = readNumbers(blockTable);
  const out = new Float64Array(t * hq * dv);
  const group = hq / hkv;
  let qRow = 0;
  for (let s = 0; s < queryLens.length; s++) {
    const tq = queryLens[s]!,
      ctx = contextLens[s]!;
    const row = s * maxBlocks;
    for (let i = 0; i < Math.ceil(ctx / bs); i++) {
      const blk = table[row + i]!;
      if (!(blk >= 0 && blk < nBlocks))
        throw new IndexError(`pagedAttention: sequence ${s} names block ${blk}, the pools have ${nBlocks} blocks`);
    }
    const w = new Float64Array(ctx);
    const seen = new Uint8Array(ctx);
    for (let g = 0; g < hkv; g++) {
      const kv = gatherRows(kPool, table, row, ctx, g, bs);
      const vv = gatherRows(vPool, table, row, ctx, g, bs);
      for (let h = g * group; h < (g + 1) * group; h++) {
        for (let i = 0; i < tq; i++) {
          const pos = ctx - tq + i;
          const qBase = ((qRow + i) * hq + h) * d;
          let m = -Infinity,
            any = false;
          for (let j = 0; j < ctx; j++) {
            seen[j] = 0;
            if (j > pos || (window !== null && j <= pos - window)) continue;
            let sc = 0;
            for (let e = 0; e < d; e++) sc += qv[qBase + e]! * kv[j * d + e]!;
            sc *= scale;
            if (sc === -Infinity) continue;
            w[j] = sc;
            seen[j] = 1;
            any = true;
            m = Number.isNaN(sc) || Number.isNaN(m) ? NaN : Math.max(m, sc);
          }
          if (!any) continue;
          let sum = 0;
          for (let j = 0; j < ctx; j++)
            if (seen[j]) {
              w[j] = Math.exp(w[j]! - m);
              sum += w[j]!;
            }
          const o = ((qRow + i) * hq + h) * dv;
          for (let j = 0; j < ctx; j++) {
            if (!seen[j]) continue;
            const pj = w[j]! / sum;
            for (let e = 0; e < dv; e++) out[o + e] += pj * vv[j * dv + e]!;
          }
        }
      }
    }
    qRow += tq;
  }
  return fromNumbers(out, [t, hq, dv], q.dtype, q.device);
}
