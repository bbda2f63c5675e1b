// Shared argument checks of the op dispatchers.
import type { RawTensor } from '../device/raw-tensor.ts';
import { DTYPES, FLOAT_DTYPES, INDEX_DTYPES as INDEX_IDS, type DType } from '../core/dtype.ts';
import { DTypeError, NotOnDeviceError, TensorError, fmtShape } from '../core/errors.ts';

export function sig(t: RawTensor): string {
  return `${fmtShape(t.layout.shape)} ${t.dtype}`;
}

/** all tensors on one device */
export function sameDevice(op: string, ...ts: RawTensor[]): void {
  const d = ts[0]!.device;
  for (const t of ts) {
    if (t.device !== d)
      throw new TensorError(
        `${op}: tensors on different devices (${ts.map((x) => `${sig(x)} on ${x.device}`).join(', ')})`,
      );
  }
}
/** all tensors of one dtype */
export function sameDType(op: string, ...ts: RawTensor[]): void {
  for (const t of ts) {
    if (t.dtype !== ts[0]!.dtype) throw new DTypeError(`${op}: dtype mismatch (${ts.map(sig).join(' vs ')})`);
  }
}
export function dtypeIn(op: string, t: RawTensor, allowed: readonly DType[]): void {
  if (!allowed.includes(t.dtype))
    throw new DTypeError(`${op}: dtype ${t.dtype} not supported (tensor ${sig(t)}; supported: ${allowed.join(', ')})`);
}
export function notOnDevice(op: string, t: RawTensor): never {
  throw new NotOnDeviceError(`${op}: not on ${t.device.kind} devices yet (tensor ${sig(t)} on ${t.device})`);
}
/** batch norm's per-channel tensors' dtype beside x: f32 for half types (what MIOpen and cuDNN
 *  take), else x's */
export const batchNormParamDType = (x: RawTensor): DType => (x.dtype === 'f16' || x.dtype === 'bf16' ? 'f32' : x.dtype);

export const FLOATS: readonly DType[] = FLOAT_DTYPES;
export const ALL_DTYPES: readonly DType[] = DTYPES;
export const INDEX_DTYPES: readonly DType[] = INDEX_IDS;
