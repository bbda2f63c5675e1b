// The caching allocator's bookkeeping, against a fake device (no GPU needed): reuse, splitting,
// merging, the exact-size cache of small blocks, emptyCache, limits and out-of-memory, and the
// bounded cache (idle segments past ROCM_TENSOR_MEMORY_CACHE_LIMIT go back, oldest first).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { CachingAllocator, defaultCacheLimit, parseByteLimit, type Block } from '../../src/runtime/allocator.ts';
import { OutOfMemoryError } from '../../src/core/errors.ts';
import { asDevicePtr, type DevicePtr, type GpuRuntime, type GpuStream } from '../../src/runtime/gpu.ts';

/** a device with `capacity` bytes that hands out addresses from a bump pointer */
function fakeDevice(capacity: number) {
  let next = 0x10000n,
    used = 0;
  const sizes = new Map<bigint, number>();
  const calls = { malloc: 0, free: 0, sync: 0, freesAfterSync: 0 };
  const rt = {
    vendor: 'cuda',
    index: 0,
    malloc(bytes: number): DevicePtr {
      calls.malloc++;
      if (used + bytes > capacity) throw new OutOfMemoryError(`fake malloc(${bytes})`, 2, 'malloc');
      const p = next;
      next += BigInt(bytes);
      used += bytes;
      sizes.set(p, bytes);
      return asDevicePtr(p);
    },
    free(p: DevicePtr): void {
      calls.free++;
      if (calls.sync > 0) calls.freesAfterSync++;
      used -= sizes.get(p)!;
      sizes.delete(p);
    },
    memGetInfo: () => ({ free: capacity - used, total: capacity }),
    synchronize(): void {
      calls.sync++;
    },
  } as unknown as GpuRuntime;
  return { rt, calls, used: () => used, segments: sizes };
}
const S1 = {} as GpuStream,
  S2 = {} as GpuStream;
const MiB = 1 << 20;

test('a freed block is reused by the next same-size request without a device malloc', () => {
  const { rt, calls } = fakeDevice(64 * MiB);
  const a = new CachingAllocator(rt, null);
  const b1 = a.alloc(1000, S1);
  a.free(b1, S1);
  const b2 = a.alloc(1000, S1);
  assert.is(b2.ptr, b1.ptr);
  assert.is(calls.malloc, 1);
  assert.is(a.stats().inUse, 1024);
});

test('small requests share a 2 MiB segment; blocks are 512-byte aligned and do not overlap', () => {
  const { rt, calls } = fakeDevice(64 * MiB);
  const a = new CachingAllocator(rt, null);
  const bs = [100, 5000, 70000, 1].map((n) => a.alloc(n, S1));
  assert.is(calls.malloc, 1);
  for (const b of bs) assert.is(Number(b.ptr % 512n), 0);
  const spans = bs.map((b) => [b.ptr, b.ptr + BigInt(b.size)] as const).sort((x, y) => (x[0] < y[0] ? -1 : 1));
  for (let i = 1; i < spans.length; i++) assert.ok(spans[i]![0] >= spans[i - 1]![1], 'no overlap');
});

test('freed neighbours merge: a larger request fits where two small blocks were', () => {
  const { rt, calls } = fakeDevice(64 * MiB);
  const a = new CachingAllocator(rt, null);
  const x = a.alloc(512 * 1024, S1),
    y = a.alloc(512 * 1024, S1),
    z = a.alloc(512 * 1024, S1);
  const w = a.alloc(512 * 1024, S1); // the segment (2 MiB) is now full
  a.free(x, S1);
  a.free(y, S1);
  const big = a.alloc(1024 * 1024, S1); // needs x and y merged
  assert.is(big.ptr, x.ptr);
  assert.is(calls.malloc, 1);
  a.free(big, S1);
  a.free(z, S1);
  a.free(w, S1);
  assert.is(a.stats().inUse, 0);
});

test('blocks freed on one stream are not handed to another', () => {
  const { rt, calls } = fakeDevice(64 * MiB);
  const a = new CachingAllocator(rt, null);
  const b = a.alloc(4096, S1);
  a.free(b, S1);
  const c = a.alloc(4096, S2);
  assert.is.not(c.ptr, b.ptr);
  assert.is(calls.malloc, 2);
});

