// Importing the GPU harness turns poison on, under Node and Bun alike: it used to do so with a
// `data:` import that Bun never evaluates, which left every GPU suite failing under Bun.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { poisonEnabled } from '../../src/device/storage.ts';

test('poison is on once test/gpu/harness.ts is imported, whatever the environment says', async () => {
  process.env.ROCM_TENSOR_POISON = '0'; // storage has not read it yet: nothing has allocated
  await import('../gpu/harness.ts');
  assert.ok(poisonEnabled());
});

test.run();
