// CPU reference for the copy primitives: raw element moves, exact for every dtype (bits, not
// numbers: cpu/util.ts words() says why), walked run by run without index arrays.
import { numberToBf16Bits, numberToF16Bits, type HostArray } from '../../core/dtype.ts';
import type { RawTensor } from '../../device/raw-tensor.ts';
import { forEachRun, readRaw, walk, words } from './util.ts';

/** dst's elements (in row-major order) = src's elements (same shape); src and dst may share storage */
export function copyInto(dst: RawTensor, src: RawTensor): void {
  // the same storage may overlap: read everything first, then write
  if (src.storage === dst.storage) {
    const vals = words(readRaw(src));
    moveRuns(dst, vals.w, vals.per);
    return;
  }
  const s = words(src.storage.host),
    d = words(dst.storage.host);
  if (s.per !== d.per) throw new Error('copyInto: element widths differ');
  const per = s.per,
    sw = s.w,
    dw = d.w;
  // walked in words: every stride and offset times the words an element
  const w = walk(dst.layout.shape, [dst.layout.strides.map((x) => x * per), src.layout.strides.map((x) => x * per)]);
  const r = w.shape.length - 1;
  const ds = w.strides[0]![r]!,
    ss = w.strides[1]![r]!;
  forEachRun(w, [dst.layout.offset * per, src.layout.offset * per], (offs, len) => {
    const o = offs[0]!,
      i0 = offs[1]!;
    if (ds === per && ss === per) dw.set(sw.subarray(i0, i0 + len * per), o);
    else if (per === 1) for (let i = 0; i < len; i++) dw[o + i * ds] = sw[i0 + i * ss]!;
    else
      for (let i = 0; i < len; i++) {
        dw[o + i * ds] = sw[i0 + i * ss]!;
        dw[o + i * ds + 1] = sw[i0 + i * ss + 1]!;
      }
  });
}

/** dst's elements in row-major order = the elements of src (as words, `per` a element) */
function moveRuns(dst: RawTensor, src: Uint8Array | Uint16Array | Uint32Array, per: 1 | 2): void {
  const dw = words(dst.storage.host).w;
  const w = walk(dst.layout.shape, [dst.layout.strides.map((x) => x * per)]);
  const ds = w.strides[0]![w.shape.length - 1]!;
  let p = 0;
  forEachRun(w, [dst.layout.offset * per], (offs, len) => {
    const o = offs[0]!;
    if (ds === per) {
      dw.set(src.subarray(p, p + len * per), o);
      p += len * per;
    } else if (per === 1) for (let i = 0; i < len; i++) dw[o + i * ds] = src[p++]!;
    else
      for (let i = 0; i < len; i++) {
        dw[o + i * ds] = src[p++]!;
        dw[o + i * ds + 1] = src[p++]!;
      }
  });
}

/** value already rounded to the dtype */
export function constSet(x: RawTensor, value: number): void {
  const h = x.storage.host;
  const v: number | bigint =
    h instanceof BigInt64Array
      ? BigInt(value)
      : x.dtype === 'f16'
        ? numberToF16Bits(value)
        : x.dtype === 'bf16'
          ? numberToBf16Bits(value)
          : value;
  const w = walk(x.layout.shape, [x.layout.strides]);
  const st = w.strides[0]![w.shape.length - 1]!;
  const a = h as Float64Array;
  forEachRun(w, [x.layout.offset], (offs, len) => {
    const o = offs[0]!;
    if (st === 1) (h as Float64Array).fill(v as number, o, o + len);
    else if (typeof v === 'bigint') for (let i = 0; i < len; i++) (h as BigInt64Array)[o + i * st] = v;
    else for (let i = 0; i < len; i++) a[o + i * st] = v;
  });
}

export function rawContiguous(x: RawTensor): HostArray {
  return readRaw(x);
}
