// Device -> host readback. Async by default (pinned staging, async copy, event polled without
// blocking the event loop); the sync form is named as such at the Tensor level.
import { DTYPE_INFO, getElem, type DType, type HostArray } from '../core/dtype.ts';
import type { RawTensor } from '../device/raw-tensor.ts';
import { readRaw } from '../backends/cpu/util.ts';
import { contiguous } from '../backends/gpu/copy.ts';
import { throwPendingDeviceError } from '../runtime/device-errors.ts';

export function toHostArray(t: RawTensor, sync: true): HostArray;
export function toHostArray(t: RawTensor, sync: false): Promise<HostArray>;
export function toHostArray(t: RawTensor, sync: boolean): HostArray | Promise<HostArray> {
  if (t.device.isCpu) return sync ? readRaw(t) : Promise.resolve(readRaw(t));
  const c = t.isContiguous() ? t : contiguous(t);
  const bytes = c.numel * DTYPE_INFO[t.dtype].size;
  const ptr = c.storage.ptrAt(c.layout.offset);
  const wrap = (u8: Uint8Array): HostArray => new DTYPE_INFO[t.dtype].hostArray(u8.buffer, u8.byteOffset, c.numel);
  if (sync) {
    try {
      const u8 = t.device.downloadSync(ptr, bytes);
      // a kernel that met a bad index reports it at the next readback, like an async CUDA error
      throwPendingDeviceError(t.device);
      return wrap(u8);
    } finally {
      if (c !== t) c.dispose();
    }
  }
  // the copy is queued now, so disposing c right after cannot free memory it still reads:
  // the allocator only reuses a block on the same stream, after the copy in stream order
  const p = t.device.download(ptr, bytes);
  if (c !== t) c.dispose();
  return p.then((u8) => {
    throwPendingDeviceError(t.device);
    return wrap(u8);
  });
}

export function hostToNumbers(dtype: DType, a: HostArray): Float64Array {
  const out = new Float64Array(a.length);
  for (let i = 0; i < a.length; i++) out[i] = getElem(dtype, a, i);
  return out;
}
