// toDtype: casts between every pair of the seven dtypes.
import { isDType, type DType } from '../core/dtype.ts';
import { DTypeError } from '../core/errors.ts';
import type { RawTensor } from '../device/raw-tensor.ts';
import { sig } from '../backends/checks.ts';
import * as cpu from '../backends/cpu/cast.ts';
import * as gpu from '../backends/gpu/cast.ts';

/** the same dtype gives a new view of x (no copy), like torch's .to() returning self */
export function cast(x: RawTensor, dtype: DType): RawTensor {
  x.check('toDtype');
  if (!isDType(dtype)) throw new DTypeError(`toDtype: unknown dtype '${String(dtype)}' (tensor ${sig(x)})`);
  if (dtype === x.dtype) return x.view(x.layout);
  return x.device.isCpu ? cpu.cast(x, dtype) : gpu.cast(x, dtype);
}
