// CPU reference for dtype casts. Numbers round per roundTo (floats to nearest even, ints
// truncate toward zero and wrap, NaN -> 0); i64 sources go through BigInt so the wrap to
// u8/u32 is exact for values beyond 2^53.
import type { DType } from '../../core/dtype.ts';
import type { RawTensor } from '../../device/raw-tensor.ts';
import { fromNumbers, fromRaw, readNumbers, readRaw } from './util.ts';

/** x -> dtype, a new contiguous tensor; dtype differs from x.dtype (the dispatcher saw to it) */
export function cast(x: RawTensor, dtype: DType): RawTensor {
  const shape = x.layout.shape;
  if (x.dtype === 'i64') {
    const raw = readRaw(x) as BigInt64Array;
    if (dtype === 'u8' || dtype === 'u32') {
      const bits = dtype === 'u8' ? 8 : 32;
      const out = dtype === 'u8' ? new Uint8Array(raw.length) : new Uint32Array(raw.length);
      for (let i = 0; i < raw.length; i++) out[i] = Number(BigInt.asUintN(bits, raw[i]!));
      return fromRaw(out, shape, dtype, x.device);
    }
    return fromNumbers(Array.from(raw, Number), shape, dtype, x.device);
  }
  return fromNumbers(readNumbers(x), shape, dtype, x.device);
}
