// Device memory as tensors see it: poisoned new memory, upload/readback round trips of every
// dtype and size, the caching allocator (reuse without the device's malloc, split and merge,
// emptyCache, stats), out-of-memory through tensors, use after dispose, 10^5 small ops without
// growth, async and sync readback agreeing, streams, and tidy across await.
import { gpuSuite, thrown, rejected, ALL_DTYPES } from './harness.ts';
import * as assert from 'uvu/assert';
import { Tensor, tidy, liveTensors, DisposedError, OutOfMemoryError, DTYPE_INFO, type DType } from '../../src/index.ts';
import { CachingAllocator } from '../../src/runtime/allocator.ts';
import type { GpuRuntime } from '../../src/runtime/gpu.ts';
import type { Device } from '../../src/device/device.ts';
import { randT } from '../helpers.ts';
import { collectGarbage } from '../runtime.ts';

const s = gpuSuite('gpu/memory', { needsRuntime: true });
const MiB = 1 << 20;

/** host data of a dtype with varied bits (f16/bf16 as raw bits, NaN patterns excluded) */
function hostData(d: DType, n: number, seed: number): ArrayLike<number> | BigInt64Array {
  let x = (seed * 2654435761) >>> 0 || 1;
  const next = () => {
    x ^= x << 13;
    x >>>= 0;
    x ^= x >>> 17;
    x ^= x << 5;
    x >>>= 0;
    return x;
  };
  switch (d) {
    case 'f32':
      return Float32Array.from({ length: n }, () => (next() / 2 ** 32 - 0.5) * 1e3);
    case 'f64':
      return Float64Array.from({ length: n }, () => (next() / 2 ** 32 - 0.5) * 1e6 + next() / 2 ** 52);
    case 'f16':
    case 'bf16':
      return Uint16Array.from({ length: n }, () => next() & 0x7bff);
    case 'u8':
      return Uint8Array.from({ length: n }, () => next() & 0xff);
    case 'u32':
      return Uint32Array.from({ length: n }, () => next());
    case 'i64':
      return BigInt64Array.from({ length: n }, () => (BigInt(next()) << 32n) | BigInt(next()));
  }
}

function sameRaw(got: ArrayLike<number | bigint>, want: ArrayLike<number | bigint>, what: string): void {
  assert.is(got.length, want.length, `${what}: length`);
  for (let i = 0; i < want.length; i++) {
    if (!Object.is(got[i], want[i])) assert.unreachable(`${what}: element ${i}: got ${got[i]}, expected ${want[i]}`);
  }
}

/** a runtime that counts the device allocations the allocator makes */
function counting(rt: GpuRuntime): { rt: GpuRuntime; calls: { malloc: number; free: number } } {
  const calls = { malloc: 0, free: 0 };
  const proxy = new Proxy(rt, {
    get: (t, k) => {
      const v: unknown = Reflect.get(t, k);
      if (typeof v !== 'function') return v;
      if (k === 'malloc' || k === 'free')
        return (...a: unknown[]) => {
          calls[k]++;
          return (v as (...x: unknown[]) => unknown).apply(t, a);
        };
      return v.bind(t);
    },
  });
  return { rt: proxy, calls };
}

const inUse = (dev: Device) => dev.memoryStats()!.inUse;
const num = (a: ArrayLike<number | bigint>): number[] => Array.from(a, (x) => Number(x));

s.test('new device memory is poisoned (0xff): the harness turns poison on', async (dev) => {
  for (const d of ['f32', 'u8', 'i64'] as const) {
    const t = Tensor.empty([1000], d, dev);
    const raw = await t.toRawArray();
    const bytes = new Uint8Array(raw.buffer, raw.byteOffset, raw.byteLength);
    assert.ok(
      bytes.every((b) => b === 0xff),
      `${d}: fresh memory is not all 0xff`,
    );
    t.dispose();
  }
});

