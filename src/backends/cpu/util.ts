// The CPU reference's plumbing: walk tensors of any layout in row-major order without a list of
// element indices (the dims are merged where every operand's strides allow, then walked in runs
// along the last one), read runs as numbers, and build tensors from numbers (rounded to the dtype
// like the GPU kernels round). Memory stays proportional to the output: no per-element index
// array, no f64 copy of an operand unless an op asks for one (readNumbers).
import { DTYPE_INFO, toNumbers, getElem, roundTo, type DType, type HostArray } from '../../core/dtype.ts';
import { Layout, numel, type Shape } from '../../core/layout.ts';
import { Storage } from '../../device/storage.ts';
import { RawTensor } from '../../device/raw-tensor.ts';
import type { Device } from '../../device/device.ts';
import { allocHost } from '../../device/host-memory.ts';
import { decodeBf16, decodeF16, encodeBf16, encodeF16 } from './convert.ts';

/** elements a strided loop converts at a time */
export const CHUNK = 2048;

/** a shape walked by several operands at once: dims of size 1 dropped, neighbours merged where
 *  every operand's strides allow (outer stride = inner stride * inner size); at least one dim */
export interface Walk {
  readonly shape: number[];
  /** per operand, per merged dim */
  readonly strides: number[][];
}

export function walk(shape: Shape, strides: readonly (readonly number[])[]): Walk {
  if (numel(shape) === 0) return { shape: [0], strides: strides.map(() => [0]) };
  const ws: number[] = [],
    wst: number[][] = strides.map(() => []);
  for (let d = 0; d < shape.length; d++) {
    const n = shape[d]!;
    if (n === 1) continue;
    const last = ws.length - 1;
    if (last >= 0 && strides.every((s, j) => wst[j]![last] === s[d]! * n)) {
      ws[last] = ws[last]! * n;
      for (let j = 0; j < strides.length; j++) wst[j]![last] = strides[j]![d]!;
    } else {
      ws.push(n);
      for (let j = 0; j < strides.length; j++) wst[j]!.push(strides[j]![d]!);
    }
  }
  if (ws.length === 0) return { shape: [1], strides: strides.map(() => [0]) };
  return { shape: ws, strides: wst };
}

/**
 * Calls fn(offs, len) for each run along the walk's last dim, in row-major order: offs[j] is
 * operand j's storage index of the run's first element (fn must not keep or change offs), the
 * run steps by w.strides[j][last].
 */
export function forEachRun(w: Walk, bases: readonly number[], fn: (offs: number[], len: number) => void): void {
  const r = w.shape.length,
    len = w.shape[r - 1]!;
  if (len === 0) return;
  const k = bases.length;
  const offs = bases.slice();
  if (r === 1) {
    fn(offs, len);
    return;
  }
  const idx = new Array<number>(r - 1).fill(0);
  for (;;) {
    fn(offs, len);
    let d = r - 2;
    for (; d >= 0; d--) {
      idx[d]!++;
      for (let j = 0; j < k; j++) offs[j]! += w.strides[j]![d]!;
      if (idx[d]! < w.shape[d]!) break;
      for (let j = 0; j < k; j++) offs[j]! -= w.strides[j]![d]! * w.shape[d]!;
      idx[d] = 0;
    }
    if (d < 0) return;
  }
}

/** dst[d..d+len) = elements s, s + stride, ... of a host array of dtype, as numbers (getElem's values) */
export function gather(
  dtype: DType,
  src: HostArray,
  s: number,
  stride: number,
  dst: Float64Array,
  d: number,
  len: number,
): void {
  switch (dtype) {
    case 'f16':
      decodeF16(src as Uint16Array, s, stride, dst, d, len);
      return;
    case 'bf16':
      decodeBf16(src as Uint16Array, s, stride, dst, d, len);
      return;
    case 'i64': {
      const a = src as BigInt64Array;
      for (let i = 0; i < len; i++) dst[d + i] = Number(a[s + i * stride]!);
      return;
    }
    default: {
      const a = src as Float64Array;
      if (stride === 1) for (let i = 0; i < len; i++) dst[d + i] = a[s + i]!;
      else for (let i = 0; i < len; i++) dst[d + i] = a[s + i * stride]!;
    }
  }
}

