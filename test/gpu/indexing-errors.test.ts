// Bad ids on the GPU. The kernels skip an id outside its range and record the first one in the
// device's error record (src/runtime/device-errors.ts); the next readback or synchronize throws
// an IndexError naming the op, the id and the valid range, and clears the record. Skipped
// means skipped: a write aimed through a bad id into a neighbouring allocation never lands.
// On the CPU (ROCM_TENSOR_GPU_TESTS_ON=cpu) the op itself throws at once.
import { gpuSuite, cpuFrom, thrown, rejected } from './harness.ts';
import * as assert from 'uvu/assert';
import { IndexError, Tensor, type Device, type DType } from '../../src/index.ts';
import { throwPendingDeviceError } from '../../src/runtime/device-errors.ts';

const s = gpuSuite('gpu/indexing-errors');

async function nums(t: Tensor): Promise<number[]> {
  return Array.from(await t.toArray(), Number);
}

interface BadCase {
  readonly op: string;
  /** runs the op with one bad id (`bad`, an i64 value) among good ones */
  readonly run: (dev: Device, bad: number) => Tensor;
}
const f32 = (vals: number[], shape: number[], dev: Device, dtype: DType = 'f32') => cpuFrom(vals, shape, dtype).to(dev);
const iota = (n: number) => Array.from({ length: n }, (_, k) => k + 1);

const CASES: readonly BadCase[] = [
  {
    op: 'indexSelect',
    run: (dev, bad) => f32(iota(12), [4, 3], dev).indexSelect(f32([1, bad, 0], [3], dev, 'i64'), 0),
  },
  {
    op: 'gather',
    run: (dev, bad) => f32(iota(12), [4, 3], dev).gather(f32([0, 1, 2, 3, bad, 1], [2, 3], dev, 'i64'), 0),
  },
  {
    op: 'scatter',
    run: (dev, bad) =>
      f32(iota(12), [4, 3], dev).scatter(f32([0, 1, 2, 3, bad, 1], [2, 3], dev, 'i64'), f32(iota(6), [2, 3], dev), 0),
  },
  {
    op: 'scatterAdd',
    run: (dev, bad) =>
      f32(iota(12), [4, 3], dev).scatterAdd(
        f32([0, 1, 2, 3, bad, 1], [2, 3], dev, 'i64'),
        f32(iota(6), [2, 3], dev),
        0,
      ),
  },
  {
    op: 'indexAdd',
    run: (dev, bad) =>
      f32(iota(12), [4, 3], dev).indexAdd(f32([1, bad], [2], dev, 'i64'), f32(iota(6), [2, 3], dev), 0),
  },
  {
    op: 'embedding',
    run: (dev, bad) => Tensor.embedding(f32([1, 2, bad], [3], dev, 'i64'), f32(iota(12), [4, 3], dev)),
  },
];

for (const c of CASES) {
  s.test(`${c.op}: a bad id throws IndexError at the next toArray, naming op, id and range`, async (dev) => {
    for (const bad of [4, -1, 2 ** 40]) {
      if (dev.isCpu) {
        const e = thrown(() => c.run(dev, bad), `${c.op} id ${bad} on the CPU`);
        assert.instance(e, IndexError);
        continue;
      }
      const y = c.run(dev, bad);
      const e = await rejected(
        y.toArray(),
        `${c.op} with id ${bad}: toArray (is throwPendingDeviceError wired into readback?)`,
      );
      assert.instance(e, IndexError, `${c.op}: ${e.message}`);
      assert.ok(e.message.startsWith(`${c.op}:`), `names the op: ${e.message}`);
      assert.ok(e.message.includes(`id ${bad} `), `names the id ${bad}: ${e.message}`);
      assert.ok(e.message.includes('[0, 4)'), `names the range: ${e.message}`);
      // the record is cleared: the same tensor reads back now, and a good op works
      await y.toArray();
      assert.equal(await nums(f32([5, 6], [2], dev).indexSelect(f32([1, 0], [2], dev, 'u32'), 0)), [6, 5]);
    }
  });
}

