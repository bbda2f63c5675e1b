// Dropout: in training, zeroes each element with probability p and scales the rest by 1/(1-p);
// in evaluation, the identity. Each call draws a fresh mask: from the layer's seed and a call
// counter when seeded (reproducible runs), else from the random ops' automatic seeds.
import type { Tensor } from '../../tensor/tensor.ts';
import { layerSeed } from '../init.ts';
import { UnaryModule } from '../module.ts';
import { checkProbability } from './checks.ts';

/** a large odd step between the seeds of successive calls */
const STEP = 0x9e3779b1;

export class Dropout extends UnaryModule {
  readonly p: number;
  private readonly seed: number | undefined;
  private calls = 0;
  constructor(p = 0.5, opts: { seed?: number } = {}) {
    super();
    this.p = checkProbability('Dropout', 'p', p);
    this.seed = opts.seed === undefined ? undefined : layerSeed('Dropout', opts.seed);
  }
  forward(x: Tensor): Tensor {
    // the identity as a view, so the result is disposable like any other and carries gradients
    if (!this.training || this.p === 0) return x.reshape(x.shape);
    const seed = this.seed === undefined ? undefined : (this.seed + this.calls++ * STEP) % 2 ** 52;
    return x.dropout(this.p, { seed, training: true });
  }
}
