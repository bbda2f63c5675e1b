// RMSNorm over the last dim, as Llama-family models use it.
import type { Tensor } from '../tensor/tensor.ts';

export class RMSNorm {
  constructor(
    readonly weight: Tensor,
    readonly eps: number,
  ) {}
  forward(x: Tensor): Tensor {
    return x.rmsNorm(this.weight, this.eps);
  }
  dispose(): void {
    this.weight.dispose();
  }
}
