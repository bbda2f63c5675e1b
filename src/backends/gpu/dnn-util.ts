// Shared by the MIOpen/cuDNN-backed GPU ops: contiguous operands and the per-channel bias add.
import type { RawTensor } from '../../device/raw-tensor.ts';
import type { DnnDType } from '../../runtime/gpu.ts';
import { contiguous, reshaped } from './copy.ts';
import { binary } from './elementwise.ts';

/** the tensor itself when dense, else a contiguous copy the caller disposes (owned = true) */
export function dense(t: RawTensor): { t: RawTensor; owned: boolean } {
  return t.isContiguous() ? { t, owned: false } : { t: contiguous(t), owned: true };
}
export function release(...xs: { t: RawTensor; owned: boolean }[]): void {
  for (const x of xs) if (x.owned) x.t.dispose();
}

/** out [n, c, h, w] + bias [c] per channel, as a new tensor (out is disposed) */
export function addChannelBias(out: RawTensor, bias: RawTensor | null): RawTensor {
  if (!bias) return out;
  const b4 = reshaped(bias, [1, bias.numel, 1, 1]);
  const r = binary('add', out, b4, out.layout.shape);
  b4.dispose();
  out.dispose();
  return r;
}

export const dnnDType = (t: RawTensor): DnnDType => t.dtype as DnnDType;
