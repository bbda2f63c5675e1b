// Broadcast rows (hip-src/binary.hip: map2_rows, the _rows kernels): where a binary
// op's output, merged as packGeom merges it, is [R1, R0, C] and each input either runs along C
// with unit stride or holds one value per row, the op takes 16-byte vectors instead of the
// strided kernel's element-at-a-time walk (x + bias, x * weight, scores + mask over heads).
import { DTYPE_INFO } from '../../core/dtype.ts';
import type { RawTensor } from '../../device/raw-tensor.ts';
import { arg, type KernelArg } from '../../runtime/kernels.ts';
import { mergeDims, type StridedOperand } from '../../runtime/kernel-sigs.ts';
import { aligned16 } from './rowreg.ts';

const U32_LIMIT = 2 ** 32;

/** the _rows kernel's arguments after the pointers and offsets (nv, vpr, r0, each input's
 *  s1, s0, inner) for y = f(inputs) (each input's layout broadcast to y's shape), or null where
 *  the shapes, strides or alignment do not fit it */
export function rowsArgs(y: RawTensor, inputs: readonly { t: RawTensor; op: StridedOperand }[]): KernelArg[] | null {
  const per = 16 / DTYPE_INFO[y.dtype].size;
  const { dims, strides } = mergeDims(y.layout.shape, [
    { strides: y.layout.strides, offset: y.layout.offset },
    ...inputs.map((i) => i.op),
  ]);
  if (dims.length < 1 || dims.length > 3) return null;
  // [R1, R0, C]: missing outer dims are 1, with stride 0
  while (dims.length < 3) {
    dims.unshift(1);
    for (const s of strides) s.unshift(0);
  }
  const [r1, r0, c] = dims as [number, number, number];
  if (strides[0]![2] !== 1 || c % per !== 0 || (r1 * r0 * c) / per >= U32_LIMIT || !aligned16(y)) return null;
  const out: KernelArg[] = [arg.u32((r1 * r0 * c) / per), arg.u32(c / per), arg.u32(r0)];
  for (let k = 0; k < inputs.length; k++) {
    const [s1, s0, unit] = strides[k + 1] as [number, number, number];
    if (unit !== 0 && unit !== 1) return null;
    // an input along the row starts each row on a 16-byte boundary (a broadcast keeps its offset)
    if (unit === 1 && (s1 % per !== 0 || s0 % per !== 0 || !aligned16(inputs[k]!.t))) return null;
    out.push(arg.i64(s1), arg.i64(s0), arg.u32(unit));
  }
  return out;
}
