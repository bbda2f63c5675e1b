// A row-parallel projection as a layer of a one-rank-per-process model calls it: forward(x) -> y
// like a Linear, over a RowParallelLinear of the one rank this process holds (its slice of the
// input features; the partial sums all-reduced in place; the bias and a residual carried once, in
// rank 0's partial sum). Attention and the MLP take it where a Linear goes, so their code has no
// parallel branch.
import type { Tensor } from '../../tensor/tensor.ts';
import { Linear, type Projection, type ProjectionFusion } from '../linear.ts';
import { TensorError } from '../../core/errors.ts';
import { RowParallelLinear } from './tensor-parallel.ts';
import type { RankSet } from '../../distributed/rank-set.ts';

export class RankRowParallel implements Projection {
  readonly parallel: RowParallelLinear;

  /** weight: this rank's columns [out, in / size]; bias: the whole [out], or null */
  constructor(weight: Tensor, bias: Tensor | null, ranks: RankSet) {
    if (ranks.ranks.length !== 1)
      throw new TensorError(`RankRowParallel: holds one rank, the RankSet has ${ranks.ranks.length}`);
    this.parallel = new RowParallelLinear([new Linear(weight)], bias ? [bias] : null, ranks);
  }

  get weight(): Tensor {
    return this.parallel.local[0]!.weight;
  }
  get bias(): Tensor | null {
    return this.parallel.bias?.[0] ?? null;
  }
  /** this rank's input features */
  get inFeatures(): number {
    return this.parallel.local[0]!.inFeatures;
  }
  get outFeatures(): number {
    return this.parallel.local[0]!.outFeatures;
  }

  /** x: this rank's slice of the input features; returns the whole output (plus `residual`), the
   *  same on every rank. A norm or activation would need the whole input or output: refused */
  forward(x: Tensor, fused: ProjectionFusion = {}): Tensor {
    if (fused.norm || fused.act) {
      throw new TensorError(
        `RankRowParallel: the input is split over the ${this.parallel.ranks.size} ranks, so ${fused.norm ? 'a norm before' : 'an activation after'} ` +
          'the product cannot be folded in (only a residual can)',
      );
    }
    return this.parallel.forward([x], fused.residual ? [fused.residual] : undefined)[0]!;
  }
  dispose(): void {
    this.parallel.dispose();
  }
}