test('emptyCache returns wholly free segments, also those held in the exact-size cache', () => {
  const { rt, calls, used } = fakeDevice(64 * MiB);
  const a = new CachingAllocator(rt, null);
  const small = a.alloc(256, S1),
    large = a.alloc(8 * MiB, S1);
  a.free(small, S1);
  a.free(large, S1);
  assert.ok(a.stats().reserved > 0);
  a.emptyCache();
  assert.is(a.stats().reserved, 0);
  assert.is(used(), 0);
  assert.is(calls.free, 2);
});

test('out of memory: the cache is emptied and the request retried, then a clear error with the numbers', () => {
  const { rt } = fakeDevice(40 * MiB);
  const a = new CachingAllocator(rt, null);
  const big = a.alloc(30 * MiB, S1);
  a.free(big, S1); // cached: 30 MiB held
  const other = a.alloc(36 * MiB, S1); // fits only once the cache is returned
  assert.is(other.size, 36 * MiB);
  assert.throws(
    () => a.alloc(20 * MiB, S1),
    (e: unknown) =>
      e instanceof OutOfMemoryError &&
      /asked for 20971520 bytes/.test((e as Error).message) &&
      /in use by tensors 36\.0 MiB/.test((e as Error).message),
  );
  a.free(other, S1);
  assert.ok(a.alloc(20 * MiB, S1), 'the next allocation works');
});

test('a byte limit caps what the allocator holds; parseByteLimit reads 512m, 8g, plain bytes', () => {
  const { rt } = fakeDevice(1024 * MiB);
  const a = new CachingAllocator(rt, 16 * MiB);
  a.alloc(10 * MiB, S1);
  assert.throws(() => a.alloc(10 * MiB, S1), /ROCM_TENSOR_MEMORY_LIMIT 16\.0 MiB/);
  assert.is(parseByteLimit('512m'), 512 * MiB);
  assert.is(parseByteLimit('8g'), 8 * 1024 * MiB);
  assert.is(parseByteLimit('1000'), 1000);
  assert.is(parseByteLimit(undefined), null);
  assert.throws(() => parseByteLimit('lots'), /ROCM_TENSOR_MEMORY_LIMIT/);
});

test('double free is an error, not silent corruption', () => {
  const { rt } = fakeDevice(64 * MiB);
  const a = new CachingAllocator(rt, null);
  const b = a.alloc(100, S1);
  a.free(b, S1);
  assert.throws(() => a.free(b, S1), /freed twice/);
});

test('freed small blocks merge before a bigger small request: two 1 MiB fit one 2 MiB segment', () => {
  const { rt, calls } = fakeDevice(64 * MiB);
  const a = new CachingAllocator(rt, null);
  const x = a.alloc(1000, S1),
    y = a.alloc(3000, S1),
    z = a.alloc(100_000, S1);
  a.free(y, S1);
  a.free(x, S1);
  a.free(z, S1);
  const big = a.alloc(MiB, S1),
    tail = a.alloc(MiB, S1);
  assert.is(calls.malloc, 1);
  assert.is(tail.ptr - big.ptr, BigInt(MiB));
});

/** a seeded generator: integers in [0, n) */
function lcg(seed: number): (n: number) => number {
  let x = seed >>> 0;
  return (n) => {
    x = (Math.imul(x, 1664525) + 1013904223) >>> 0;
    return Math.floor((x / 2 ** 32) * n);
  };
}

