// Empty tensors on the GPU give what the CPU reference gives: reductions over empty and
// non-empty dims of empty tensors, products with k = 0 and m = 0, cat with empty parts, indexing
// with no ids, sort and topk of empty rows, elementwise ops, attention with no keys or queries.
import * as assert from 'uvu/assert';
import { Tensor, type DType } from '../../src/index.ts';
import type { Device } from '../../src/device/device.ts';
import { gpuSuite } from './harness.ts';

const s = gpuSuite('gpu/empty');

/** the op on the CPU and on dev (inputs moved there): the same shape and the same values */
function same(name: string, dev: Device, inputs: Tensor[], op: (xs: Tensor[]) => Tensor): void {
  const want = op(inputs);
  const moved = inputs.map((t) => t.to(dev));
  const got = op(moved);
  try {
    assert.equal(got.shape, want.shape, `${name}: shape`);
    assert.is(got.dtype, want.dtype, `${name}: dtype`);
    const g = Array.from(got.toArraySync() as ArrayLike<number>),
      w = Array.from(want.toArraySync() as ArrayLike<number>);
    assert.is(g.length, w.length, `${name}: length`);
    g.forEach((v, i) => assert.ok(Object.is(v, w[i]) || v === w[i], `${name}: element ${i}: GPU ${v}, CPU ${w[i]}`));
  } finally {
    for (const t of [want, got, ...moved]) t.dispose();
  }
}

const z = (shape: number[], dtype: DType = 'f32'): Tensor => Tensor.zeros(shape, { dtype });

s.test('reductions over empty and non-empty dims of empty tensors', (dev) => {
  for (const dtype of ['f32', 'bf16', 'u32'] as const) {
    same(`sum dim 0 [0, 5] ${dtype}`, dev, [z([0, 5], dtype)], ([x]) => x!.sum(0));
    same(`sum dim 1 [0, 5] ${dtype}`, dev, [z([0, 5], dtype)], ([x]) => x!.sum(1));
    same(`sum all [0, 5] ${dtype}`, dev, [z([0, 5], dtype)], ([x]) => x!.sum());
    same(`sum dim 1 [3, 0] ${dtype}`, dev, [z([3, 0], dtype)], ([x]) => x!.sum(1, true));
    same(`max dim 1 [0, 5] ${dtype}`, dev, [z([0, 5], dtype)], ([x]) => x!.max(1));
  }
  same('mean dim 0 [0, 5] f32', dev, [z([0, 5])], ([x]) => x!.mean(0));
  same('mean dims [0, 2] of [2, 0, 3] f32', dev, [z([2, 0, 3])], ([x]) => x!.mean([0, 2]));
  same('cumsum [0, 4]', dev, [z([0, 4])], ([x]) => x!.cumsum(1));
});

s.test('products with k = 0, m = 0 and n = 0', (dev) => {
  same('matmul k = 0', dev, [z([3, 0]), z([0, 4])], ([a, b]) => a!.matmul(b!));
  same('matmul m = 0', dev, [z([0, 5]), z([5, 4])], ([a, b]) => a!.matmul(b!));
  same('matmul n = 0', dev, [z([3, 5]), z([5, 0])], ([a, b]) => a!.matmul(b!));
  same('linear k = 0', dev, [z([2, 0]), z([4, 0])], ([x, w]) => x!.linear(w!));
});

s.test('copies, indexing, sorting and elementwise ops of empty tensors', (dev) => {
  same('cat with an empty part', dev, [z([2, 0]), Tensor.ones([2, 3])], ([a, b]) => Tensor.cat([a!, b!], 1));
  same('cat of empty parts', dev, [z([0, 3]), z([0, 3])], ([a, b]) => Tensor.cat([a!, b!], 0));
  same('indexSelect with no ids', dev, [Tensor.ones([4, 3]), Tensor.zeros([0], { dtype: 'u32' })], ([x, i]) =>
    x!.indexSelect(i!, 0),
  );
  same('embedding with no ids', dev, [Tensor.zeros([0], { dtype: 'u32' }), Tensor.ones([5, 2])], ([i, t]) =>
    Tensor.embedding(i!, t!),
  );
  same('argsort of empty rows', dev, [z([3, 0])], ([x]) => x!.argsort(-1));
  same('sort of no rows', dev, [z([0, 4])], ([x]) => x!.sort(-1).values);
  same('topk k = 0', dev, [Tensor.ones([2, 5])], ([x]) => x!.topk(0).values);
  for (const op of ['exp', 'relu', 'sqrt'] as const) same(`${op} of [0, 3]`, dev, [z([0, 3])], ([x]) => x!.unary(op));
  same('add broadcast into [0, 3]', dev, [z([0, 3]), Tensor.ones([3])], ([a, b]) => a!.add(b!));
  same('where of [0]', dev, [Tensor.zeros([0], { dtype: 'u8' }), z([0]), z([0])], ([c, a, b]) =>
    Tensor.where(c!, a!, b!),
  );
  same('softmax of [0, 4]', dev, [z([0, 4])], ([x]) => x!.softmax(-1));
  same('toDtype of [0, 2]', dev, [z([0, 2])], ([x]) => x!.toDtype('bf16'));
});

s.test('attention with no queries and with no keys', (dev) => {
  const q = (t: number) => Tensor.ones([1, 2, t, 8], { dtype: 'f32' });
  same('tq = 0', dev, [q(0), q(4), q(4)], ([a, b, c]) => Tensor.scaledDotProductAttention(a!, b!, c!));
  same('tk = 0', dev, [q(3), q(0), q(0)], ([a, b, c]) => Tensor.scaledDotProductAttention(a!, b!, c!));
});

s.test('convolution and pooling with batch 0', (dev) => {
  same('conv2d batch 0', dev, [z([0, 2, 5, 5]), Tensor.ones([3, 2, 3, 3])], ([x, w]) => x!.conv2d(w!));
  same('maxPool2d batch 0', dev, [z([0, 2, 4, 4])], ([x]) => x!.maxPool2d({ kernel: 2 }));
});

s.run();
