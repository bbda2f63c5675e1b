// The serving engine's KV cache: per layer, one pool of keys and one of values, each
// [blocks, blockSize, kvHeads, headDim] in the model's dtype. Which blocks a sequence owns is
// the engine's business (its block table); here a step writes its new keys and values at
// flat slots (block * blockSize + offset) and attention reads the pools through the table.
import { Tensor } from '../tensor/tensor.ts';
import type { Device } from '../device/device.ts';
import { DTYPE_INFO, type DType } from '../core/dtype.ts';
import { ShapeError } from '../core/errors.ts';

export interface PagedKVShape {
  readonly layers: number;
  readonly blocks: number;
  readonly blockSize: number;
  readonly kvHeads: number;
  readonly headDim: number;
}

export class PagedKVCache {
  readonly keys: Tensor[] = [];
  readonly values: Tensor[] = [];
  /** the same pools seen as [blocks * blockSize, kvHeads, headDim], one row per slot */
  private readonly keySlots: Tensor[] = [];
  private readonly valueSlots: Tensor[] = [];

  constructor(
    readonly shape: PagedKVShape,
    readonly device: Device,
    readonly dtype: DType,
  ) {
    const { layers, blocks, blockSize, kvHeads, headDim } = shape;
    for (const [name, n] of Object.entries(shape))
      if (!Number.isInteger(n) || n < 1)
        throw new ShapeError(`PagedKVCache: ${name} must be a positive integer, got ${n}`);
    try {
      for (let l = 0; l < layers; l++) {
        // zeros, not garbage: a composed read copies whole blocks, unwritten slots included
        const k = Tensor.zeros([blocks, blockSize, kvHeads, headDim], { dtype, device });
        this.keys.push(k);
        const v = Tensor.zeros([blocks, blockSize, kvHeads, headDim], { dtype, device });
        this.values.push(v);
        this.keySlots.push(k.reshape([blocks * blockSize, kvHeads, headDim]));
        this.valueSlots.push(v.reshape([blocks * blockSize, kvHeads, headDim]));
      }
    } catch (e) {
      this.dispose();
      throw e;
    }
  }

  /** bytes one block takes over every layer, keys and values */
  static bytesPerBlock(s: Omit<PagedKVShape, 'blocks'>, dtype: DType): number {
    return 2 * s.layers * s.blockSize * s.kvHeads * s.headDim * DTYPE_INFO[dtype].size;
  }

  get blockSize(): number {
    return this.shape.blockSize;
  }

  /** writes one layer's k, v [tokens, kvHeads, headDim] at slots u32 [tokens], which do not
   *  repeat (a step gives each new token its own slot) */
  write(layer: number, k: Tensor, v: Tensor, slots: Tensor): void {
    this.keySlots[layer]!.indexSetDistinct(slots, k, 0);
    this.valueSlots[layer]!.indexSetDistinct(slots, v, 0);
  }

  dispose(): void {
    for (const t of [...this.keySlots, ...this.valueSlots, ...this.keys, ...this.values]) t.dispose();
    this.keys.length = this.values.length = this.keySlots.length = this.valueSlots.length = 0;
  }
}
