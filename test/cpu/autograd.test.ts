// Autograd on the CPU: every gradient rule against central finite differences in f64 (random
// inputs, broadcast operands, views and non-contiguous inputs, a random output weighting so the
// whole vector-Jacobian product is checked), and the tape's behaviour: accumulation, retainGraph,
// noGrad, detach, in-place writes after the forward, refused dtypes and ops, and no leaks.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { Tensor, noGrad, liveTensors, tidy, DTypeError, ShapeError, TensorError } from '../../src/index.ts';
import { UNARY_OPS } from '../../src/core/op-types.ts';

import { gradCheck, leaf, values } from '../grad-check.ts';

test('unary ops: every one against finite differences', () => {
  const smooth = UNARY_OPS.filter((op) => !['ceil', 'floor', 'round', 'sign', 'abs', 'relu'].includes(op));
  for (const op of smooth) {
    const positive = op === 'log' || op === 'sqrt' || op === 'recip';
    gradCheck(op, ([x]) => x!.unary(op), [[3, 4]], positive ? { lo: 0.5, hi: 2 } : {});
  }
  // kinks away from 0: the inputs avoid it
  for (const op of ['abs', 'relu'] as const) gradCheck(op, ([x]) => x!.unary(op), [[2, 5]], { lo: 0.2, hi: 2 });
  for (const op of ['abs', 'relu'] as const) gradCheck(op, ([x]) => x!.unary(op), [[2, 5]], { lo: -2, hi: -0.2 });
});

test('steps have zero gradient', () => {
  const x = leaf([6]);
  const y = tidy(() => x.floor().add(x.sign()).sum());
  y.backward();
  assert.equal(values(x.grad!), [0, 0, 0, 0, 0, 0]);
  for (const t of [x.grad!, y, x]) t.dispose();
});

test("relu's gradient: 1 above zero, 0 at and below it, NaN for a NaN input", () => {
  for (const dtype of ['f64', 'f32', 'bf16'] as const) {
    const x = Tensor.from([-1, 0, -0, 2.5, 1e-30, NaN], { dtype });
    x.requiresGrad = true;
    const y = tidy(() => x.relu().sum());
    y.backward();
    const g = values(x.grad!);
    assert.equal(g.slice(0, 5), [0, 0, 0, 1, 1], dtype);
    assert.ok(Number.isNaN(g[5]), `${dtype}: NaN in, NaN gradient`);
    for (const t of [x.grad!, y, x]) t.dispose();
  }
});

test('an input that requires no gradient is skipped: the others get the same gradients as when all do', () => {
  const cases: [string, number[][], (t: Tensor[]) => Tensor][] = [
    ['conv2d', [[2, 3, 6, 6], [4, 3, 3, 3], [4]], ([x, w, b]) => x!.conv2d(w!, { bias: b!, padding: 1 }).sqr()],
    [
      'convTranspose2d',
      [
        [2, 3, 5, 5],
        [3, 2, 3, 3],
      ],
      ([x, w]) => x!.convTranspose2d(w!, { stride: 2 }).sqr(),
    ],
    ['linear', [[5, 4], [3, 4], [3]], ([x, w, b]) => x!.linear(w!, { bias: b! }).sqr()],
    [
      'matmul',
      [
        [3, 4],
        [4, 2],
      ],
      ([a, b]) => a!.matmul(b!).exp(),
    ],
    [
      'div',
      [
        [3, 4],
        [3, 4],
      ],
      ([a, b]) => a!.div(b!.abs().add(1)).sqr(),
    ],
    ['mul', [[3, 4], [4]], ([a, b]) => a!.mul(b!).sqr()],
    [
      'maximum',
      [
        [3, 4],
        [3, 4],
      ],
      ([a, b]) => a!.maximum(b!).sqr(),
    ],
  ];
  for (const [name, shapes, f] of cases) {
    const grads = (wanted: boolean[]): (number[] | null)[] => {
      const xs = shapes.map((sh, i) => {
        const t = Tensor.rand(sh, { seed: 40 + i, dtype: 'f64' });
        t.requiresGrad = wanted[i]!;
        return t;
      });
      const y = tidy(() => f(xs).sum());
      y.backward();
      const out = xs.map((t) => (t.grad ? values(t.grad) : null));
      for (const t of xs) {
        t.grad?.dispose();
        t.dispose();
      }
      y.dispose();
      return out;
    };
    const all = grads(shapes.map(() => true));
    for (let skip = 0; skip < shapes.length; skip++) {
      const some = grads(shapes.map((_, i) => i !== skip));
      assert.is(some[skip], null, `${name}: input ${skip} got a gradient it did not ask for`);
      some.forEach((g, i) => {
        if (i !== skip) assert.equal(g, all[i], `${name}: input ${i} with input ${skip} skipped`);
      });
    }
  }
});

