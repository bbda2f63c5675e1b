// The serving engine on a tiny CPU model: concurrent sequences (chunked prefill interleaved
// with decode steps, blocks of 4 tokens) each equal their solo greedy result from the existing
// generation path, a sliding-window model included, and seeded sampling with penalties equals
// the one-sequence path with the same seed; a small pool preempts and recomputes and still gives
// every request its solo result; equal prompt prefixes share blocks (counted by reference, freed
// when the last user leaves); a cancelled request returns its blocks; how the pool is sized;
// the pool's bookkeeping; and the requests the engine refuses.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { FOLDERS } from '../fixtures/model-folders.ts';
import { engineIds, loadTinyModel, soloGreedy } from '../fixtures/serve-model.ts';
import { generateIds } from '../../src/models/generate.ts';
import { Engine, type EngineOptions } from '../../src/serve/engine.ts';
import { engineLimits } from '../../src/serve/engine-options.ts';
import { BlockPool, blockHash } from '../../src/serve/block-pool.ts';
import { BadRequestError, QueueFullError, UnavailableError } from '../../src/serve/errors.ts';
import type { FinishReason, SequenceUsage } from '../../src/serve/sequence.ts';
import type { PretrainedLlama } from '../../src/models/pretrained.ts';

const llama = await loadTinyModel(FOLDERS[0]);
const mistral = await loadTinyModel(FOLDERS[2]);
test.after(() => {
  llama.cleanup();
  mistral.cleanup();
});

const PROMPTS = [
  [1, 40, 41],
  [5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21],
  [100, 101],
  [1, 40, 41, 42, 43, 44, 45, 46, 47],
  [200, 201, 202, 203, 204, 205, 206, 207, 208, 209, 210],
];
const N = 10;

interface Result {
  ids: number[];
  reason: FinishReason;
  usage: SequenceUsage;
}

/** submits a request; resolves with its ids when it ends */
function run(
  e: Engine,
  prompt: number[],
  maxTokens = N,
  hooks: { onToken?: (ids: number[]) => boolean | undefined; onHandle?: (cancel: () => void) => void } = {},
): Promise<Result> {
  return new Promise((resolve, reject) => {
    const ids: number[] = [];
    const h = e.submit(
      {
        prompt,
        maxTokens,
        stopIds: [],
        onToken: (id) => {
          ids.push(id);
          return hooks.onToken?.(ids);
        },
        onFinish: (reason, usage, err) => (err ? reject(err) : resolve({ ids, reason, usage })),
      },
      { temperature: 0 },
    );
    hooks.onHandle?.(h.cancel);
  });
}

async function solos(m: PretrainedLlama): Promise<number[][]> {
  const out: number[][] = [];
  for (const p of PROMPTS) out.push(await soloGreedy(m, p, N));
  return out;
}

const SMALL: EngineOptions = { blockSize: 4, prefillChunk: 6, maxSeqLen: 40 };

for (const [name, tiny] of [
  ['llama', llama],
  ['mistral (sliding window 6)', mistral],
] as const) {
  test(`${name}: concurrent sequences each equal their solo greedy result`, async () => {
    const want = await solos(tiny.m);
    const e = new Engine(tiny.m, SMALL);
    const got = await Promise.all(PROMPTS.map((p) => run(e, p)));
    got.forEach((r, i) => {
      assert.equal(r.ids, want[i], `prompt ${i}`);
      assert.is(r.reason, 'length');
      assert.equal(r.usage, { promptTokens: PROMPTS[i]!.length, completionTokens: N, cachedTokens: 0 });
    });
    const s = e.stats();
    // chunked prefill: the 17-token prompt alone takes 3 chunks of 6, while others decode
    assert.ok(s.steps < PROMPTS.length * N, `${s.steps} steps: the sequences were batched`);
    assert.is(s.pool.used, 0);
    assert.is(s.preemptions, 0);
    await e.close();
  });
}

test('seeded sampling with penalties, batched, equals the one-sequence path with the same seed', async () => {
  const m = llama.m;
  const opts = (seed: number) => ({
    temperature: 0.9,
    topK: 40,
    topP: 0.95,
    seed,
    repetitionPenalty: 1.3,
    presencePenalty: 0.4,
    frequencyPenalty: 0.2,
  });
  const want: number[][] = [];
  for (const [i, p] of PROMPTS.entries()) {
    const out: number[] = [];
    const g = generateIds(m.model, [p], { ...opts(i + 1), maxTokens: N, stopIds: [], vocabMask: m.vocabMask });
    for await (const st of g) out.push(st.ids[0]!);
    want.push(out);
  }
  const e = new Engine(m, SMALL);
  const got = await engineIds(e, PROMPTS, N, (i) => opts(i + 1));
  assert.equal(got, want);
  // and the draws differ from greedy: the test would notice sampling being skipped
  assert.not.equal(got, await solos(m));
  await e.close();
});

