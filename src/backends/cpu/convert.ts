// Block conversions between f64 numbers and the 16-bit float formats, for the CPU's strided loops:
// one call per run of elements instead of one per element, no DataView. Each gives exactly what
// core/dtype.ts gives element by element (numberToF16Bits, numberToBf16Bits, f16BitsToNumber,
// bf16BitsToNumber); test/cpu/convert.test.ts checks every 16-bit pattern and random doubles.
//
// f64 -> 16 bits rounds to nearest even in two steps: to f32 with round-to-odd (an inexact
// rounding sets the last bit), then to 16 bits to nearest even. f32 keeps more than 16-bit
// precision + 2 bits, so the second rounding sees the sticky bit and the pair equals one direct
// rounding of the double.
import { f16BitsToNumber } from '../../core/dtype.ts';

const CH = 1024;
const f32 = new Float32Array(CH);
const u32 = new Uint32Array(f32.buffer);

/** the f32 round-to-odd bits of src[s..s+len) into u32[0..len) (len <= CH) */
function toOddF32(src: ArrayLike<number>, s: number, len: number): void {
  for (let i = 0; i < len; i++) {
    const x = src[s + i]!;
    f32[i] = x;
    const back = f32[i]!;
    // inexact and even: step one ulp toward x (bits are sign-magnitude, so +1 is away from zero)
    if (back !== x && (u32[i]! & 1) === 0 && back - back === 0)
      u32[i] = u32[i]! + (Math.abs(back) < Math.abs(x) ? 1 : -1);
  }
}

/** out[o..o+len) = bf16 bits of src[s..s+len) (NaN -> 0x7fc0) */
export function encodeBf16(src: ArrayLike<number>, s: number, out: Uint16Array, o: number, len: number): void {
  for (let base = 0; base < len; base += CH) {
    const n = Math.min(CH, len - base);
    toOddF32(src, s + base, n);
    for (let i = 0; i < n; i++) {
      const b = u32[i]!;
      if ((b & 0x7f800000) === 0x7f800000) {
        // NaN (from a NaN double) is the canonical quiet NaN; infinity keeps its sign
        out[o + base + i] = (b & 0x7fffff) !== 0 ? 0x7fc0 : b >>> 16;
      } else out[o + base + i] = ((b + 0x7fff + ((b >>> 16) & 1)) >>> 16) & 0xffff;
    }
  }
}

/** out[o..o+len) = f16 bits of src[s..s+len) (NaN -> 0x7e00) */
export function encodeF16(src: ArrayLike<number>, s: number, out: Uint16Array, o: number, len: number): void {
  for (let base = 0; base < len; base += CH) {
    const n = Math.min(CH, len - base);
    toOddF32(src, s + base, n);
    for (let i = 0; i < n; i++) out[o + base + i] = f32BitsToF16(u32[i]!);
  }
}

/** f32 bits -> f16 bits, round to nearest even (subnormals, overflow to infinity, NaN -> 0x7e00) */
function f32BitsToF16(b: number): number {
  const sign = (b >>> 16) & 0x8000;
  const e = (b >>> 23) & 0xff;
  const m = b & 0x7fffff;
  if (e === 0xff) return m !== 0 ? 0x7e00 : sign | 0x7c00;
  // f16 exponent e - 127 + 15
  const he = e - 112;
  if (he >= 31) return sign | 0x7c00;
  if (he <= 0) {
    // subnormal f16 (or zero): the value is (1.m) 2^(e-127) = q 2^-24 with q = (0x800000|m) >> (126 - e)
    if (he < -10) return sign; // below half the smallest subnormal (2^-25): rounds to zero
    const full = m | 0x800000;
    const shift = 126 - e; // 14 .. 24
    const q = full >>> shift;
    const rem = full & ((1 << shift) - 1);
    const half = 1 << (shift - 1);
    const up = rem > half || (rem === half && (q & 1) === 1) ? 1 : 0;
    return sign | (q + up);
  }
  // normal: keep 10 of 23 mantissa bits; a carry out of the mantissa bumps the exponent (and may give infinity)
  let h = (he << 10) | (m >>> 13);
  const rem = m & 0x1fff;
  if (rem > 0x1000 || (rem === 0x1000 && (h & 1) === 1)) h++;
  return sign | h;
}

/** dst[d..d+len) = the numbers of the f16 bit patterns at src[s], src[s + stride], ... */
export function decodeF16(
  src: Uint16Array,
  s: number,
  stride: number,
  dst: Float64Array,
  d: number,
  len: number,
): void {
  for (let i = 0; i < len; i++) dst[d + i] = f16BitsToNumber(src[s + i * stride]!);
}

const one32 = new Float32Array(1);
const one32u = new Uint32Array(one32.buffer);
/** dst[d..d+len) = the numbers of the bf16 bit patterns at src[s], src[s + stride], ... */
export function decodeBf16(
  src: Uint16Array,
  s: number,
  stride: number,
  dst: Float64Array,
  d: number,
  len: number,
): void {
  for (let i = 0; i < len; i++) {
    one32u[0] = src[s + i * stride]! << 16;
    dst[d + i] = one32[0]!;
  }
}

/** dst[d..d+len) as f32: bf16 bits widened (exact), for the f32 GEMM of bf16 operands */
export function widenBf16(src: Uint16Array, s: number, stride: number, dst: Uint32Array, d: number, len: number): void {
  for (let i = 0; i < len; i++) dst[d + i] = src[s + i * stride]! << 16;
}
