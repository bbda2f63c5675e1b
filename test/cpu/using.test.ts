// `using` (explicit resource management) on tensors: tsx lowers it for Node 20, Bun runs it
// itself; either way a tensor is disposed when its block ends, by return, throw or after an
// await, in reverse order of declaration.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { Tensor } from '../../src/index.ts';

test('a tensor declared with using is disposed at the end of its block', () => {
  let seen: Tensor | null = null;
  {
    using t = Tensor.ones([3]);
    seen = t;
    assert.not.ok(t.isDisposed);
    assert.equal(Array.from(t.toArraySync(), Number), [1, 1, 1]);
  }
  assert.ok(seen.isDisposed);
});

test('using: disposed on throw and on early return, in reverse order', () => {
  const order: string[] = [];
  const named = (name: string) => {
    const t = Tensor.ones([1]);
    const dispose = t.dispose.bind(t);
    t.dispose = () => {
      order.push(name);
      dispose();
    };
    return t;
  };
  assert.throws(() => {
    using a = named('a');
    using b = named('b');
    void a;
    void b;
    throw new Error('boom');
  }, /boom/);
  assert.equal(order, ['b', 'a']);
  order.length = 0;
  const f = (): number => {
    using c = named('c');
    return c.numel;
  };
  assert.is(f(), 1);
  assert.equal(order, ['c']);
});

test('using in an async function: disposed after the awaits, when the block ends', async () => {
  let t0: Tensor | null = null;
  const total = await (async () => {
    using t = Tensor.arange(4);
    t0 = t;
    await new Promise((r) => setTimeout(r, 1));
    assert.not.ok(t.isDisposed, 'still alive after an await inside the block');
    return Number((await t.sum().toArray())[0]);
  })();
  assert.is(total, 6);
  assert.ok(t0!.isDisposed);
});

test.run();
