// Parameter initialisation with PyTorch's defaults, drawn on the target device by the seeded
// random ops (the same values on every device for a given seed). A layer built without a seed
// takes the next one from a counter that manualSeed() sets, so a program that seeds once builds
// the same model every run.
import type { DType } from '../core/dtype.ts';
import { TensorError } from '../core/errors.ts';
import { noGrad } from '../tensor/autograd.ts';
import { Tensor, type DeviceLike } from '../tensor/tensor.ts';

/** where and how a layer creates its parameters */
export interface LayerOptions {
  /** default: the CPU */
  device?: DeviceLike;
  /** a float dtype; default f32 */
  dtype?: DType;
  /** the layer's seed (a safe integer below 2^48); default: the next from manualSeed()'s counter */
  seed?: number;
}

let counter = 0x5eed;

/** the seed the next layer built without one takes; later layers take the following ones */
export function manualSeed(seed: number): void {
  counter = checkSeed('manualSeed', seed);
}

function checkSeed(op: string, seed: number): number {
  if (typeof seed !== 'number' || !Number.isSafeInteger(seed) || Math.abs(seed) >= 2 ** 48)
    throw new TensorError(`${op}: seed must be an integer of magnitude below 2^48, got ${String(seed)}`);
  return seed;
}

/** a layer's base seed: its own, or the counter's next */
export function layerSeed(op: string, seed: number | undefined): number {
  return seed === undefined ? counter++ : checkSeed(op, seed);
}

/** the k-th tensor's seed (k < 16) of a layer whose base seed is base: distinct across layers */
export const subSeed = (base: number, k: number): number => base * 16 + k;

/** uniform in [lo, hi) */
export function uniform(
  shape: readonly number[],
  lo: number,
  hi: number,
  opts: LayerOptions & { seed: number },
): Tensor {
  return noGrad(() => {
    const u = Tensor.rand([...shape], { seed: opts.seed, dtype: opts.dtype ?? 'f32', device: opts.device });
    try {
      return u.affine(hi - lo, lo);
    } finally {
      u.dispose();
    }
  });
}

/** normal with the given mean and standard deviation */
export function normal(
  shape: readonly number[],
  mean: number,
  std: number,
  opts: LayerOptions & { seed: number },
): Tensor {
  return noGrad(() => {
    const z = Tensor.randn([...shape], { seed: opts.seed, dtype: opts.dtype ?? 'f32', device: opts.device });
    if (mean === 0 && std === 1) return z;
    try {
      return z.affine(std, mean);
    } finally {
      z.dispose();
    }
  });
}

/**
 * Kaiming (He) uniform: bound = gain * sqrt(3 / fanIn) with gain = sqrt(2 / (1 + a^2)). With
 * a = sqrt(5), PyTorch's default for Linear and convolution weights, the bound is 1 / sqrt(fanIn).
 */
export function kaimingUniform(
  shape: readonly number[],
  fanIn: number,
  a: number,
  opts: LayerOptions & { seed: number },
): Tensor {
  const bound = fanIn === 0 ? 0 : Math.sqrt(2 / (1 + a * a)) * Math.sqrt(3 / fanIn);
  return uniform(shape, -bound, bound, opts);
}

/** a bias's default: uniform in +-1/sqrt(fanIn) (zero width for fanIn 0) */
export function fanInUniform(shape: readonly number[], fanIn: number, opts: LayerOptions & { seed: number }): Tensor {
  const bound = fanIn > 0 ? 1 / Math.sqrt(fanIn) : 0;
  return uniform(shape, -bound, bound, opts);
}

export function constant(shape: readonly number[], value: number, opts: LayerOptions): Tensor {
  return Tensor.full([...shape], value, { dtype: opts.dtype ?? 'f32', device: opts.device });
}
