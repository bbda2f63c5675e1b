// CPU reference for dtype casts. Numbers round per roundTo (floats to nearest even, ints
// truncate toward zero and wrap, NaN -> 0); i64 sources go through BigInt so the wrap to
// u8/u32 is exact for values beyond 2^53. Converted CHUNK elements at a time, run by run.
import type { DType } from '../../core/dtype.ts';
import type { RawTensor } from '../../device/raw-tensor.ts';
import { forEachChunk, forEachRun, fromRaw, outArray, scatter, walk } from './util.ts';

/** x -> dtype, a new contiguous tensor; dtype differs from x.dtype (the dispatcher saw to it) */
export function cast(x: RawTensor, dtype: DType): RawTensor {
  const shape = x.layout.shape;
  const out = outArray(dtype, x.numel);
  if (x.dtype === 'i64' && (dtype === 'u8' || dtype === 'u32')) {
    const bits = dtype === 'u8' ? 8 : 32;
    const src = x.storage.host as BigInt64Array,
      o = out as Uint32Array;
    const w = walk(shape, [x.layout.strides]);
    const st = w.strides[0]![w.shape.length - 1]!;
    let p = 0;
    forEachRun(w, [x.layout.offset], (offs, len) => {
      for (let i = 0; i < len; i++) o[p++] = Number(BigInt.asUintN(bits, src[offs[0]! + i * st]!));
    });
  } else forEachChunk(x, (buf, len, pos) => scatter(dtype, buf, 0, out, pos, len));
  return fromRaw(out, shape, dtype, x.device);
}
