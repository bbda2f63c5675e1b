// The parameter records of paged attention (ops/attention-paged.ts), as the op's callers and its
// backends take them. The sequence lengths are host numbers: the scheduler knows them when it
// builds a step, and a backend that composes other ops needs them to size its work without
// reading anything back from the device.
import type { RawTensor } from '../device/raw-tensor.ts';

export interface PagedAttentionOptions {
  /** per sequence, its query rows in q (consecutive, in sequence order) */
  readonly queryLens: readonly number[];
  /**
   * per sequence, the tokens in the cache, its new ones included: query i of a sequence sits at
   * position contextLen - queryLen + i and sees the keys at positions <= its own
   */
  readonly contextLens: readonly number[];
  /** default 1/sqrt(head dim) */
  readonly scale?: number;
  /** sliding window (Mistral): a query also sees only the keys at positions > its own - window */
  readonly window?: number | null;
  /**
   * The same lengths on q's device, for the GPU kernel: u32 [2 * seqs + 1] laid out as
   * pagedMetadata() lays them out. Without it the GPU uploads them from queryLens and contextLens
   * for each call; with it the kernel reads them from this tensor when it runs, so a captured
   * graph replays with new lengths written into it (an upload cannot be captured). It must then
   * hold the lengths queryLens and contextLens give for the call (they still size the launch, and
   * the checks and the CPU read them). Only the kernel reads it: the op refuses it where the GPU
   * would compose other ops (f64, head dims past 256), which would read the host lengths instead.
   */
  readonly metadata?: RawTensor | null;
}

/**
 * The device lengths' layout: each sequence's first query row in q (seqs + 1 values, the last
 * one the token count), then each sequence's cached tokens (seqs values).
 */
export function pagedMetadata(queryLens: readonly number[], contextLens: readonly number[]): Uint32Array {
  const n = queryLens.length;
  const m = new Uint32Array(2 * n + 1);
  for (let s = 0; s < n; s++) {
    m[s + 1] = m[s]! + queryLens[s]!;
    m[n + 1 + s] = contextLens[s]!;
  }
  return m;
}

/** validated paged-attention parameters */
export interface PagedAttentionParams {
  readonly queryLens: readonly number[];
  readonly contextLens: readonly number[];
  readonly scale: number;
  readonly window: number | null;
  /** tokens per block */
  readonly blockSize: number;
  /** the lengths on the device (PagedAttentionOptions.metadata), checked; absent or null: uploaded per call */
  readonly metadata?: RawTensor | null;
}

export type PagedAttentionArgs = [
  q: RawTensor,
  keyPool: RawTensor,
  valuePool: RawTensor,
  blockTable: RawTensor,
  p: PagedAttentionParams,
];
