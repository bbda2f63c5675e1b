// What the tensor-parallel GPU test and its ranks share: the model folders, the prompt, and the
// record each run makes (on one GPU, or as one rank of several).
import { Tensor } from '../../src/index.ts';
import type { LlamaModel } from '../../src/models/llama.ts';
import { generateIds, type GenerateOptions } from '../../src/models/generate.ts';
import type { FolderSpec } from '../fixtures/model-folders.ts';
import { FOLDERS } from '../fixtures/model-folders.ts';
import { tinyConfig } from '../fixtures/tiny-llama.ts';

/** folders whose heads, key/value heads and MLP split over 2 ranks (one sharded on disk, one with
 *  q/k/v biases, one windowed); the last two split over 4 as well */
export const TP_FOLDERS: readonly FolderSpec[] = [
  FOLDERS.find((f) => f.name === 'llama-untied-sharded')!,
  FOLDERS.find((f) => f.name === 'qwen2-tied')!,
  {
    name: 'mistral-tp',
    type: 'mistral',
    options: { hidden: 64, heads: 4, kvHeads: 2, ff: 128, window: 6 },
    shardBytes: 0,
  },
  {
    name: 'llama-heads8-sharded',
    type: 'llama',
    options: { hidden: 64, heads: 8, kvHeads: 4, ff: 128, layers: 3 },
    shardBytes: 96 * 1024,
  },
  {
    name: 'qwen2-heads8-tied',
    type: 'qwen2',
    options: { hidden: 64, heads: 8, kvHeads: 4, ff: 96, tied: true },
    shardBytes: 0,
  },
];

/** whether a folder's heads, key/value heads and intermediate features divide by `ranks` (the
 *  library refuses the others), worked out from its config here rather than asked of the library */
export function splitsOver(spec: FolderSpec, ranks: number): boolean {
  const c = tinyConfig(spec.type, spec.options);
  return ['num_attention_heads', 'num_key_value_heads', 'intermediate_size'].every(
    (k) => (c[k] as number) % ranks === 0,
  );
}

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

async function generated(m: LlamaModel, o: GenerateOptions): Promise<number[]> {
  const out: number[] = [];
  for await (const st of generateIds(m, [TP_PROMPT], { maxTokens: TP_NEW, stopIds: [], ...o })) out.push(st.ids[0]!);
  return out;
}

/** prefill logits and the ids of each generation, for the model on one GPU or this rank's shard */
export async function tpRecord(m: LlamaModel, folder: string, dtype: string, seed: number): Promise<TpRun> {
  const c = m.newCache(1, TP_PROMPT.length);
  const ids = Tensor.from(TP_PROMPT, { dtype: 'u32', shape: [1, TP_PROMPT.length], device: m.device });
  const l = m.forward(ids, c);
  const prefill = Array.from(await l.toArray(), Number);
  for (const t of [ids, l]) t.dispose();
  c.dispose();
  return {
    folder,
    dtype,
    prefill,
    greedyEager: await generated(m, { graph: false }),
    greedyGraph: await generated(m, { graph: true }),
    sampledGraph: await generated(m, { graph: true, temperature: 0.8, topK: 50, seed }),
    weightBytes: m.weightBytes(),
  };
}
