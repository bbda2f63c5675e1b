// The CPU reference's plumbing: read any tensor (any layout, any dtype) as numbers in row-major
// order, and build a tensor from numbers (rounded to the dtype like the GPU kernels round).
import { DTYPE_INFO, getElem, setElem, toNumbers, type DType, type HostArray } from '../../core/dtype.ts';
import { Layout, type Shape } from '../../core/layout.ts';
import { Storage } from '../../device/storage.ts';
import { RawTensor } from '../../device/raw-tensor.ts';
import type { Device } from '../../device/device.ts';
import { moveBits } from './bits.ts';

/** logical elements as f64 (i64 beyond 2^53 loses bits: the reference computes in doubles) */
export function readNumbers(t: RawTensor): Float64Array {
  const host = t.storage.host;
  // a dense run needs no index list (building one took about as long as the reading)
  if (t.layout.isContiguous())
    return toNumbers(t.dtype, host.subarray(t.layout.offset, t.layout.offset + t.numel) as HostArray);
  const idx = t.layout.indices();
  const out = new Float64Array(idx.length);
  for (let i = 0; i < idx.length; i++) out[i] = getElem(t.dtype, host, idx[i]!);
  return out;
}

/** a new contiguous CPU tensor from numbers, each rounded to dtype */
export function fromNumbers(values: ArrayLike<number>, shape: Shape, dtype: DType, device: Device): RawTensor {
  const host = new DTYPE_INFO[dtype].hostArray(values.length);
  for (let i = 0; i < values.length; i++) setElem(dtype, host, i, values[i]!);
  return new RawTensor(Storage.fromHost(device, dtype, host), Layout.contiguous(shape), dtype);
}

/** raw elements (no conversion) in row-major order: exact for every dtype, i64 included */
export function readRaw(t: RawTensor): HostArray {
  const host = t.storage.host,
    n = t.numel,
    off = t.layout.offset;
  // a dense run is one memcpy; otherwise element by element, as bits (cpu/bits.ts says why)
  if (t.layout.isContiguous()) return (host as Float32Array).slice(off, off + n) as HostArray;
  const out = new DTYPE_INFO[t.dtype].hostArray(n);
  moveBits(host, t.layout.indices(), out, null, n);
  return out;
}

export function fromRaw(raw: HostArray, shape: Shape, dtype: DType, device: Device): RawTensor {
  return new RawTensor(Storage.fromHost(device, dtype, raw), Layout.contiguous(shape), dtype);
}
