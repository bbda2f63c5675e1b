// The GPU runtime interface itself (src/runtime/gpu.ts), below tensors: device info, copies of
// every size from 1 byte to 1 GiB (sync, async through pinned buffers, device to device,
// unaligned), memset, streams ordered by events, event timing, out-of-memory, the libraries,
// and kernels asked for an arch that has no code object.
import { gpuSuite, thrown } from './harness.ts';
import * as assert from 'uvu/assert';
import { OutOfMemoryError, NoKernelForArchError } from '../../src/index.ts';
import { asDevicePtr, type DevicePtr, type GpuRuntime, type DeviceInfo } from '../../src/runtime/gpu.ts';
import { Kernels, findKernelsDir, readManifest } from '../../src/runtime/kernels.ts';

const s = gpuSuite('gpu/runtime', { needsRuntime: true });
const MiB = 1 << 20,
  GiB = 1 << 30;
const SIZES = [1, 3, 4, 7, 64, 1000, 4096, 65537, MiB, MiB + 13, 16 * MiB + 1, 256 * MiB, GiB];

/** deterministic bytes that differ between any two 1 MiB tiles (a misplaced tile shows) */
function pattern(n: number, seed: number, into?: Uint8Array): Uint8Array {
  const out = into ?? new Uint8Array(n);
  const tile = new Uint8Array(Math.min(n, MiB));
  let x = (seed * 2654435761) >>> 0 || 1;
  for (let i = 0; i < tile.length; i++) {
    x ^= x << 13;
    x >>>= 0;
    x ^= x >>> 17;
    x ^= x << 5;
    x >>>= 0;
    tile[i] = x & 0xff;
  }
  for (let off = 0, t = 0; off < n; off += MiB, t++) {
    const len = Math.min(MiB, n - off);
    out.set(len === tile.length ? tile : tile.subarray(0, len), off);
    for (let k = 0; k < Math.min(4, len); k++) out[off + k] = (t >>> (8 * k)) & 0xff;
  }
  return out;
}

function sameBytes(a: Uint8Array, b: Uint8Array, what: string): void {
  assert.is(a.length, b.length, `${what}: length`);
  if (Buffer.from(a.buffer, a.byteOffset, a.length).equals(Buffer.from(b.buffer, b.byteOffset, b.length))) return;
  let i = 0;
  while (a[i] === b[i]) i++;
  assert.unreachable(`${what}: first difference at byte ${i} of ${a.length}: got ${a[i]}, expected ${b[i]}`);
}

const at = (p: DevicePtr, off: number): DevicePtr => asDevicePtr(p + BigInt(off));

function withDevMem<T>(rt: GpuRuntime, sizes: number[], fn: (...ptrs: DevicePtr[]) => T): T {
  const ptrs: DevicePtr[] = [];
  try {
    for (const n of sizes) ptrs.push(rt.malloc(n));
    return fn(...ptrs);
  } finally {
    for (const p of ptrs) rt.free(p);
  }
}

s.test('device info and memory info', (dev) => {
  const { info } = dev.runtime;
  assert.ok(info.name.length > 0, 'name');
  assert.ok(info.arch.length > 0 && info.archFull.startsWith(info.arch), `arch ${info.arch} / ${info.archFull}`);
  assert.ok([32, 64].includes(info.warpSize), `warpSize ${info.warpSize}`);
  assert.ok(
    info.multiprocessors > 0 && info.maxThreadsPerBlock >= 256 && info.maxSharedMemoryPerBlock >= 16384,
    JSON.stringify(info),
  );
  assert.ok(
    info.maxGridDim.every((g) => g >= 65535),
    `maxGridDim ${info.maxGridDim}`,
  );
  const m = dev.runtime.memGetInfo();
  assert.ok(m.total > 0 && m.free > 0 && m.free <= m.total, JSON.stringify(m));
  assert.ok(
    Math.abs(m.total - info.totalMemory) <= 0.05 * info.totalMemory,
    `memGetInfo total ${m.total} vs info ${info.totalMemory}`,
  );
  console.log(
    `  ${dev}: ${info.name}, ${info.arch}, ${info.multiprocessors} multiprocessors, wave ${info.warpSize}, ${(m.total / GiB).toFixed(1)} GiB (${(m.free / GiB).toFixed(1)} free)`,
  );
});

