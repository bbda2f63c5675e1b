// Loading safetensors straight to the GPU through the device's pinned double buffer, with tiny
// chunks (4 KiB halves, so a tensor takes many turns of the buffer): every dtype equals the CPU
// load bit for bit, tensors far larger than the buffer, widened integer types, conversion on
// the device, concurrent loads taking turns, a user stream, a chunk size changed between loads,
// and a file truncated after open failing cleanly without leaking device memory.
import { gpuSuite, rejected, ALL_DTYPES } from './harness.ts';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { mkdtempSync, rmSync, writeFileSync, truncateSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { open } from 'node:fs/promises';
import { Tensor, Checkpoint, saveSafetensors, SafetensorsError, type DType } from '../../src/index.ts';
import type { Device } from '../../src/device/device.ts';
import { randInts, randT, withLayout } from '../helpers.ts';

const s = gpuSuite('gpu/safetensors', { needsRuntime: true });
const TINY = 4096;
let dir = '';
let fileNo = 0;
const tmp = () => {
  dir ||= mkdtempSync(join(tmpdir(), 'rt-safetensors-gpu-'));
  return join(dir, `f${fileNo++}.safetensors`);
};

function randomOf(dtype: DType, shape: number[]): Tensor {
  if (dtype === 'i64') {
    const n = shape.reduce((a, b) => a * b, 1);
    return Tensor.from(
      BigInt64Array.from({ length: n }, (_, i) => BigInt(i * 7919 + 3) * (i % 2 ? -1n : 1n) * 2n ** BigInt(i % 40)),
    ).reshape(shape);
  }
  if (dtype === 'u8') return randInts(shape, 256, 'u8');
  if (dtype === 'u32') return randInts(shape, 2 ** 32, 'u32');
  return randT(shape, dtype);
}

async function bytesOf(t: Tensor): Promise<Buffer> {
  const a = await t.toRawArray();
  return Buffer.from(a.buffer, a.byteOffset, a.byteLength);
}

/** the GPU load of `name` equals the CPU load, bit for bit, and lives on the device */
async function sameAsCpu(ck: Checkpoint, name: string, dev: Device, dtype?: DType): Promise<void> {
  const g = await ck.load(name, { device: dev, dtype });
  const c = await ck.load(name, { dtype });
  assert.is(g.device, dev, `${name}: device`);
  assert.is(g.dtype, c.dtype, `${name}: dtype`);
  assert.equal(g.shape, c.shape, `${name}: shape`);
  const gb = await bytesOf(g),
    cb = await bytesOf(c);
  assert.ok(
    gb.equals(cb),
    `${name}${dtype ? ` as ${dtype}` : ''}: GPU load differs from the CPU load (${gb.length} bytes)`,
  );
  g.dispose();
  c.dispose();
}

s.test('every dtype, 0-d and empty tensors, with 4 KiB chunks: the GPU load equals the CPU load', async (dev) => {
  dev.uploadChunkBytes = TINY;
  const tensors: Record<string, Tensor> = {};
  for (const d of ALL_DTYPES) {
    tensors[`${d}.small`] = randomOf(d, [3, 5]);
    tensors[`${d}.many-chunks`] = withLayout(randomOf(d, [37, 203]), 'transposed').x; // 7511 elements, odd size
    tensors[`${d}.scalar`] = randomOf(d, [1]).reshape([]);
    tensors[`${d}.empty`] = Tensor.zeros([0, 7], { dtype: d });
  }
  const path = tmp();
  await saveSafetensors(path, tensors);
  const ck = await Checkpoint.open(path);
  for (const name of ck.names()) await sameAsCpu(ck, name, dev);
  await ck.close();
});

s.test(
  'tensors much larger than the staging buffer (thousands of chunks), and a chunk size changed between loads',
  async (dev) => {
    const big = randT([1531, 1029], 'f32'); // 6.3 MB: ~1540 chunks of 4 KiB
    const half = randT([2048, 1001], 'bf16'); // 4.1 MB
    const path = tmp();
    await saveSafetensors(path, { big, half });
    const ck = await Checkpoint.open(path);
    for (const chunk of [TINY, 4100 /* rounds to 4096 */, 1 << 20, 32 << 20, TINY]) {
      dev.uploadChunkBytes = chunk;
      assert.is(dev.uploadChunkBytes % 8, 0);
      await sameAsCpu(ck, 'big', dev);
      await sameAsCpu(ck, 'half', dev);
    }
    await ck.close();
  },
);

s.test('widened integer types and BOOL on the GPU', async (dev) => {
  dev.uploadChunkBytes = TINY;
  const i32 = Int32Array.from({ length: 5000 }, (_, i) => (i * 2654435761) | 0);
  const i16 = Int16Array.from({ length: 3001 }, (_, i) => (i * 40503) & 0xffff);
  const i8 = Int8Array.from({ length: 9001 }, (_, i) => (i * 97) & 0xff);
  const u16 = Uint16Array.from({ length: 4097 }, (_, i) => (i * 40503) & 0xffff);
  const bool = Uint8Array.from({ length: 777 }, (_, i) => ((i * 7) % 3 === 0 ? 1 : 0));
  const parts: [string, string, ArrayBufferView][] = [
    ['i32', 'I32', i32],
    ['i16', 'I16', i16],
    ['i8', 'I8', i8],
    ['u16', 'U16', u16],
    ['bool', 'BOOL', bool],
  ];
  const header: Record<string, unknown> = {};
  let off = 0;
  for (const [name, dtype, a] of parts) {
    header[name] = {
      dtype,
      shape: [a.byteLength / (a as Int32Array).BYTES_PER_ELEMENT],
      data_offsets: [off, off + a.byteLength],
    };
    off += a.byteLength;
  }
  const json = new TextEncoder().encode(JSON.stringify(header));
  const file = new Uint8Array(8 + json.length + off);
  new DataView(file.buffer).setBigUint64(0, BigInt(json.length), true);
  file.set(json, 8);
  let at = 8 + json.length;
  for (const [, , a] of parts) {
    file.set(new Uint8Array(a.buffer, a.byteOffset, a.byteLength), at);
    at += a.byteLength;
  }
  const path = tmp();
  writeFileSync(path, file);
  const ck = await Checkpoint.open(path);
  for (const [name] of parts) await sameAsCpu(ck, name, dev);
  const g = await ck.load('i32', { device: dev });
  const got = (await g.toArray()) as BigInt64Array;
  assert.ok(
    got.every((v, i) => v === BigInt(i32[i]!)),
    'I32 -> i64 on the GPU keeps every value and sign',
  );
  await sameAsCpu(ck, 'i16', dev, 'f32');
  await ck.close();
});

s.test('conversion on the device: BF16 -> f32 and f16, f32 -> bf16, equal to the CPU', async (dev) => {
  dev.uploadChunkBytes = TINY;
  const path = tmp();
  await saveSafetensors(path, { w: randT([129, 67], 'bf16', -300, 300), v: randT([4099], 'f32') });
  const ck = await Checkpoint.open(path);
  for (const d of ['f32', 'f16', 'bf16'] as const) await sameAsCpu(ck, 'w', dev, d);
  await sameAsCpu(ck, 'v', dev, 'bf16');
  await ck.close();
});

s.test('concurrent loads take turns on the one buffer; a user stream is honoured', async (dev) => {
  dev.uploadChunkBytes = TINY;
  const tensors: Record<string, Tensor> = {};
  for (let i = 0; i < 12; i++) tensors[`t${i}`] = randT([100 + 37 * i, 33], (['f32', 'bf16', 'f16'] as const)[i % 3]);
  const path = tmp();
  await saveSafetensors(path, tensors);
  const ck = await Checkpoint.open(path);
  const loaded = await Promise.all(ck.names().map((n) => ck.load(n, { device: dev })));
  for (const [i, n] of ck.names().entries()) {
    const c = await ck.load(n);
    assert.ok((await bytesOf(loaded[i]!)).equals(await bytesOf(c)), `${n}: concurrent load differs`);
  }
  const stream = dev.createStream();
  const t = await dev.withStream(stream, () => ck.load('t5', { device: dev }));
  stream.synchronize();
  assert.ok((await bytesOf(t)).equals(await bytesOf(await ck.load('t5'))), 'load on a user stream');
  // the conversion after the upload runs on the same user stream, after the copies
  const conv = await Promise.all(
    ['t3', 't4', 't5'].map((n) => dev.withStream(stream, () => ck.load(n, { device: dev, dtype: 'f32' }))),
  );
  stream.synchronize();
  for (const [i, n] of ['t3', 't4', 't5'].entries()) {
    assert.ok(
      (await bytesOf(conv[i]!)).equals(await bytesOf(await ck.load(n, { dtype: 'f32' }))),
      `${n}: converted on a user stream`,
    );
  }
  stream.destroy();
  await ck.close();
});

s.test(
  'a file truncated after open: the GPU load rejects naming the file and tensor, frees its memory, and the next load works',
  async (dev) => {
    dev.uploadChunkBytes = TINY;
    const path = tmp();
    await saveSafetensors(path, { a: randT([64], 'f32'), b: randT([40000], 'f32') });
    const ck = await Checkpoint.open(path);
    dev.synchronize();
    const before = dev.memoryStats()!.inUse;
    truncateSync(path, statSync(path).size - 1000);
    const err = await rejected(ck.load('b', { device: dev }), 'truncated load');
    assert.ok(err instanceof SafetensorsError, String(err));
    assert.ok(
      err.message.includes(path) && err.message.includes("tensor 'b'") && err.message.includes('truncated'),
      err.message,
    );
    dev.synchronize();
    assert.is(dev.memoryStats()!.inUse, before, 'the failed load gave its device memory back');
    await sameAsCpu(ck, 'a', dev);
    await ck.close();
    // emptyCache returns the pinned staging buffer too; the next streamed load pins a new one
    dev.emptyCache();
    const again = tmp();
    await saveSafetensors(again, { c: randT([5000], 'f16') });
    const ck2 = await Checkpoint.open(again);
    await sameAsCpu(ck2, 'c', dev);
    await ck2.close();
  },
);

s.test(
  'host memory stays bounded by the staging buffer: a 768 MiB tensor streamed with the default chunks',
  async (dev) => {
    dev.uploadChunkBytes = 32 << 20;
    const n = 192 << 20,
      chunk = 1 << 21; // u32 elements; written 8 MiB at a time
    const pattern = (i: number) => Math.imul(i, 2654435761) >>> 0;
    const header = new TextEncoder().encode(
      JSON.stringify({ big: { dtype: 'U32', shape: [n], data_offsets: [0, 4 * n] } }),
    );
    const path = tmp();
    const fh = await open(path, 'w');
    const head = new Uint8Array(8 + header.length);
    new DataView(head.buffer).setBigUint64(0, BigInt(header.length), true);
    head.set(header, 8);
    await fh.write(head, 0, head.length, 0);
    const part = new Uint32Array(chunk);
    for (let at = 0; at < n; at += chunk) {
      for (let i = 0; i < chunk; i++) part[i] = pattern(at + i);
      await fh.write(new Uint8Array(part.buffer), 0, 4 * chunk, head.length + 4 * at);
    }
    await fh.close();
    const ck = await Checkpoint.open(path);
    const peakBefore = process.resourceUsage().maxRSS * 1024;
    const t = await ck.load('big', { device: dev });
    dev.synchronize();
    const grew = process.resourceUsage().maxRSS * 1024 - peakBefore;
    assert.ok(grew < 256 << 20, `peak host memory grew by ${(grew / 2 ** 20).toFixed(0)} MiB loading a 768 MiB tensor`);
    for (const at of [0, 12345, (n >>> 1) + 7, n - 1000]) {
      const got = (await t.narrow(0, at, 1000).toArray()) as Uint32Array;
      for (let i = 0; i < 1000; i++)
        if (got[i] !== pattern(at + i))
          assert.unreachable(`element ${at + i}: got ${got[i]}, expected ${pattern(at + i)}`);
    }
    t.dispose();
    await ck.close();
    rmSync(path);
  },
);

test.after(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
});

s.run();
