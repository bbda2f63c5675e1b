// LayerNorm and RMSNorm over the trailing dims given by normalizedShape (PyTorch's layers: weight
// ones, bias zeros; RMSNorm's default eps is the input dtype's machine epsilon). The ops normalise
// over the last dim, so several trailing dims are flattened into one first.
import type { DType } from '../../core/dtype.ts';
import { ShapeError } from '../../core/errors.ts';
import { tidy } from '../../core/scope.ts';
import { Tensor } from '../../tensor/tensor.ts';
import { type LayerOptions, constant } from '../init.ts';
import { UnaryModule } from '../module.ts';
import { checkCount, checkPositive } from './checks.ts';

export interface NormLayerOptions extends Omit<LayerOptions, 'seed'> {
  /** learnable weight (and bias) (default true) */
  elementwiseAffine?: boolean;
}

const EPSILON: Record<DType, number> = {
  f32: 2 ** -23,
  f64: 2 ** -52,
  f16: 2 ** -10,
  bf16: 2 ** -7,
  u8: 0,
  u32: 0,
  i64: 0,
};

abstract class TrailingNorm extends UnaryModule {
  readonly normalizedShape: number[];
  protected readonly size: number;
  constructor(
    private readonly layer: string,
    normalizedShape: number | readonly number[],
    opts: NormLayerOptions,
    withBias: boolean,
  ) {
    super();
    const shape = typeof normalizedShape === 'number' ? [normalizedShape] : [...normalizedShape];
    if (shape.length === 0) throw new ShapeError(`${layer}: normalizedShape must name at least one dim`);
    shape.forEach((d, i) => checkCount(layer, `normalizedShape[${i}]`, d));
    this.normalizedShape = shape;
    this.size = shape.reduce((a, b) => a * b, 1);
    const affine = opts.elementwiseAffine ?? true;
    this.registerParameter('weight', affine ? constant(shape, 1, opts) : null);
    if (withBias) this.registerParameter('bias', affine ? constant(shape, 0, opts) : null);
  }
  get weight(): Tensor | null {
    return this.paramOrNull('weight');
  }

  /** x with its normalized dims flattened into one, and the norm applied through f */
  protected over(x: Tensor, f: (flat: Tensor, w: Tensor) => Tensor): Tensor {
    const k = this.normalizedShape.length;
    const tail = x.shape.slice(x.rank - k);
    if (x.rank < k || tail.some((d, i) => d !== this.normalizedShape[i]))
      throw new ShapeError(
        `${this.layer}([${this.normalizedShape.join(', ')}]): input ${x.describe()} must end in [${this.normalizedShape.join(', ')}]`,
      );
    return tidy(() => {
      const lead = x.shape.slice(0, x.rank - k);
      const flat = k === 1 ? x : x.reshape([...lead, this.size]);
      const w0 = this.weight;
      const w = w0 === null ? Tensor.ones([this.size], { dtype: x.dtype, device: x.device }) : w0.reshape([this.size]);
      const y = f(flat, w);
      return k === 1 ? y : y.reshape(x.shape);
    });
  }
}

/** (x - mean) / sqrt(var + eps) * weight + bias over the trailing normalizedShape */
export class LayerNorm extends TrailingNorm {
  readonly eps: number;
  constructor(
    normalizedShape: number | readonly number[],
    opts: NormLayerOptions & { eps?: number; bias?: boolean } = {},
  ) {
    super('LayerNorm', normalizedShape, opts, opts.bias ?? true);
    this.eps = checkPositive('LayerNorm', 'eps', opts.eps ?? 1e-5);
  }
  get bias(): Tensor | null {
    return this.paramOrNull('bias');
  }
  forward(x: Tensor): Tensor {
    const b = this.bias;
    return this.over(x, (flat, w) => flat.layerNorm(w, b === null ? null : b.reshape([this.size]), this.eps));
  }
}

/** x / sqrt(mean(x^2) + eps) * weight over the trailing normalizedShape */
export class RMSNorm extends TrailingNorm {
  /** null: the input dtype's machine epsilon, as PyTorch */
  readonly eps: number | null;
  constructor(normalizedShape: number | readonly number[], opts: NormLayerOptions & { eps?: number } = {}) {
    super('RMSNorm', normalizedShape, opts, false);
    this.eps = opts.eps === undefined ? null : checkPositive('RMSNorm', 'eps', opts.eps);
  }
  forward(x: Tensor): Tensor {
    return this.over(x, (flat, w) => flat.rmsNorm(w, this.eps ?? EPSILON[x.dtype]));
  }
}
