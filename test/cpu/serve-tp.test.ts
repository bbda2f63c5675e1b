// The server over a tensor-parallel model on the CPU: ranks in worker threads, the collectives in
// shared memory (workers/shm-ranks.ts). Rank 0 serves HTTP and sends each step's plan; rank 1
// runs the same steps. Concurrent greedy requests (with preemption, the pool being small) give
// the single-device model's solo results; the follower ran every step the engine ran, with a
// KV cache of its own key/value heads sized as rank 0's; closing rank 0 stops it. Also: a
// sharded model is refused without a leader, and the leader over a job of one rank serves.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Worker } from 'node:worker_threads';
import { FOLDERS, writeModelFolder } from '../fixtures/model-folders.ts';
import { soloGreedy } from '../fixtures/serve-model.ts';
import { PretrainedLlama } from '../../src/models/pretrained.ts';
import { createServer } from '../../src/serve/server.ts';
import { StepPlanLeader, followSteps } from '../../src/serve/tp-plan.ts';
import { PagedKVCache } from '../../src/nn/paged-kv-cache.ts';
import { Tensor } from '../../src/index.ts';
import { tsWorker } from '../runtime.ts';
import { shmShared, shmRanks } from './workers/shm-ranks.ts';
import type { ServeRankJob, ServeRankMessage } from './workers/serve-tp-rank.ts';

const root = mkdtempSync(join(tmpdir(), 'rocm-tensor-serve-tp-'));
// 4 query heads, 2 key/value heads: one key/value head per rank of 2
const { dir } = await writeModelFolder(root, FOLDERS[0]!);
const solo = await PretrainedLlama.load(dir, { device: 'cpu', dtype: 'f32', onWarning: () => undefined });
test.after(() => {
  solo.dispose();
  rmSync(root, { recursive: true, force: true });
});

const N = 12;
const PROMPTS = [
  [3, 14, 15, 92, 65, 35, 89, 79, 32, 38],
  [46, 26, 43, 38, 32, 79, 50, 28],
  [84, 19, 71, 69, 39, 93, 75, 10, 58, 20, 97],
  [49, 44, 59, 23, 7],
];
const text = (ids: number[]) => solo.tokenizer!.decode(ids, { skipSpecialTokens: true });

async function complete(url: string, prompt: number[], stream = false): Promise<string> {
  const r = await fetch(`${url}/v1/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ prompt, max_tokens: N, temperature: 0, ignore_eos: true, stream }),
  });
  assert.is(r.status, 200, await r.clone().text());
  if (!stream) {
    const b = (await r.json()) as { choices: { text: string }[]; usage: { completion_tokens: number } };
    assert.is(b.usage.completion_tokens, N);
    return b.choices[0]!.text;
  }
  let out = '';
  for (const line of (await r.text()).split('\n')) {
    if (!line.startsWith('data: ') || line === 'data: [DONE]') continue;
    out += (JSON.parse(line.slice(6)) as { choices: { text: string }[] }).choices[0]?.text ?? '';
  }
  return out;
}

test('a sharded model alone is refused; the leader over a job of one rank serves the solo results', async () => {
  const ranks = shmRanks(shmShared(1, 1 << 14), 0);
  const m = await PretrainedLlama.load(dir, { tp: ranks, dtype: 'f32', onWarning: () => undefined });
  try {
    const alone = createServer(m, { maxSeqLen: 32, log: () => undefined });
    let err: unknown = null;
    await alone.ready.catch((e: unknown) => {
      err = e;
    });
    assert.ok(/served by every rank of its job: start it with rocm-tensor launch/.test(String(err)), String(err));
    await alone.close();
    const leader = new StepPlanLeader(ranks);
    const s = createServer(m, { tensorParallel: leader, maxSeqLen: 32, log: () => undefined });
    const at = await s.listen(0);
    await s.ready;
    const url = `http://127.0.0.1:${at.port}`;
    const want = await Promise.all(PROMPTS.map(async (p) => text(await soloGreedy(solo, p, N))));
    assert.equal(await Promise.all(PROMPTS.map((p) => complete(url, p))), want);
    await s.close();
    leader.stop();
  } finally {
    m.dispose();
  }
});

test('the leader and the follower check what they are given', async () => {
  const two = shmShared(2, 1 << 10);
  let msg = '';
  try {
    new StepPlanLeader(shmRanks(two, 1));
  } catch (e) {
    msg = (e as Error).message;
  }
  assert.ok(msg.includes('rank 0 leads, alone in its process; this holds ranks 1'), msg);
  msg = '';
  await followSteps(solo.model, shmRanks(two, 1)).catch((e: unknown) => {
    msg = (e as Error).message;
  });
  assert.ok(msg.includes('the model is not split over ranks'), msg);
});

