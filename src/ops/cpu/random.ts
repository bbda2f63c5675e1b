// CPU reference of the random ops: the numbers of hip-src/random.hip, bit for bit, from the
// Philox words of src/ops/cpu/philox.ts (which documents the seed and counter mapping). The
// words, rand's f32 and randn's f32 come from the WebAssembly module (random-wasm.ts, SIMD);
// the rest is typed-array loops over those words.
import { numberToBf16Bits, numberToF16Bits, roundTo, DTYPE_INFO, type DType, type HostArray } from '../../dtype.ts';
import { logU24, mulhi } from './philox.ts';
import { normalF32, philoxWords, uniformF32 } from './random-wasm.ts';

const fr = Math.fround;
const U24 = 2 ** -24, U53 = 2 ** -53;

/** f32 values into a host array of a float dtype, each rounded once (f16/bf16 from the f32) */
function fromF32(v: Float32Array, dtype: DType): HostArray {
  if (dtype === 'f32') return v;
  if (dtype === 'f64') return Float64Array.from(v);
  const out = new Uint16Array(v.length);
  const enc = dtype === 'f16' ? numberToF16Bits : numberToBf16Bits;
  for (let i = 0; i < v.length; i++) out[i] = enc(v[i]!);
  return out;
}

/** uniform [0, 1): f32 (w >>> 8) 2^-24; f64 53 bits from two words; f16/bf16 from the f32,
 *  with a value that rounds to 1.0 replaced by the largest value below 1 */
export function rand(n: number, k0: number, k1: number, dtype: DType): HostArray {
  if (dtype === 'f64') {
    const out = new Float64Array(n), w = philoxWords(Math.ceil(n / 2), k0, k1);
    for (let i = 0; i < n; i++) out[i] = ((w[2 * i]! >>> 5) * 67108864 + (w[2 * i + 1]! >>> 6)) * U53;
    return out;
  }
  const out = fromF32(uniformF32(n, k0, k1), dtype);
  if (dtype === 'f16' || dtype === 'bf16') {
    const one = dtype === 'f16' ? 0x3c00 : 0x3f80, below = one - 1, h = out as Uint16Array;
    for (let i = 0; i < n; i++) if (h[i] === one) h[i] = below;
  }
  return out;
}

/** standard normal: the inverse normal CDF of each word (normal.ts), in f32; f64 is the f32
 *  value widened, f16/bf16 the f32 value rounded */
export function randnF32(n: number, k0: number, k1: number): Float32Array {
  return normalF32(n, k0, k1);
}
export function randn(n: number, k0: number, k1: number, dtype: DType): HostArray {
  return fromF32(randnF32(n, k0, k1), dtype);
}

/** floor(((hi << 32) | lo) range / 2^64) for range in [1, 2^32], as hip-src's scale64 */
function scale64(hi: number, lo: number, range: number, rh: number, rl: number): number {
  if (range === 4294967296) return hi >>> 0;
  const H = mulhi(hi, rh, rl) >>> 0, L = Math.imul(hi, range) >>> 0, c = mulhi(lo, rh, rl) >>> 0;
  return H + (L + c >= 4294967296 ? 1 : 0);
}

/** integers low + k, k uniform in [0, range): element i from words 2(i & 1), 2(i & 1) + 1 */
export function randint(n: number, k0: number, k1: number, low: number, range: number, dtype: DType): HostArray {
  const w = philoxWords(Math.ceil(n / 2), k0, k1), v = new Float64Array(n);
  const rh = range >>> 16, rl = range & 0xffff;
  for (let i = 0; i < n; i++) v[i] = low + scale64(w[2 * i]!, w[2 * i + 1]!, range, rh, rl);
  return numbersTo(v, dtype);
}

/** exact numbers (integers, 0/1, or values already rounded to dtype) into a host array */
function numbersTo(v: Float64Array, dtype: DType): HostArray {
  switch (dtype) {
    case 'f64': return v;
    case 'f32': return Float32Array.from(v);
    case 'i64': { const o = new BigInt64Array(v.length); for (let i = 0; i < v.length; i++) o[i] = BigInt(v[i]!); return o; }
    case 'f16': case 'bf16': return fromF32(Float32Array.from(v), dtype);
    default: { const o = new DTYPE_INFO[dtype].hostArray(v.length); for (let i = 0; i < v.length; i++) o[i] = roundTo(dtype, v[i]!); return o; }
  }
}