test('a pool too small for every sequence preempts, recomputes, and still gives the solo results', async () => {
  const want = await solos(llama.m);
  const logs: string[] = [];
  // 10 blocks of 4 tokens: one sequence of 40, not all five at once
  const e = new Engine(llama.m, { ...SMALL, kvBlocks: 10, log: (l) => logs.push(l) });
  const got = await Promise.all(PROMPTS.map((p) => run(e, p)));
  got.forEach((r, i) => assert.equal(r.ids, want[i], `prompt ${i}`));
  const s = e.stats();
  assert.ok(s.preemptions > 0, 'preempted');
  assert.ok(
    logs.some((l) => /preempted for lack of KV blocks: it will be recomputed/.test(l)),
    logs.join('\n'),
  );
  assert.is(s.pool.used, 0, 'every block returned');
  await e.close();
});

test('equal prompt prefixes share their full blocks, counted by reference, and free them', async () => {
  const prompt = PROMPTS[1]!; // 17 tokens: 4 full blocks of 4 before the last token
  const want = await soloGreedy(llama.m, prompt, N);
  const e = new Engine(llama.m, SMALL);
  const first = await run(e, prompt);
  assert.equal(first.ids, want);
  assert.is(first.usage.cachedTokens, 0);
  assert.is(e.stats().pool.used, 0);
  assert.ok(e.stats().pool.cached >= 4, 'the finished prompt stays cached');
  // two at once over the cached prefix: 4 shared blocks + 3 of their own each (27 tokens)
  let usedMidway = -1;
  const both = await Promise.all([
    run(e, prompt, N, {
      onToken: (ids) => {
        if (ids.length === 1) usedMidway = e.stats().pool.used;
        return undefined;
      },
    }),
    run(e, prompt),
  ]);
  for (const r of both) {
    assert.equal(r.ids, want);
    assert.is(r.usage.cachedTokens, 16);
  }
  // at the first token each holds 5 blocks (18 tokens): 4 shared + 1 own each
  assert.is(usedMidway, 6);
  assert.is(e.stats().prefixHitTokens, 32);
  // a prompt that differs inside the second block shares only the first
  const other = [...prompt.slice(0, 6), 999 % 384, ...prompt.slice(7)];
  const r = await run(e, other);
  assert.is(r.usage.cachedTokens, 4);
  assert.equal(r.ids, await soloGreedy(llama.m, other, N));
  assert.is(e.stats().pool.used, 0);
  await e.close();
});

test('a cancelled request returns its blocks at once; the others go on unchanged', async () => {
  const want = await solos(llama.m);
  const e = new Engine(llama.m, SMALL);
  /** a 30-token request cancelled after its third token; the pool's use when it ended */
  const victim = () => {
    let cancel: () => void = () => undefined;
    let used = -1;
    const r = run(e, PROMPTS[3]!, 30, {
      onHandle: (c) => {
        cancel = c;
      },
      onToken: (ids) => {
        if (ids.length === 3) setImmediate(cancel);
        return undefined;
      },
    }).then((res) => {
      used = e.stats().pool.used;
      return { ...res, used };
    });
    return r;
  };
  const alone = await victim();
  assert.is(alone.reason, 'cancelled');
  assert.ok(alone.ids.length >= 3 && alone.ids.length < 30, `${alone.ids.length} ids before the cancel`);
  assert.is(alone.used, 0, 'the pool is whole again as soon as it ended');
  const v = victim();
  const others = [0, 1, 2].map((i) => run(e, PROMPTS[i]!));
  assert.is((await v).reason, 'cancelled');
  const got = await Promise.all(others);
  got.forEach((r, i) => assert.equal(r.ids, want[i]));
  assert.is(e.stats().pool.used, 0);
  // a request cancelled while waiting never starts
  const w = await run(e, PROMPTS[0]!, N, { onHandle: (c) => c() });
  assert.is(w.reason, 'cancelled');
  assert.is(w.ids.length, 0);
  await e.close();
});

