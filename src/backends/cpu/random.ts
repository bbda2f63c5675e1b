// CPU reference of the random ops: the numbers of hip-src/random.hip, bit for bit, from the
// Philox words of src/backends/cpu/philox.ts (which documents the seed and counter mapping). The
// words, rand's and randn's values (in every float dtype) and the f32 -> f16/bf16 rounding come
// from the WebAssembly module (random-wasm.ts, SIMD); the rest is typed-array loops over the
// module's chunks of words, writing each op's dtype directly (one pass, no array of numbers in
// between, no BigInt per element). Like the views of the module's memory, the i64 stores assume
// a little-endian host (low word first).
import { DTYPE_INFO, numberToBf16Bits, numberToF16Bits, type DType, type HostArray } from '../../core/dtype.ts';
import { DTypeError } from '../../core/errors.ts';
import { logU24 } from './philox.ts';
import { dropoutF32, eachInteger, eachWords, floats, halfFromF32, philoxWords, type FloatOut } from './random-wasm.ts';

const fr = Math.fround;
const U24 = 2 ** -24,
  U53 = 2 ** -53;

function floatOut(op: string, dtype: DType): FloatOut {
  if (dtype === 'f32' || dtype === 'f64' || dtype === 'f16' || dtype === 'bf16') return dtype;
  throw new DTypeError(`${op}: dtype ${dtype} is not a float dtype`);
}

/** uniform [0, 1): f32 (w >>> 8) 2^-24; f64 53 bits from two words; f16/bf16 from the f32,
 *  with a value that rounds to 1.0 replaced by the largest value below 1 */
export function rand(n: number, k0: number, k1: number, dtype: DType): HostArray {
  if (dtype !== 'f64') return floats('uniform', n, k0, k1, floatOut('rand', dtype));
  const out = new Float64Array(n);
  eachWords(2 * n, k0, k1, (w, at, count) => {
    for (let j = 0, i = at / 2; j < count; j += 2, i++) out[i] = ((w[j]! >>> 5) * 67108864 + (w[j + 1]! >>> 6)) * U53;
  });
  return out;
}

/** standard normal: the inverse normal CDF of each word (normal.ts), in f32; f64 is the f32
 *  value widened, f16/bf16 the f32 value rounded */
export function randn(n: number, k0: number, k1: number, dtype: DType): HostArray {
  return floats('normal', n, k0, k1, floatOut('randn', dtype));
}

/** integers low + k, k uniform in [0, range): k = floor(w range / 2^64) of element i's 64-bit
 *  draw (words 2(i & 1), 2(i & 1) + 1), as hip-src's scale64, computed by the module as i64;
 *  every value is exact in dtype (random.ts checked the bounds), so the rest are plain stores */
export function randint(n: number, k0: number, k1: number, low: number, range: number, dtype: DType): HostArray {
  if (dtype === 'i64') {
    const out = new BigInt64Array(n),
      words = new Int32Array(out.buffer);
    eachInteger(n, k0, k1, low, range, (v, at, count) => words.set(v.subarray(0, 2 * count), 2 * at));
    return out;
  }
  if (dtype === 'u8' || dtype === 'u32') {
    const out = new DTYPE_INFO[dtype].hostArray(n) as Uint8Array | Uint32Array; // the low word
    eachInteger(n, k0, k1, low, range, (v, at, count) => {
      for (let j = 0; j < count; j++) out[at + j] = v[2 * j]!;
    });
    return out;
  }
  // floats: f16/bf16 (integers to 2048 and 256) through f32, which holds them exactly
  const out = dtype === 'f64' ? new Float64Array(n) : new Float32Array(n);
  eachInteger(n, k0, k1, low, range, (v, at, count) => {
    for (let j = 0; j < count; j++) out[at + j] = v[2 * j + 1]! * 4294967296 + (v[2 * j]! >>> 0);
  });
  return dtype === 'f16' || dtype === 'bf16' ? halfFromF32(out as Float32Array, dtype) : out;
}

/** zeros of dtype and where to write a 1: element i's 1 is `one` at view[stride i] (f16/bf16
 *  as bits; i64 as its low 32-bit word) */
function zerosFor(
  dtype: DType,
  n: number,
): {
  out: HostArray;
  view: Float64Array | Float32Array | Uint8Array | Uint16Array | Uint32Array | Int32Array;
  one: number;
  stride: number;
} {
  const out = new DTYPE_INFO[dtype].hostArray(n);
  if (out instanceof BigInt64Array) return { out, view: new Int32Array(out.buffer), one: 1, stride: 2 };
  return {
    out,
    view: out,
    one: dtype === 'f16' ? numberToF16Bits(1) : dtype === 'bf16' ? numberToBf16Bits(1) : 1,
    stride: 1,
  };
}