test('ops with number parameters', () => {
  gradCheck('affine', ([x]) => x!.affine(2.5, -1), [[4]]);
  gradCheck('powf', ([x]) => x!.powf(2.7), [[5]], { lo: 0.3, hi: 2 });
  gradCheck('clamp', ([x]) => x!.clamp(-0.3, 0.4), [[12]]);
  gradCheck('leakyRelu', ([x]) => x!.leakyRelu(0.1), [[8]], { lo: 0.1, hi: 1 });
  gradCheck('leakyRelu negative', ([x]) => x!.leakyRelu(0.1), [[8]], { lo: -1, hi: -0.1 });
  gradCheck('elu', ([x]) => x!.elu(0.7), [[8]], { lo: -2, hi: -0.1 });
});

test('binary ops, broadcast both ways and with numbers', () => {
  for (const op of ['add', 'sub', 'mul', 'div', 'maximum', 'minimum'] as const) {
    const o = op === 'div' ? { lo: 0.5, hi: 2 } : {};
    gradCheck(
      op,
      ([a, b]) => a!.binary(op, b!),
      [
        [3, 4],
        [3, 4],
      ],
      o,
    );
    gradCheck(
      `${op} broadcast`,
      ([a, b]) => a!.binary(op, b!),
      [
        [2, 3, 4],
        [3, 1],
      ],
      o,
    );
    gradCheck(`${op} number`, ([a]) => a!.binary(op, 0.75), [[5]], o);
  }
});

test('where: the gradient goes to the chosen side', () => {
  const cond = Tensor.from([1, 0, 1, 0, 0, 1], { dtype: 'u8', shape: [2, 3] });
  gradCheck('where', ([a, b]) => Tensor.where(cond, a!, b!), [
    [2, 3],
    [1, 3],
  ]);
  gradCheck('where number', ([a]) => Tensor.where(cond, a!, 0.5), [[2, 3]]);
  cond.dispose();
});

test('reductions: sum, mean, max and min over dims, with and without keepdim', () => {
  gradCheck('sum all', ([x]) => x!.sum(), [[3, 4]]);
  gradCheck('sum dim', ([x]) => x!.sum(1), [[3, 4, 2]]);
  gradCheck('sum dims keepdim', ([x]) => x!.sum([0, 2], true), [[3, 4, 2]]);
  gradCheck('mean', ([x]) => x!.mean(-1), [[3, 5]]);
  gradCheck('max', ([x]) => x!.max(1), [[4, 6]]);
  gradCheck('min keepdim', ([x]) => x!.min(0, true), [[4, 6]]);
});

test('max: tied elements share the gradient evenly', () => {
  const x = Tensor.from([1, 3, 3, 2], { dtype: 'f64', requiresGrad: true });
  const m = x.max();
  m.backward();
  assert.equal(values(x.grad!), [0, 0.5, 0.5, 0]);
  for (const t of [x.grad!, m, x]) t.dispose();
});

test('matmul: matrices, batches broadcast, vectors', () => {
  gradCheck('2-d', ([a, b]) => a!.matmul(b!), [
    [3, 4],
    [4, 2],
  ]);
  gradCheck('batched broadcast', ([a, b]) => a!.matmul(b!), [
    [2, 3, 4],
    [4, 5],
  ]);
  gradCheck('vector x matrix', ([a, b]) => a!.matmul(b!), [[4], [4, 3]]);
  gradCheck('matrix x vector', ([a, b]) => a!.matmul(b!), [[3, 4], [4]]);
  gradCheck('transposed operand', ([a, b]) => a!.matmul(b!.T), [
    [3, 4],
    [5, 4],
  ]);
});

