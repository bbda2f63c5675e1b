// Rotary position embeddings (the "halves" pairing of Llama, Mistral and Qwen2). The inverse
// frequencies follow the model's rope scaling; the cos/sin tables are computed the way the
// reference implementation does it, in f32 (frequency, then position times frequency, then
// cos/sin), and rounded to the model's dtype, so positions agree with it bit for bit where f32
// agrees. Tables grow on demand up to the longest cache asked for.
import { Tensor } from '../tensor/tensor.ts';
import { keep } from '../core/scope.ts';
import type { Device } from '../device/device.ts';
import type { DType } from '../core/dtype.ts';
import { TensorError } from '../core/errors.ts';

export type RopeScaling =
  | { readonly type: 'default' }
  | { readonly type: 'linear'; readonly factor: number }
  | {
      readonly type: 'llama3';
      readonly factor: number;
      readonly lowFreqFactor: number;
      readonly highFreqFactor: number;
      readonly originalMaxPositions: number;
    };

const f32 = Math.fround;

/** inverse frequencies [headDim / 2] in f32, scaled as the config asks */
export function ropeInverseFrequencies(headDim: number, theta: number, scaling: RopeScaling): Float32Array {
  const half = headDim / 2;
  const inv = new Float32Array(half);
  for (let i = 0; i < half; i++) inv[i] = f32(1 / f32(Math.pow(theta, f32((2 * i) / headDim))));
  if (scaling.type === 'linear') for (let i = 0; i < half; i++) inv[i] = f32(inv[i]! / scaling.factor);
  if (scaling.type === 'llama3') {
    // long wavelengths are slowed by `factor`, short ones kept, the band between blended
    const { factor, lowFreqFactor: lo, highFreqFactor: hi, originalMaxPositions: ctx } = scaling;
    const lowWavelen = ctx / lo,
      highWavelen = ctx / hi;
    for (let i = 0; i < half; i++) {
      const f = inv[i]!,
        wavelen = (2 * Math.PI) / f;
      if (wavelen < highWavelen) continue;
      if (wavelen > lowWavelen) {
        inv[i] = f32(f / factor);
        continue;
      }
      const smooth = (ctx / wavelen - lo) / (hi - lo);
      inv[i] = f32((1 - smooth) * (f / factor) + smooth * f);
    }
  }
  return inv;
}

export class RotaryEmbedding {
  private cosT: Tensor | null = null;
  private sinT: Tensor | null = null;
  private length = 0;

  constructor(
    readonly invFreq: Float32Array,
    readonly device: Device,
    readonly dtype: DType,
  ) {}
  get headDim(): number {
    return this.invFreq.length * 2;
  }

  /** makes the tables cover positions [0, n) */
  reserve(n: number): void {
    if (n <= this.length) return;
    const half = this.invFreq.length;
    const cos = new Float32Array(n * half),
      sin = new Float32Array(n * half);
    for (let p = 0; p < n; p++) {
      for (let i = 0; i < half; i++) {
        const a = f32(p * this.invFreq[i]!);
        cos[p * half + i] = Math.cos(a);
        sin[p * half + i] = Math.sin(a);
      }
    }
    this.dispose();
    this.cosT = this.table(cos, n);
    this.sinT = this.table(sin, n);
    this.length = n;
  }

  /** the tables belong to this object, not to a tidy() around the call that grew them */
  private table(v: Float32Array, n: number): Tensor {
    const t = Tensor.from(v, { shape: [n, this.invFreq.length], device: this.device });
    if (this.dtype === 'f32') return keep(t);
    const out = t.toDtype(this.dtype);
    t.dispose();
    return keep(out);
  }

  /** cos and sin [len, headDim / 2] for positions [start, start + len): views of the tables */
  at(start: number, len: number): { cos: Tensor; sin: Tensor } {
    if (start + len > this.length)
      throw new TensorError(`rotary: positions up to ${start + len} asked for, tables reserved for ${this.length}`);
    return { cos: this.cosT!.narrow(0, start, len), sin: this.sinT!.narrow(0, start, len) };
  }

  /** the whole tables [reserved positions, headDim / 2], for kernels that index them themselves */
  tables(): { cos: Tensor; sin: Tensor } {
    if (!this.cosT || !this.sinT) throw new TensorError('rotary: tables not reserved yet');
    return { cos: this.cosT, sin: this.sinT };
  }

  /** cos and sin rows at positions held on the device (u32 [t]): what a replayed graph reads */
  gather(positions: Tensor): { cos: Tensor; sin: Tensor } {
    if (!this.cosT || !this.sinT) throw new TensorError('rotary: tables not reserved yet');
    return { cos: this.cosT.indexSelect(positions, 0), sin: this.sinT.indexSelect(positions, 0) };
  }

  dispose(): void {
    this.cosT?.dispose();
    this.sinT?.dispose();
    this.cosT = this.sinT = null;
    this.length = 0;
  }
}