s.test('tensor upload/readback round trips: every dtype, 1 element .. 1 GiB', async (dev) => {
  for (const d of ALL_DTYPES) {
    for (const n of [1, 5, 1000, MiB + 3]) {
      const data = hostData(d, n, n);
      const t = Tensor.from(data, { dtype: d, device: dev });
      assert.is(t.device, dev);
      sameRaw(await t.toRawArray(), data, `${d} x ${n} async`);
      sameRaw(
        t.toArraySync() as ArrayLike<number | bigint>,
        d === 'f16' || d === 'bf16' ? await t.toArray() : data,
        `${d} x ${n} sync`,
      );
      t.dispose();
    }
  }
  const big = new Uint8Array(1 << 30);
  for (let i = 0; i < big.length; i += 4096) big[i] = (i >>> 12) & 0xff;
  big[big.length - 1] = 0x5a;
  const t = Tensor.from(big, { device: dev });
  const back = (await t.toArray()) as Uint8Array;
  assert.ok(
    Buffer.from(back.buffer, back.byteOffset, back.length).equals(Buffer.from(big.buffer)),
    '1 GiB u8 round trip',
  );
  t.dispose();
  dev.emptyCache();
});

s.test('toArray (async) and toArraySync agree, also on strided views', async (dev) => {
  for (const d of ALL_DTYPES) {
    const t = Tensor.from(hostData(d, 12 * 35, 3), { dtype: d, device: dev, shape: [12, 35] });
    for (const v of [t, t.T, t.narrow(1, 3, 20), t.slice(0, 1, undefined, 2)]) {
      const a = await v.toArray(),
        b = v.toArraySync();
      sameRaw(a, b, `${d} ${v.shape} strides ${v.strides}`);
      if (v !== t) v.dispose();
    }
    t.dispose();
  }
  // many readbacks in flight at once
  const ts = Array.from({ length: 32 }, (_, i) =>
    Tensor.from(
      Float32Array.from({ length: 1000 }, (_, j) => i * 1000 + j),
      { device: dev },
    ),
  );
  const all = await Promise.all(ts.map((t) => t.toArray()));
  all.forEach((a, i) => assert.is(a[999], i * 1000 + 999));
  for (const t of ts) t.dispose();
});

s.test('allocator: a second same-size allocation does not call the device malloc', (dev) => {
  const { rt, calls } = counting(dev.runtime);
  const al = new CachingAllocator(rt, null);
  const st = rt.defaultStream;
  for (const size of [1000, 3 * MiB, 64 * MiB]) {
    const before = calls.malloc;
    const a = al.alloc(size, st);
    assert.is(calls.malloc, before + 1, `${size}: first allocation mallocs`);
    al.free(a, st);
    const b = al.alloc(size, st);
    assert.is(calls.malloc, before + 1, `${size}: second allocation reuses`);
    assert.is(b.ptr, a.ptr, `${size}: same block`);
    al.free(b, st);
  }
  assert.is(al.stats().deviceAllocations, calls.malloc);
  al.emptyCache();
  assert.is(calls.free, calls.malloc, 'emptyCache frees every segment');
  assert.is(al.stats().reserved, 0);
});

s.test('allocator: split and merge', (dev) => {
  const { rt, calls } = counting(dev.runtime);
  const al = new CachingAllocator(rt, null);
  const st = rt.defaultStream;
  // small blocks are carved out of one 2 MiB segment
  const a = al.alloc(1000, st),
    b = al.alloc(3000, st),
    c = al.alloc(100_000, st);
  assert.is(calls.malloc, 1, 'three small blocks, one segment');
  const span = (x: bigint, y: bigint) => (x > y ? x - y : y - x);
  assert.ok(span(a.ptr, b.ptr) < 2n * BigInt(MiB) && span(a.ptr, c.ptr) < 2n * BigInt(MiB), 'same segment');
  assert.is(new Set([a.ptr, b.ptr, c.ptr]).size, 3, 'distinct blocks');
  assert.is(al.stats().inUse, 1024 + 3072 + 100_352);
  // freed neighbours merge back: a 1 MiB request fits the whole segment again
  al.free(b, st);
  al.free(a, st);
  al.free(c, st);
  assert.is(al.stats().inUse, 0);
  const big = al.alloc(MiB, st);
  assert.is(calls.malloc, 1, 'merged segment serves 1 MiB');
  const tail = al.alloc(MiB, st);
  assert.is(calls.malloc, 1, 'its other half serves another 1 MiB');
  al.free(big, st);
  al.free(tail, st);
  // large blocks: two 5 MiB from one 20 MiB segment, then 18 MiB from the merged segment
  const x = al.alloc(5 * MiB, st),
    y = al.alloc(5 * MiB, st);
  assert.is(calls.malloc, 2, 'two 5 MiB blocks, one new segment');
  al.free(x, st);
  al.free(y, st);
  const z = al.alloc(18 * MiB, st);
  assert.is(calls.malloc, 2, '18 MiB from the merged 20 MiB segment');
  al.free(z, st);
  const stats = al.stats();
  assert.is(stats.reserved, 2 * MiB + 20 * MiB);
  assert.is(stats.cached, stats.reserved);
  assert.ok(stats.peakInUse >= 10 * MiB, `peak ${stats.peakInUse}`);
  al.emptyCache();
  assert.is(al.stats().reserved, 0);
  assert.is(calls.free, 2);
});