test('linear with bias and residual', () => {
  gradCheck('linear', ([x, w, b, r]) => x!.linear(w!, { bias: b!, residual: r! }), [[2, 3, 4], [5, 4], [5], [2, 3, 5]]);
});

test('softmax and logSoftmax', () => {
  gradCheck('softmax', ([x]) => x!.softmax(-1), [[3, 5]]);
  gradCheck('softmax dim 0', ([x]) => x!.softmax(0), [[3, 5]]);
  gradCheck('logSoftmax', ([x]) => x!.logSoftmax(1), [[2, 4, 3]]);
});

test('views and copies carry gradients: transpose, permute, narrow, slice, expand, reshape, cat', () => {
  gradCheck('transpose', ([x]) => x!.transpose(0, 1).mul(x!.transpose(0, 1)), [[3, 4]]);
  gradCheck('permute', ([x]) => x!.permute([2, 0, 1]).exp(), [[2, 3, 4]]);
  gradCheck('narrow', ([x]) => x!.narrow(1, 1, 2).sqr(), [[3, 4]]);
  gradCheck('slice', ([x]) => x!.slice(0, 1, 6, 2).sqr(), [[7, 2]]);
  gradCheck('expand', ([x]) => x!.expand([3, -1]).sqr(), [[1, 4]]);
  gradCheck('squeeze, unsqueeze', ([x]) => x!.unsqueeze(0).squeeze(1).sqr(), [[3, 1, 2]]);
  gradCheck('squeeze of every size-1 dim', ([x]) => x!.squeeze().sqr(), [[2, 1, 3, 1]]);
  gradCheck('squeeze of a dim that is not 1 (nothing removed)', ([x]) => x!.squeeze(0).sqr(), [[3, 4]]);
  gradCheck('unsqueeze at -1', ([x]) => x!.unsqueeze(-1).exp(), [[3, 4]]);
  gradCheck('squeeze of a transposed view', ([x]) => x!.transpose(0, 2).squeeze(1).exp(), [[3, 1, 4]]);
  gradCheck('reshape of a view (a copy)', ([x]) => x!.T.reshape([-1]).sqr(), [[3, 4]]);
  gradCheck('contiguous', ([x]) => x!.T.contiguous().sqr(), [[3, 4]]);
  gradCheck('cat', ([a, b]) => Tensor.cat([a!, b!], 1).sqr(), [
    [2, 3],
    [2, 2],
  ]);
  gradCheck('chunk', ([x]) => x!.chunk(2, 1)[1]!.sqr(), [[2, 4]]);
});

test('views of one base summed: narrows that tile a dim, leave gaps, overlap, cross dims, and beside a dense use', () => {
  // the base is an op's output (y = 2x), so its gradient parts meet before y's node runs
  const parts = (y: Tensor, f: (y: Tensor) => Tensor[]) => f(y).reduce((a, b) => a.add(b.sum()), y.sum().mul(0));
  gradCheck(
    'q, k, v of a fused projection (chunk 3, all used)',
    ([x]) => parts(x!.mul(2), (y) => y.chunk(3, 1).map((t, i) => t.sqr().mul(i + 1))),
    [[2, 6]],
  );
  // both orders of making them, so that their parts arrive in either order
  for (const first of [0, 2])
    gradCheck(
      `narrows tiling dim 1, the one at ${first} made first`,
      ([x]) =>
        parts(x!.mul(2), (y) => {
          const a = (): Tensor => y.narrow(1, 0, 2).sqr();
          const b = (): Tensor => y.narrow(1, 2, 2).exp();
          return first === 0 ? [a(), b()] : [b(), a()];
        }),
      [[3, 4]],
    );
  gradCheck(
    'narrows with a gap',
    ([x]) => parts(x!.mul(2), (y) => [y.narrow(1, 0, 1).sqr(), y.narrow(1, 2, 2).exp()]),
    [[3, 4]],
  );
  gradCheck(
    'overlapping narrows',
    ([x]) => parts(x!.mul(2), (y) => [y.narrow(1, 0, 3).sqr(), y.narrow(1, 1, 3).exp()]),
    [[3, 4]],
  );
  gradCheck(
    'narrows of two dims',
    ([x]) => parts(x!.mul(2), (y) => [y.narrow(0, 1, 2).sqr(), y.narrow(1, 1, 2).exp()]),
    [[3, 4]],
  );
  gradCheck('a narrow beside the whole base', ([x]) => parts(x!.mul(2), (y) => [y.narrow(1, 1, 2).sqr(), y.exp()]), [
    [3, 4],
  ]);
  gradCheck('one narrow of the whole dim', ([x]) => parts(x!.mul(2), (y) => [y.narrow(1, 0, 4).sqr()]), [[3, 4]]);
  gradCheck(
    'narrows of a leaf',
    ([x]) =>
      x!
        .narrow(1, 0, 2)
        .sqr()
        .add(x!.narrow(1, 1, 3).exp().sum()),
    [[3, 4]],
  );
});

