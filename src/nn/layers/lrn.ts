// nn.LocalResponseNorm: normalization across neighbouring channels of [n, c, ...], PyTorch's
// names and defaults (alpha 1e-4, beta 0.75, k 1; alpha divided by size).
import type { LocalResponseNormOptions } from '../../backends/lrn-options.ts';
import { localResponseNorm } from '../../ops/lrn.ts';
import { Tensor } from '../../tensor/tensor.ts';
import { UnaryModule } from '../module.ts';

export class LocalResponseNorm extends UnaryModule {
  readonly size: number;
  readonly alpha: number;
  readonly beta: number;
  readonly k: number;
  constructor(size: number, opts: LocalResponseNormOptions = {}) {
    super();
    if (typeof size !== 'number' || !Number.isInteger(size) || size < 1)
      throw new RangeError(`LocalResponseNorm: size must be an integer >= 1, got ${String(size)}`);
    this.size = size;
    this.alpha = opts.alpha ?? 1e-4;
    this.beta = opts.beta ?? 0.75;
    this.k = opts.k ?? 1;
  }
  forward(x: Tensor): Tensor {
    return Tensor.wrap(localResponseNorm(x, this.size, { alpha: this.alpha, beta: this.beta, k: this.k }));
  }
}
