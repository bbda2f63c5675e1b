// Option records: the user-facing ones (numbers or pairs, normalized by the ops) and the
// validated parameter records the ops hand to both backends.
import type { RawTensor } from '../device/raw-tensor.ts';
import type { Shape } from '../core/layout.ts';
import type { CausalAlign } from '../core/op-types.ts';

export type Pair = number | readonly [number, number];
export interface ConvOptions<T extends RawTensor = RawTensor> {
  padding?: Pair;
  stride?: Pair;
  dilation?: Pair;
  groups?: number;
  /** [cOut], added per output channel */
  bias?: T | null;
}
export interface ConvTransposeOptions<T extends RawTensor = RawTensor> extends ConvOptions<T> {
  outputPadding?: Pair;
}
export interface PoolOptions {
  kernel: Pair;
  /** defaults to the kernel size */
  stride?: Pair;
  padding?: Pair;
  /** avgPool2d: count padded cells in the divisor (default true, like PyTorch) */
  countIncludePad?: boolean;
}
export interface BatchNormOptions<T extends RawTensor = RawTensor> {
  /** the running statistics: used as they are in inference (required there); moved towards the
   *  batch's by momentum in training (optional there) */
  mean?: T | null;
  variance?: T | null;
  weight?: T | null;
  bias?: T | null;
  eps?: number;
  /** normalize with the batch's own statistics (PyTorch's training mode); default false */
  training?: boolean;
  /** training: running = (1 - momentum) * running + momentum * batch; default 0.1 */
  momentum?: number;
}

/** training-mode batch norm's gradients: the input's, and the scale's and bias's ([c], f32 beside
 *  half-precision x, else x's dtype), each owned by the caller */
export interface BatchNormGrads {
  readonly dx: RawTensor;
  readonly dScale: RawTensor;
  readonly dBias: RawTensor;
}

/** validated attention parameters, as the CPU and GPU paths take them */
export interface AttentionParams {
  readonly scale: number;
  /** null: no causal mask; else the diagonal's offset: query i sees keys j <= i + diag */
  readonly diag: number | null;
  /** with diag: query i sees only keys j > i + diag - window */
  readonly window: number | null;
  readonly mask: RawTensor | null;
  readonly outShape: Shape;
  /** keep each query row's log-sum-exp beside the output where the kernel can (flash_fwd), so
   *  the gradient need not recompute it; set while autograd records an input */
  readonly saveLse?: boolean;
}

export interface RmsNormSpec<T extends RawTensor = RawTensor> {
  readonly weight: T;
  readonly eps: number;
}

export interface LinearOptions<T extends RawTensor = RawTensor> {
  readonly bias?: T | null;
  /** RMS-normalise x (over its last dim, with this weight) before the product */
  readonly norm?: RmsNormSpec<T> | null;
  /** 'swiglu': W stacks [gate; up] as [2n, k] and y = silu(gate) * up, n outputs */
  readonly act?: 'swiglu' | null;
  /** added to the result: the residual stream, shaped like y */
  readonly residual?: T | null;
}

export interface QkvToCacheArgs<T extends RawTensor = RawTensor> {
  /** one token's hidden state: [1, 1, hidden] (or [1, hidden]) */
  readonly x: T;
  /** the stacked q, k, v projections [(heads + 2 kvHeads) headDim, hidden], and their bias */
  readonly weight: T;
  readonly bias?: T | null;
  readonly norm?: RmsNormSpec<T> | null;
  /** rotary tables [positions, headDim / 2] (the halves pairing) */
  readonly cos: T;
  readonly sin: T;
  /** the token's position: a number, or a u32 [1] on the device (read when the work runs) */
  readonly pos: number | T;
  /** one layer's cache [1, kvHeads, maxLen, headDim]: written at pos */
  readonly keys: T;
  readonly values: T;
  readonly heads: number;
  readonly kvHeads: number;
  readonly headDim: number;
}

export interface AttentionOptions<T extends RawTensor = RawTensor> {
  /**
   * true or 'top-left': query i sees keys j <= i (PyTorch's is_causal). 'bottom-right': query i
   * sees keys j <= i + tk - tq, so the last query sees the last key: what a KV cache needs (the
   * flash-attention libraries' alignment). false (default): every key.
   */
  readonly causal?: boolean | CausalAlign;
  /** default 1/sqrt(head dim) */
  readonly scale?: number;
  /** sliding window (Mistral), needs causal: query i also sees only keys j > diag(i) - window */
  readonly window?: number;
  /**
   * broadcastable to [b, hq, tq, tk]: u8 (nonzero = may attend, like PyTorch's bool masks) or
   * q's float dtype (added to the scores: 0 or -Infinity for padding)
   */
  readonly mask?: T;
}

export function pair(op: string, name: string, v: Pair | undefined, dflt: number, min = 0): [number, number] {
  const p: [number, number] = v === undefined ? [dflt, dflt] : typeof v === 'number' ? [v, v] : [v[0], v[1]];
  if (!p.every((x) => Number.isInteger(x) && x >= min))
    throw new RangeError(`${op}: ${name} must be integers >= ${min}, got ${JSON.stringify(v)}`);
  return p;
}
