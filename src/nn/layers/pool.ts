// Pooling layers over [n, c, h, w] (or [c, h, w]); stride defaults to the kernel size.
import type { Pair } from '../../backends/options.ts';
import type { Tensor } from '../../tensor/tensor.ts';
import { UnaryModule } from '../module.ts';
import { checkPair } from './checks.ts';

export interface PoolLayerOptions {
  stride?: Pair;
  padding?: Pair;
}

export class MaxPool2d extends UnaryModule {
  readonly kernelSize: [number, number];
  readonly stride: [number, number];
  readonly padding: [number, number];
  constructor(kernelSize: Pair, opts: PoolLayerOptions = {}) {
    super();
    this.kernelSize = checkPair('MaxPool2d', 'kernelSize', kernelSize, 1);
    this.stride = checkPair('MaxPool2d', 'stride', opts.stride ?? kernelSize, 1);
    this.padding = checkPair('MaxPool2d', 'padding', opts.padding ?? 0, 0);
  }
  forward(x: Tensor): Tensor {
    return x.maxPool2d({ kernel: this.kernelSize, stride: this.stride, padding: this.padding });
  }
}

export class AvgPool2d extends UnaryModule {
  readonly kernelSize: [number, number];
  readonly stride: [number, number];
  readonly padding: [number, number];
  readonly countIncludePad: boolean;
  constructor(kernelSize: Pair, opts: PoolLayerOptions & { countIncludePad?: boolean } = {}) {
    super();
    this.kernelSize = checkPair('AvgPool2d', 'kernelSize', kernelSize, 1);
    this.stride = checkPair('AvgPool2d', 'stride', opts.stride ?? kernelSize, 1);
    this.padding = checkPair('AvgPool2d', 'padding', opts.padding ?? 0, 0);
    this.countIncludePad = opts.countIncludePad ?? true;
  }
  forward(x: Tensor): Tensor {
    return x.avgPool2d({
      kernel: this.kernelSize,
      stride: this.stride,
      padding: this.padding,
      countIncludePad: this.countIncludePad,
    });
  }
}