s.test('throwPendingDeviceError after synchronize, once; u8 and u32 ids too', async (dev) => {
  if (dev.isCpu) return;
  for (const it of ['u8', 'u32'] as DType[]) {
    f32(iota(12), [4, 3], dev).gather(f32([0, 1, 2, 3, 9, 1], [2, 3], dev, it), 0);
    // synchronize may report it itself, or leave it to throwPendingDeviceError; either way, exactly once
    const e = thrown(() => {
      dev.synchronize();
      throwPendingDeviceError(dev);
    }, `gather with a bad ${it} id`);
    assert.instance(e, IndexError);
    assert.ok(e.message.includes('id 9 at position [1, 1] of ids [2, 3] ' + it), e.message);
    assert.ok(e.message.includes('dim 0 of x [4, 3] f32'), e.message);
    throwPendingDeviceError(dev);
  }
});

s.test('good values around a bad id are still right, and only the first bad id is reported', async (dev) => {
  if (dev.isCpu) return;
  const x = f32(iota(12), [4, 3], dev);
  const y = x.gather(f32([3, 7, 2, 0, 8, 1], [2, 3], dev, 'i64'), 0);
  const e = await rejected(y.toArray(), 'gather with two bad ids');
  assert.ok(/id (7|8) /.test(e.message), e.message);
  const got = await nums(y);
  assert.equal([got[0], got[2], got[3], got[5]], [10, 9, 1, 6]);
  const z = x.indexAdd(f32([3, 99, 0], [3], dev, 'i64'), f32(iota(9), [3, 3], dev), 0);
  await rejected(z.toArray(), 'indexAdd with a bad id');
  assert.equal(await nums(z), [1 + 7, 2 + 8, 3 + 9, 4, 5, 6, 7, 8, 9, 10 + 1, 11 + 2, 12 + 3]);
});

// The row kernels (index-rows.hip) check ids too: once per row for indexSelect and embedding
// (a bad row is skipped, the others copied), per element for gather; the position names the id.
interface RowCase {
  readonly op: string;
  readonly run: (dev: Device, bad: number) => Tensor;
  /** where the bad id sits in ids, as the message prints it */
  readonly at: string;
  readonly idsSig: string;
  /** the good output values, by flat index, that must still be right */
  readonly good: readonly [number, number][];
}
const iota0 = (n: number) => Array.from({ length: n }, (_, k) => k);
const ROW_CASES: readonly RowCase[] = [
  // rows of 16 f32 (16-byte units); row 1 of the output is the bad one
  {
    op: 'indexSelect',
    run: (dev, bad) => f32(iota0(64), [4, 16], dev).indexSelect(f32([3, bad, 0], [3], dev, 'i64'), 0),
    at: '[1]',
    idsSig: '[3] i64',
    good: [
      [0, 48],
      [15, 63],
      [32, 0],
      [47, 15],
    ],
  },
  // a leading dim: one division a row
  {
    op: 'indexSelect',
    run: (dev, bad) => f32(iota0(128), [2, 4, 16], dev).indexSelect(f32([2, bad], [2], dev, 'u32'), 1),
    at: '[1]',
    idsSig: '[2] u32',
    good: [
      [0, 32],
      [32, 96],
      [47, 111],
    ],
  },
  {
    op: 'embedding',
    run: (dev, bad) => Tensor.embedding(f32([0, 1, 2, 3, bad, 1], [2, 3], dev, 'i64'), f32(iota0(64), [4, 16], dev)),
    at: '[1, 1]',
    idsSig: '[2, 3] i64',
    good: [
      [0, 0],
      [16 * 3 + 5, 53],
      [16 * 5 + 15, 31],
    ],
  },
  {
    op: 'gather',
    run: (dev, bad) => {
      const ids = Array.from({ length: 40 }, (_, k) => k % 4);
      ids[37] = bad;
      return f32(iota0(80), [4, 20], dev).gather(f32(ids, [2, 20], dev, 'i64'), 0);
    },
    at: '[1, 17]',
    idsSig: '[2, 20] i64',
    good: [
      [0, 0],
      [1, 21],
      [36, 16],
      [38, 2 * 20 + 18],
    ],
  },
];

