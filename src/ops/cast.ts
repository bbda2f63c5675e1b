// toDtype: casts between every pair of the seven dtypes.
import { DTYPES, isDType, type DType } from '../core/dtype.ts';
import { DTypeError } from '../core/errors.ts';
import type { RawTensor } from '../device/raw-tensor.ts';
import { sig } from '../backends/checks.ts';
import * as cpu from '../backends/cpu/cast.ts';
import * as gpu from '../backends/gpu/cast.ts';
import { defineOp } from './registry.ts';

/** the same dtype gives a new view of x (no copy), like torch's .to() returning self */
const same = (x: RawTensor): RawTensor => x.view(x.layout);

export const cast = defineOp({
  name: 'toDtype',
  family: 'cast',
  summary: 'a copy in another dtype (the same dtype: a view); half types round to nearest even',
  dtypes: DTYPES,
  check: (x: RawTensor, dtype: DType): [RawTensor, DType] => {
    x.check('toDtype');
    if (!isDType(dtype)) throw new DTypeError(`toDtype: unknown dtype '${String(dtype)}' (tensor ${sig(x)})`);
    return [x, dtype];
  },
  cpu: (x, dtype) => (dtype === x.dtype ? same(x) : cpu.cast(x, dtype)),
  gpu: (x, dtype) => (dtype === x.dtype ? same(x) : gpu.cast(x, dtype)),
  grad: 'missing',
});