/** 1 where (w >>> 8) < thr (that is u < p for thr = ceil(p 2^24)), else 0 */
export function bernoulliScalar(n: number, k0: number, k1: number, thr: number, dtype: DType): HostArray {
  const { out, view, one, stride } = zerosFor(dtype, n);
  eachWords(n, k0, k1, (w, at, count) => {
    for (let j = 0; j < count; j++) if (w[j]! >>> 8 < thr) view[stride * (at + j)] = one;
  });
  return out;
}

/** 1 where u < p[i] (exact comparison: u and p are both exact doubles) */
export function bernoulliTensor(p: Float64Array, k0: number, k1: number, dtype: DType): HostArray {
  const { out, view, one, stride } = zerosFor(dtype, p.length);
  eachWords(p.length, k0, k1, (w, at, count) => {
    for (let j = 0; j < count; j++) if ((w[j]! >>> 8) * U24 < p[at + j]!) view[stride * (at + j)] = one;
  });
  return out;
}

/** x[i] * scale where (w >>> 8) >= thr, else 0; the product rounded like the kernel (f32 for
 *  f32/f16/bf16 data, by the module, then to the dtype; f64 here) */
export function dropout(
  x: Float32Array | Float64Array,
  k0: number,
  k1: number,
  thr: number,
  scale: number,
  dtype: DType,
): HostArray {
  const to = floatOut('dropout', dtype);
  if (to !== 'f64') return dropoutF32(x, k0, k1, thr, scale, to);
  const out = new Float64Array(x.length);
  // a select, not a branch around the store: that one mispredicted a tenth of the time at p = 0.1
  eachWords(x.length, k0, k1, (w, at, count) => {
    for (let j = 0; j < count; j++) out[at + j] = w[j]! >>> 8 >= thr ? x[at + j]! * scale : 0;
  });
  return out;
}

/** exponential-race keys E / p, E = -log(((w >>> 8) + 1) 2^-24), in f32; p <= 0 or NaN: +inf */
export function multinomialKeys(p: Float64Array, k0: number, k1: number): Float32Array {
  const n = p.length,
    w = philoxWords(Math.ceil(n / 4), k0, k1),
    out = new Float32Array(n);
  for (let i = 0; i < n; i++) {
    const pk = fr(p[i]!);
    out[i] = pk > 0 ? -logU24((w[i]! >>> 8) + 1) / pk : Infinity;
  }
  return out;
}

/** running sums of each row in f64, in the kernel's order: 256 chunks of ceil(cols / 256)
 *  summed left to right, offset by the chunk totals summed left to right */
export function multinomialCdf(p: Float64Array, rows: number, cols: number): Float64Array {
  const out = new Float64Array(rows * cols),
    len = Math.ceil(cols / 256),
    tot = new Float64Array(256);
  for (let r = 0; r < rows; r++) {
    const base = r * cols;
    for (let c = 0; c < 256; c++) {
      let s = 0;
      for (let j = c * len; j < cols && j < (c + 1) * len; j++) s += p[base + j]!;
      tot[c] = s;
    }
    let run = 0;
    for (let c = 0; c < 256; c++) {
      const t = tot[c]!;
      tot[c] = run;
      run += t;
    }
    for (let c = 0; c < 256; c++) {
      let s = tot[c]!;
      for (let j = c * len; j < cols && j < (c + 1) * len; j++) {
        s += p[base + j]!;
        out[base + j] = s;
      }
    }
  }
  return out;
}

/** sample s of row r: the first index whose running sum exceeds u * total, u the 53-bit
 *  uniform of element r * ns + s; past the end, the last index with a nonzero probability */
export function multinomialDraw(
  cdf: Float64Array,
  rows: number,
  cols: number,
  ns: number,
  k0: number,
  k1: number,
): Float64Array {
  const total = rows * ns,
    w = philoxWords(Math.ceil(total / 2), k0, k1),
    out = new Float64Array(total);
  for (let e = 0; e < total; e++) {
    const a = w[2 * e]!,
      b = w[2 * e + 1]!;
    const base = Math.floor(e / ns) * cols;
    const target = ((a >>> 5) * 67108864 + (b >>> 6)) * U53 * cdf[base + cols - 1]!;
    let lo = 0,
      hi = cols;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (cdf[base + mid]! > target) hi = mid;
      else lo = mid + 1;
    }
    if (lo === cols) {
      lo = cols - 1;
      while (lo > 0 && cdf[base + lo - 1] === cdf[base + lo]) lo--;
    }
    out[e] = lo;
  }
  return out;
}
