// Linear: y = x W^T + b with W [out, in], PyTorch's layer and initialisation.
import { TensorError } from '../../core/errors.ts';
import type { Tensor } from '../../tensor/tensor.ts';
import { type LayerOptions, fanInUniform, kaimingUniform, layerSeed, subSeed } from '../init.ts';
import { UnaryModule } from '../module.ts';
import { checkCount } from './checks.ts';

export class Linear extends UnaryModule {
  readonly inFeatures: number;
  readonly outFeatures: number;
  constructor(inFeatures: number, outFeatures: number, opts: LayerOptions & { bias?: boolean } = {}) {
    super();
    this.inFeatures = checkCount('Linear', 'inFeatures', inFeatures);
    this.outFeatures = checkCount('Linear', 'outFeatures', outFeatures);
    const seed = layerSeed('Linear', opts.seed);
    this.registerParameter(
      'weight',
      kaimingUniform([outFeatures, inFeatures], inFeatures, Math.sqrt(5), { ...opts, seed: subSeed(seed, 0) }),
    );
    this.registerParameter(
      'bias',
      (opts.bias ?? true) ? fanInUniform([outFeatures], inFeatures, { ...opts, seed: subSeed(seed, 1) }) : null,
    );
  }
  get weight(): Tensor {
    return this.param('weight');
  }
  get bias(): Tensor | null {
    return this.paramOrNull('bias');
  }
  /** x [..., in] -> [..., out] */
  forward(x: Tensor): Tensor {
    if (x.rank === 0 || x.dim(-1) !== this.inFeatures)
      throw new TensorError(
        `Linear(${this.inFeatures}, ${this.outFeatures}): input ${x.describe()} must end in ${this.inFeatures}`,
      );
    return x.linear(this.weight, { bias: this.bias });
  }
}