test('norms: rmsNorm and layerNorm, input and weights', () => {
  gradCheck('rmsNorm', ([x, w]) => x!.rmsNorm(w!, 1e-5), [[3, 4], [4]]);
  gradCheck('layerNorm', ([x, w, b]) => x!.layerNorm(w!, b!, 1e-5), [[2, 3, 5], [5], [5]]);
});

test('indexing: indexSelect, embedding and gather, repeated ids adding up', () => {
  const ids = Tensor.from([2, 0, 2, 1], { dtype: 'u32' });
  gradCheck('indexSelect dim 0', ([x]) => x!.indexSelect(ids, 0), [[3, 2]]);
  gradCheck('indexSelect dim 1', ([x]) => x!.indexSelect(ids, 1), [[2, 3]]);
  const ids2 = Tensor.from([3, 0, 3, 1, 2, 3], { dtype: 'u32', shape: [2, 3] });
  gradCheck('embedding', ([t]) => Tensor.embedding(ids2, t!), [[4, 2]]);
  const gi = Tensor.from([0, 2, 1, 1, 0, 0], { dtype: 'u32', shape: [2, 3] });
  gradCheck('gather', ([x]) => x!.gather(gi, 1), [[2, 3]]);
  for (const t of [ids, ids2, gi]) t.dispose();
});

test('cumsum, rotary embeddings (every pairing) and indexAdd', () => {
  gradCheck('cumsum dim 1', ([x]) => x!.cumsum(1), [[2, 5]]);
  gradCheck('cumsum dim 0', ([x]) => x!.cumsum(0), [[4, 3]]);
  const ang = Tensor.rand([3, 2], { seed: 5, dtype: 'f64' }).affine(3, -1.5);
  const cos = ang.cos(),
    sin = ang.sin();
  gradCheck('rope halves', ([x]) => x!.rope(cos, sin), [[1, 2, 3, 4]]);
  gradCheck('rope interleaved', ([x]) => x!.ropeI(cos, sin), [[1, 2, 3, 4]]);
  gradCheck('rope thd', ([x]) => x!.ropeThd(cos, sin), [[1, 3, 2, 4]]);
  gradCheck('swiglu', ([x]) => x!.swiglu(), [[3, 2, 8]]);
  gradCheck('swiglu of a transposed view', ([x]) => x!.transpose(0, 1).swiglu(), [[6, 3]]);
  const ids = Tensor.from([1, 0, 1], { dtype: 'u32' });
  gradCheck('indexAdd', ([x, src]) => x!.indexAdd(ids, src!, 0), [
    [2, 3],
    [3, 3],
  ]);
  for (const t of [ang, cos, sin, ids]) t.dispose();
});

test('scatter and scatterAdd: x keeps the cells not overwritten; src gets the gradient it was written to', () => {
  // ids [2, 2] into x [3, 4] along dim 0, from a larger src [3, 3] (its extra cells take no part)
  const ids = Tensor.from([0, 2, 1, 0], { dtype: 'u32', shape: [2, 2] });
  gradCheck('scatter', ([x, src]) => x!.scatter(ids, src!, 0), [
    [3, 4],
    [3, 3],
  ]);
  // repeated ids add up
  const dup = Tensor.from([1, 1, 1, 0, 2, 1], { dtype: 'u32', shape: [2, 3] });
  gradCheck('scatterAdd', ([x, src]) => x!.scatterAdd(dup, src!, 1), [
    [2, 4],
    [2, 3],
  ]);
  for (const t of [ids, dup]) t.dispose();
});

