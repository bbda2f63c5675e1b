// Embedding: a [num, dim] table, normal(0, 1) as PyTorch initialises it, rows picked by ids.
import { Tensor } from '../../tensor/tensor.ts';
import { type LayerOptions, layerSeed, normal, subSeed } from '../init.ts';
import { UnaryModule } from '../module.ts';
import { checkCount } from './checks.ts';

export class Embedding extends UnaryModule {
  readonly numEmbeddings: number;
  readonly embeddingDim: number;
  constructor(numEmbeddings: number, embeddingDim: number, opts: LayerOptions = {}) {
    super();
    this.numEmbeddings = checkCount('Embedding', 'numEmbeddings', numEmbeddings);
    this.embeddingDim = checkCount('Embedding', 'embeddingDim', embeddingDim);
    const seed = layerSeed('Embedding', opts.seed);
    this.registerParameter('weight', normal([numEmbeddings, embeddingDim], 0, 1, { ...opts, seed: subSeed(seed, 0) }));
  }
  get weight(): Tensor {
    return this.param('weight');
  }
  /** integer ids of any shape -> [...ids.shape, embeddingDim] */
  forward(ids: Tensor): Tensor {
    return Tensor.embedding(ids, this.weight);
  }
}
