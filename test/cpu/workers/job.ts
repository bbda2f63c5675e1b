// Runs in a worker thread (test/cpu/worker.test.ts): the library's ops, a tidy scope across an
// await, its own live-tensor registry, and koffi calls from this thread; posts what it saw.
import { parentPort, workerData, threadId } from 'node:worker_threads';
import koffi from 'koffi';
import { Tensor, tidy, liveTensors } from '../../../src/index.ts';

const { seed } = workerData as { seed: number };
const live0 = liveTensors().length;
let temp: Tensor | null = null;
const product = await tidy(async () => {
  const a = Tensor.randn([16, 8], { seed }),
    b = Tensor.randn([8, 4], { seed: seed + 1 });
  temp = a.matmul(b);
  await new Promise((r) => setTimeout(r, 1));
  return temp.relu().sum();
});
const sum = Number((await product.toArray())[0]);
const device = String(product.device);
const liveInScope = liveTensors().length - live0; // only the result
product.dispose();

// koffi's native module in this thread: a view over memory that libc writes
const memset = koffi.load('libc.so.6').func('void *memset(uint64_t s, int c, size_t n)');
const p = koffi.alloc('uint8_t', 64) as bigint;
memset(p, 0x33, 64);
const koffiOk = new Uint8Array(koffi.view(p, 64)).every((x) => x === 0x33);
koffi.free(p);

parentPort!.postMessage({
  threadId,
  runtime: process.versions.bun ? 'bun' : 'node',
  sum,
  liveInScope,
  tempDisposed: temp!.isDisposed,
  liveAfter: liveTensors().length - live0,
  koffiOk,
  device,
});
