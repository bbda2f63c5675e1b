// CPU reference for the indexing family. Element moves copy raw bits (exact for every dtype,
// i64 and the half types included); adds accumulate in f64 and round once on store. Every id is
// range-checked before anything is written.
import { DTYPE_INFO, type DType, type HostArray } from '../../core/dtype.ts';
import { IndexError } from '../../core/errors.ts';
import { contiguousStrides, type Shape } from '../../core/layout.ts';
import type { RawTensor } from '../../device/raw-tensor.ts';
import { sig } from '../checks.ts';
import { fromNumbers, fromRaw, readNumbers, readRaw } from './util.ts';

/** [product of dims before d, shape[d], product of dims after d] */
function split(shape: Shape, d: number): [number, number, number] {
  let outer = 1,
    inner = 1;
  for (let i = 0; i < d; i++) outer *= shape[i]!;
  for (let i = d + 1; i < shape.length; i++) inner *= shape[i]!;
  return [outer, shape[d]!, inner];
}

/** the row-major multi-index of flat position p in shape, as text */
function position(shape: Shape, p: number): string {
  const idx = new Array<number>(shape.length);
  for (let i = shape.length - 1; i >= 0; i--) {
    idx[i] = p % shape[i]!;
    p = Math.floor(p / shape[i]!);
  }
  return `[${idx.join(', ')}]`;
}

/**
 * The ids as numbers, each checked to lie in [0, size). `what` says which dim of which tensor
 * the ids address, for the error message.
 */
export function readIds(op: string, ids: RawTensor, size: number, what: string): Float64Array {
  const raw = readRaw(ids);
  const out = new Float64Array(raw.length);
  for (let i = 0; i < raw.length; i++) {
    const v = raw[i]!;
    // i64 ids are compared as bigints so huge values cannot round into range
    const ok = typeof v === 'bigint' ? v >= 0n && v < BigInt(size) : v < size;
    if (!ok) {
      throw new IndexError(
        `${op}: id ${String(v)} at position ${position(ids.layout.shape, i)} of ids ${sig(ids)} is out of range [0, ${size}) for ${what}`,
      );
    }
    out[i] = Number(v);
  }
  return out;
}

function newRaw(dtype: DType, n: number): HostArray {
  return new DTYPE_INFO[dtype].hostArray(n);
}

/** raw element copy dst[j] = src[i] that works for bigint and number arrays alike */
function move(dst: HostArray, j: number, src: HostArray, i: number): void {
  (dst as Float64Array)[j] = (src as Float64Array)[i]!;
}

export function indexSelect(x: RawTensor, ids: RawTensor, dim: number, outShape: Shape): RawTensor {
  const [outer, n, inner] = split(x.layout.shape, dim);
  const id = readIds('indexSelect', ids, n, `dim ${dim} of x ${sig(x)}`);
  const src = readRaw(x);
  const out = newRaw(x.dtype, outer * id.length * inner);
  let j = 0;
  for (let o = 0; o < outer; o++) {
    for (let k = 0; k < id.length; k++) {
      const base = (o * n + id[k]!) * inner;
      for (let i = 0; i < inner; i++) move(out, j++, src, base + i);
    }
  }
  return fromRaw(out, outShape, x.dtype, x.device);
}

export function gather(x: RawTensor, ids: RawTensor, dim: number): RawTensor {
  const xs = x.layout.shape,
    is = ids.layout.shape;
  const id = readIds('gather', ids, xs[dim]!, `dim ${dim} of x ${sig(x)}`);
  const src = readRaw(x);
  const xStr = contiguousStrides(xs);
  const out = newRaw(x.dtype, id.length);
  forEachIndex(is, (p, idx) => {
    let off = 0;
    for (let d = 0; d < idx.length; d++) off += (d === dim ? id[p]! : idx[d]!) * xStr[d]!;
    move(out, p, src, off);
  });
  return fromRaw(out, is, x.dtype, x.device);
}

