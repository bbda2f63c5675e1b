// Prefix sums: cumsum along one dim (float dtypes). Sampling's top-p and inverse-CDF draws
// are built on it.
import { normDim } from '../core/layout.ts';
import { ShapeError } from '../core/errors.ts';
import type { RawTensor } from '../device/raw-tensor.ts';
import { FLOATS, dtypeIn, sig } from '../backends/checks.ts';
import * as cpu from '../backends/cpu/scan.ts';
import * as gpu from '../backends/gpu/scan.ts';

export function cumsum(x: RawTensor, dim: number): RawTensor {
  const op = 'cumsum';
  dtypeIn(op, x, FLOATS);
  if (x.rank === 0) throw new ShapeError(`${op}: needs at least 1 dim (tensor ${sig(x)})`);
  let d: number;
  try { d = normDim(op, dim, x.rank); } catch (e) {
    if (e instanceof ShapeError) throw new ShapeError(`${e.message} (tensor ${sig(x)})`);
    throw e;
  }
  return x.device.isCpu ? cpu.cumsum(x, d) : gpu.cumsum(x, d);
}
