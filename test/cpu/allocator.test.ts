// The caching allocator's bookkeeping, against a fake device (no GPU needed): reuse, splitting,
// merging, the exact-size cache of small blocks, emptyCache, limits and out-of-memory.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { CachingAllocator, parseByteLimit } from '../../src/runtime/allocator.ts';
import { OutOfMemoryError } from '../../src/core/errors.ts';
import { asDevicePtr, type DevicePtr, type GpuRuntime, type GpuStream } from '../../src/runtime/gpu.ts';

/** a device with `capacity` bytes that hands out addresses from a bump pointer */
function fakeDevice(capacity: number) {
  let next = 0x10000n,
    used = 0;
  const sizes = new Map<bigint, number>();
  const calls = { malloc: 0, free: 0 };
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
      used -= sizes.get(p)!;
      sizes.delete(p);
    },
    memGetInfo: () => ({ free: capacity - used, total: capacity }),
  } as unknown as GpuRuntime;
  return { rt, calls, used: () => used };
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

test.run();