s.test('memoryStats follows tensors; emptyCache returns cached memory', (dev) => {
  dev.synchronize();
  const before = dev.memoryStats()!;
  const t = Tensor.zeros([16 * MiB], { device: dev }); // 64 MiB
  const during = dev.memoryStats()!;
  assert.ok(during.inUse - before.inUse >= 64 * MiB, `inUse grew by ${during.inUse - before.inUse}`);
  assert.ok(during.peakInUse >= during.inUse);
  t.dispose();
  const after = dev.memoryStats()!;
  assert.is(after.inUse, before.inUse, 'inUse back after dispose');
  assert.ok(after.cached >= 64 * MiB, `the block stays cached (${after.cached})`);
  dev.emptyCache();
  const empty = dev.memoryStats()!;
  assert.ok(
    empty.reserved <= after.reserved - 64 * MiB,
    `emptyCache released it (${after.reserved} -> ${empty.reserved})`,
  );
  assert.is(empty.inUse, before.inUse);
});

s.test('resetPeakMemory: the peak restarts from what is in use', (dev) => {
  dev.synchronize();
  const big = Tensor.zeros([8 * MiB], { device: dev }); // 32 MiB
  big.dispose();
  assert.ok(dev.memoryStats()!.peakInUse >= dev.memoryStats()!.inUse + 32 * MiB, 'the disposed tensor set the peak');
  dev.resetPeakMemory();
  const s0 = dev.memoryStats()!;
  assert.is(s0.peakInUse, s0.inUse);
  const small = Tensor.zeros([MiB], { device: dev }); // 4 MiB
  small.dispose();
  const s1 = dev.memoryStats()!;
  assert.ok(
    s1.peakInUse - s0.inUse >= 4 * MiB && s1.peakInUse - s0.inUse < 32 * MiB,
    `peak after the reset: ${s1.peakInUse - s0.inUse} bytes above`,
  );
});

s.test(
  'out of memory through tensors: OutOfMemoryError with the numbers, then the next allocation works',
  async (dev) => {
    const total = dev.runtime.info.totalMemory;
    const n = Math.ceil((total * 1.5) / 4);
    const e = thrown(() => Tensor.zeros([n], { device: dev }), `zeros([${n}])`);
    assert.instance(e, OutOfMemoryError, `threw ${e}`);
    assert.ok(e.message.includes(String(n * 4)), `message names the bytes asked for (${n * 4}): ${e.message}`);
    assert.ok(/free/.test(e.message), `message says what is free: ${e.message}`);
    console.log(`  ${e.message}`);
    const t = Tensor.ones([1000], { device: dev });
    assert.is((await t.toArray())[999], 1);
    t.dispose();
  },
);

s.test('use after dispose: DisposedError naming the op; views keep storage alive', async (dev) => {
  const t = Tensor.ones([4, 4], { device: dev });
  const v = t.narrow(0, 1, 2);
  t.dispose();
  assert.ok(t.isDisposed);
  // the view still owns the storage
  assert.equal(num(await v.toArray()), Array(8).fill(1));
  const e1 = thrown(() => t.exp(), 'exp after dispose');
  assert.instance(e1, DisposedError);
  assert.ok(/exp/.test(e1.message), e1.message);
  assert.instance(
    thrown(() => t.add(v), 'add after dispose'),
    DisposedError,
  );
  assert.instance(
    thrown(() => v.add(t), 'add with a disposed operand'),
    DisposedError,
  );
  assert.instance(
    thrown(() => t.toArraySync(), 'toArraySync after dispose'),
    DisposedError,
  );
  assert.instance(await rejected(t.toArray(), 'toArray after dispose'), DisposedError);
  const before = inUse(dev);
  v.dispose();
  assert.ok(inUse(dev) < before, 'the last view frees the storage');
  assert.instance(
    thrown(() => v.sum(), 'sum after the last view'),
    DisposedError,
  );
  t.dispose(); // twice is fine
});