for (const c of ROW_CASES) {
  s.test(`${c.op} (row kernel): a bad id names op, id, position and range; the good values stand`, async (dev) => {
    for (const bad of [4, 2 ** 33]) {
      // u32 ids cannot hold 2^33
      if (c.idsSig.endsWith('u32') && bad > 2 ** 32) continue;
      if (dev.isCpu) {
        assert.instance(
          thrown(() => c.run(dev, bad), `${c.op} id ${bad} on the CPU`),
          IndexError,
        );
        continue;
      }
      const y = c.run(dev, bad);
      const e = await rejected(y.toArray(), `${c.op} (rows) with id ${bad}`);
      assert.instance(e, IndexError, `${c.op}: ${e.message}`);
      assert.ok(e.message.startsWith(`${c.op}:`), `names the op: ${e.message}`);
      assert.ok(
        e.message.includes(`id ${bad} at position ${c.at} of ids ${c.idsSig}`),
        `names id and position: ${e.message}`,
      );
      assert.ok(e.message.includes('[0, 4)'), `names the range: ${e.message}`);
      const got = await nums(y);
      for (const [i, v] of c.good) assert.is(got[i], v, `${c.op}: element ${i} next to the bad id`);
    }
  });
}

/**
 * A write through a bad id aimed exactly at a guard allocation must not land: the op runs once
 * with good ids to learn where its output goes (the caching allocator hands the same block back
 * to the same request), then with an i64 id that would write into the guard's middle.
 */
for (const op of ['scatter', 'scatterAdd', 'indexAdd'] as const) {
  s.test(`${op}: a bad id aimed at a neighbouring allocation writes nothing there`, async (dev) => {
    if (dev.isCpu) return;
    const guard = Tensor.full([1 << 16], 7, { dtype: 'f32', device: dev });
    const x = f32(iota(16), [2, 8], dev);
    const src = f32(
      iota(16).map((v) => v * 100),
      [2, 8],
      dev,
    );
    const run = (ids: Tensor) =>
      op === 'indexAdd'
        ? x.indexAdd(ids.reshape([8]), src, 1)
        : op === 'scatter'
          ? x.scatter(ids, src.narrow(0, 0, 1), 1)
          : x.scatterAdd(ids, src.narrow(0, 0, 1), 1);
    const good = f32([0, 1, 2, 3, 4, 5, 6, 7], [1, 8], dev, 'i64');
    // allocated before the probe, so that the second run's allocations repeat the probe's
    const evil = f32([0, 1, 2, 3, 4, 5, 6, 7], [1, 8], dev, 'i64');
    const probe = run(good);
    const outAt = probe.storage.ptrAt(0);
    await probe.toArray();
    probe.dispose();
    // element offset from the output's start to the guard's middle (both 4-byte aligned)
    const delta = (guard.storage.ptrAt(1 << 15) - outAt) / 4n;
    // position 3 of the ids writes element id (row 0, dim 1): aim it at the guard
    const slot = evil.narrow(1, 3, 1);
    slot.constSet(Number(delta));
    slot.dispose();
    const y = run(evil);
    const aimed = y.storage.ptrAt(0) === outAt;
    const e = await rejected(y.toArray(), `${op} with id ${delta}`);
    assert.instance(e, IndexError);
    const g = (await guard.toArray()) as Float32Array;
    assert.ok(
      g.every((v) => v === 7),
      `${op}: the guard was written (aimed: ${aimed})`,
    );
    assert.ok(
      aimed,
      `${op}: the allocator moved the output, so the bad id did not aim at the guard (test inconclusive)`,
    );
  });
}

s.run();
