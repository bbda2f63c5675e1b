// The safety net (one FinalizationRegistry cell per storage) on a fake GPU, under Node (V8) and
// Bun (JavaScriptCore), whose collectors and finalization timing differ: device memory of a
// forgotten storage comes back after a full collection and a turn of the event loop, and
// memory that something still references never does. A synchronous loop that drops tensors
// (no turn of the event loop for the whole run) keeps CPU memory bounded; on a device, where
// memory comes back only after a turn, the out-of-memory error says what undisposed tensors hold;
// forgotten memory past a threshold is reported once, with where it was made.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { Storage } from '../../src/device/storage.ts';
import { liveTensors, OutOfMemoryError, Tensor } from '../../src/index.ts';
import { CachingAllocator } from '../../src/runtime/allocator.ts';
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

const MiB = 2 ** 20;

test('forgotten memory past 256 MiB is reported once, with where it was made', async () => {
  const warnings: Error[] = [];
  const onWarning = (w: Error) => {
    if ((w as { code?: string }).code === 'RocmTensorForgottenTensors') warnings.push(w);
  };
  process.on('warning', onWarning);
  try {
    for (let i = 0; i < 160 && warnings.length === 0; i++) {
      Tensor.zeros([MiB]); // 4 MiB each, dropped
      if (i % 8 === 7) {
        collectGarbage();
        await turn(1);
      }
    }
    await collectUntil(() => warnings.length > 0);
  } finally {
    process.off('warning', onWarning);
  }
  assert.is(warnings.length, 1, 'one warning');
  const m = warnings[0]!.message;
  assert.ok(m.includes('freed by the garbage collector instead of dispose()'), m);
  assert.ok(m.includes('safety-net.test.ts'), `names where the tensors were made: ${m}`);
});

test('a synchronous loop that drops CPU tensors keeps memory bounded (the net holds none of them)', () => {
  // no await anywhere: the event loop never turns while the loop runs
  const base = process.memoryUsage().arrayBuffers;
  let peak = 0;
  for (let i = 0; i < 200; i++) {
    Tensor.zeros([MiB]); // 4 MiB, never disposed
    if (i % 20 === 19) {
      collectGarbage();
      peak = Math.max(peak, process.memoryUsage().arrayBuffers - base);
    }
  }
  // small tensors wait for the next turn to enter the net: that wait is bounded too
  for (let i = 0; i < 2000; i++) {
    Tensor.zeros([64 * 1024]); // 256 KiB
    if (i % 100 === 99) {
      collectGarbage();
      peak = Math.max(peak, process.memoryUsage().arrayBuffers - base);
    }
  }
  console.log(`  ${runtime}: 1300 MiB dropped in one synchronous run; at most ${(peak / MiB).toFixed(0)} MiB held`);
  assert.ok(peak < 200 * MiB, `dropped tensors stayed allocated: ${(peak / MiB).toFixed(0)} MiB`);
});

test('out of device memory in a synchronous loop: the error says what undisposed tensors hold and why', () => {
  const { dev } = fakeGpu();
  (dev as { allocator: CachingAllocator }).allocator = new CachingAllocator(dev.runtime, 64 * MiB);
  let err: unknown = null;
  try {
    for (let i = 0; i < 100; i++) Storage.alloc(dev, 'f32', MiB).retain(); // 4 MiB each, forgotten
  } catch (e) {
    err = e;
  }
  assert.ok(err instanceof OutOfMemoryError, `expected OutOfMemoryError, got ${String(err)}`);
  const m = (err as Error).message;
  assert.ok(/not yet disposed hold 60.0 MiB on fake:0/.test(m), m); // 15 storages of 4 MiB in three 20 MiB segments
  assert.ok(m.includes('turn of the event loop') && m.includes('dispose()'), m);
});

test.run();
