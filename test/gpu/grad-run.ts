// The gradient suites' inputs and run: random inputs of the given shapes and, last, an output
// gradient shaped like f's result; backward through f from it, every input's gradient flattened
// and joined, for checkOp to compare with the CPU's.
import { Tensor, noGrad, type DType } from '../../src/index.ts';
import { randT } from '../helpers.ts';
import type { MakeInputs, RunOp } from './harness.ts';

export type GradFn = (xs: Tensor[]) => Tensor;

/** inputs of the shapes, uniform in [lo, hi), and an output gradient in [-1, 1) */
export function gradInputs(shapes: number[][], f: GradFn, lo = -1, hi = 1): MakeInputs {
  return (d: DType) => {
    const xs = shapes.map((sh) => randT(sh, d, lo, hi));
    const shape = noGrad(() => {
      const y = f(xs);
      const r = y.shape;
      y.dispose();
      return r;
    });
    return [...xs, randT(shape, d, -1, 1)];
  };
}

/** backward through f from the last input (the output gradient); the others' gradients, joined */
export function gradsOf(f: GradFn): RunOp {
  return (ins) => {
    const xs = ins.slice(0, -1);
    for (const x of xs) x.requiresGrad = true;
    f(xs).backward(ins[ins.length - 1]!);
    return Tensor.cat(
      xs.map((x) => x.grad!.reshape([-1])),
      0,
    );
  };
}
