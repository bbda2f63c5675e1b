// BatchNorm1d / BatchNorm2d with PyTorch's semantics, over the batchNorm op: in training, each
// channel is normalised by the batch's mean and (biased) variance and the op moves the running
// statistics towards the batch's (the variance unbiased) by `momentum`, in place; in evaluation,
// the running statistics are used.
import { ShapeError, TensorError } from '../../core/errors.ts';
import type { Tensor } from '../../tensor/tensor.ts';
import { type LayerOptions, constant } from '../init.ts';
import { UnaryModule } from '../module.ts';
import { checkCount, checkPositive, checkProbability } from './checks.ts';

export interface BatchNormLayerOptions extends Omit<LayerOptions, 'seed'> {
  /** added to the variance (default 1e-5) */
  eps?: number;
  /** the running statistics' update weight (default 0.1) */
  momentum?: number;
  /** learnable weight and bias (default true) */
  affine?: boolean;
  /** keep running statistics and use them in evaluation (default true) */
  trackRunningStats?: boolean;
}

abstract class BatchNormBase extends UnaryModule {
  readonly numFeatures: number;
  readonly eps: number;
  readonly momentum: number;
  readonly affine: boolean;
  readonly trackRunningStats: boolean;
  constructor(
    private readonly layer: string,
    numFeatures: number,
    private readonly ranks: readonly number[],
    opts: BatchNormLayerOptions,
  ) {
    super();
    this.numFeatures = checkCount(layer, 'numFeatures', numFeatures);
    this.eps = checkPositive(layer, 'eps', opts.eps ?? 1e-5);
    this.momentum = checkProbability(layer, 'momentum', opts.momentum ?? 0.1);
    this.affine = opts.affine ?? true;
    this.trackRunningStats = opts.trackRunningStats ?? true;
    this.registerParameter('weight', this.affine ? constant([numFeatures], 1, opts) : null);
    this.registerParameter('bias', this.affine ? constant([numFeatures], 0, opts) : null);
    if (this.trackRunningStats) {
      this.registerBuffer('running_mean', constant([numFeatures], 0, opts));
      this.registerBuffer('running_var', constant([numFeatures], 1, opts));
    }
  }
  get weight(): Tensor | null {
    return this.paramOrNull('weight');
  }
  get bias(): Tensor | null {
    return this.paramOrNull('bias');
  }
  get runningMean(): Tensor | null {
    return this.trackRunningStats ? this.buffer('running_mean') : null;
  }
  get runningVar(): Tensor | null {
    return this.trackRunningStats ? this.buffer('running_var') : null;
  }

  forward(x: Tensor): Tensor {
    if (!this.ranks.includes(x.rank) || x.dim(1) !== this.numFeatures)
      throw new ShapeError(
        `${this.layer}(${this.numFeatures}): input ${x.describe()} must be ${this.ranks.map((r) => `${r}-d`).join(' or ')} with ${this.numFeatures} channels in dim 1`,
      );
    const count = x.numel / this.numFeatures;
    if (this.training || !this.trackRunningStats) {
      if (count <= 1)
        throw new TensorError(
          `${this.layer}: more than one value per channel is needed to train, got input ${x.describe()}`,
        );
      // the op moves the running statistics in place (none are given when they are not tracked)
      const track = this.training && this.trackRunningStats;
      return x.batchNorm({
        training: true,
        mean: track ? this.runningMean : null,
        variance: track ? this.runningVar : null,
        weight: this.weight,
        bias: this.bias,
        eps: this.eps,
        momentum: this.momentum,
      });
    }
    return x.batchNorm({
      mean: this.runningMean!,
      variance: this.runningVar!,
      weight: this.weight,
      bias: this.bias,
      eps: this.eps,
    });
  }
}

/** over dim 1 of [n, c] or [n, c, l] */
export class BatchNorm1d extends BatchNormBase {
  constructor(numFeatures: number, opts: BatchNormLayerOptions = {}) {
    super('BatchNorm1d', numFeatures, [2, 3], opts);
  }
}

/** over dim 1 of [n, c, h, w] */
export class BatchNorm2d extends BatchNormBase {
  constructor(numFeatures: number, opts: BatchNormLayerOptions = {}) {
    super('BatchNorm2d', numFeatures, [4], opts);
  }
}
