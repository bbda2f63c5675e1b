// Convolution layers (PyTorch's Conv1d, Conv2d, ConvTranspose2d and their initialisation): the
// weight is kaiming-uniform with a = sqrt(5) and the bias uniform in +-1/sqrt(fanIn), where
// fanIn is the weight's dim 1 times the kernel size (cIn/groups for a convolution, cOut/groups
// for a transposed one, as PyTorch computes it from the weight's shape).
import type { Pair } from '../../backends/options.ts';
import { TensorError } from '../../core/errors.ts';
import type { Tensor } from '../../tensor/tensor.ts';
import { type LayerOptions, fanInUniform, kaimingUniform, layerSeed, subSeed } from '../init.ts';
import { UnaryModule } from '../module.ts';
import { checkCount, checkPair } from './checks.ts';

export interface ConvLayerOptions extends LayerOptions {
  stride?: Pair;
  padding?: Pair;
  dilation?: Pair;
  groups?: number;
  /** default true */
  bias?: boolean;
}

export interface ConvTransposeLayerOptions extends ConvLayerOptions {
  outputPadding?: Pair;
}

/** the shared part: channels, groups, kernel, and the parameters drawn from the weight's shape */
abstract class ConvBase extends UnaryModule {
  readonly inChannels: number;
  readonly outChannels: number;
  readonly groups: number;
  readonly kernelSize: number[];
  constructor(
    layer: string,
    inChannels: number,
    outChannels: number,
    kernel: number[],
    transposed: boolean,
    opts: ConvLayerOptions,
  ) {
    super();
    this.inChannels = checkCount(layer, 'inChannels', inChannels);
    this.outChannels = checkCount(layer, 'outChannels', outChannels);
    this.groups = checkCount(layer, 'groups', opts.groups ?? 1);
    if (inChannels % this.groups !== 0 || outChannels % this.groups !== 0)
      throw new TensorError(
        `${layer}: inChannels ${inChannels} and outChannels ${outChannels} must both be divisible by groups ${this.groups}`,
      );
    this.kernelSize = kernel;
    const shape = transposed
      ? [inChannels, outChannels / this.groups, ...kernel]
      : [outChannels, inChannels / this.groups, ...kernel];
    const fanIn = shape[1]! * kernel.reduce((a, b) => a * b, 1);
    const seed = layerSeed(layer, opts.seed);
    this.registerParameter('weight', kaimingUniform(shape, fanIn, Math.sqrt(5), { ...opts, seed: subSeed(seed, 0) }));
    this.registerParameter(
      'bias',
      (opts.bias ?? true) ? fanInUniform([outChannels], fanIn, { ...opts, seed: subSeed(seed, 1) }) : null,
    );
  }
  get weight(): Tensor {
    return this.param('weight');
  }
  get bias(): Tensor | null {
    return this.paramOrNull('bias');
  }
}

/** x [n, cIn, l] (or [cIn, l]) -> [n, cOut, lOut] */
export class Conv1d extends ConvBase {
  readonly stride: number;
  readonly padding: number;
  readonly dilation: number;
  constructor(inChannels: number, outChannels: number, kernelSize: number, opts: ConvLayerOptions = {}) {
    super('Conv1d', inChannels, outChannels, [checkCount('Conv1d', 'kernelSize', kernelSize)], false, opts);
    this.stride = checkCount('Conv1d', 'stride', scalar('Conv1d', 'stride', opts.stride ?? 1));
    this.padding = checkCount('Conv1d', 'padding', scalar('Conv1d', 'padding', opts.padding ?? 0), 0);
    this.dilation = checkCount('Conv1d', 'dilation', scalar('Conv1d', 'dilation', opts.dilation ?? 1));
  }
  forward(x: Tensor): Tensor {
    return x.conv1d(this.weight, {
      stride: this.stride,
      padding: this.padding,
      dilation: this.dilation,
      groups: this.groups,
      bias: this.bias,
    });
  }
}

/** x [n, cIn, h, w] (or [cIn, h, w]) -> [n, cOut, hOut, wOut] */
export class Conv2d extends ConvBase {
  readonly stride: [number, number];
  readonly padding: [number, number];
  readonly dilation: [number, number];
  constructor(inChannels: number, outChannels: number, kernelSize: Pair, opts: ConvLayerOptions = {}) {
    super('Conv2d', inChannels, outChannels, checkPair('Conv2d', 'kernelSize', kernelSize, 1), false, opts);
    this.stride = checkPair('Conv2d', 'stride', opts.stride ?? 1, 1);
    this.padding = checkPair('Conv2d', 'padding', opts.padding ?? 0, 0);
    this.dilation = checkPair('Conv2d', 'dilation', opts.dilation ?? 1, 1);
  }
  forward(x: Tensor): Tensor {
    return x.conv2d(this.weight, {
      stride: this.stride,
      padding: this.padding,
      dilation: this.dilation,
      groups: this.groups,
      bias: this.bias,
    });
  }
}

/** x [n, cIn, h, w] -> [n, cOut, hOut, wOut], the gradient of a Conv2d with respect to its input */
export class ConvTranspose2d extends ConvBase {
  readonly stride: [number, number];
  readonly padding: [number, number];
  readonly dilation: [number, number];
  readonly outputPadding: [number, number];
  constructor(inChannels: number, outChannels: number, kernelSize: Pair, opts: ConvTransposeLayerOptions = {}) {
    super(
      'ConvTranspose2d',
      inChannels,
      outChannels,
      checkPair('ConvTranspose2d', 'kernelSize', kernelSize, 1),
      true,
      opts,
    );
    this.stride = checkPair('ConvTranspose2d', 'stride', opts.stride ?? 1, 1);
    this.padding = checkPair('ConvTranspose2d', 'padding', opts.padding ?? 0, 0);
    this.dilation = checkPair('ConvTranspose2d', 'dilation', opts.dilation ?? 1, 1);
    this.outputPadding = checkPair('ConvTranspose2d', 'outputPadding', opts.outputPadding ?? 0, 0);
  }
  forward(x: Tensor): Tensor {
    return x.convTranspose2d(this.weight, {
      stride: this.stride,
      padding: this.padding,
      dilation: this.dilation,
      outputPadding: this.outputPadding,
      groups: this.groups,
      bias: this.bias,
    });
  }
}

function scalar(layer: string, name: string, v: Pair): number {
  if (typeof v !== 'number') throw new TensorError(`${layer}: ${name} must be one integer, got [${String(v)}]`);
  return v;
}
