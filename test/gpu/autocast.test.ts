// autocast on the GPU against the same scope on the CPU: lowered products and convolutions,
// f32 softmax and means, batch norm on half data, and the gradients reaching f32 inputs through
// the casts, for every input layout (outputs poisoned). Inputs are f32, as autocast takes them.
import * as assert from 'uvu/assert';
import { gpuSuite, checkOp, LAYOUTS } from './harness.ts';
import { Tensor, autocast, nn, type DType } from '../../src/index.ts';
import { randT } from '../helpers.ts';

const s = gpuSuite('gpu/autocast');
const F32 = ['f32'] as const;

for (const low of ['bf16', 'f16'] as const) {
  // half products accumulate in f32 on both sides, in different orders
  const tol = { f32: 2e-2, bf16: 2e-2, f16: 1e-2 };

  s.test(`${low}: linear, softmax and a mean in the scope's dtypes`, async () => {
    await checkOp(
      'autocast',
      F32,
      LAYOUTS,
      (d) => [randT([6, 12], d), randT([5, 12], d), randT([5], d)],
      ([x, w, b]) =>
        autocast(low, () => {
          const y = x!.linear(w!, { bias: b! });
          assert.is(y.dtype, low);
          const p = y.softmax(-1);
          assert.is(p.dtype, 'f32');
          return p.add(y.mean(1, true));
        }),
      { variant: `${low} linear`, tol, fixed: [1, 2] },
    );
  });

  s.test(`${low}: conv, training batch norm, relu, pool: forward and gradients to f32 inputs`, async () => {
    const run = (ins: Tensor[], grad: boolean): Tensor => {
      const [x, w, g] = ins as [Tensor, Tensor, Tensor];
      if (grad) {
        x.requiresGrad = true;
        w.requiresGrad = true;
      }
      const bn = new nn.BatchNorm2d(4, { device: x.device });
      try {
        const y = autocast(low, () =>
          bn
            .forward(x.conv2d(w, { padding: 1 }))
            .relu()
            .maxPool2d({ kernel: 2 }),
        );
        assert.is(y.dtype, low);
        if (!grad) return y;
        y.backward(g.toDtype(low));
        assert.is(x.grad!.dtype, 'f32');
        assert.is(w.grad!.dtype, 'f32');
        return Tensor.cat([x.grad!.reshape([-1]), w.grad!.reshape([-1])], 0);
      } finally {
        bn.dispose();
      }
    };
    const make = (d: DType) => [randT([2, 3, 8, 8], d), randT([4, 3, 3, 3], d), randT([2, 4, 4, 4], d)];
    await checkOp('autocast', F32, LAYOUTS, make, (ins) => run(ins, false), {
      variant: `${low} conv forward`,
      tol,
      fixed: [1, 2],
    });
    await checkOp('autocast', F32, LAYOUTS, make, (ins) => run(ins, true), {
      variant: `${low} conv gradients`,
      tol: { f32: 3e-2 },
      fixed: [1, 2],
    });
  });
}

s.run();
