// Prefix sums: cumsum along one dim (float dtypes). Sampling's top-p and inverse-CDF draws
// are built on it.
import { normDim } from '../core/layout.ts';
import { ShapeError } from '../core/errors.ts';
import type { RawTensor } from '../device/raw-tensor.ts';
import { FLOATS, dtypeIn, sig } from '../backends/checks.ts';
import * as cpu from '../backends/cpu/scan.ts';
import * as gpu from '../backends/gpu/scan.ts';
import { defineOp } from './registry.ts';

export const cumsum = defineOp({
  name: 'cumsum',
  family: 'reduce',
  summary: 'running sums along one dim',
  dtypes: FLOATS,
  check: (x: RawTensor, dim: number): [RawTensor, number] => {
    const op = 'cumsum';
    dtypeIn(op, x, FLOATS);
    if (x.rank === 0) throw new ShapeError(`${op}: needs at least 1 dim (tensor ${sig(x)})`);
    try {
      return [x, normDim(op, dim, x.rank)];
    } catch (e) {
      if (e instanceof ShapeError) throw new ShapeError(`${e.message} (tensor ${sig(x)})`);
      throw e;
    }
  },
  cpu: cpu.cumsum,
  gpu: gpu.cumsum,
  grad: 'missing',
});