test('requests the engine refuses, and a closed engine', async () => {
  const e = new Engine(llama.m, { ...SMALL, maxQueue: 2, maxBatch: 1 });
  const req = (prompt: number[], maxTokens = 4) => ({
    prompt,
    maxTokens,
    stopIds: [],
    onToken: () => undefined,
    onFinish: () => undefined,
  });
  const refuse = (fn: () => unknown, cls: new (...a: never[]) => Error, part: string) => {
    try {
      fn();
    } catch (err) {
      assert.ok(err instanceof cls, String(err));
      assert.ok((err as Error).message.includes(part), (err as Error).message);
      return;
    }
    assert.unreachable(`expected ${cls.name}`);
  };
  refuse(() => e.submit(req([])), BadRequestError, 'the prompt is empty');
  refuse(() => e.submit(req([1, 384])), BadRequestError, 'token id 384 is outside');
  refuse(() => e.submit(req(new Array(40).fill(1))), BadRequestError, 'context is 40 tokens');
  refuse(() => e.submit(req([1, 2], 0)), BadRequestError, 'max_tokens must be a positive integer');
  refuse(() => e.submit(req([1, 2]), { temperature: -1 }), BadRequestError, 'temperature must be a finite number >= 0');
  const hs = [e.submit(req([1, 2])), e.submit(req([3, 4]))];
  refuse(() => e.submit(req([5, 6])), QueueFullError, '2 requests waiting');
  for (const h of hs) h.cancel();
  const closing = e.close();
  refuse(() => e.submit(req([1, 2])), UnavailableError, 'shutting down');
  await closing;
});

test('the pool is sized from kvBlocks, kvMemory or the batch, and must hold one whole sequence', () => {
  const c = llama.m.model.config;
  const lim = (o: EngineOptions) => engineLimits(llama.m.model, o);
  // f32, 3 layers, 2 kv heads of 16: 2 * 3 * 4 * 2 * 16 * 4 bytes a block of 4 tokens
  const perBlock = 2 * c.layers * 4 * c.kvHeads * c.headDim * 4;
  assert.is(lim({ blockSize: 4, maxSeqLen: 40, kvMemory: 25 * perBlock + 7 }).blocks, 25);
  assert.is(lim({ blockSize: 4, maxSeqLen: 40, maxBatch: 3 }).blocks, 30);
  assert.is(lim({ blockSize: 4, maxSeqLen: 40, kvBlocks: 12 }).blocks, 12);
  const fraction = lim({ blockSize: 4, maxSeqLen: 40, kvMemory: 0.001 }).blocks;
  assert.ok(fraction >= 10, `${fraction} blocks from a thousandth of the free memory`);
  assert.throws(
    () => lim({ blockSize: 4, maxSeqLen: 40, kvBlocks: 9 }),
    /kvBlocks 9 gives 9 blocks of 4 tokens; one sequence of maxSeqLen 40 needs 10/,
  );
  assert.throws(() => lim({ maxSeqLen: 300 }), /maxSeqLen 300 is longer than the model's max_position_embeddings 256/);
  assert.throws(() => lim({ maxBatch: 0 }), /maxBatch must be a positive integer, got 0/);
  assert.throws(() => lim({ kvMemory: -1 }), /kvMemory must be bytes/);
});

test('BlockPool: allocation, names, sharing by reference, release, least recently released evicted first', () => {
  const p = new BlockPool(3, 2);
  const a = p.allocate()!,
    b = p.allocate()!;
  assert.is(p.available, 1);
  const na = blockHash('', [1, 2]),
    nb = blockHash(na, [3, 4]);
  assert.is.not(na, blockHash('', [1, 3]));
  assert.is.not(nb, blockHash('', [3, 4]), 'a name depends on the blocks before it');
  assert.ok(p.name(a, na));
  assert.ok(p.name(b, nb));
  assert.not.ok(p.name(b, 'x'), 'a named block keeps its name');
  assert.is(p.take(na), a);
  assert.is(p.refCount(a), 2);
  p.release(a);
  assert.is(p.refCount(a), 1);
  p.release(a);
  p.release(b);
  assert.equal(p.stats(), { total: 3, used: 0, cached: 2, empty: 1 });
  // a cached block is taken back by name; it leaves the cache
  assert.is(p.take(nb), b);
  assert.equal(p.stats(), { total: 3, used: 1, cached: 1, empty: 1 });
  p.release(b);
  // empty blocks first, then the least recently released cached one (a, then b)
  const c = p.allocate()!;
  assert.ok(c !== a && c !== b);
  assert.is(p.allocate(), a);
  assert.is(p.take(na), null, 'an evicted block loses its name');
  assert.is(p.allocate(), b);
  assert.is(p.allocate(), null);
  assert.throws(() => p.release(99), /block 99 is not held/);
});

test.run();
