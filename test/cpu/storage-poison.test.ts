// Poisoning new device memory (ROCM_TENSOR_POISON), against a fake device: the setting is read
// at the first device allocation rather than when src/device/storage.ts loads, so that code turning it
// on later (the GPU harness, under Node and Bun alike) still counts. The first test depends on
// running first in this file (nothing has allocated yet).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { Storage, poisonEnabled, setPoison } from '../../src/device/storage.ts';
import { Device } from '../../src/device/device.ts';
import { fakeGpu } from '../fake-gpu.ts';

test('ROCM_TENSOR_POISON set after src/device/storage.ts loaded still counts (read at the first allocation)', () => {
  process.env.ROCM_TENSOR_POISON = '1';
  const { dev, memsets } = fakeGpu();
  const s = Storage.alloc(dev, 'f32', 10);
  assert.is(memsets.length, 1, 'one memset for the new storage');
  assert.is(memsets[0]!.value, 0xff);
  assert.is(memsets[0]!.bytes, 40);
  assert.is(memsets[0]!.ptr, s.ptrAt(0));
  assert.ok(poisonEnabled());
  s.release();
});

test('setPoison overrides the environment; zero-byte storages get no memset', () => {
  const { dev, memsets } = fakeGpu();
  setPoison(false);
  assert.not.ok(poisonEnabled());
  Storage.alloc(dev, 'u8', 100).release();
  assert.is(memsets.length, 0, 'off: no memset');
  setPoison(true);
  assert.ok(poisonEnabled());
  const s = Storage.alloc(dev, 'i64', 3);
  Storage.alloc(dev, 'f32', 0).release();
  assert.equal(
    memsets.map((m) => [m.value, m.bytes, m.stream === dev.stream]),
    [[0xff, 24, true]],
  );
  s.release();
});

test('host storages are zeroed whatever the setting', () => {
  setPoison(true);
  const s = Storage.alloc(Device.cpu(), 'f32', 8);
  assert.ok(Array.from(s.host as Float32Array).every((x) => x === 0));
  s.release();
});

test.run();
