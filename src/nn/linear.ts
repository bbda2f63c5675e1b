// y = x W^T (+ b) with W [out, in] as Hugging Face stores it: the transposed view goes to BLAS
// as a transpose flag, never copied; one row of x on a GPU is one GEMV kernel, which also takes
// an RMSNorm before and a residual add after (ops/linear.ts).
import type { Tensor } from '../tensor.ts';
import type { LinearOptions } from '../ops/linear.ts';

export class Linear {
  constructor(readonly weight: Tensor, readonly bias: Tensor | null = null) {}
  get inFeatures(): number { return this.weight.dim(1); }
  get outFeatures(): number { return this.weight.dim(0); }

  /** x [..., in] -> [..., out]; `fused`: the norm, activation and residual folded in */
  forward(x: Tensor, fused: Omit<LinearOptions, 'bias'> = {}): Tensor {
    return x.linear(this.weight, { ...fused, bias: this.bias });
  }
  dispose(): void { this.weight.dispose(); this.bias?.dispose(); }
}
