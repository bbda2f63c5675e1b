// SwiGLU over the last dim: x = [gate; up] halves (a fused gate-and-up projection's output), y =
// silu(gate) * up. One kernel forward and one backward, whose input gradient is the whole [dgate;
// dup] tensor: the composed silu(gate).mul(up) keeps a silu tensor, runs silu's gradient in six
// launches on a strided half, and concatenates the halves' gradients.
import { ShapeError } from '../core/errors.ts';
import { sameShape } from '../core/layout.ts';
import type { RawTensor } from '../device/raw-tensor.ts';
import { FLOATS, sig } from '../backends/checks.ts';
import * as cpu from '../backends/cpu/swiglu.ts';
import * as gpu from '../backends/gpu/swiglu.ts';
import { floats } from './nn.ts';
import { defineGrad, defineOp } from './registry.ts';

function evenLast(op: string, x: RawTensor): number {
  const last = x.rank === 0 ? 1 : x.layout.shape[x.rank - 1]!;
  if (x.rank === 0 || last % 2 !== 0)
    throw new ShapeError(`${op}: x must end in an even dim (gate and up halves), got ${sig(x)}`);
  return last / 2;
}

export const swiglu = defineOp({
  name: 'swiglu',
  family: 'nn',
  summary: 'silu(gate) * up over the last dim of x = [gate; up] (one kernel each way on a GPU)',
  dtypes: FLOATS,
  check: (x: RawTensor): [RawTensor] => {
    floats('swiglu', x);
    evenLast('swiglu', x);
    return [x];
  },
  cpu: cpu.swiglu,
  gpu: gpu.swiglu,
  grad: 'missing',
});

export const swigluBackward = defineOp({
  name: 'swigluBackward',
  family: 'nn',
  summary: "swiglu's input gradient [dgate; dup] from x and the output's gradient",
  dtypes: FLOATS,
  check: (g: RawTensor, x: RawTensor): [RawTensor, RawTensor] => {
    floats('swigluBackward', g, x);
    const n = evenLast('swigluBackward', x);
    const want = [...x.layout.shape.slice(0, -1), n];
    if (!sameShape(g.layout.shape, want))
      throw new ShapeError(`swigluBackward: the gradient must be [${want.join(', ')}] for x ${sig(x)}, got ${sig(g)}`);
    return [g, x];
  },
  cpu: cpu.swigluBackward,
  gpu: gpu.swigluBackward,
  grad: 'missing',
});

defineGrad('swiglu', (g, [x]: [RawTensor]) => [[x, swigluBackward(g, x)]]);
