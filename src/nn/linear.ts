// y = x W^T (+ b) with W [out, in] as Hugging Face stores it: the transposed view goes to BLAS
// as a transpose flag, never copied; one row of x on a GPU is one GEMV kernel, which also takes
// an RMSNorm before and a residual add after (ops/linear.ts).
import type { Tensor } from '../tensor/tensor.ts';
import type { LinearOptions } from '../tensor/options.ts';

/** what a projection can fold in around its product (the bias is its own) */
export type ProjectionFusion = Omit<LinearOptions, 'bias'>;

/** what a layer calls a projection: a Linear, or a tensor-parallel one that holds a slice of it */
export interface Projection {
  readonly weight: Tensor;
  readonly bias: Tensor | null;
  readonly inFeatures: number;
  readonly outFeatures: number;
  forward(x: Tensor, fused?: ProjectionFusion): Tensor;
  dispose(): void;
}

export class Linear implements Projection {
  constructor(
    readonly weight: Tensor,
    readonly bias: Tensor | null = null,
  ) {}
  get inFeatures(): number {
    return this.weight.dim(1);
  }
  get outFeatures(): number {
    return this.weight.dim(0);
  }

  /** x [..., in] -> [..., out]; `fused`: the norm, activation and residual folded in */
  forward(x: Tensor, fused: ProjectionFusion = {}): Tensor {
    // fields spelled out: V8 (Node 20) builds `{ ...o, key }` on a slow path, microseconds a call
    return x.linear(this.weight, {
      norm: fused.norm ?? null,
      act: fused.act ?? null,
      residual: fused.residual ?? null,
      bias: this.bias,
    });
  }
  dispose(): void {
    this.weight.dispose();
    this.bias?.dispose();
  }
}
