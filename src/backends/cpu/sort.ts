// CPU reference for argsort / sort / topk along one dim: a stable sort of each row's positions
// with NaN treated as larger than every number (last ascending, first descending, like
// PyTorch). Keys are compared exactly: floats as f64, i64 as bigints. topk is the first k of
// that sort (descending for the largest): ties by index, NaN counted as the largest.
import type { HostArray } from '../../core/dtype.ts';
import type { RawTensor } from '../../device/raw-tensor.ts';
import { fromRaw, readNumbers, readRaw } from './util.ts';

type Keys = Float64Array | BigInt64Array;

function compare(a: number | bigint, b: number | bigint): number {
  if (typeof a === 'number' && typeof b === 'number') {
    const na = Number.isNaN(a),
      nb = Number.isNaN(b);
    if (na || nb) return na === nb ? 0 : na ? 1 : -1;
  }
  return a < b ? -1 : a > b ? 1 : 0;
}

/** the tensor as rows along dim: outer * inner rows of n, element k of a row `inner` apart */
function geometry(x: RawTensor, dim: number): { outer: number; inner: number; n: number } {
  const shape = x.layout.shape;
  let outer = 1,
    inner = 1;
  for (let i = 0; i < dim; i++) outer *= shape[i]!;
  for (let i = dim + 1; i < shape.length; i++) inner *= shape[i]!;
  return { outer, inner, n: shape.length === 0 ? 1 : shape[dim]! };
}

/** for each row along dim: the sorted positions, in row-major order of the output */
function order(x: RawTensor, dim: number, descending: boolean): Uint32Array {
  const { outer, inner, n } = geometry(x, dim);
  const keys: Keys = x.dtype === 'i64' ? (readRaw(x) as BigInt64Array) : readNumbers(x);
  const out = new Uint32Array(outer * n * inner);
  const pos = new Array<number>(n);
  const sign = descending ? -1 : 1;
  for (let o = 0; o < outer; o++) {
    for (let i = 0; i < inner; i++) {
      const base = o * n * inner + i;
      for (let k = 0; k < n; k++) pos[k] = k;
      // Array.prototype.sort is stable (ES2019); ties fall back to position to say so outright
      pos.sort((p, q) => sign * compare(keys[base + p * inner]!, keys[base + q * inner]!) || p - q);
      for (let k = 0; k < n; k++) out[base + k * inner] = pos[k]!;
    }
  }
  return out;
}

export function argsort(x: RawTensor, dim: number, descending: boolean): RawTensor {
  return fromRaw(order(x, dim, descending), x.layout.shape, 'u32', x.device);
}

export function sort(x: RawTensor, dim: number, descending: boolean): { values: RawTensor; indices: RawTensor } {
  return topk(x, dim, geometry(x, dim).n, descending);
}

/** the first k of each row's stable sort (descending for largest); k = n is sort itself */
export function topk(
  x: RawTensor,
  dim: number,
  k: number,
  largest: boolean,
): { values: RawTensor; indices: RawTensor } {
  const all = order(x, dim, largest);
  const { outer, inner, n } = geometry(x, dim);
  const shape = x.layout.shape.length === 0 ? [] : x.layout.shape.map((s, i) => (i === dim ? k : s));
  const src = readRaw(x) as Float64Array;
  const vals = new (src.constructor as { new (n: number): Float64Array })(outer * k * inner);
  const idx = new Uint32Array(outer * k * inner);
  for (let o = 0; o < outer; o++) {
    for (let j = 0; j < k; j++) {
      for (let i = 0; i < inner; i++) {
        const from = o * n * inner + i,
          at = (o * k + j) * inner + i;
        const p = all[from + j * inner]!;
        idx[at] = p;
        vals[at] = src[from + p * inner]!;
      }
    }
  }
  return {
    values: fromRaw(vals as unknown as HostArray, shape, x.dtype, x.device),
    indices: fromRaw(idx, shape, 'u32', x.device),
  };
}