test('an input that requires a gradient its op does not give is an error, not a silent zero', () => {
  const x = leaf([2, 3, 4]);
  const mean = leaf([3]);
  const variance = Tensor.ones([3], { dtype: 'f64' });
  const y = x.batchNorm({ mean, variance });
  assert.throws(
    () => y.sum().backward(),
    (e: unknown) =>
      e instanceof TensorError && /batchNorm gives no gradient to one of its inputs/.test((e as Error).message),
  );
  for (const t of [x, mean, variance, y]) t.dispose();
});

test('toDtype: the gradient comes back in the input dtype', () => {
  const x = Tensor.from([0.5, -1, 2], { dtype: 'f32', requiresGrad: true });
  const y = x.toDtype('f64').sqr().sum();
  y.backward();
  assert.is(x.grad!.dtype, 'f32');
  assert.equal(values(x.grad!.toDtype('f64')), [1, -2, 4]);
  for (const t of [x.grad!, y, x]) t.dispose();
});

test('gradients accumulate across backward calls; retainGraph allows a second pass', () => {
  const x = Tensor.from([1, 2], { dtype: 'f64', requiresGrad: true });
  const y = x.sqr().sum();
  y.backward(undefined, { retainGraph: true });
  y.backward();
  assert.equal(values(x.grad!), [4, 8]);
  assert.throws(
    () => y.backward(),
    (e: unknown) => e instanceof TensorError && /freed by an earlier backward/.test((e as Error).message),
  );
  for (const t of [x.grad!, y, x]) t.dispose();
});

test('noGrad and detach take no part; a result is not a leaf', () => {
  const x = leaf([3]);
  const a = noGrad(() => x.mul(2));
  const b = x.detach().mul(2);
  const c = x.mul(2);
  assert.not.ok(a.requiresGrad);
  assert.not.ok(b.requiresGrad);
  assert.ok(c.requiresGrad && !c.isLeaf && x.isLeaf);
  assert.throws(() => {
    c.requiresGrad = false;
  }, /result of an op/);
  for (const t of [a, b, c, x]) t.dispose();
});

test('an input written in place after the forward is refused at backward', () => {
  const w = leaf([3]);
  const x = Tensor.from([1, 2, 3], { dtype: 'f64' });
  const y = x.mul(w).sum();
  x.fill(0);
  assert.throws(
    () => y.backward(),
    (e: unknown) => e instanceof TensorError && /written in place/.test((e as Error).message),
  );
  assert.throws(() => w.fill(1), /requires a gradient/);
  for (const t of [x, y, w]) t.dispose();
});

test('integer tensors refuse requiresGrad; an op without a gradient says so', () => {
  assert.throws(
    () => Tensor.from([1, 2], { dtype: 'u32', requiresGrad: true }),
    (e: unknown) => e instanceof DTypeError,
  );
  const x = Tensor.zeros([1, 1, 4, 4], { dtype: 'f64', requiresGrad: true });
  const w = Tensor.ones([2], { dtype: 'f64' });
  assert.throws(
    () => x.reshape([-1]).sort(),
    (e: unknown) => e instanceof TensorError && /sort: has no gradient yet/.test((e as Error).message),
  );
  // argmax has none to give: its result simply takes no part
  const i = x.reshape([-1]).argmax(0);
  assert.not.ok(i.requiresGrad);
  for (const t of [i, w, x]) t.dispose();
});

test('backward needs a gradient for a tensor of several elements', () => {
  const x = leaf([3]);
  const y = x.mul(3);
  assert.throws(
    () => y.backward(),
    (e: unknown) => e instanceof ShapeError,
  );
  const g = Tensor.ones([3], { dtype: 'f64' });
  y.backward(g);
  assert.equal(values(x.grad!), [3, 3, 3]);
  for (const t of [g, x.grad!, y, x]) t.dispose();
});

test('a graph nobody runs backward on is freed with its tensors', () => {
  const before = liveTensors().length;
  const x = leaf([4]);
  let y = x;
  for (let i = 0; i < 5; i++) {
    const z = tidy(() => y.mul(1.5).exp().sum(0, true).add(y));
    if (y !== x) y.dispose();
    y = z;
  }
  y.dispose();
  x.dispose();
  assert.is(liveTensors().length, before);
});

test.run();