export function scatter(x: RawTensor, ids: RawTensor, src: RawTensor, dim: number, add: boolean): RawTensor {
  const op = add ? 'scatterAdd' : 'scatter';
  const xs = x.layout.shape,
    is = ids.layout.shape;
  const id = readIds(op, ids, xs[dim]!, `dim ${dim} of x ${sig(x)}`);
  const xStr = contiguousStrides(xs),
    sStr = contiguousStrides(src.layout.shape);
  // target offset in x and source offset in src of each id, in row-major order of ids
  const tgt = new Float64Array(id.length),
    from = new Float64Array(id.length);
  forEachIndex(is, (p, idx) => {
    let t = 0,
      s = 0;
    for (let d = 0; d < idx.length; d++) {
      t += (d === dim ? id[p]! : idx[d]!) * xStr[d]!;
      s += idx[d]! * sStr[d]!;
    }
    tgt[p] = t;
    from[p] = s;
  });
  if (add) {
    const acc = readNumbers(x),
      sv = readNumbers(src);
    for (let p = 0; p < id.length; p++) acc[tgt[p]!] += sv[from[p]!]!;
    return fromNumbers(acc, xs, x.dtype, x.device);
  }
  const out = readRaw(x),
    sv = readRaw(src);
  // later ids overwrite earlier ones: with duplicates the last in row-major order wins
  for (let p = 0; p < id.length; p++) move(out, tgt[p]!, sv, from[p]!);
  return fromRaw(out, xs, x.dtype, x.device);
}

export function indexAdd(x: RawTensor, ids: RawTensor, src: RawTensor, dim: number): RawTensor {
  const [outer, n, inner] = split(x.layout.shape, dim);
  const id = readIds('indexAdd', ids, n, `dim ${dim} of x ${sig(x)}`);
  const acc = readNumbers(x),
    sv = readNumbers(src);
  let j = 0;
  for (let o = 0; o < outer; o++) {
    for (let k = 0; k < id.length; k++) {
      const base = (o * n + id[k]!) * inner;
      for (let i = 0; i < inner; i++) acc[base + i] += sv[j++]!;
    }
  }
  return fromNumbers(acc, x.layout.shape, x.dtype, x.device);
}

/** op: the name errors give (indexSetDistinct's writes are these too) */
export function indexSet(
  x: RawTensor,
  ids: RawTensor,
  src: RawTensor,
  dim: number,
  op: 'indexSet' | 'indexSetDistinct' = 'indexSet',
): void {
  const [outer, n, inner] = split(x.layout.shape, dim);
  const id = readIds(op, ids, n, `dim ${dim} of x ${sig(x)}`);
  const out = x.storage.host,
    sv = readRaw(src);
  const base0 = x.layout.offset;
  let j = 0;
  for (let o = 0; o < outer; o++) {
    for (let k = 0; k < id.length; k++) {
      const base = base0 + (o * n + id[k]!) * inner;
      for (let i = 0; i < inner; i++) move(out, base + i, sv, j++);
    }
  }
}

export function embedding(ids: RawTensor, table: RawTensor, outShape: Shape): RawTensor {
  const [vocab, hidden] = table.layout.shape as [number, number];
  const id = readIds('embedding', ids, vocab, `the rows of table ${sig(table)}`);
  const out = newRaw(table.dtype, id.length * hidden);
  if (table.layout.isContiguous()) {
    // rows straight from the table's storage: a [vocab, hidden] table is never copied whole
    const host = table.storage.host as Float32Array,
      off = table.layout.offset;
    for (let k = 0; k < id.length; k++) {
      const a = off + id[k]! * hidden;
      (out as Float32Array).set(host.subarray(a, a + hidden), k * hidden);
    }
    return fromRaw(out, outShape, table.dtype, table.device);
  }
  const src = readRaw(table);
  let j = 0;
  for (let k = 0; k < id.length; k++) for (let i = 0; i < hidden; i++) move(out, j++, src, id[k]! * hidden + i);
  return fromRaw(out, outShape, table.dtype, table.device);
}

/** calls fn(flat position, multi-index) for every element of shape in row-major order */
function forEachIndex(shape: Shape, fn: (p: number, idx: readonly number[]) => void): void {
  let n = 1;
  for (const s of shape) n *= s;
  if (n === 0) return;
  const idx = new Array<number>(shape.length).fill(0);
  for (let p = 0; p < n; p++) {
    fn(p, idx);
    for (let d = shape.length - 1; d >= 0; d--) {
      if (++idx[d]! < shape[d]!) break;
      idx[d] = 0;
    }
  }
}