/** 1 where (w >>> 8) < thr (that is u < p for thr = ceil(p 2^24)), else 0 */
export function bernoulliScalar(n: number, k0: number, k1: number, thr: number, dtype: DType): HostArray {
  const w = philoxWords(Math.ceil(n / 4), k0, k1), v = new Float64Array(n);
  for (let i = 0; i < n; i++) v[i] = (w[i]! >>> 8) < thr ? 1 : 0;
  return numbersTo(v, dtype);
}

/** 1 where u < p[i] (exact comparison: u and p are both exact doubles) */
export function bernoulliTensor(p: Float64Array, k0: number, k1: number, dtype: DType): HostArray {
  const n = p.length, w = philoxWords(Math.ceil(n / 4), k0, k1), v = new Float64Array(n);
  for (let i = 0; i < n; i++) v[i] = (w[i]! >>> 8) * U24 < p[i]! ? 1 : 0;
  return numbersTo(v, dtype);
}

/** x[i] * scale where (w >>> 8) >= thr, else 0; the product rounded like the kernel (f32 for
 *  f32/f16/bf16 data, then to the dtype) */
export function dropout(x: Float64Array, k0: number, k1: number, thr: number, scale: number, dtype: DType): HostArray {
  const n = x.length, w = philoxWords(Math.ceil(n / 4), k0, k1), v = new Float64Array(n);
  const wide = dtype === 'f64';
  for (let i = 0; i < n; i++) v[i] = (w[i]! >>> 8) >= thr ? (wide ? x[i]! * scale : fr(x[i]! * scale)) : 0;
  return numbersTo(v, dtype);
}

/** exponential-race keys E / p, E = -log(((w >>> 8) + 1) 2^-24), in f32; p <= 0 or NaN: +inf */
export function multinomialKeys(p: Float64Array, k0: number, k1: number): Float32Array {
  const n = p.length, w = philoxWords(Math.ceil(n / 4), k0, k1), out = new Float32Array(n);
  for (let i = 0; i < n; i++) {
    const pk = fr(p[i]!);
    out[i] = pk > 0 ? -logU24((w[i]! >>> 8) + 1) / pk : Infinity;
  }
  return out;
}

/** running sums of each row in f64, in the kernel's order: 256 chunks of ceil(cols / 256)
 *  summed left to right, offset by the chunk totals summed left to right */
export function multinomialCdf(p: Float64Array, rows: number, cols: number): Float64Array {
  const out = new Float64Array(rows * cols), len = Math.ceil(cols / 256), tot = new Float64Array(256);
  for (let r = 0; r < rows; r++) {
    const base = r * cols;
    for (let c = 0; c < 256; c++) {
      let s = 0;
      for (let j = c * len; j < cols && j < (c + 1) * len; j++) s += p[base + j]!;
      tot[c] = s;
    }
    let run = 0;
    for (let c = 0; c < 256; c++) { const t = tot[c]!; tot[c] = run; run += t; }
    for (let c = 0; c < 256; c++) {
      let s = tot[c]!;
      for (let j = c * len; j < cols && j < (c + 1) * len; j++) { s += p[base + j]!; out[base + j] = s; }
    }
  }
  return out;
}

/** sample s of row r: the first index whose running sum exceeds u * total, u the 53-bit
 *  uniform of element r * ns + s; past the end, the last index with a nonzero probability */
export function multinomialDraw(cdf: Float64Array, rows: number, cols: number, ns: number, k0: number, k1: number): Float64Array {
  const total = rows * ns, w = philoxWords(Math.ceil(total / 2), k0, k1), out = new Float64Array(total);
  for (let e = 0; e < total; e++) {
    const a = w[2 * e]!, b = w[2 * e + 1]!;
    const base = Math.floor(e / ns) * cols;
    const target = ((a >>> 5) * 67108864 + (b >>> 6)) * U53 * cdf[base + cols - 1]!;
    let lo = 0, hi = cols;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (cdf[base + mid]! > target) hi = mid; else lo = mid + 1;
    }
    if (lo === cols) {
      lo = cols - 1;
      while (lo > 0 && cdf[base + lo - 1] === cdf[base + lo]) lo--;
    }
    out[e] = lo;
  }
  return out;
}
