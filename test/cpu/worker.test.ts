// The library inside worker_threads under the runtime running the test: each worker imports it
// (koffi's native module loads once per thread), runs ops and a tidy scope across an await with
// its own registry of live tensors, and gets the numbers the main thread gets.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { Tensor, liveTensors } from '../../src/index.ts';
import { runtime, tsWorker } from '../runtime.ts';

interface JobResult {
  threadId: number;
  runtime: string;
  sum: number;
  liveInScope: number;
  tempDisposed: boolean;
  liveAfter: number;
  koffiOk: boolean;
  device: string;
}

function runJob(seed: number): Promise<JobResult> {
  return new Promise((resolve, reject) => {
    const w = tsWorker(new URL('./workers/job.ts', import.meta.url), { seed });
    let got: JobResult | null = null;
    w.on('message', (m: JobResult) => {
      got = m;
    });
    w.on('error', reject);
    w.on('exit', (code) =>
      got && code === 0 ? resolve(got) : reject(new Error(`worker exited ${code} without a result`)),
    );
  });
}

/** what the job computes, on this thread */
async function expected(seed: number): Promise<number> {
  const a = Tensor.randn([16, 8], { seed }),
    b = Tensor.randn([8, 4], { seed: seed + 1 });
  const m = a.matmul(b),
    r = m.relu(),
    s = r.sum();
  const v = Number((await s.toArray())[0]);
  for (const t of [a, b, m, r, s]) t.dispose();
  return v;
}

test('two workers at once: ops, tidy across await and koffi in each, results as on the main thread', async () => {
  const live0 = liveTensors().length;
  const rs = await Promise.all([11, 22].map(runJob));
  for (const [i, r] of rs.entries()) {
    const seed = [11, 22][i]!;
    assert.is(r.runtime, runtime, 'the worker runs on the same runtime');
    assert.ok(r.threadId > 0, 'a worker thread, not the main one');
    assert.is(r.device, 'cpu');
    assert.is(r.sum, await expected(seed), `worker ${i}: the same result as the main thread`);
    assert.ok(r.tempDisposed, `worker ${i}: tidy disposed its temporary after the await`);
    assert.is(r.liveInScope, 1, `worker ${i}: only the scope's result was live`);
    assert.is(r.liveAfter, 0, `worker ${i}: nothing left live`);
    assert.ok(r.koffiOk, `worker ${i}: koffi's view saw what libc wrote`);
  }
  assert.ok(rs[0]!.threadId !== rs[1]!.threadId);
  assert.is(liveTensors().length, live0, 'worker tensors never show in the main thread');
});

test.run();
