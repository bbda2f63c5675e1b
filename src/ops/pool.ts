// avgPool2d / maxPool2d over [n, c, h, w] (or unbatched [c, h, w]), PyTorch's floor mode:
// out = floor((in + 2 * padding - kernel) / stride) + 1.
import { ShapeError, TensorError, fmtShape } from '../core/errors.ts';
import type { RawTensor } from '../device/raw-tensor.ts';
import { FLOATS, dtypeIn, sig } from '../backends/checks.ts';
import { pair, type PoolOptions } from '../backends/options.ts';
import type { Pool2dParams } from '../core/op-types.ts';
import * as cpu from '../backends/cpu/pool.ts';
import * as gpu from '../backends/gpu/pool.ts';
import { defineOp } from './registry.ts';

type PoolKernel = (x4: RawTensor, p: Pool2dParams, outShape: number[]) => RawTensor;

function checkPool(op: 'avgPool2d' | 'maxPool2d', x: RawTensor, o: PoolOptions): [RawTensor, Pool2dParams, number[]] {
  if (o === null || typeof o !== 'object')
    throw new TensorError(`${op}: options { kernel, stride?, padding? } required, got ${String(o)}`);
  dtypeIn(op, x, FLOATS);
  if (x.rank !== 4 && x.rank !== 3)
    throw new ShapeError(`${op}: input must be [n, c, h, w] or [c, h, w], got ${sig(x)}`);
  if (o.kernel === undefined) throw new RangeError(`${op}: kernel size required (input ${sig(x)})`);
  const kernel = pair(op, 'kernel', o.kernel, 1, 1);
  const p: Pool2dParams = {
    kernel,
    stride: o.stride === undefined ? kernel : pair(op, 'stride', o.stride, 1, 1),
    padding: pair(op, 'padding', o.padding, 0, 0),
    countIncludePad: o.countIncludePad ?? true,
  };
  if (typeof p.countIncludePad !== 'boolean')
    throw new TypeError(`${op}: countIncludePad must be a boolean, got ${String(o.countIncludePad)}`);
  // formatted only for an error: a pooling step's hot path formats nothing
  const geom = (): string =>
    `(input ${sig(x)}, kernel ${fmtShape(p.kernel)}, stride ${fmtShape(p.stride)}, padding ${fmtShape(p.padding)})`;
  if (p.padding[0] * 2 > p.kernel[0] || p.padding[1] * 2 > p.kernel[1])
    throw new ShapeError(`${op}: padding must be at most half the kernel size ${geom()}`);
  {
    const [n, c, h, w] = (x.rank === 3 ? [1, ...x.layout.shape] : x.layout.shape) as [number, number, number, number];
    // like PyTorch: only the batch may be empty
    if (c === 0 || h === 0 || w === 0)
      throw new ShapeError(`${op}: channel and spatial dims must be non-empty ${geom()}`);
    const oh = Math.floor((h + 2 * p.padding[0] - p.kernel[0]) / p.stride[0]) + 1;
    const ow = Math.floor((w + 2 * p.padding[1] - p.kernel[1]) / p.stride[1]) + 1;
    if (oh < 1 || ow < 1) throw new ShapeError(`${op}: output size ${oh}x${ow} is too small ${geom()}`);
    return [x, p, [n, c, oh, ow]];
  }
}

/** the kernel on x as [n, c, h, w] (an unbatched x gets a batch of one, dropped after) */
function run4(kernel: PoolKernel, x: RawTensor, p: Pool2dParams, outShape: number[]): RawTensor {
  if (x.rank === 4) return kernel(x, p, outShape);
  const x4 = x.unsqueeze(0);
  try {
    const out4 = kernel(x4, p, outShape);
    try {
      return out4.view(out4.layout.squeeze(0));
    } finally {
      out4.dispose();
    }
  } finally {
    x4.dispose();
  }
}

function poolOp(name: 'avgPool2d' | 'maxPool2d', summary: string) {
  return defineOp({
    name,
    family: 'pooling',
    summary,
    dtypes: FLOATS,
    check: (x: RawTensor, o: PoolOptions) => checkPool(name, x, o),
    cpu: (x, p, s) => run4(cpu[name], x, p, s),
    gpu: (x, p, s) => run4(gpu[name], x, p, s),
    grad: 'missing',
  });
}

export const avgPool2d = poolOp('avgPool2d', "window means over [n, c, h, w] (or unbatched), PyTorch's floor mode");
/** padding cells never win (they count as -inf); NaN in a window gives NaN, like PyTorch */
export const maxPool2d = poolOp('maxPool2d', 'window maxima (NaN wins; padding never does)');
