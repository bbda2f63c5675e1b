// A preallocated KV cache: per layer, keys and values [batch, kvHeads, maxLen, headDim] in the
// model's dtype. A step writes its new keys and values at the current length (sliceSet), and
// attention reads the narrowed views [.., 0:length, ..] with no copy. Left-padded batches keep a
// u8 key mask [batch, 1, 1, maxLen] (1 = a real token), narrowed the same way.
import { Tensor } from '../tensor/tensor.ts';
import type { Device } from '../device/device.ts';
import type { DType } from '../core/dtype.ts';
import { ShapeError } from '../core/errors.ts';

export interface KVCacheShape {
  readonly layers: number;
  readonly batch: number;
  readonly kvHeads: number;
  readonly maxLen: number;
  readonly headDim: number;
}

export class KVCache {
  readonly keys: Tensor[] = [];
  readonly values: Tensor[] = [];
  /** tokens already in the cache (the position of the next one) */
  length = 0;
  private keyMask: Tensor | null = null;

  constructor(
    readonly shape: KVCacheShape,
    readonly device: Device,
    readonly dtype: DType,
  ) {
    const { layers, batch, kvHeads, maxLen, headDim } = shape;
    for (let l = 0; l < layers; l++) {
      // zeros, not garbage: a replayed step attends over the whole cache with masked keys at
      // probability 0, and 0 * NaN would still poison its output
      this.keys.push(Tensor.zeros([batch, kvHeads, maxLen, headDim], { dtype, device }));
      this.values.push(Tensor.zeros([batch, kvHeads, maxLen, headDim], { dtype, device }));
    }
  }

  get maxLen(): number {
    return this.shape.maxLen;
  }
  get batch(): number {
    return this.shape.batch;
  }

  /**
   * marks the first pads[b] positions of sequence b as padding (left-padded prompts); keys there
   * are masked for every later query. All zeros (or batch 1 without padding) needs no mask.
   */
  setPadding(pads: readonly number[]): void {
    if (pads.length !== this.batch)
      throw new ShapeError(`KVCache.setPadding: ${pads.length} pad counts for a batch of ${this.batch}`);
    this.keyMask?.dispose();
    this.keyMask = null;
    if (pads.every((p) => p === 0)) return;
    const bits = new Uint8Array(this.batch * this.maxLen);
    pads.forEach((p, b) => bits.fill(1, b * this.maxLen + p, (b + 1) * this.maxLen));
    this.keyMask = Tensor.from(bits, { shape: [this.batch, 1, 1, this.maxLen], device: this.device });
  }

  /** checks that `n` more tokens fit */
  reserve(n: number): void {
    if (this.length + n > this.maxLen) {
      throw new ShapeError(`KVCache: ${n} new tokens after ${this.length} exceed the cache length ${this.maxLen}`);
    }
  }

  /** writes k, v [batch, kvHeads, t, headDim] of one layer at the current length */
  write(layer: number, k: Tensor, v: Tensor): void {
    this.keys[layer]!.sliceSet(k, 2, this.length);
    this.values[layer]!.sliceSet(v, 2, this.length);
  }

  /** writes k, v [batch, kvHeads, t, headDim] at the positions held on the device (u32 [t]) */
  writeAt(layer: number, k: Tensor, v: Tensor, positions: Tensor): void {
    this.keys[layer]!.indexSet(positions, k, 2);
    this.values[layer]!.indexSet(positions, v, 2);
  }

  /** the padding key mask over the whole cache [batch, 1, 1, maxLen], or null */
  get paddingMask(): Tensor | null {
    return this.keyMask;
  }

  /** keys and values of one layer up to `len` tokens, and the key mask (null: none) */
  view(layer: number, len: number): { k: Tensor; v: Tensor; mask: Tensor | null } {
    return {
      k: this.keys[layer]!.narrow(2, 0, len),
      v: this.values[layer]!.narrow(2, 0, len),
      mask: this.keyMask ? this.keyMask.narrow(3, 0, len) : null,
    };
  }

  /** forgets the tokens (the memory stays for the next sequence) */
  reset(): void {
    this.length = 0;
    this.keyMask?.dispose();
    this.keyMask = null;
  }

  dispose(): void {
    for (const t of [...this.keys, ...this.values]) t.dispose();
    this.keys.length = 0;
    this.values.length = 0;
    this.keyMask?.dispose();
    this.keyMask = null;
  }
}