s.test('sync copies H2D, D2D, D2H round trip, 1 byte .. 1 GiB, aligned and not', (dev) => {
  const rt = dev.runtime;
  for (const n of SIZES) {
    const src = pattern(n, n);
    withDevMem(rt, [n + 1, n + 1], (a, b) => {
      rt.copyHtoD(a, src);
      rt.copyDtoDAsync(b, a, n, rt.defaultStream);
      rt.streamSynchronize(rt.defaultStream);
      const back = new Uint8Array(n);
      rt.copyDtoH(back, b);
      sameBytes(back, src, `${n} bytes`);
      // one byte in: unaligned source and destination
      rt.copyHtoD(at(a, 1), src);
      rt.copyDtoDAsync(at(b, 1), at(a, 1), n, rt.defaultStream);
      rt.streamSynchronize(rt.defaultStream);
      const back2 = new Uint8Array(n);
      rt.copyDtoH(back2, at(b, 1));
      sameBytes(back2, src, `${n} bytes at offset 1`);
    });
  }
  // typed arrays other than bytes, and views into the middle of a buffer
  const f = new Float64Array(1001).map((_, i) => i * 0.5 - 7);
  withDevMem(rt, [8 * 1001], (a) => {
    rt.copyHtoD(a, f.subarray(1));
    const back = new Float64Array(1000);
    rt.copyDtoH(back, a);
    assert.equal(Array.from(back), Array.from(f.subarray(1)));
  });
});

s.test('async copies through pinned buffers on a user stream, 1 byte .. 1 GiB', (dev) => {
  const rt = dev.runtime;
  const stream = rt.streamCreate();
  try {
    for (const n of SIZES) {
      const inBuf = rt.hostAlloc(n + 8),
        outBuf = rt.hostAlloc(n + 8);
      try {
        assert.is(inBuf.bytes.length, n + 8, 'pinned view length');
        const want = pattern(n, n + 1, inBuf.bytes.subarray(5, 5 + n));
        outBuf.bytes.fill(0);
        withDevMem(rt, [n, n], (a, b) => {
          rt.copyHtoDAsync(a, inBuf, 5, n, stream);
          rt.copyDtoDAsync(b, a, n, stream);
          rt.copyDtoHAsync(outBuf, 3, b, n, stream);
          rt.streamSynchronize(stream);
        });
        sameBytes(outBuf.bytes.subarray(3, 3 + n), want, `${n} bytes async`);
        assert.is(outBuf.bytes[2], 0, 'byte before the copied range untouched');
        assert.is(outBuf.bytes[3 + n], 0, 'byte after the copied range untouched');
      } finally {
        rt.hostFree(inBuf);
        rt.hostFree(outBuf);
      }
    }
  } finally {
    rt.streamDestroy(stream);
  }
});

s.test('memsetAsync writes exactly its range', (dev) => {
  const rt = dev.runtime;
  const n = 3 * MiB + 5;
  withDevMem(rt, [n], (a) => {
    rt.memsetAsync(a, 0x11, n, rt.defaultStream);
    rt.memsetAsync(at(a, 7), 0xab, MiB + 3, rt.defaultStream);
    rt.streamSynchronize(rt.defaultStream);
    const back = new Uint8Array(n);
    rt.copyDtoH(back, a);
    const want = new Uint8Array(n).fill(0x11);
    want.fill(0xab, 7, 7 + MiB + 3);
    sameBytes(back, want, 'memset');
  });
});

s.test('two streams ordered by an event (runtime) and by Stream.waitFor', (dev) => {
  const rt = dev.runtime;
  const big = 256 * MiB,
    n = 4 * MiB;
  const want = pattern(n, 77);
  withDevMem(rt, [big, big, n, n, n], (x, y, a, b, c) => {
    for (const how of ['event', 'waitFor'] as const) {
      rt.copyHtoD(a, want);
      rt.memsetAsync(b, 0, n, rt.defaultStream);
      rt.memsetAsync(c, 0, n, rt.defaultStream);
      rt.synchronize();
      const s1 = dev.createStream(),
        s2 = dev.createStream();
      try {
        // a long queue on s1 ends with the write of b; s2 reads b only after waiting for it
        for (let i = 0; i < 8; i++) rt.copyDtoDAsync(y, x, big, s1.handle);
        rt.copyDtoDAsync(b, a, n, s1.handle);
        if (how === 'event') {
          const e = rt.eventCreate(false);
          rt.eventRecord(e, s1.handle);
          rt.streamWaitEvent(s2.handle, e);
          rt.eventDestroy(e);
        } else {
          s2.waitFor(s1);
        }
        rt.copyDtoDAsync(c, b, n, s2.handle);
        s2.synchronize();
        const back = new Uint8Array(n);
        rt.copyDtoH(back, c);
        sameBytes(back, want, `stream ordering by ${how}`);
      } finally {
        s1.synchronize();
        s1.destroy();
        s2.destroy();
      }
    }
  });
});

