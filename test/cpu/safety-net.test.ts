// The safety net (one FinalizationRegistry cell per storage) on a fake GPU, under Node (V8) and
// Bun (JavaScriptCore), whose collectors and finalization timing differ: device memory of a
// forgotten storage comes back after a full collection and a turn of the event loop, and
// memory that something still references never does.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { Storage } from '../../src/device/storage.ts';
import { liveTensors } from '../../src/index.ts';
import { fakeGpu } from '../fake-gpu.ts';
import { collectGarbage, runtime } from '../runtime.ts';

const turn = (ms = 0) => new Promise((r) => setTimeout(r, ms));

/** collects and yields until `done` or 20 rounds; returns the rounds it took */
async function collectUntil(done: () => boolean): Promise<number> {
  let round = 0;
  for (; round < 20 && !done(); round++) {
    await turn(2); // registration is deferred to the next turn; finalizers run as tasks
    collectGarbage();
  }
  await turn();
  return round;
}

test('forgotten device storages are freed after GC; held ones are not', async () => {
  const { dev } = fakeGpu();
  const held: Storage[] = [];
  (() => {
    for (let i = 0; i < 32; i++) {
      const s = Storage.alloc(dev, 'f32', 1024);
      s.retain(); // one view, never released
      if (i % 4 === 0) held.push(s);
    }
  })();
  const inUse = () => dev.allocator.stats().inUse;
  assert.is(inUse(), 32 * 4096);
  const rounds = await collectUntil(() => inUse() <= 8 * 4096);
  console.log(`  ${runtime}: the safety net freed 24 forgotten storages within ${rounds} collection rounds`);
  assert.is(inUse(), 8 * 4096, 'exactly the 24 forgotten storages came back');
  // the held ones stay usable and are released by hand, once
  for (const s of held) {
    assert.not.ok(s.isReleased);
    s.ptrAt(0);
    s.release();
  }
  assert.is(inUse(), 0);
  await collectUntil(() => false);
  assert.is(inUse(), 0, 'no double free after the explicit releases');
});

test('a storage released by hand is never finalized again (unregistered from the net)', async () => {
  const { dev } = fakeGpu();
  const frees: bigint[] = [];
  const free = dev.allocator.free.bind(dev.allocator);
  dev.allocator.free = (b, s) => {
    frees.push(b.ptr);
    free(b, s);
  };
  const live0 = liveTensors().length;
  let byHand: Storage[] = [];
  for (let i = 0; i < 16; i++) {
    const s = Storage.alloc(dev, 'u8', 512);
    s.retain();
    byHand.push(s);
  }
  await turn(); // past the deferred registration: these 16 are in the net now
  for (const s of byHand) s.release();
  byHand = [];
  (() => {
    for (let i = 0; i < 16; i++) Storage.alloc(dev, 'u8', 512).retain();
  })(); // forgotten
  await collectUntil(() => frees.length >= 32);
  await collectUntil(() => false); // time for any second finalization to show
  assert.is(frees.length, 32, '16 released by hand + 16 by the net, each once');
  assert.is(liveTensors().length, live0);
});

test.run();
