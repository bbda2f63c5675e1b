// tidy() scopes follow async work through AsyncLocalStorage, which Node and Bun implement
// differently (async_hooks vs JavaScriptCore's async context): a scope survives every kind of
// await and task hop, concurrent scopes stay apart, nested scopes hand kept tensors outwards,
// and a rejected scope still disposes what it made.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { Tensor, tidy, keep, liveTensors } from '../../src/index.ts';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const immediate = () => new Promise((r) => setImmediate(r));
const microtask = () => new Promise<void>((r) => queueMicrotask(r));

test('a scope survives timers, immediates, microtasks, .then callbacks and nextTick', async () => {
  const made: Tensor[] = [];
  const live0 = liveTensors().length;
  const out = await tidy(async () => {
    made.push(Tensor.ones([2]));
    await sleep(1);
    made.push(Tensor.ones([2]));
    await immediate();
    made.push(Tensor.ones([2]));
    await microtask();
    made.push(Tensor.ones([2]));
    await Promise.resolve().then(() => made.push(Tensor.ones([2])));
    await new Promise<void>((r) =>
      process.nextTick(() => {
        made.push(Tensor.ones([2]));
        r();
      }),
    );
    return Tensor.zeros([1]);
  });
  assert.is(made.length, 6);
  made.forEach((t, i) => assert.ok(t.isDisposed, `tensor ${i} made inside the scope was disposed`));
  assert.not.ok(out.isDisposed);
  out.dispose();
  assert.is(liveTensors().length, live0);
});

test('concurrent scopes stay apart: each disposes only its own tensors', async () => {
  const mine: Tensor[][] = [[], [], []];
  const results = await Promise.all(
    [0, 1, 2].map((k) =>
      tidy(async () => {
        for (let step = 0; step < 4; step++) {
          mine[k]!.push(Tensor.full([3], k));
          // interleave the three scopes differently at every step
          await ((step + k) % 2 ? sleep(1 + k) : immediate());
        }
        return Tensor.full([1], k);
      }),
    ),
  );
  results.forEach((r, k) => {
    assert.not.ok(r.isDisposed, `scope ${k}'s result is kept`);
    assert.equal(Array.from(r.toArraySync(), Number), [k]);
    mine[k]!.forEach((t) => assert.ok(t.isDisposed, `scope ${k}'s temporaries are disposed`));
    r.dispose();
  });
});

test('a tensor made while one scope awaits, outside every scope, is left alone', async () => {
  let outside: Tensor | null = null;
  const p = tidy(async () => {
    const t = Tensor.ones([2]);
    await sleep(5);
    return t.sum();
  });
  await sleep(1);
  outside = Tensor.ones([4]); // the scope above is still pending
  const r = await p;
  assert.not.ok(outside.isDisposed);
  outside.dispose();
  r.dispose();
});

test('nested async scopes: the inner result belongs to the outer scope', async () => {
  let inner: Tensor | null = null,
    innerTmp: Tensor | null = null,
    kept: Tensor | null = null;
  const out = await tidy(async () => {
    inner = await tidy(async () => {
      innerTmp = Tensor.ones([2]);
      await sleep(1);
      return innerTmp.add(1);
    });
    assert.ok(innerTmp!.isDisposed, 'the inner scope disposed its temporary');
    assert.not.ok(inner.isDisposed, 'the inner result outlives the inner scope');
    await immediate();
    kept = keep(Tensor.ones([3]));
    return inner.mul(2);
  });
  assert.ok(inner!.isDisposed, 'the outer scope disposed the inner result it did not return');
  assert.not.ok(kept!.isDisposed, 'keep() took it out of the scope');
  assert.equal(Array.from(out.toArraySync(), Number), [4, 4]);
  out.dispose();
  kept!.dispose();
});

test('a scope that rejects after an await disposes everything and rethrows', async () => {
  let t: Tensor | null = null;
  const live0 = liveTensors().length;
  const err = await tidy(async () => {
    t = Tensor.ones([2]);
    await sleep(1);
    throw new Error('boom');
  }).then(
    () => null,
    (e: unknown) => e as Error,
  );
  assert.is(err?.message, 'boom');
  assert.ok(t!.isDisposed);
  assert.is(liveTensors().length, live0);
});

test.run();