s.test('events: timing of real work, query, synchronize', (dev) => {
  const rt = dev.runtime;
  const n = 256 * MiB;
  withDevMem(rt, [n, n], (a, b) => {
    const start = rt.eventCreate(true),
      end = rt.eventCreate(true);
    try {
      rt.eventRecord(start, rt.defaultStream);
      for (let i = 0; i < 4; i++) rt.copyDtoDAsync(b, a, n, rt.defaultStream);
      rt.eventRecord(end, rt.defaultStream);
      rt.eventSynchronize(end);
      assert.ok(rt.eventQuery(end), 'eventQuery after eventSynchronize');
      const ms = rt.eventElapsedMs(start, end);
      assert.ok(ms > 0 && ms < 10_000, `elapsed ${ms} ms for 4 copies of 256 MiB`);
      console.log(
        `  4 x 256 MiB device copies: ${ms.toFixed(3)} ms, ${((8 * n) / (ms / 1e3) / 1e9).toFixed(0)} GB/s read + written`,
      );
    } finally {
      rt.eventDestroy(start);
      rt.eventDestroy(end);
    }
  });
  // a recorded event with no work before it completes
  const e = rt.eventCreate(false);
  rt.eventRecord(e, rt.defaultStream);
  rt.eventSynchronize(e);
  assert.ok(rt.eventQuery(e));
  rt.eventDestroy(e);
});

s.test('out of memory: OutOfMemoryError with the numbers, then allocation works', (dev) => {
  const rt = dev.runtime;
  const ask = Math.ceil((rt.info.totalMemory * 2) / MiB) * MiB;
  const e = thrown(() => rt.malloc(ask), `malloc(${ask})`);
  assert.instance(e, OutOfMemoryError, `malloc(${ask}) threw ${e}`);
  assert.ok(e.message.includes(String(ask)), `message names the size asked for: ${e.message}`);
  console.log(`  ${e.message}`);
  const p = rt.malloc(64 * MiB);
  rt.memsetAsync(p, 1, 64 * MiB, rt.defaultStream);
  rt.synchronize();
  rt.free(p);
});

s.test('BLAS and DNN libraries load', (dev) => {
  const blas = dev.runtime.blas(),
    dnn = dev.runtime.dnn();
  assert.ok(blas.name.length > 0 && blas.version.length > 0, `blas ${blas.name} ${blas.version}`);
  assert.ok(dnn.name.length > 0 && dnn.version.length > 0, `dnn ${dnn.name} ${dnn.version}`);
  console.log(`  ${blas.name} ${blas.version}, ${dnn.name} ${dnn.version}`);
});

/** the device's runtime, claiming to be another arch */
function pretend(rt: GpuRuntime, info: Partial<DeviceInfo>): GpuRuntime {
  const fake = { ...rt.info, ...info };
  return new Proxy(rt, {
    get: (t, k) => {
      if (k === 'info') return fake;
      if (k === 'vendor') return fake.vendor;
      const v: unknown = Reflect.get(t, k);
      return typeof v === 'function' ? v.bind(t) : v;
    },
  });
}

s.test('kernels for an arch with no code object: NoKernelForArchError listing the archs there are', (dev) => {
  const rt = dev.runtime;
  const dir = findKernelsDir();
  const manifest = readManifest(dir);
  const have = manifest.archs;
  assert.ok(have.length > 0, 'the manifest lists archs');
  // this device's own arch has code objects
  assert.ok(have.includes(dev.kernels.objectKey), `objectKey ${dev.kernels.objectKey}`);
  const file = Object.keys(manifest.files)[0]!;
  for (const info of [
    { vendor: 'rocm', arch: 'gfx000', archFull: 'gfx000:xnack-' },
    { vendor: 'cuda', arch: 'sm_50', archFull: 'sm_50' },
  ] as const) {
    const k = new Kernels(pretend(rt, info), { dir });
    for (const [what, fn] of [
      ['objectKey', () => k.objectKey],
      [`params(${file})`, () => k.params(file, 'any')],
    ] as const) {
      const e = thrown(fn, `${info.arch}: ${what}`);
      assert.instance(e, NoKernelForArchError, `${info.arch}: ${what} threw ${e}`);
      assert.ok(e.message.includes(info.archFull), `message names the arch: ${e.message}`);
      for (const a of have) assert.ok(e.message.includes(a), `message lists ${a}: ${e.message}`);
    }
  }
});

s.run();
