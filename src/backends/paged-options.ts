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
}

/** validated paged-attention parameters */
export interface PagedAttentionParams {
  readonly queryLens: readonly number[];
  readonly contextLens: readonly number[];
  readonly scale: number;
  readonly window: number | null;
  /** tokens per block */
  readonly blockSize: number;
}

export type PagedAttentionArgs = [
  q: RawTensor,
  keyPool: RawTensor,
  valuePool: RawTensor,
  blockTable: RawTensor,
  p: PagedAttentionParams,
];
