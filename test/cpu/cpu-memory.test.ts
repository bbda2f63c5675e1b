// CPU memory: ops walk their operands without a per-element index array or an f64 copy, so the
// peak RSS of an op is about its inputs and outputs (each measured alone in a child process with
// a full GC at hand); a tensor too large for the machine is an OutOfMemoryError naming the op,
// the element count and the bytes, before anything is written; zeros cost no writes; freed
// blocks are kept for reuse up to ROCM_TENSOR_CPU_CACHE.
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { Tensor, OutOfMemoryError } from '../../src/index.ts';
import {
  HostMemoryError,
  allocHost,
  clearHostCache,
  hostCacheBytes,
  recycleHost,
} from '../../src/device/host-memory.ts';
import { nums, throwsLike } from '../helpers.ts';
import { REPO_ROOT, runtime, tsCommand } from '../runtime.ts';

const MIB = 2 ** 20;

interface ChildResult {
  rise: number;
  shapes: number[][];
  error: string | null;
}

function child(name: string): ChildResult {
  const { cmd, args } = tsCommand(runtime, join(REPO_ROOT, 'test/cpu/workers/rss-child.ts'), [name]);
  const r = spawnSync(cmd, args, { cwd: REPO_ROOT, encoding: 'utf8', maxBuffer: 1 << 20 });
  const line = r.stdout.trim().split('\n').pop() ?? '';
  try {
    return JSON.parse(line) as ChildResult;
  } catch {
    throw new Error(`rss child '${name}' failed (exit ${r.status}): ${r.stderr || r.stdout}`);
  }
}

/** the op's peak RSS rise is at most `limit` times the bytes of the tensors it made */
function checkRise(name: string, tensorBytes: number, limit = 1.1): void {
  const { rise, error } = child(name);
  assert.is(error, null, `${name}: ${error}`);
  assert.ok(
    rise <= limit * tensorBytes,
    `${name}: peak RSS rose ${(rise / MIB).toFixed(0)} MiB for ${(tensorBytes / MIB).toFixed(0)} MiB of tensors (limit ${limit}x)`,
  );
}

test('ones([2^26]).add(1): peak RSS within 1.1x its input and output', () => {
  checkRise('add', 2 * 2 ** 26 * 4);
});

test('a transposed operand plus a broadcast one: no index arrays either', () => {
  checkRise('addTransposed', 2 * 2 ** 26 * 4 + 8192 * 4);
});

test('sums, softmax and rmsNorm over 2^24 elements: about their inputs and outputs', () => {
  // smaller tensors: the heap's own jitter is a larger share, hence 1.25x (index arrays and f64
  // copies, as before, made it 3x and more)
  checkRise('sum', 2 ** 24 * 4 + 2 * 4096 * 4, 1.25);
  checkRise('softmax', 2 * 2 ** 24 * 4, 1.25);
  checkRise('rmsNorm', 2 * 2 ** 24 * 4 + 4096 * 4, 1.25);
});

test('zeros([2^31]) (8 GiB) touches no memory, or is refused clearly where the runtime cannot hold it', () => {
  const { rise, shapes, error } = child('zeros31');
  if (error !== null) {
    // Bun's typed arrays stop short of 2^31 f32 elements: a clear error, not a crash
    assert.match(error, /^HostMemoryError: full: cannot allocate 2147483648 f32 elements \(8 GiB\)/);
    return;
  }
  assert.equal(shapes, [[2 ** 31]]);
  assert.ok(rise < 64 * MIB, `zeros([2^31]) raised the peak RSS by ${(rise / MIB).toFixed(0)} MiB`);
});

test('a tensor larger than the machine: OutOfMemoryError naming the op, the elements and the bytes', () => {
  throwsLike(() => Tensor.zeros([2 ** 40]), OutOfMemoryError, [
    'full:',
    '1099511627776 f32 elements',
    '4 TiB',
    'available',
  ]);
  throwsLike(() => Tensor.ones([2 ** 20, 2 ** 20], { dtype: 'f64' }), HostMemoryError, ['full:', '8 TiB']);
  const x = Tensor.zeros([2 ** 20]);
  // the broadcast result of an op, not its inputs, is what cannot fit: the op's name is in the message
  throwsLike(
    () =>
      x
        .reshape([1, 2 ** 20])
        .expand([2 ** 18, 2 ** 20])
        .add(1),
    OutOfMemoryError,
    ['binary:', '274877906944 f32 elements'],
  );
  throwsLike(() => x.reshape([2 ** 20, 1]).matmul(x.reshape([1, 2 ** 20])), OutOfMemoryError, [
    'matmul:',
    'f32 elements',
  ]);
  assert.is(nums(x.narrow(0, 0, 3)).length, 3); // the process is fine afterwards
});

test('freed blocks are reused (and cleared where the caller asks for zeros), up to ROCM_TENSOR_CPU_CACHE', () => {
  clearHostCache();
  const a = allocHost('f32', 2 ** 16) as Float32Array;
  a.fill(5);
  recycleHost(a);
  assert.is(hostCacheBytes(), 2 ** 18);
  const b = allocHost('u32', 2 ** 16, false);
  assert.is(b.buffer, a.buffer, 'the same block, seen as another dtype');
  assert.is(hostCacheBytes(), 0);
  recycleHost(b);
  const c = allocHost('f32', 2 ** 16) as Float32Array;
  assert.ok(
    c.every((v) => v === 0),
    'zeroed on reuse',
  );
  // a user's array is never taken (only blocks made here)
  recycleHost(new Float32Array(2 ** 16));
  assert.is(hostCacheBytes(), 0);
  // small blocks are not kept
  recycleHost(allocHost('f32', 16));
  assert.is(hostCacheBytes(), 0);
  // a disposed tensor's block goes back; 0 turns the cache off
  Tensor.ones([2 ** 16]).dispose();
  assert.is(hostCacheBytes(), 2 ** 18);
  clearHostCache();
  process.env.ROCM_TENSOR_CPU_CACHE = '0';
  try {
    Tensor.ones([2 ** 16]).dispose();
    assert.is(hostCacheBytes(), 0);
  } finally {
    delete process.env.ROCM_TENSOR_CPU_CACHE;
  }
  // a readback is the caller's to keep: never a cached block
  const t = Tensor.ones([2 ** 16]);
  const arr = t.toArraySync();
  t.dispose();
  Tensor.full([2 ** 16], 3).dispose();
  assert.ok(
    [0, 1, 2, 3].every((i) => Number(arr[i]) === 1),
    'readback unchanged after the tensor and its block are reused',
  );
  clearHostCache();
});

test.run();
