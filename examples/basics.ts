// A tour of the API on the best device present: create, compute, read back, free.
//   npx tsx examples/basics.ts            (ROCM_TENSOR_DEVICE=cpu to force the CPU)
import { Tensor, Device, tidy } from '../src/index.ts';

const device = Device.best();
console.log(`device: ${device}`);

const x = Tensor.randn([4, 8], { seed: 1, device });
const w = Tensor.randn([8, 3], { seed: 2, device });

// temporaries made inside tidy() are disposed when it returns; the result is kept
const probs = tidy(() => x.matmul(w).add(0.5).relu().softmax(-1));
console.log('softmax rows:', await probs.toNested());
console.log('row sums:', Array.from(await probs.sum(-1).toArray(), Number));

// views share storage: no copy until contiguous() needs one
const t = Tensor.arange(12, undefined, 1, { device }).reshape([3, 4]);
console.log('transposed:', await t.T.toNested());
console.log('argmax per row:', Array.from(await t.argmax(1).toArray(), Number));

// half precision: stored as 16 bits, read back widened exactly
const h = t.toDtype('bf16').mul(1.5);
console.log('bf16 * 1.5:', Array.from(await h.toArray(), Number));

for (const d of [x, w, probs, t, h]) d.dispose();
console.log('memory:', device.memoryStats() ?? 'host memory (no allocator stats on the CPU)');
