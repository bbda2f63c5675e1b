// Shared by the MIOpen/cuDNN-backed GPU ops: contiguous operands and the per-channel bias add.
import { type RawTensor, copyVia } from '../../device/raw-tensor.ts';
import type { DnnDType } from '../../runtime/gpu.ts';
import { copyInto, reshaped } from './copy.ts';
import { binary } from './elementwise.ts';

/**
 * the tensor itself when dense and 16-byte aligned, else a contiguous copy the caller disposes
 * (owned = true). The libraries' kernels may load vectors: a half tensor that starts at an odd
 * element of its storage (a view at an offset) made cuDNN's batch norm fault with a misaligned
 * address, so such views are copied too (a fresh allocation is aligned).
 */
export function dense(t: RawTensor): { t: RawTensor; owned: boolean } {
  if (libraryReady(t)) return { t, owned: false };
  return { t: copyVia(t, copyInto), owned: true };
}

/** whether the libraries take t as it is: dense and 16-byte aligned (see dense) */
export function libraryReady(t: RawTensor): boolean {
  return t.isContiguous() && t.storage.ptrAt(t.layout.offset) % 16n === 0n;
}

/** x [n, c, ...] as the libraries' [n, c, inner, 1] */
export function nchwOf(x: RawTensor): { n: number; c: number; h: number; w: number } {
  const s = x.layout.shape;
  let inner = 1;
  for (let i = 2; i < s.length; i++) inner *= s[i]!;
  return { n: s[0]!, c: s[1]!, h: inner, w: 1 };
}

/** dense(t)'s tensor, a copy kept in temps for the caller to dispose */
export function denseIn(t: RawTensor, temps: RawTensor[]): RawTensor {
  const d = dense(t);
  if (d.owned) temps.push(d.t);
  return d.t;
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
