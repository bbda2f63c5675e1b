// Broadcast rows (hip-src/binary.hip: map2_rows, the _rows kernels): where a binary
// op's output, merged as packGeom merges it, is [R1, R0, C] and each input either runs along C
// with unit stride or holds one value per row, the op takes 16-byte vectors instead of the
// strided kernel's element-at-a-time walk (x + bias, x * weight, scores + mask over heads).
import { DTYPE_INFO } from '../../dtype.ts';
import type { Shape } from '../../layout.ts';
import { Tensor } from '../../tensor.ts';
import { arg, type KernelArg } from '../../runtime/kernels.ts';
import { mergeDims, type StridedOperand } from '../../runtime/kernel-sigs.ts';

const U32_LIMIT = 2 ** 32;

/** the _rows kernel's arguments after the pointers and offsets (nv, vpr, r0, each input's
 *  s1, s0, inner), or null where the shapes, strides or alignment do not fit it */
export function rowsArgs(outShape: Shape, y: Tensor, inputs: readonly { t: Tensor; op: StridedOperand }[]): KernelArg[] | null {
  const per = 16 / DTYPE_INFO[y.dtype].size;
  const yOp: StridedOperand = { strides: y.layout.strides, offset: y.layout.offset };
  const { dims, strides } = mergeDims(outShape, [yOp, ...inputs.map((i) => i.op)]);
  if (dims.length < 1 || dims.length > 3) return null;
  const inner = dims.length - 1, c = dims[inner]!;
  if (strides[0]![inner] !== 1 || c % per !== 0) return null;
  const numel = dims.reduce((a, b) => a * b, 1);
  if (numel / per >= U32_LIMIT) return null;
  if ((y.storage.ptrAt(y.layout.offset) as bigint) % 16n !== 0n) return null;
  const out: KernelArg[] = [arg.u32(numel / per), arg.u32(c / per), arg.u32(dims.length === 3 ? dims[1]! : dims.length === 2 ? dims[0]! : 1)];
  for (let k = 0; k < inputs.length; k++) {
    const s = strides[k + 1]!, unit = s[inner]!;
    if (unit !== 0 && unit !== 1) return null;
    // [R1, R0] from the outer merged dims (one or none of them makes the other 1)
    const s1 = dims.length === 3 ? s[0]! : 0, s0 = dims.length === 3 ? s[1]! : dims.length === 2 ? s[0]! : 0;
    if (unit === 1) {
      const { t, op } = inputs[k]!;
      if (s1 % per !== 0 || s0 % per !== 0 || (t.storage.ptrAt(op.offset) as bigint) % 16n !== 0n) return null;
    }
    out.push(arg.i64(s1), arg.i64(s0), arg.u32(unit));
  }
  return out;
}
