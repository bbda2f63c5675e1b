// One request as the engine sees it: its tokens (prompt, then what was generated), the blocks
// of the KV cache it holds in order (its block table), how many of its tokens have their keys
// and values in those blocks, and its sampler.
import type { Sampler, TokenHistory } from '../models/sampling.ts';

export type FinishReason = 'stop' | 'length' | 'cancelled' | 'error';

export interface SequenceUsage {
  readonly promptTokens: number;
  readonly completionTokens: number;
  /** prompt tokens whose keys and values came from the prefix cache */
  readonly cachedTokens: number;
}

export interface SequenceRequest {
  readonly prompt: readonly number[];
  /** new tokens at most */
  readonly maxTokens: number;
  /** ids that end the sequence; one is counted as generated but not passed to onToken */
  readonly stopIds: readonly number[];
  /** hears each new id; returning true ends the sequence there (finish reason 'stop') */
  onToken(id: number): boolean | undefined;
  /** hears the end, once */
  onFinish(reason: FinishReason, usage: SequenceUsage, error?: Error): void;
}

export class Sequence {
  readonly tokens: number[];
  readonly promptLen: number;
  /** the KV blocks it holds, in position order */
  blocks: number[] = [];
  /** the names of its full blocks that are known, in order (prefix-cache keys) */
  names: string[] = [];
  /** tokens whose keys and values are in its blocks */
  computed = 0;
  /** prompt tokens found in the prefix cache when it was first admitted */
  cachedTokens = 0;
  admitted = false;
  finished = false;
  /** a cancel that came while a step was running: the sequence ends at the step's end */
  cancelPending = false;

  constructor(
    readonly id: number,
    readonly request: SequenceRequest,
    readonly sampler: Sampler,
    readonly history: TokenHistory | null,
  ) {
    this.tokens = [...request.prompt];
    this.promptLen = request.prompt.length;
  }

  get generated(): number {
    return this.tokens.length - this.promptLen;
  }

  usage(): SequenceUsage {
    return { promptTokens: this.promptLen, completionTokens: this.generated, cachedTokens: this.cachedTokens };
  }
}
