// CPU reference for the copy primitives: raw element moves, exact for every dtype.
import { numberToBf16Bits, numberToF16Bits, type HostArray } from '../../core/dtype.ts';
import type { RawTensor } from '../../device/raw-tensor.ts';
import { readRaw } from './util.ts';
import { moveBits } from './bits.ts';

export function copyInto(dst: RawTensor, src: RawTensor): void {
  // read everything first (src and dst may overlap: same storage), then write; bits, not numbers
  const vals = readRaw(src);
  moveBits(vals, null, dst.storage.host, dst.layout.indices(), vals.length);
}

/** value already rounded to the dtype */
export function constSet(x: RawTensor, value: number): void {
  const h = x.storage.host;
  const idx = x.layout.indices();
  if (h instanceof BigInt64Array) {
    const v = BigInt(value);
    for (let i = 0; i < idx.length; i++) h[idx[i]!] = v;
    return;
  }
  const bits = x.dtype === 'f16' || x.dtype === 'bf16' ? encode16(x.dtype, value) : value;
  const a = h as Float64Array;
  for (let i = 0; i < idx.length; i++) a[idx[i]!] = bits;
}

function encode16(d: 'f16' | 'bf16', v: number): number {
  return d === 'f16' ? numberToF16Bits(v) : numberToBf16Bits(v);
}

export function rawContiguous(x: RawTensor): HostArray {
  return readRaw(x);
}
