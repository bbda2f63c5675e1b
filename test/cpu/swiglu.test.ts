// The swiglu op on the CPU: the composed silu(gate) * up it stands for (f64, and one rounding in
// bf16), and the errors for inputs it cannot split. (Its gradient against finite differences:
// autograd.test.ts; the GPU kernels: gpu/train-kernels.)
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { Tensor } from '../../src/index.ts';
import { randT } from '../helpers.ts';

test('swiglu is silu(gate) * up over the last dim of [gate; up]', async () => {
  for (const shape of [
    [3, 8],
    [2, 3, 6],
  ]) {
    const x = randT(shape, 'f64', -4, 4);
    const [g, u] = x.chunk(2, -1) as [Tensor, Tensor];
    const want = Array.from(await g.silu().mul(u).toArray(), Number);
    const got = Array.from(await x.swiglu().toArray(), Number);
    assert.equal(x.swiglu().shape, [...shape.slice(0, -1), shape.at(-1)! / 2]);
    got.forEach((v, i) =>
      assert.ok(Math.abs(v - want[i]!) <= 1e-12 * (1 + Math.abs(want[i]!)), `${shape} [${i}]: ${v} vs ${want[i]}`),
    );
    // a transposed view reads the same values
    const xt = x.transpose(0, -1).contiguous().transpose(0, -1);
    assert.equal(Array.from(await xt.swiglu().toArray(), Number), got);
  }
});

test('swiglu refuses an odd last dim, a scalar and integer tensors, naming the op and the shape', () => {
  assert.throws(
    () => Tensor.zeros([3, 5]).swiglu(),
    /swiglu: x must end in an even dim \(gate and up halves\), got \[3, 5\] f32/,
  );
  assert.throws(() => Tensor.from([1]).reshape([]).swiglu(), /swiglu: x must end in an even dim/);
  assert.throws(() => Tensor.zeros([2, 4], { dtype: 'i64' }).swiglu(), /swiglu: dtype i64 not supported/);
});

test.run();
