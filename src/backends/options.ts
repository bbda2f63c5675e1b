// User-facing option records (numbers or pairs), normalized by the op dispatchers.
import type { Tensor } from '../tensor/tensor.ts';

export type Pair = number | readonly [number, number];
export interface ConvOptions {
  padding?: Pair; stride?: Pair; dilation?: Pair; groups?: number;
  /** [cOut], added per output channel */
  bias?: Tensor | null;
}
export interface ConvTransposeOptions extends ConvOptions { outputPadding?: Pair }
export interface PoolOptions {
  kernel: Pair;
  /** defaults to the kernel size */
  stride?: Pair;
  padding?: Pair;
  /** avgPool2d: count padded cells in the divisor (default true, like PyTorch) */
  countIncludePad?: boolean;
}
export interface BatchNormOptions {
  mean: Tensor; variance: Tensor;
  weight?: Tensor | null; bias?: Tensor | null;
  eps?: number;
}

export function pair(op: string, name: string, v: Pair | undefined, dflt: number, min = 0): [number, number] {
  const p: [number, number] = v === undefined ? [dflt, dflt] : typeof v === 'number' ? [v, v] : [v[0], v[1]];
  if (!p.every((x) => Number.isInteger(x) && x >= min)) throw new RangeError(`${op}: ${name} must be integers >= ${min}, got ${JSON.stringify(v)}`);
  return p;
}