test('cache limit: over a varied pattern the idle bytes never pass it, and no block in use is ever given back', () => {
  for (const cap of [0, 8 * MiB, 64 * MiB]) {
    const { rt, calls, used, segments } = fakeDevice(4096 * MiB);
    const a = new CachingAllocator(rt, null, cap);
    const r = lcg(cap + 1);
    const held: { b: Block; s: GpuStream }[] = [];
    // sizes as a generation server sees them: ids and norms (bytes to KiB), activations and KV
    // caches of varied batches and lengths (MiB to tens of MiB)
    const size = () => [64 + r(4000), 4096 + r(200_000), MiB + r(9 * MiB), 10 * MiB + r(50 * MiB)][r(4)]!;
    for (let i = 0; i < 3000; i++) {
      if (held.length < 40 && (held.length === 0 || r(100) < 55)) {
        const s = r(3) ? S1 : S2;
        held.push({ b: a.alloc(size(), s), s });
      } else {
        const { b, s } = held.splice(r(held.length), 1)[0]!;
        a.free(b, s);
      }
      const st = a.stats();
      assert.ok(st.idle <= cap, `step ${i}: idle ${st.idle} > cap ${cap}`);
      assert.is(st.reserved, used(), 'reserved = what the device holds');
      // every block in use lies inside a segment the device still holds
      if (i % 50 === 0 || i > 2950) {
        const segs = [...segments].map(([p, n]) => [p, p + BigInt(n)] as const);
        for (const { b } of held)
          assert.ok(
            segs.some(([lo, hi]) => b.ptr >= lo && b.ptr + BigInt(b.size) <= hi),
            `step ${i}: a block in use lies in a segment given back`,
          );
        // idle = the segments no block in use touches
        const idle = [...segments]
          .filter(([p, n]) => !held.some(({ b }) => b.ptr >= p && b.ptr < p + BigInt(n)))
          .reduce((t, [, n]) => t + n, 0);
        assert.is(st.idle, idle, `step ${i}: idle bytes`);
      }
    }
    const st = a.stats();
    assert.ok(st.deviceFrees > 0 && st.cacheReleases === st.deviceFrees, `segments went back: ${JSON.stringify(st)}`);
    assert.is(calls.free, st.deviceFrees);
    assert.ok(st.peakReserved >= st.reserved && st.peakReserved >= st.peakInUse);
    for (const { b, s } of held) a.free(b, s);
    assert.ok(a.stats().idle <= cap);
    a.emptyCache();
    assert.is(a.stats().reserved, 0);
    assert.is(used(), 0);
  }
});

test('cache limit: the least recently used idle segment goes first; the others are reused without a malloc', () => {
  const { rt, calls } = fakeDevice(1024 * MiB);
  const a = new CachingAllocator(rt, null, 40 * MiB);
  const x = a.alloc(20 * MiB, S1),
    y = a.alloc(12 * MiB, S1),
    z = a.alloc(16 * MiB, S1);
  assert.is(calls.malloc, 3);
  a.free(x, S1);
  a.free(y, S1);
  assert.is(a.stats().idle, 32 * MiB);
  assert.is(calls.sync, 0);
  a.free(z, S1); // 48 MiB idle > 40: x, the oldest, goes back
  assert.is(calls.free, 1);
  assert.is(calls.sync, 1, 'the device is waited for first: queued work may still use the blocks');
  assert.is(calls.freesAfterSync, 1);
  assert.is(a.stats().idle, 28 * MiB);
  assert.is(a.stats().cacheReleases, 1);
  const y2 = a.alloc(12 * MiB, S1),
    z2 = a.alloc(16 * MiB, S1);
  assert.is(calls.malloc, 3, 'the two kept segments are reused');
  assert.is(y2.ptr, y.ptr);
  assert.is(z2.ptr, z.ptr);
  assert.is(a.stats().idle, 0);
  a.alloc(20 * MiB, S1);
  assert.is(calls.malloc, 4, 'the one given back is asked for again');
});

test('cache limit: small blocks held in the exact-size cache count as free; their segment goes back whole', () => {
  const { rt, calls, used } = fakeDevice(1024 * MiB);
  const a = new CachingAllocator(rt, null, 0);
  const bs = [100, 3000, 70_000].map((n) => a.alloc(n, S1));
  const keep = a.alloc(5000, S2);
  a.free(bs[0]!, S1);
  a.free(bs[1]!, S1);
  assert.is(calls.free, 0, 'the segment still holds a block');
  assert.is(a.stats().idle, 0);
  a.free(bs[2]!, S1);
  assert.is(calls.free, 1, 'its last block freed: the segment goes back');
  assert.is(used(), 2 * MiB, "the other stream's segment stays");
  const again = a.alloc(100, S1);
  assert.is(calls.malloc, 3);
  a.free(again, S1);
  a.free(keep, S2);
  assert.is(used(), 0);
});

