// Resampling of [n, c, l] / [n, c, h, w] to a given size, PyTorch's 'nearest' and 'bilinear'
// (F.interpolate with size=..., no scale factors). The 1-d form runs as a 2-d one with h = 1.
import { ShapeError } from '../core/errors.ts';
import type { RawTensor } from '../device/raw-tensor.ts';
import { FLOATS, dtypeIn, sig } from '../backends/checks.ts';
import * as cpu from '../backends/cpu/upsample.ts';
import * as gpu from '../backends/gpu/upsample.ts';

function checkInput(op: string, x: RawTensor, rank: 3 | 4, sizes: readonly number[]): void {
  dtypeIn(op, x, FLOATS);
  if (x.rank !== rank) throw new ShapeError(`${op}: input must be ${rank === 3 ? '[n, c, l]' : '[n, c, h, w]'}, got ${sig(x)}`);
  if (!sizes.every((s) => Number.isInteger(s) && s >= 1)) throw new RangeError(`${op}: output size must be integers >= 1, got ${sizes.join(', ')} (input ${sig(x)})`);
  if (x.layout.shape.slice(2).some((s) => s === 0)) throw new ShapeError(`${op}: input spatial dims must be non-empty, got ${sig(x)}`);
}

export function upsampleNearest1d(x: RawTensor, n: number): RawTensor {
  checkInput('upsampleNearest1d', x, 3, [n]);
  const x4 = x.unsqueeze(2);
  try {
    const out4 = x.device.isCpu ? cpu.upsampleNearest2d(x4, 1, n) : gpu.upsampleNearest2d(x4, 1, n);
    const out = out4.view(out4.layout.squeeze(2));
    out4.dispose();
    return out;
  } finally { x4.dispose(); }
}

export function upsampleNearest2d(x: RawTensor, h: number, w: number): RawTensor {
  checkInput('upsampleNearest2d', x, 4, [h, w]);
  return x.device.isCpu ? cpu.upsampleNearest2d(x, h, w) : gpu.upsampleNearest2d(x, h, w);
}

export function upsampleBilinear2d(x: RawTensor, h: number, w: number, alignCorners: boolean): RawTensor {
  checkInput('upsampleBilinear2d', x, 4, [h, w]);
  if (typeof alignCorners !== 'boolean') throw new TypeError(`upsampleBilinear2d: alignCorners must be a boolean, got ${String(alignCorners)}`);
  return x.device.isCpu ? cpu.upsampleBilinear2d(x, h, w, alignCorners) : gpu.upsampleBilinear2d(x, h, w, alignCorners);
}
