// autocast on the CPU: the dtype each op family runs in inside a scope (lowered products and
// convolutions, f32 softmax / norms / losses / sums, promoted mixed operands, untouched f64 and
// integers), values equal to the same casts written out, gradients reaching f32 parameters in f32,
// one cast per parameter per scope (recast after a write), nesting and switching off, async scopes
// confined to their own async work, scopes closed by a throw, errors, and the policy table.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { Tensor, TensorError, autocast, autocastDType, liveTensors, nn, noGrad, tidy } from '../../src/index.ts';
import { AUTOCAST_POLICY } from '../../src/ops/autocast-policy.ts';
import { copyInto } from '../../src/ops/copy.ts';
import { registeredOps } from '../../src/ops/all.ts';
import { nums, randT, throwsWith } from '../helpers.ts';

const param = (shape: number[], seed: number): Tensor => {
  const t = Tensor.rand(shape, { seed, dtype: 'f32' }).affine(2, -1);
  t.requiresGrad = true;
  return t;
};

test('inside a bf16 scope: products lowered, softmax / norms / sums in f32, the rest as given', () => {
  tidy(() => {
    const a = randT([4, 6]),
      b = randT([6, 5]),
      w = randT([5, 6]),
      bias = randT([5]);
    const img = randT([2, 3, 6, 6]),
      k = randT([4, 3, 3, 3]);
    const h = randT([4, 6], 'bf16');
    const d64 = randT([3, 3], 'f64');
    autocast('bf16', () => {
      assert.is(autocastDType(), 'bf16');
      assert.is(a.matmul(b).dtype, 'bf16');
      assert.is(a.linear(w, { bias }).dtype, 'bf16');
      assert.is(img.conv2d(k, { padding: 1 }).dtype, 'bf16');
      const q = randT([1, 2, 3, 8]);
      assert.is(Tensor.scaledDotProductAttention(q, q, q).dtype, 'bf16');
      assert.is(h.softmax(-1).dtype, 'f32');
      assert.is(h.logSoftmax(-1).dtype, 'f32');
      assert.is(h.layerNorm(Tensor.ones([6]), null).dtype, 'f32');
      assert.is(h.sum().dtype, 'f32');
      assert.is(h.mean(1).dtype, 'f32');
      // exact in any dtype: left alone
      assert.is(h.max(1).dtype, 'bf16');
      assert.is(h.relu().dtype, 'bf16');
      // mixed operands meet in the wider dtype
      assert.is(h.add(a).dtype, 'f32');
      assert.is(Tensor.cat([h, a], 0).dtype, 'f32');
      assert.is(h.toDtype('f16').add(h).dtype, 'f32');
      // f64 is never lowered
      assert.is(d64.matmul(d64).dtype, 'f64');
    });
    assert.is(autocastDType(), null);
    assert.is(a.matmul(b).dtype, 'f32');
    autocast('f16', () => assert.is(a.matmul(b).dtype, 'f16'));
  });
});

test('values equal the same casts written out', () => {
  tidy(() => {
    const x = randT([5, 7]),
      w = randT([3, 7]),
      bias = randT([3]);
    const got = autocast('bf16', () => x.linear(w, { bias }).softmax(-1));
    const want = x
      .toDtype('bf16')
      .linear(w.toDtype('bf16'), { bias: bias.toDtype('bf16') })
      .toDtype('f32')
      .softmax(-1);
    assert.is(got.dtype, 'f32');
    assert.equal(nums(got), nums(want));
  });
});

test('gradients reach f32 parameters in f32, equal to the casts written out; backward inside the scope too', () => {
  const w = param([4, 6], 11),
    bias = param([4], 12);
  const x = randT([8, 6]);
  const target = Tensor.from(new Uint32Array([0, 1, 2, 3, 0, 1, 2, 3]), { shape: [8], dtype: 'u32' });
  const run = (inside: boolean): [number[], number[]] => {
    const loss = tidy(() => {
      if (inside) return autocast('bf16', () => nn.crossEntropy(x.linear(w, { bias }), target));
      const logits = x.toDtype('bf16').linear(w.toDtype('bf16'), { bias: bias.toDtype('bf16') });
      return nn.crossEntropy(logits.toDtype('f32'), target);
    });
    assert.is(loss.dtype, 'f32');
    loss.backward();
    loss.dispose();
    assert.is(w.grad!.dtype, 'f32');
    assert.is(bias.grad!.dtype, 'f32');
    const out: [number[], number[]] = [nums(w.grad!), nums(bias.grad!)];
    w.grad!.dispose();
    bias.grad!.dispose();
    w.grad = null;
    bias.grad = null;
    return out;
  };
  const want = run(false);
  assert.equal(run(true), want);
  // backward() inside the scope: the gradient rules run in the dtypes the forward saved
  const inScope = autocast('bf16', () => {
    const loss = tidy(() => nn.crossEntropy(x.linear(w, { bias }), target));
    loss.backward();
    loss.dispose();
    return [nums(w.grad!), nums(bias.grad!)];
  });
  assert.equal(inScope, want);
  for (const t of [w, bias, x, target, w.grad!, bias.grad!]) t.dispose();
});

test('a bf16 leaf through an f32 op gets a bf16 gradient', () => {
  const h = Tensor.rand([3, 5], { seed: 5, dtype: 'bf16' });
  h.requiresGrad = true;
  const loss = autocast('bf16', () => tidy(() => h.softmax(-1).mul(Tensor.arange(5).toDtype('f32')).sum()));
  assert.is(loss.dtype, 'f32');
  loss.backward();
  assert.is(h.grad!.dtype, 'bf16');
  for (const t of [h, loss, h.grad!]) t.dispose();
});