test('setCacheLimit lowers the limit at once; emptyCache and the limit never touch segments in use', () => {
  const { rt, used } = fakeDevice(1024 * MiB);
  const a = new CachingAllocator(rt, null);
  // a quarter of the device's memory, at least 2 GiB
  assert.is(a.stats().cacheLimit, defaultCacheLimit(rt.info?.totalMemory ?? 0));
  assert.is(defaultCacheLimit(140e9), 35e9);
  assert.is(defaultCacheLimit(4 * 2 ** 30), 2 * 2 ** 30);
  const live = a.alloc(30 * MiB, S1);
  const tmp = [a.alloc(8 * MiB, S1), a.alloc(50 * MiB, S1), a.alloc(300, S2)];
  for (const b of tmp) a.free(b, b === tmp[2] ? S2 : S1);
  assert.is(a.stats().idle, 20 * MiB + 50 * MiB + 2 * MiB);
  a.setCacheLimit(25 * MiB);
  assert.ok(a.stats().idle <= 25 * MiB);
  assert.is(a.stats().cacheLimit, 25 * MiB);
  a.setCacheLimit(0);
  assert.is(a.stats().idle, 0);
  assert.is(used(), 30 * MiB, 'the segment in use stays');
  a.emptyCache();
  assert.is(used(), 30 * MiB);
  a.free(live, S1);
  assert.is(used(), 0, 'with limit 0 the last free gives it back');
  assert.throws(() => a.setCacheLimit(-1), /cache limit/);
  assert.throws(() => new CachingAllocator(rt, null, 1.5), /cache limit/);
});

test("cache limit: a live graph's pool is never given back, even unused; released, it is idle like any other", () => {
  const { rt, calls } = fakeDevice(1024 * MiB);
  const a = new CachingAllocator(rt, null, 0);
  const key = a.beginCapture(S1);
  const inGraph = a.alloc(4 * MiB, S1);
  const eager = a.alloc(4 * MiB, S2);
  const out = a.alloc(3 * MiB, S1); // an output the graph hands out: in use after the capture
  assert.is(a.poolInUse(key), 7 * MiB, 'both blocks in the pool are in use');
  a.free(inGraph, S1); // freed during the capture: later captured work and every replay reuse it
  a.endCapture();
  assert.is(a.poolInUse(key), 3 * MiB, 'the output alone');
  assert.is(a.poolInUse(S2), 4 * MiB, 'an eager stream counts its own blocks');
  a.free(out, S1);
  assert.is(a.poolInUse(key), 0);
  a.free(eager, S2);
  assert.is(calls.free, 1, 'only the eager segment went back');
  assert.is(a.poolBytes(key), 20 * MiB);
  a.emptyCache();
  assert.is(a.poolBytes(key), 20 * MiB, 'emptyCache leaves the graph pool alone');
  a.releasePool(key, S1);
  assert.is(calls.free, 2, 'released with no block in use: over the limit, it goes back');
  assert.is(a.stats().reserved, 0);
});

test('cache limit: nothing goes back to the device during a capture; endCapture trims', () => {
  const { rt, calls } = fakeDevice(1024 * MiB);
  const a = new CachingAllocator(rt, null, 0);
  const eager = a.alloc(4 * MiB, S2);
  a.beginCapture(S1);
  a.alloc(8 * MiB, S1);
  a.free(eager, S2); // idle past the limit, but a device free now would break the capture
  a.setCacheLimit(0);
  assert.is(calls.free, 0);
  assert.is(a.stats().idle, 20 * MiB);
  assert.is(calls.sync, 0, 'no wait during the capture');
  a.endCapture();
  assert.is(calls.free, 1);
  assert.is(calls.sync, 1);
  assert.is(a.stats().idle, 0);
});

