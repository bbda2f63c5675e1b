// flash_dec's launch plan (src/backends/gpu/flash.ts decodePlan) without a GPU: where the splits of
// the keys become warps of one block (NVIDIA, up to eight and what the opt-in LDS holds), where
// they stay a block each and the merge kernel runs, forced group counts, and AMD's one group a
// block, for the shapes the benches and the 1B model decode.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { DeviceInfo } from '../../src/runtime/gpu.ts';
import { decodePlan } from '../../src/backends/gpu/flash.ts';

const info = (vendor: 'cuda' | 'rocm', multiprocessors: number, warpSize: number, optin: number): DeviceInfo => ({
  vendor,
  index: 0,
  name: 'plan',
  arch: vendor === 'cuda' ? 'sm_90' : 'gfx942',
  archFull: '',
  totalMemory: 0,
  multiprocessors,
  warpSize,
  maxThreadsPerBlock: 1024,
  maxSharedMemoryPerBlock: vendor === 'cuda' ? 49152 : 65536,
  maxSharedMemoryPerBlockOptin: optin,
  maxGridDim: [2147483647, 65535, 65535],
  runtimeVersion: '',
  driverVersion: '',
});
const H200 = info('cuda', 132, 32, 232448);
// an sm_86-like part: 99 KiB a block at most
const SM86 = info('cuda', 84, 32, 101376);
const MI300 = info('rocm', 304, 64, 65536);

test('decode plan: short key ranges are the warps of one block (H200)', () => {
  // the 1B model's decode: 32/8 heads, d 64, 392 keys: 7 key blocks of 64, one block a kv head
  const p = decodePlan(H200, 1, 32, 8, 1, 392, 64);
  assert.equal(p, { per: 8, blocksY: 1, groups: 7, threads: 224, shared: 7 * 2 * 128 * 72, perSplit: 64, splits: 7 });
  // d 128 holds six groups (34 KiB each): 5 splits fit, 7 do not
  assert.is(decodePlan(H200, 1, 32, 8, 1, 300, 128).groups, 5);
  const seven = decodePlan(H200, 1, 32, 8, 1, 420, 128);
  assert.equal([seven.groups, seven.blocksY, seven.shared], [1, 7, 2 * 128 * 136]);
});

test('decode plan: long key ranges stay a block a split, merged (H200)', () => {
  for (const [tk, splits, perSplit] of [
    [4096, 64, 64],
    [32768, 64, 512],
  ] as const) {
    const p = decodePlan(H200, 1, 32, 8, 1, tk, 128);
    assert.equal(
      [p.groups, p.blocksY, p.splits, p.perSplit, p.threads],
      [1, splits, splits, perSplit, 32],
      `${tk} keys`,
    );
    assert.ok(p.splits * p.perSplit >= tk, `${tk} keys: the splits cover the keys`);
  }
});

test('decode plan: forced groups split the keys between blocks too, within the LDS', () => {
  // 11 key blocks of 64 over blocks of 3 groups: 4 blocks, the last one's last group gets none
  const p = decodePlan(H200, 1, 32, 8, 1, 700, 128, { blocksPerMp: 64, groups: 3 });
  assert.equal([p.splits, p.groups, p.blocksY, p.threads], [11, 3, 4, 96]);
  assert.ok(p.blocksY * p.groups * p.perSplit >= 700 && (p.blocksY * p.groups - 1) * p.perSplit >= 700 - p.perSplit);
  // more groups than the LDS holds, or than there are splits, are clamped
  assert.is(decodePlan(H200, 1, 32, 8, 1, 700, 128, { blocksPerMp: 64, groups: 9 }).groups, 6);
  assert.is(decodePlan(H200, 1, 32, 8, 1, 100, 64, { groups: 8 }).groups, 2);
  for (const d of [64, 80, 96, 128, 256]) {
    for (const g of [1, 2, 4, 8, 16]) {
      const q = decodePlan(H200, 1, 32, 8, 1, 2000, d, { blocksPerMp: 64, groups: g });
      assert.ok(q.shared <= H200.maxSharedMemoryPerBlockOptin, `d ${d}, ${g} groups: ${q.shared} bytes of LDS`);
    }
  }
});

test('decode plan: a 99 KiB part fits fewer groups; AMD keeps one a block', () => {
  // 18 KiB a group at d 64: five fit, so the 1B shape's 7 splits stay blocks of their own
  assert.equal([decodePlan(SM86, 1, 32, 8, 1, 392, 64).groups, decodePlan(SM86, 1, 32, 8, 1, 300, 64).groups], [1, 5]);
  for (const tk of [200, 392, 4096]) {
    const p = decodePlan(MI300, 1, 32, 8, 1, tk, 128, { groups: 4 });
    assert.equal([p.groups, p.threads, p.shared], [1, 64, 0], `${tk} keys`);
    assert.is(p.blocksY, p.splits);
  }
});

test.run();
