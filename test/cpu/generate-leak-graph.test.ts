// Generation's GPU path (decode graphs, the caching allocator, graph pools, device-side
// sampling) on a runtime that runs nothing (bench/null-runtime.ts: allocations are address
// ranges, launches return at once), in Llama-3.2-1B's shapes: the same tensors and the same
// allocation pattern as on a GPU, on any machine. Over varied rounds the live tensors and the
// bytes in use come back to where they were, each decode graph's pool reuses the last one's
// segments, and the cache limit bounds the idle cache. The ids read back are not a model's
// (nothing computes them): only memory is checked here; test/gpu/generate-leak.test.ts runs
// the same checks on a GPU.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { liveTensors } from '../../src/index.ts';
import { nullDevice } from '../../bench/null-runtime.ts';
import { soakModel } from '../../bench/soak-model.ts';
import { lcg, planRound, primingRounds, runRound } from '../../bench/soak-rounds.ts';

const MiB = 2 ** 20;
const dev = nullDevice();
const loaded = await soakModel(dev, { shape: '1b', dtype: 'bf16', seed: 1 });
const model = loaded.model;
const MAX_NEW = 12;
model.rope.reserve(300 + MAX_NEW);
const r = lcg(3);
// the largest round in every mode first: what grows to the largest size seen is grown
for (const p of primingRounds(true, MAX_NEW)) await runRound(model, p, r);
dev.emptyCache();

const live = () => liveTensors().sort();
const stats = () => dev.memoryStats()!;

test('decode-graph rounds (batches 1-13, prompts 16-300, every mode and ending): live tensors and bytes in use flat', async () => {
  const before = live(),
    inUse = stats().inUse;
  let graphs = 0,
    sampled = 0;
  for (let i = 0; i < 40; i++) {
    const plan = planRound(r, MAX_NEW, true);
    await runRound(model, plan, r);
    if (plan.graph && plan.maxTokens > 1) graphs++;
    if (plan.mode !== 'greedy' && plan.graph) sampled++;
    const what = `round ${i}: ${JSON.stringify({ ...plan, promptLengths: plan.promptLengths.length })}`;
    assert.equal(live(), before, what);
    assert.is(stats().inUse, inUse, `${what}: bytes in use`);
  }
  assert.ok(graphs >= 10 && sampled >= 5, `decode graphs ran (${graphs}, ${sampled} sampled)`);
});

test("each decode graph's pool is made of the last one's segments: rounds take (almost) no device malloc", async () => {
  const from = stats();
  for (let i = 0; i < 30; i++) await runRound(model, planRound(r, MAX_NEW, true), r);
  const to = stats();
  // without the reuse each graph took fresh segments: about two mallocs a round, and as many
  // segments given back once the idle ones passed the limit
  assert.ok(
    to.deviceAllocations - from.deviceAllocations <= 10,
    `${to.deviceAllocations - from.deviceAllocations} mallocs in 30 rounds`,
  );
});

test('a small cache limit bounds the idle cache over varied rounds', async () => {
  const cap = 256 * MiB;
  const released = stats().cacheReleases;
  dev.allocator.setCacheLimit(cap);
  assert.ok(stats().idle <= cap, 'lowering the limit trims at once');
  for (let i = 0; i < 30; i++) {
    await runRound(model, planRound(r, MAX_NEW, true), r);
    assert.ok(stats().idle <= cap, `round ${i}: idle ${stats().idle / MiB} MiB > ${cap / MiB}`);
  }
  assert.ok(stats().cacheReleases > released, 'segments went back to the device');
  const frag = stats().cached - stats().idle;
  assert.ok(frag < 1024 * MiB, `free space in used segments ${frag / MiB} MiB`);
});

test.after(() => loaded.dispose());
test.run();
