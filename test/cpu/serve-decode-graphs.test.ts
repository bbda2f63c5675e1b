// The engine's decode graphs on the CPU: the bucket sizes, and the option refused where graphs
// cannot run (the CPU device) before the engine takes any memory. test/gpu/serve-graphs.test.ts
// runs them on a GPU.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { TensorError } from '../../src/core/errors.ts';
import { decodeBucket } from '../../src/serve/decode-graphs.ts';
import { Engine } from '../../src/serve/engine.ts';
import { loadTinyModel } from '../fixtures/serve-model.ts';

test('decode steps go to the next power-of-two bucket', () => {
  assert.equal([1, 2, 3, 4, 5, 8, 9, 33, 64].map(decodeBucket), [1, 2, 4, 4, 8, 8, 16, 64, 64]);
});

test('decodeGraphs on the CPU is refused, naming the device', async () => {
  const tiny = await loadTinyModel();
  try {
    let err: unknown = null;
    try {
      new Engine(tiny.m, { decodeGraphs: true, maxSeqLen: 32, kvBlocks: 8, blockSize: 4 });
    } catch (e) {
      err = e;
    }
    assert.ok(err instanceof TensorError, String(err));
    assert.match((err as Error).message, /decodeGraphs needs a GPU device, the model is on cpu/);
  } finally {
    tiny.cleanup();
  }
});

test.run();