test('a parameter is cast once per scope and again after a write; casts die with their op or scope', () => {
  const w = param([6, 6], 21);
  const x = randT([2, 6]);
  const w2 = randT([6, 6]);
  const live = (): number => liveTensors().length;
  noGrad(() => {
    const base = live();
    const ys: Tensor[] = [];
    autocast('bf16', () => {
      ys.push(x.matmul(w));
      // the result and the cached cast of w (x's cast was freed after the product)
      assert.is(live(), base + 2);
      ys.push(x.matmul(w));
      assert.is(live(), base + 3, 'the second product reuses the cast');
      copyInto(w, w2);
      ys.push(x.matmul(w));
      assert.is(live(), base + 4, 'the stale cast was replaced, not added to');
    });
    assert.is(live(), base + 3, 'the scope freed its cast');
    assert.equal(nums(ys[0]!), nums(ys[1]!));
    const want = x.toDtype('bf16').matmul(w2.toDtype('bf16'));
    assert.equal(nums(ys[2]!), nums(want), 'the product after the write uses the new values');
    for (const t of [...ys, want]) t.dispose();
  });
  for (const t of [w, x, w2]) t.dispose();
});

test('scopes nest: the innermost decides, and enabled: false switches autocast off', () => {
  tidy(() => {
    const a = randT([3, 4]),
      b = randT([4, 2]);
    autocast('bf16', () => {
      autocast('f16', () => {
        assert.is(a.matmul(b).dtype, 'f16');
        autocast('bf16', () => assert.is(a.matmul(b).dtype, 'f32'), { enabled: false });
        assert.is(autocastDType(), 'f16');
      });
      assert.is(a.matmul(b).dtype, 'bf16');
      autocast(
        'bf16',
        () => {
          assert.is(autocastDType(), null);
          assert.is(a.matmul(b).dtype, 'f32');
        },
        { enabled: false },
      );
    });
  });
});

test('an async scope lasts until its promise settles and covers only its own async work', async () => {
  const a = randT([3, 4]),
    b = randT([4, 2]);
  const tick = (): Promise<void> => new Promise((r) => setTimeout(r, 5));
  let release!: () => void;
  const gate = new Promise<void>((r) => {
    release = r;
  });
  const inside = autocast('bf16', async () => {
    await tick();
    const y = a.matmul(b);
    await gate;
    const z = a.matmul(b);
    return [y.dtype, z.dtype, y, z] as const;
  });
  // concurrent work outside the scope, while it is open
  await tick();
  await tick();
  const outside = a.matmul(b);
  assert.is(outside.dtype, 'f32');
  release();
  const [dy, dz, y, z] = await inside;
  assert.equal([dy, dz], ['bf16', 'bf16']);
  assert.is(a.matmul(b).dtype, 'f32');
  for (const t of [a, b, outside, y, z]) t.dispose();
});

test('a throw closes the scope and frees its casts', () => {
  const w = param([4, 4], 31);
  const x = randT([2, 4]);
  const base = liveTensors().length;
  noGrad(() => {
    assert.throws(
      () =>
        autocast('bf16', () => {
          x.matmul(w).dispose();
          throw new Error('boom');
        }),
      /boom/,
    );
  });
  assert.is(liveTensors().length, base);
  assert.is(autocastDType(), null);
  const y = x.matmul(w.detach());
  assert.is(y.dtype, 'f32');
  for (const t of [w, x, y]) t.dispose();
});

test('errors name autocast and what was wrong', () => {
  throwsWith(() => autocast('f32' as never, () => 0), TensorError, 'autocast', "'bf16' or 'f16'", 'f32');
  throwsWith(() => autocast('bf16', 3 as never), TensorError, 'autocast', 'function');
  throwsWith(() => autocast('bf16', () => 0, { enabled: 1 as never }), TensorError, 'autocast', 'enabled');
  throwsWith(() => autocast('bf16', () => 0, null as never), TensorError, 'autocast', 'options');
  // an op's own error passes through unchanged
  tidy(() => {
    const a = randT([3, 4]);
    throwsWith(() => autocast('bf16', () => a.matmul(a)), TensorError, 'matmul');
  });
  assert.is(autocastDType(), null);
});

test('the policy table names only declared ops, with the policies documented', () => {
  const names = new Set(registeredOps().map((o) => o.name));
  for (const op of AUTOCAST_POLICY.keys()) assert.ok(names.has(op), `policy for unknown op '${op}'`);
  const of = (op: string) => AUTOCAST_POLICY.get(op)?.policy;
  for (const op of [
    'matmul',
    'linear',
    'conv1d',
    'conv2d',
    'convTranspose1d',
    'convTranspose2d',
    'scaledDotProductAttention',
  ])
    assert.is(of(op), 'lower', op);
  for (const op of ['softmax', 'layerNorm', 'rmsNorm', 'localResponseNorm', 'crossEntropyRows', 'reduce', 'cumsum'])
    assert.is(of(op), 'f32', op);
  for (const op of ['binary', 'compare', 'where', 'cat']) assert.is(of(op), 'promote', op);
  // batch norm runs in its input's dtype (f32 statistics beside half data), as in PyTorch
  assert.is(of('batchNormTrain'), undefined);
  const when = AUTOCAST_POLICY.get('reduce')!.when!;
  assert.equal(
    ['sum', 'mean', 'max', 'min', 'argmax', 'argmin'].map((op) => when([op])),
    [true, true, false, false, false, false],
  );
});

test.run();
