// One rank of a tensor-parallel Llama on the CPU (test/cpu/llama-tp.test.ts starts one worker per
// rank): loads its shard over the shared-memory ranks, and posts what it computed: prefill and
// decode logits, greedy ids, sampled ids (seeded per rank: rank 0's draws must win), the ids of a
// left-padded batch, and its KV cache's shape.
import { parentPort, workerData } from 'node:worker_threads';
import { Tensor } from '../../../src/index.ts';
import { LlamaModel } from '../../../src/models/llama.ts';
import { generateIds } from '../../../src/models/generate.ts';
import { MemoryWeights } from '../../../src/nn/weights.ts';
import { TP_CASES, tpModel } from '../../fixtures/tp-models.ts';
import { shmFail, shmRanks, type ShmShared } from './shm-ranks.ts';

export interface RankJob {
  readonly rank: number;
  readonly caseIndex: number;
  readonly shared: ShmShared;
  readonly prompt: number[];
  readonly next: number[];
}
export interface RankResult {
  readonly rank: number;
  readonly prefill: number[];
  readonly decode: number[][];
  readonly greedy: number[];
  readonly sampled: number[];
  readonly batch: (number | null)[][];
  readonly cacheShape: number[];
  readonly weightBytes: number;
}

const job = workerData as RankJob;
try {
  const { config, weights } = tpModel(TP_CASES[job.caseIndex]!);
  const model = await LlamaModel.fromWeights(config, new MemoryWeights(weights), {
    tp: shmRanks(job.shared, job.rank),
    dtype: 'f32',
  });
  const ids = (row: number[]) => Tensor.from(row, { dtype: 'u32', shape: [1, row.length] });
  const cache = model.newCache(1, job.prompt.length + job.next.length);
  const prefill = Array.from(model.forward(ids(job.prompt), cache).toArraySync(), Number);
  const decode = job.next.map((t) => Array.from(model.forward(ids([t]), cache).toArraySync(), Number));
  const cacheShape = cache.keys[0]!.shape;
  cache.dispose();
  const run = async (prompts: number[][], o: Parameters<typeof generateIds>[2]) => {
    const out: (number | null)[][] = [];
    for await (const st of generateIds(model, prompts, { maxTokens: 16, stopIds: [], ...o })) out.push([...st.ids]);
    return out;
  };
  const greedy = (await run([job.prompt], {})).map((r) => r[0]!);
  const sampled = (await run([job.prompt], { temperature: 0.9, topK: 40, seed: 100 + job.rank })).map((r) => r[0]!);
  const batch = await run([job.prompt, job.prompt.slice(0, 3)], { maxTokens: 6 });
  const result: RankResult = {
    rank: job.rank,
    prefill,
    decode,
    greedy,
    sampled,
    batch,
    cacheShape,
    weightBytes: model.weightBytes(),
  };
  model.dispose();
  parentPort!.postMessage(result);
} catch (e) {
  shmFail(job.shared);
  throw e;
}