/** out[o..o+len) = src[s..s+len) rounded to dtype (roundTo's rule; f16/bf16 as bits) */
export function scatter(dtype: DType, src: ArrayLike<number>, s: number, out: HostArray, o: number, len: number): void {
  switch (dtype) {
    case 'f16':
      encodeF16(src, s, out as Uint16Array, o, len);
      return;
    case 'bf16':
      encodeBf16(src, s, out as Uint16Array, o, len);
      return;
    case 'i64': {
      const a = out as BigInt64Array;
      for (let i = 0; i < len; i++) a[o + i] = BigInt(roundTo('i64', src[s + i]!));
      return;
    }
    // a typed-array store rounds as roundTo does: f32 to nearest even, u8/u32 truncate toward zero
    // and wrap (NaN and infinities to 0)
    default: {
      const a = out as Float64Array;
      for (let i = 0; i < len; i++) a[o + i] = src[s + i]!;
    }
  }
}

/** a new host array for an output the caller writes in full (from the cache of freed blocks when one fits) */
export function outArray(dtype: DType, n: number): HostArray {
  return allocHost(dtype, n, false);
}

/** calls fn(buf, len, pos) for t's elements in row-major order, CHUNK at a time, read into buf as numbers */
export function forEachChunk(t: RawTensor, fn: (buf: Float64Array, len: number, pos: number) => void): void {
  const host = t.storage.host,
    dtype = t.dtype;
  const w = walk(t.layout.shape, [t.layout.strides]);
  const st = w.strides[0]![w.shape.length - 1]!;
  const buf = new Float64Array(CHUNK);
  let pos = 0;
  forEachRun(w, [t.layout.offset], (offs, len) => {
    for (let c = 0; c < len; c += CHUNK) {
      const m = Math.min(CHUNK, len - c);
      gather(dtype, host, offs[0]! + c * st, st, buf, 0, m);
      fn(buf, m, pos);
      pos += m;
    }
  });
}

/** logical elements as f64 (i64 beyond 2^53 loses bits: the reference computes in doubles) */
export function readNumbers(t: RawTensor): Float64Array {
  const host = t.storage.host;
  if (t.layout.isContiguous())
    return toNumbers(t.dtype, host.subarray(t.layout.offset, t.layout.offset + t.numel) as HostArray);
  const out = new Float64Array(t.numel);
  forEachChunk(t, (buf, len, pos) => out.set(buf.subarray(0, len), pos));
  return out;
}

/** a new contiguous CPU tensor from numbers, each rounded to dtype */
export function fromNumbers(values: ArrayLike<number>, shape: Shape, dtype: DType, device: Device): RawTensor {
  const host = outArray(dtype, values.length);
  scatter(dtype, values, 0, host, 0, values.length);
  return new RawTensor(Storage.fromHost(device, dtype, host), Layout.contiguous(shape), dtype);
}

/**
 * The array's elements as integers of its width (8-byte elements as two 32-bit words). Copies go
 * through these: a float read into a JS number and written back is not always the same bits
 * (JavaScriptCore, in Bun, canonicalizes every NaN payload; V8 quiets signalling NaNs), and the
 * CPU's copies promise exact bits as a GPU copy keeps them (no BigInt per i64 element either).
 */
export function words(a: HostArray): { w: Uint8Array | Uint16Array | Uint32Array; per: 1 | 2 } {
  if (a instanceof Float64Array || a instanceof BigInt64Array)
    return { w: new Uint32Array(a.buffer, a.byteOffset, a.length * 2), per: 2 };
  if (a instanceof Float32Array) return { w: new Uint32Array(a.buffer, a.byteOffset, a.length), per: 1 };
  return { w: a, per: 1 };
}

