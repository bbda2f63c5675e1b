import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { Tensor, tidy, liveTensors, DisposedError } from '../../src/index.ts';
import { collectGarbage } from '../runtime.ts';

test('from nested arrays, shape and readback', async () => {
  const t = Tensor.from([
    [1, 2, 3],
    [4, 5, 6],
  ]);
  assert.equal(t.shape, [2, 3]);
  assert.equal(t.dtype, 'f32');
  assert.equal(Array.from(await t.toArray(), Number), [1, 2, 3, 4, 5, 6]);
  assert.equal(t.toNestedSync(), [
    [1, 2, 3],
    [4, 5, 6],
  ]);
});

test('views: transpose, narrow, slice with step, broadcast, contiguous', async () => {
  const t = Tensor.arange(12).reshape([3, 4]);
  assert.equal(t.T.toNestedSync(), [
    [0, 4, 8],
    [1, 5, 9],
    [2, 6, 10],
    [3, 7, 11],
  ]);
  assert.equal(t.narrow(1, 1, 2).toNestedSync(), [
    [1, 2],
    [5, 6],
    [9, 10],
  ]);
  assert.equal(t.slice(1, 0, undefined, 2).toNestedSync(), [
    [0, 2],
    [4, 6],
    [8, 10],
  ]);
  assert.equal(Tensor.from([1, 2]).reshape([2, 1]).broadcastAs([2, 3]).toNestedSync(), [
    [1, 1, 1],
    [2, 2, 2],
  ]);
  const c = t.T.contiguous();
  assert.ok(c.isContiguous());
  assert.equal(c.strides, [3, 1]);
  assert.equal(Array.from(c.toArraySync(), Number), [0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11]);
});

test('cat, stack, chunk, sliceSet', () => {
  const a = Tensor.from([
      [1, 2],
      [3, 4],
    ]),
    b = Tensor.from([[5, 6]]);
  assert.equal(Tensor.cat([a, b], 0).toNestedSync(), [
    [1, 2],
    [3, 4],
    [5, 6],
  ]);
  assert.equal(Tensor.stack([a, a], 2).shape, [2, 2, 2]);
  assert.equal(
    Tensor.arange(5)
      .chunk(2)
      .map((c) => c.shape[0]),
    [3, 2],
  );
  const z = Tensor.zeros([3, 2]);
  z.sliceSet(b, 0, 1);
  assert.equal(z.toNestedSync(), [
    [0, 0],
    [5, 6],
    [0, 0],
  ]);
  assert.throws(() => z.sliceSet(b, 0, 3), /sliceSet/);
});

test('dispose and use after dispose', () => {
  const t = Tensor.ones([2]);
  t.dispose();
  assert.throws(
    () => t.exp(),
    (e: unknown) => e instanceof DisposedError && /exp/.test((e as Error).message),
  );
});

test('tidy disposes what it does not return, also across await', async () => {
  let inner: Tensor | null = null;
  const kept = await tidy(async () => {
    inner = Tensor.ones([2]);
    await new Promise((r) => setTimeout(r, 1));
    return Tensor.zeros([3]);
  });
  assert.ok(inner!.isDisposed);
  assert.not.ok(kept.isDisposed);
  const before = liveTensors().length;
  kept.dispose();
  assert.is(liveTensors().length, before - 1);
});

test('tidy keeps tensors its result holds: in arrays, plain objects and class instances, not past them', () => {
  class Holder {
    constructor(
      readonly t: Tensor,
      readonly device = Tensor.ones([1]).device,
    ) {}
  }
  let dropped: Tensor | null = null,
    view: Tensor | null = null;
  const out = tidy(() => {
    dropped = Tensor.ones([2]);
    const base = Tensor.arange(6);
    view = base.narrow(0, 1, 2); // a view of a tensor the result does not name: disposed
    return {
      a: Tensor.zeros([1]),
      list: [Tensor.ones([3]), { deep: Tensor.ones([4]) }],
      inst: new Holder(Tensor.ones([5])),
      base,
    };
  });
  assert.ok(dropped!.isDisposed);
  assert.ok(view!.isDisposed);
  for (const t of [out.a, out.list[0] as Tensor, (out.list[1] as { deep: Tensor }).deep, out.inst.t, out.base]) {
    assert.not.ok(t.isDisposed);
    t.dispose();
  }
});

test('forgotten tensors are collected by the safety net (liveTensors shrinks after GC)', async () => {
  const before = liveTensors().length;
  (() => {
    for (let i = 0; i < 50; i++) Tensor.ones([16]);
  })(); // never disposed
  assert.is(liveTensors().length, before + 50);
  for (let round = 0; round < 20 && liveTensors().length > before; round++) {
    await new Promise((r) => setTimeout(r, 5)); // registration happens on the next turn
    collectGarbage(); // Bun.gc(true) or node's gc(); throws when there is neither
  }
  // earlier tests' forgotten tensors may go too: at most `before` remain
  assert.ok(liveTensors().length <= before, `${liveTensors().length} live, ${before} before`);
});

test.run();