s.test('10^5 small ops: memory in use and live tensors stay flat', async (dev) => {
  const a = Tensor.from([1, 2, 3, 4], { device: dev }),
    b = Tensor.from([10, 20, 30, 40], { device: dev });
  const warm = a.add(b);
  warm.dispose();
  dev.synchronize();
  const stats0 = dev.memoryStats()!,
    live0 = liveTensors().length;
  const t0 = performance.now();
  for (let i = 0; i < 100_000; i++) {
    const c = a.add(b);
    c.dispose();
  }
  dev.synchronize();
  const ms = performance.now() - t0;
  const stats1 = dev.memoryStats()!;
  assert.is(stats1.inUse, stats0.inUse, 'inUse');
  assert.is(liveTensors().length, live0, 'liveTensors');
  assert.ok(
    stats1.deviceAllocations - stats0.deviceAllocations <= 1,
    `device allocations grew by ${stats1.deviceAllocations - stats0.deviceAllocations}`,
  );
  const c = a.add(b);
  assert.equal(num(await c.toArray()), [11, 22, 33, 44]);
  c.dispose();
  console.log(`  10^5 adds of 4 elements: ${(ms * 10).toFixed(2)} us an op (host, ROCM_TENSOR_POISON on)`);
  a.dispose();
  b.dispose();
});

s.test('forgotten tensors: the safety net returns their device memory after GC', async (dev) => {
  dev.synchronize();
  const before = inUse(dev);
  (() => {
    for (let i = 0; i < 20; i++) Tensor.ones([1 << 16], { device: dev });
  })(); // never disposed
  assert.ok(inUse(dev) >= before + 20 * 4 * (1 << 16), 'the forgotten tensors hold memory');
  for (let round = 0; round < 40 && inUse(dev) > before; round++) {
    await new Promise((r) => setTimeout(r, 5));
    collectGarbage(); // Bun.gc(true) or node's gc(); throws when there is neither
  }
  assert.ok(inUse(dev) <= before, `inUse ${inUse(dev)} back to at most ${before}`);
});

s.test('tidy across await on the GPU', async (dev) => {
  const before = inUse(dev),
    live0 = liveTensors().length;
  let inner: Tensor | null = null;
  const kept = await tidy(async () => {
    inner = Tensor.ones([1000], { device: dev });
    const x = inner.mul(3);
    const host = await x.toArray();
    assert.is(host[0], 3);
    await new Promise((r) => setTimeout(r, 2));
    return x.add(1);
  });
  assert.ok(inner!.isDisposed, 'a tensor made before the await is disposed');
  assert.not.ok(kept.isDisposed);
  assert.is((await kept.toArray())[999], 4);
  assert.is(liveTensors().length, live0 + 1);
  kept.dispose();
  assert.is(inUse(dev), before);
  assert.is(liveTensors().length, live0);
});

s.test('ops on a user stream (withStream), ordered back to the default stream', async (dev) => {
  const st = dev.createStream();
  try {
    const a = randT([256, 1024], 'f32', -1, 1, dev);
    const want = num(a.toArraySync()).map((x) => x * 2 + 1);
    // a was uploaded on the default stream: the user stream waits for that first
    st.waitFor(dev.defaultStream);
    const r = dev.withStream(st, () => {
      const m = a.mul(2);
      const out = m.add(1);
      m.dispose();
      return out;
    });
    dev.defaultStream.waitFor(st);
    const got = await r.toArray();
    for (let i = 0; i < want.length; i += 997) assert.ok(Math.abs(Number(got[i]) - want[i]!) < 1e-6, `element ${i}`);
    st.synchronize();
    r.dispose();
    a.dispose();
  } finally {
    st.destroy();
  }
});

s.test('dtype sizes on the device match DTYPE_INFO', (dev) => {
  for (const d of ALL_DTYPES) {
    const before = inUse(dev);
    const t = Tensor.empty([4096], d, dev);
    assert.is(inUse(dev) - before, 4096 * DTYPE_INFO[d].size, d);
    t.dispose();
  }
});

s.run();