/** copies t's elements, as bits, into `out` (t's dtype's host array) from element `at`, in row-major order */
export function copyRawInto(t: RawTensor, out: HostArray, at = 0): void {
  const s = words(t.storage.host),
    d = words(out);
  // walked in words: every stride and offset times the words an element
  const w = walk(t.layout.shape, [t.layout.strides.map((x) => x * s.per)]);
  const st = w.strides[0]![w.shape.length - 1]!;
  const sw = s.w,
    dw = d.w;
  let p = at * d.per;
  forEachRun(w, [t.layout.offset * s.per], (offs, len) => {
    const o = offs[0]!;
    if (s.per === 1) {
      if (st === 1) {
        dw.set(sw.subarray(o, o + len), p);
        p += len;
      } else for (let i = 0; i < len; i++) dw[p++] = sw[o + i * st]!;
    } else if (st === 2) {
      dw.set(sw.subarray(o, o + 2 * len), p);
      p += 2 * len;
    } else {
      for (let i = 0; i < len; i++) {
        dw[p++] = sw[o + i * st]!;
        dw[p++] = sw[o + i * st + 1]!;
      }
    }
  });
}

/** raw elements (no conversion) in row-major order: exact for every dtype, i64 included. The
 *  array is new (never cached memory): readbacks hand it to the caller. */
export function readRaw(t: RawTensor): HostArray {
  const host = t.storage.host,
    n = t.numel,
    off = t.layout.offset;
  // a dense run is one memcpy; otherwise run by run, as bits
  if (t.layout.isContiguous()) return (host as Float32Array).slice(off, off + n) as HostArray;
  const out = new DTYPE_INFO[t.dtype].hostArray(n);
  copyRawInto(t, out);
  return out;
}

export function fromRaw(raw: HostArray, shape: Shape, dtype: DType, device: Device): RawTensor {
  return new RawTensor(Storage.fromHost(device, dtype, raw), Layout.contiguous(shape), dtype);
}

/** one element as a number (small reads: scalars, the reference's spot checks) */
export function elemAt(t: RawTensor, i: number): number {
  return getElem(t.dtype, t.storage.host, i);
}

/**
 * Calls fn(start, p) for each line of t along `dim`: the other dims in row-major order, p
 * counting lines from 0; the line's elements are at start + j * t.layout.strides[dim] (a rank-0
 * tensor is one line of one element).
 */
export function forEachLine(t: RawTensor, dim: number, fn: (start: number, p: number) => void): void {
  const shape = t.layout.shape.filter((_, i) => i !== dim),
    strides = t.layout.strides.filter((_, i) => i !== dim);
  const w = walk(shape, [strides]);
  const st = w.strides[0]![w.shape.length - 1]!;
  let p = 0;
  forEachRun(w, [t.layout.offset], (offs, len) => {
    for (let i = 0; i < len; i++) fn(offs[0]! + i * st, p++);
  });
}

/** out[o], out[o + stride], ... (len of them) = src[s..s+len) rounded to dtype */
export function scatterStrided(
  dtype: DType,
  src: Float64Array,
  s: number,
  out: HostArray,
  o: number,
  stride: number,
  len: number,
  tmp: HostArray,
): void {
  if (stride === 1) {
    scatter(dtype, src, s, out, o, len);
    return;
  }
  scatter(dtype, src, s, tmp, 0, len);
  const a = out as Float64Array,
    t = tmp as Float64Array;
  for (let i = 0; i < len; i++) a[o + i * stride] = t[i]!;
}

/** t's values broadcast to `shape` (row-major), as numbers */
export function readBroadcast(t: RawTensor, shape: Shape): Float64Array {
  const v = t.view(t.layout.broadcastAs(shape));
  try {
    return readNumbers(v);
  } finally {
    v.dispose();
  }
}
