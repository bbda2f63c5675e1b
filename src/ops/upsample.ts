// Resampling of [n, c, l] / [n, c, h, w] to a given size, PyTorch's 'nearest' and 'bilinear'
// (F.interpolate with size=..., no scale factors). The 1-d form runs as a 2-d one with h = 1.
import { ShapeError } from '../core/errors.ts';
import type { RawTensor } from '../device/raw-tensor.ts';
import { FLOATS, dtypeIn, sig } from '../backends/checks.ts';
import * as cpu from '../backends/cpu/upsample.ts';
import * as gpu from '../backends/gpu/upsample.ts';
import { defineOp } from './registry.ts';

function checkInput(op: string, x: RawTensor, rank: 3 | 4, sizes: readonly number[]): void {
  dtypeIn(op, x, FLOATS);
  if (x.rank !== rank)
    throw new ShapeError(`${op}: input must be ${rank === 3 ? '[n, c, l]' : '[n, c, h, w]'}, got ${sig(x)}`);
  if (!sizes.every((s) => Number.isInteger(s) && s >= 1))
    throw new RangeError(`${op}: output size must be integers >= 1, got ${sizes.join(', ')} (input ${sig(x)})`);
  if (x.layout.shape.slice(2).some((s) => s === 0))
    throw new ShapeError(`${op}: input spatial dims must be non-empty, got ${sig(x)}`);
}

type Nearest2d = (x: RawTensor, h: number, w: number) => RawTensor;

/** the 2-d kernel on x [n, c, l] seen as [n, c, 1, l] */
function nearest1d(kernel: Nearest2d, x: RawTensor, n: number): RawTensor {
  const x4 = x.unsqueeze(2);
  try {
    const out4 = kernel(x4, 1, n);
    try {
      return out4.view(out4.layout.squeeze(2));
    } finally {
      out4.dispose();
    }
  } finally {
    x4.dispose();
  }
}

export const upsampleNearest1d = defineOp({
  name: 'upsampleNearest1d',
  family: 'resampling',
  summary: '[n, c, l] to [n, c, size], nearest',
  dtypes: FLOATS,
  check: (x: RawTensor, n: number): [RawTensor, number] => {
    checkInput('upsampleNearest1d', x, 3, [n]);
    return [x, n];
  },
  cpu: (x, n) => nearest1d(cpu.upsampleNearest2d, x, n),
  gpu: (x, n) => nearest1d(gpu.upsampleNearest2d, x, n),
  grad: 'missing',
});

export const upsampleNearest2d = defineOp({
  name: 'upsampleNearest2d',
  family: 'resampling',
  summary: '[n, c, h, w] to [n, c, outH, outW], nearest',
  dtypes: FLOATS,
  check: (x: RawTensor, h: number, w: number): [RawTensor, number, number] => {
    checkInput('upsampleNearest2d', x, 4, [h, w]);
    return [x, h, w];
  },
  cpu: cpu.upsampleNearest2d,
  gpu: gpu.upsampleNearest2d,
  grad: 'missing',
});

export const upsampleBilinear2d = defineOp({
  name: 'upsampleBilinear2d',
  family: 'resampling',
  summary: '[n, c, h, w] to [n, c, outH, outW], bilinear (alignCorners optional)',
  dtypes: FLOATS,
  check: (x: RawTensor, h: number, w: number, alignCorners: boolean): [RawTensor, number, number, boolean] => {
    checkInput('upsampleBilinear2d', x, 4, [h, w]);
    if (typeof alignCorners !== 'boolean')
      throw new TypeError(`upsampleBilinear2d: alignCorners must be a boolean, got ${String(alignCorners)}`);
    return [x, h, w, alignCorners];
  },
  cpu: cpu.upsampleBilinear2d,
  gpu: gpu.upsampleBilinear2d,
  grad: 'missing',
});
