// What the tensor-parallel GPU test and its ranks share: the model folders, the prompt, and the
// record each run writes (one GPU, or one rank of two).
import type { FolderSpec } from '../fixtures/model-folders.ts';
import { FOLDERS } from '../fixtures/model-folders.ts';

/** folders whose heads, key/value heads and MLP split over 2 ranks (one sharded on disk, one with q/k/v biases, one windowed) */
export const TP_FOLDERS: readonly FolderSpec[] = [
  FOLDERS.find((f) => f.name === 'llama-untied-sharded')!,
  FOLDERS.find((f) => f.name === 'qwen2-tied')!,
  { name: 'mistral-tp', type: 'mistral', options: { hidden: 64, heads: 4, kvHeads: 2, ff: 128, window: 6 }, shardBytes: 0 },
];

export const TP_PROMPT = [379, 40, 41, 300, 7, 99, 123, 5, 250];
export const TP_NEW = 16;
export const TP_DTYPES = ['f32', 'bf16'] as const;

export interface TpRun {
  readonly folder: string;
  readonly dtype: string;
  readonly prefill: number[];
  readonly greedyEager: number[];
  readonly greedyGraph: number[];
  /** seeded differently on each rank (7 + rank): rank 0's draws must reach every rank */
  readonly sampledGraph: number[];
  readonly weightBytes: number;
}
