// One rank of a tensor-parallel server on the CPU (test/cpu/serve-tp.test.ts starts one worker per
// rank, the collectives in shared memory): rank 0 loads its shard, serves it over HTTP with the
// step plans going to the others, posts its address, and on 'close' drains, stops the other
// ranks and posts its engine's step count; every other rank follows rank 0's steps and posts
// how many it ran and the limits it was sized by.
import { parentPort, workerData } from 'node:worker_threads';
import { PretrainedLlama } from '../../../src/models/pretrained.ts';
import { createServer } from '../../../src/serve/server.ts';
import { followSteps, StepPlanLeader, type PlanLimits } from '../../../src/serve/tp-plan.ts';
import { shmFail, shmRanks, type ShmShared } from './shm-ranks.ts';

export interface ServeRankJob {
  readonly rank: number;
  readonly dir: string;
  readonly shared: ShmShared;
}
export type ServeRankMessage =
  | { readonly kind: 'listening'; readonly url: string; readonly kvHeads: number }
  | { readonly kind: 'closed'; readonly steps: number; readonly preemptions: number }
  | { readonly kind: 'followed'; readonly steps: number; readonly limits: PlanLimits; readonly kvHeads: number };

const job = workerData as ServeRankJob;
try {
  const ranks = shmRanks(job.shared, job.rank);
  const m = await PretrainedLlama.load(job.dir, { tp: ranks, dtype: 'f32', onWarning: () => undefined });
  try {
    if (job.rank === 0) {
      const leader = new StepPlanLeader(ranks);
      const server = createServer(m, {
        tensorParallel: leader,
        maxBatch: 4,
        maxSeqLen: 32,
        prefillChunk: 24,
        kvBlocks: 10,
        blockSize: 4,
        log: () => undefined,
      });
      const at = await server.listen(0);
      await server.ready;
      const closing = new Promise<void>((r) => parentPort!.once('message', () => r()));
      parentPort!.postMessage({
        kind: 'listening',
        url: `http://127.0.0.1:${at.port}`,
        kvHeads: server.engine!.cache.keys[0]!.dim(2),
      } satisfies ServeRankMessage);
      await closing;
      const engine = server.engine!;
      await server.close();
      leader.stop();
      const s = engine.stats();
      parentPort!.postMessage({
        kind: 'closed',
        steps: s.steps,
        preemptions: s.preemptions,
      } satisfies ServeRankMessage);
    } else {
      const r = await followSteps(m.model, ranks);
      parentPort!.postMessage({
        kind: 'followed',
        steps: r.steps,
        limits: r.limits,
        kvHeads: m.model.shard!.kvHeads,
      } satisfies ServeRankMessage);
    }
  } finally {
    m.dispose();
  }
} catch (e) {
  shmFail(job.shared);
  throw e;
}
