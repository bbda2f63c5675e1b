// Token embeddings: rows of a [vocab, hidden] table picked by ids of any shape.
import { Tensor } from '../tensor/tensor.ts';

export class Embedding {
  constructor(readonly weight: Tensor) {}
  get vocabSize(): number {
    return this.weight.dim(0);
  }
  forward(ids: Tensor): Tensor {
    return Tensor.embedding(ids, this.weight);
  }
  dispose(): void {
    this.weight.dispose();
  }
}
