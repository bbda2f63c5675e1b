// avgPool2d / maxPool2d over [n, c, h, w] (or unbatched [c, h, w]), PyTorch's floor mode:
// out = floor((in + 2 * padding - kernel) / stride) + 1.
import { ShapeError, TensorError, fmtShape } from '../core/errors.ts';
import type { RawTensor } from '../device/raw-tensor.ts';
import { FLOATS, dtypeIn, sig } from '../backends/checks.ts';
import { pair, type PoolOptions } from '../backends/options.ts';
import type { Pool2dParams } from '../core/op-types.ts';
import * as cpu from '../backends/cpu/pool.ts';
import * as gpu from '../backends/gpu/pool.ts';

function pool(op: 'avgPool2d' | 'maxPool2d', x: RawTensor, o: PoolOptions): RawTensor {
  if (o === null || typeof o !== 'object') throw new TensorError(`${op}: options { kernel, stride?, padding? } required, got ${String(o)}`);
  dtypeIn(op, x, FLOATS);
  if (x.rank !== 4 && x.rank !== 3) throw new ShapeError(`${op}: input must be [n, c, h, w] or [c, h, w], got ${sig(x)}`);
  if (o.kernel === undefined) throw new RangeError(`${op}: kernel size required (input ${sig(x)})`);
  const kernel = pair(op, 'kernel', o.kernel, 1, 1);
  const p: Pool2dParams = {
    kernel,
    stride: o.stride === undefined ? kernel : pair(op, 'stride', o.stride, 1, 1),
    padding: pair(op, 'padding', o.padding, 0, 0),
    countIncludePad: o.countIncludePad ?? true,
  };
  if (typeof p.countIncludePad !== 'boolean') throw new TypeError(`${op}: countIncludePad must be a boolean, got ${String(o.countIncludePad)}`);
  const geom = `(input ${sig(x)}, kernel ${fmtShape(p.kernel)}, stride ${fmtShape(p.stride)}, padding ${fmtShape(p.padding)})`;
  if (p.padding[0] * 2 > p.kernel[0] || p.padding[1] * 2 > p.kernel[1]) throw new ShapeError(`${op}: padding must be at most half the kernel size ${geom}`);
  const x4 = x.rank === 3 ? x.unsqueeze(0) : x;
  try {
    const [n, c, h, w] = x4.layout.shape as [number, number, number, number];
    // like PyTorch: only the batch may be empty
    if (c === 0 || h === 0 || w === 0) throw new ShapeError(`${op}: channel and spatial dims must be non-empty ${geom}`);
    const oh = Math.floor((h + 2 * p.padding[0] - p.kernel[0]) / p.stride[0]) + 1;
    const ow = Math.floor((w + 2 * p.padding[1] - p.kernel[1]) / p.stride[1]) + 1;
    if (oh < 1 || ow < 1) throw new ShapeError(`${op}: output size ${oh}x${ow} is too small ${geom}`);
    const outShape = [n, c, oh, ow];
    const impl = x.device.isCpu ? cpu : gpu;
    const out4 = op === 'avgPool2d' ? impl.avgPool2d(x4, p, outShape) : impl.maxPool2d(x4, p, outShape);
    if (x4 === x) return out4;
    const out = out4.view(out4.layout.squeeze(0));
    out4.dispose();
    return out;
  } finally {
    if (x4 !== x) x4.dispose();
  }
}

export function avgPool2d(x: RawTensor, o: PoolOptions): RawTensor { return pool('avgPool2d', x, o); }
/** padding cells never win (they count as -inf); NaN in a window gives NaN, like PyTorch */
export function maxPool2d(x: RawTensor, o: PoolOptions): RawTensor { return pool('maxPool2d', x, o); }