test('a step that throws after its plan went out is heard once, and later steps are refused', async () => {
  const ranks = shmRanks(shmShared(1, 1 << 14), 0);
  const m = await PretrainedLlama.load(dir, { tp: ranks, dtype: 'f32', onWarning: () => undefined });
  const c = m.model.config;
  const cache = new PagedKVCache(
    { layers: c.layers, blocks: 8, blockSize: 4, kvHeads: m.model.shard!.kvHeads, headDim: c.headDim },
    m.model.device,
    'f32',
  );
  const u32 = (xs: number[], shape?: number[]) => Tensor.from(Uint32Array.from(xs), shape ? { shape } : {});
  const ts = [u32([5, 6, 7]), u32([0, 1, 2]), u32([0, 1, 2]), u32([0, 1], [1, 2]), u32([2])];
  try {
    const heard: string[] = [];
    const leader = new StepPlanLeader(ranks, (e) => heard.push(e.message));
    const served = leader.served(m);
    leader.start({ blocks: 8, blockSize: 4, maxBatch: 2, maxSeqLen: 32 });
    const [ids, positions, slots, blockTable, rows] = ts as [Tensor, Tensor, Tensor, Tensor, Tensor];
    // 3 new tokens in a context of 1: the model refuses the step after the plan was sent
    const step = { slots, blockTable, queryLens: [3], contextLens: [1] };
    let first = '';
    try {
      served.model.forwardPaged(ids, positions, cache, step, rows);
    } catch (e) {
      first = (e as Error).message;
    }
    assert.ok(first !== '' && heard.length === 1 && heard[0] === first, `${first} / ${heard}`);
    let again = '';
    try {
      served.model.forwardPaged(ids, positions, cache, { ...step, contextLens: [3] }, rows);
    } catch (e) {
      again = (e as Error).message;
    }
    assert.ok(again.includes('the ranks are out of step: restart the job'), again);
    assert.is(heard.length, 1);
  } finally {
    for (const t of ts) t.dispose();
    cache.dispose();
    m.dispose();
  }
});

test('two ranks: concurrent requests give the solo results, the follower runs every step, close stops it', async () => {
  // the largest collective: a step's [1, tokens, hidden] partial sums (prefill chunk 24 + 4 decodes)
  const shared = shmShared(2, 1 << 14);
  const messages: ServeRankMessage[][] = [[], []];
  const waiters: (() => void)[] = [];
  const workers: Worker[] = [];
  const exits = [0, 1].map(
    (rank) =>
      new Promise<void>((resolve, reject) => {
        const job: ServeRankJob = { rank, dir, shared };
        const w = tsWorker(new URL('./workers/serve-tp-rank.ts', import.meta.url), job);
        workers.push(w);
        w.on('message', (m: ServeRankMessage) => {
          messages[rank]!.push(m);
          for (const r of waiters.splice(0)) r();
        });
        w.on('error', reject);
        w.on('exit', (code) => (code === 0 ? resolve() : reject(new Error(`rank ${rank} exited with ${code}`))));
      }),
  );
  const failed = Promise.all(exits).then(() => undefined);
  const message = async (rank: number, kind: ServeRankMessage['kind']): Promise<ServeRankMessage> => {
    for (;;) {
      const m = messages[rank]!.find((x) => x.kind === kind);
      if (m) return m;
      await Promise.race([new Promise<void>((r) => waiters.push(r)), failed]);
    }
  };
  try {
    const ready = (await message(0, 'listening')) as Extract<ServeRankMessage, { kind: 'listening' }>;
    assert.is(ready.kvHeads, 1, "rank 0's cache holds its one key/value head");
    const want = await Promise.all(PROMPTS.map(async (p) => text(await soloGreedy(solo, p, N))));
    // four at once in a pool of 10 blocks of 4 tokens: some are preempted and recomputed
    const got = await Promise.all(PROMPTS.map((p, i) => complete(ready.url, p, i % 2 === 1)));
    assert.equal(got, want);
    assert.equal(await complete(ready.url, PROMPTS[0]!), want[0], 'a request after the others');
    workers[0]!.postMessage('close');
    const closed = (await message(0, 'closed')) as Extract<ServeRankMessage, { kind: 'closed' }>;
    const followed = (await message(1, 'followed')) as Extract<ServeRankMessage, { kind: 'followed' }>;
    await Promise.all(exits);
    assert.ok(closed.preemptions > 0, 'the small pool preempted a request');
    assert.ok(closed.steps > N, String(closed.steps));
    assert.is(followed.steps, closed.steps, 'the follower ran every step the engine ran');
    assert.equal(followed.limits, { blocks: 10, blockSize: 4, maxBatch: 4, maxSeqLen: 32 });
    assert.is(followed.kvHeads, 1);
  } finally {
    // a failed check leaves the ranks running: end them
    for (const w of workers) void w.terminate();
  }
});

test.run();
