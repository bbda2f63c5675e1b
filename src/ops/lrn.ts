// Local response normalization across channels, PyTorch's nn.LocalResponseNorm:
// y_c = x_c / (k + alpha / size * sum of x_c'^2 over c' in [c - floor(size / 2), c + floor((size - 1) / 2)])^beta,
// channels outside [0, C) counting as zero. On the GPU, MIOpen's / cuDNN's LRN forward and
// backward for odd windows in f32, f16 and bf16; even windows and f64 are composed from other ops
// (ops/lrn-composed.ts: the libraries centre even windows one channel off PyTorch's, MIOpen's
// header allows odd windows only, and f64 is not among the dtypes MIOpen's LRN is known to take),
// the same on both vendors. On the CPU, f64 loops.
import { ShapeError, TensorError } from '../core/errors.ts';
import { RawTensor } from '../device/raw-tensor.ts';
import { FLOATS, dtypeIn, sameDevice, sig } from '../backends/checks.ts';
import type { LocalResponseNormOptions, LrnSettings } from '../backends/lrn-options.ts';
import * as cpu from '../backends/cpu/lrn.ts';
import * as gpu from '../backends/gpu/lrn.ts';
import { lrnBackwardComposed, lrnComposed } from './lrn-composed.ts';
import { defineGrad, defineOp } from './registry.ts';

function onGpu(x: RawTensor, p: LrnSettings): RawTensor {
  gpu.checkGpuLrn('localResponseNorm', x, p);
  if (gpu.libraryTakes(x, p)) return gpu.localResponseNorm(x, p);
  if (x.numel === 0) return RawTensor.empty(x.layout.shape, x.dtype, x.device);
  return lrnComposed(x, p);
}

function backwardOnGpu(x: RawTensor, y: RawTensor, dy: RawTensor, p: LrnSettings): RawTensor {
  gpu.checkGpuLrn('localResponseNormBackward', x, p);
  if (gpu.libraryTakes(x, p)) return gpu.localResponseNormBackward(x, y, dy, p);
  if (x.numel === 0) return RawTensor.empty(x.layout.shape, x.dtype, x.device);
  return lrnBackwardComposed(x, dy, p);
}

function settings(op: string, x: RawTensor, size: number, o: LocalResponseNormOptions): LrnSettings {
  if (o === null || typeof o !== 'object') throw new TensorError(`${op}: options must be an object (x ${sig(x)})`);
  if (typeof size !== 'number' || !Number.isInteger(size) || size < 1)
    throw new RangeError(`${op}: size must be an integer >= 1, got ${String(size)} (x ${sig(x)})`);
  const p = { size, alpha: o.alpha ?? 1e-4, beta: o.beta ?? 0.75, k: o.k ?? 1 };
  for (const name of ['alpha', 'beta', 'k'] as const) {
    const v = p[name];
    if (typeof v !== 'number' || !Number.isFinite(v))
      throw new RangeError(`${op}: ${name} must be a finite number, got ${String(v)} (x ${sig(x)})`);
  }
  return p;
}

function checkInput(op: string, x: RawTensor): void {
  x.check(op);
  dtypeIn(op, x, FLOATS);
  // like PyTorch: [n, c, ...] with at least one dim after the channels
  if (x.rank < 3) throw new ShapeError(`${op}: x must be [n, c, d1, ...] (3 dims or more), got ${sig(x)}`);
}

export const localResponseNorm = defineOp({
  name: 'localResponseNorm',
  family: 'nn',
  summary: "local response normalization across channels (PyTorch's LocalResponseNorm)",
  dtypes: FLOATS,
  check: (x: RawTensor, size: number, o: LocalResponseNormOptions = {}): [RawTensor, LrnSettings] => {
    const op = 'localResponseNorm';
    checkInput(op, x);
    return [x, settings(op, x, size, o)];
  },
  cpu: cpu.localResponseNorm,
  gpu: onGpu,
  grad: 'missing',
});

/** the input gradient of localResponseNorm from its x and y and the output gradient dy */
export const localResponseNormBackward = defineOp({
  name: 'localResponseNormBackward',
  family: 'nn',
  summary: "localResponseNorm's input gradient (MIOpen / cuDNN LRN backward)",
  dtypes: FLOATS,
  check: (
    x: RawTensor,
    y: RawTensor,
    dy: RawTensor,
    p: LrnSettings,
  ): [RawTensor, RawTensor, RawTensor, LrnSettings] => {
    const op = 'localResponseNormBackward';
    checkInput(op, x);
    y.check(op);
    dy.check(op);
    sameDevice(op, x, y, dy);
    for (const [name, t] of [
      ['y', y],
      ['dy', dy],
    ] as const)
      if (t.dtype !== x.dtype || t.layout.shape.join() !== x.layout.shape.join())
        throw new ShapeError(`${op}: ${name} ${sig(t)} must be shaped and typed like x ${sig(x)}`);
    return [x, y, dy, settings(op, x, p.size, p)];
  },
  cpu: cpu.localResponseNormBackward,
  gpu: backwardOnGpu,
  grad: 'missing',
});

defineGrad('localResponseNorm', (g, [x, p]: [RawTensor, LrnSettings], y) => [
  [x, localResponseNormBackward(x, y, g, p)],
]);
