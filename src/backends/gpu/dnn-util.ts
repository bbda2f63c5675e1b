// Shared by the MIOpen/cuDNN-backed GPU ops: contiguous operands and the per-channel bias add.
import type { Tensor } from '../../tensor/tensor.ts';
import type { DnnDType } from '../../runtime/gpu.ts';
import { contiguous } from '../../ops/copy.ts';
import { binary } from '../../ops/elementwise.ts';

/** the tensor itself when dense, else a contiguous copy the caller disposes (owned = true) */
export function dense(t: Tensor): { t: Tensor; owned: boolean } {
  return t.isContiguous() ? { t, owned: false } : { t: contiguous(t), owned: true };
}
export function release(...xs: { t: Tensor; owned: boolean }[]): void { for (const x of xs) if (x.owned) x.t.dispose(); }

/** out [n, c, h, w] + bias [c] per channel, as a new tensor (out is disposed) */
export function addChannelBias(out: Tensor, bias: Tensor | null): Tensor {
  if (!bias) return out;
  const b4 = bias.reshape([1, bias.numel, 1, 1]);
  const r = binary('add', out, b4);
  b4.dispose();
  out.dispose();
  return r;
}

export const dnnDType = (t: Tensor): DnnDType => t.dtype as DnnDType;