test('a capture takes the segments a disposed graph gave back, without a device malloc; never ones eager work used since', () => {
  const { rt, calls } = fakeDevice(1024 * MiB);
  const a = new CachingAllocator(rt, null, 1024 * MiB);
  // a first graph: its pool is fresh segments (a small one and a 20 MiB one)
  const k1 = a.beginCapture(S1);
  const g1 = [a.alloc(300, S1), a.alloc(6 * MiB, S1)];
  a.endCapture();
  assert.is(calls.malloc, 2);
  for (const b of g1) a.free(b, S1);
  a.releasePool(k1, S1); // after the caller synchronized: nothing queued touches them
  assert.is(a.stats().idle, 22 * MiB);
  // the next graph, on another stream, takes both back whole
  const k2 = a.beginCapture(S2);
  const g2 = [a.alloc(5000, S2), a.alloc(9 * MiB, S2)];
  a.endCapture();
  assert.is(calls.malloc, 2, 'no device malloc');
  assert.equal(
    g2.map((b) => b.ptr),
    g1.map((b) => b.ptr),
  );
  assert.is(a.poolBytes(k2), 22 * MiB);
  assert.is(a.stats().idle, 0);
  for (const b of g2) a.free(b, S2);
  a.releasePool(k2, S2);
  // eager work takes one of them: it is no longer quiet (its work may still run), so a capture
  // mallocs rather than take it, even once it is idle again
  const eager = a.alloc(8 * MiB, S2);
  a.free(eager, S2);
  const k3 = a.beginCapture(S1);
  const g3 = a.alloc(8 * MiB, S1);
  a.endCapture();
  assert.is(calls.malloc, 3);
  assert.is.not(g3.ptr, eager.ptr);
  assert.is(a.poolBytes(k3), 20 * MiB, 'a fresh segment');
  // a quiet segment far larger than the request is left alone, as the free lists do
  const b2 = new CachingAllocator(rt, null, 1024 * MiB);
  const k4 = b2.beginCapture(S1);
  b2.free(b2.alloc(200 * MiB, S1), S1);
  b2.endCapture();
  b2.releasePool(k4, S1);
  const k5 = b2.beginCapture(S1);
  b2.alloc(12 * MiB, S1);
  b2.endCapture();
  assert.is(b2.poolBytes(k5), 12 * MiB, 'a fresh segment, not the 200 MiB one');
  const k6 = b2.beginCapture(S1);
  b2.alloc(120 * MiB, S1);
  b2.endCapture();
  assert.is(b2.poolBytes(k6), 200 * MiB, 'a request near its size takes it');
});

test('out of memory with a generous cache limit: the idle cache is emptied and the request retried', () => {
  const { rt, calls } = fakeDevice(40 * MiB);
  const a = new CachingAllocator(rt, null, 1024 * MiB);
  const small = a.alloc(1000, S1);
  const big = a.alloc(30 * MiB, S1);
  a.free(big, S1);
  a.free(small, S1); // in the exact-size cache: its segment is idle too
  assert.is(a.stats().idle, 32 * MiB);
  const other = a.alloc(36 * MiB, S1);
  assert.is(other.size, 36 * MiB);
  assert.is(calls.free, 2);
  assert.is(a.stats().deviceFrees, 2);
  assert.is(a.stats().cacheReleases, 0, 'given back by the retry, not by the limit');
});

test('ROCM_TENSOR_MEMORY_CACHE_LIMIT sets the limit of a new allocator; a bad value names the variable', () => {
  const { rt } = fakeDevice(64 * MiB);
  const old = process.env.ROCM_TENSOR_MEMORY_CACHE_LIMIT;
  try {
    process.env.ROCM_TENSOR_MEMORY_CACHE_LIMIT = '96m';
    assert.is(new CachingAllocator(rt, null).stats().cacheLimit, 96 * MiB);
    process.env.ROCM_TENSOR_MEMORY_CACHE_LIMIT = '0';
    assert.is(new CachingAllocator(rt, null).stats().cacheLimit, 0);
    process.env.ROCM_TENSOR_MEMORY_CACHE_LIMIT = 'lots';
    assert.throws(() => new CachingAllocator(rt, null), /ROCM_TENSOR_MEMORY_CACHE_LIMIT/);
  } finally {
    if (old === undefined) delete process.env.ROCM_TENSOR_MEMORY_CACHE_LIMIT;
    else process.env.ROCM_TENSOR_MEMORY_CACHE_LIMIT = old;
  }
});

test.run();
