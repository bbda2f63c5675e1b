// The dtype table: element sizes, host storage arrays, and exact conversions for the 16-bit
// float formats (stored as raw bits in a Uint16Array on the host, like on the device).
import { f16round, setFloat16 } from '@petamoriken/float16';

export const DTYPES = ['f32', 'f64', 'f16', 'bf16', 'u8', 'u32', 'i64'] as const;
export type DType = (typeof DTYPES)[number];
/** the float dtypes: what unary math, matmul, convolution and the nn ops take */
export const FLOAT_DTYPES = ['f32', 'f64', 'f16', 'bf16'] as const satisfies readonly DType[];
/** the dtypes index ids may have */
export const INDEX_DTYPES = ['u8', 'u32', 'i64'] as const satisfies readonly DType[];

export type HostArray = Float32Array | Float64Array | Uint16Array | Uint8Array | Uint32Array | BigInt64Array;

export interface DTypeInfo {
  readonly name: DType;
  readonly size: number;
  readonly isFloat: boolean;
  readonly isInt: boolean;
  /** how the host stores it: f16/bf16 as bits in a Uint16Array, i64 as BigInt64Array */
  readonly hostArray: { new (n: number): HostArray; new (b: ArrayBufferLike, off: number, n: number): HostArray };
}

const info = (name: DType, size: number, isFloat: boolean, hostArray: DTypeInfo['hostArray']): DTypeInfo => ({
  name,
  size,
  isFloat,
  isInt: !isFloat,
  hostArray,
});

export const DTYPE_INFO: Record<DType, DTypeInfo> = {
  f32: info('f32', 4, true, Float32Array as DTypeInfo['hostArray']),
  f64: info('f64', 8, true, Float64Array as DTypeInfo['hostArray']),
  f16: info('f16', 2, true, Uint16Array as DTypeInfo['hostArray']),
  bf16: info('bf16', 2, true, Uint16Array as DTypeInfo['hostArray']),
  u8: info('u8', 1, false, Uint8Array as DTypeInfo['hostArray']),
  u32: info('u32', 4, false, Uint32Array as DTypeInfo['hostArray']),
  i64: info('i64', 8, false, BigInt64Array as DTypeInfo['hostArray']),
};

export function isDType(x: unknown): x is DType {
  return typeof x === 'string' && (DTYPES as readonly string[]).includes(x);
}

export function dtypeSize(d: DType): number {
  return DTYPE_INFO[d].size;
}
export function isFloatDType(d: DType): boolean {
  return DTYPE_INFO[d].isFloat;
}

// ---- 16-bit floats -------------------------------------------------------------------------
const f32buf = new Float32Array(1);
const u32buf = new Uint32Array(f32buf.buffer);
const dv = new DataView(new ArrayBuffer(2));

/** the f32 of every f16 bit pattern (each widening is exact), made on first use: every f16 read
 *  of the CPU reference is one load, where a DataView and the float16 library read about 1 M
 *  elements a second. Built from bits, so a NaN keeps its payload as the f32's does. */
let f16Table: Float32Array | null = null;
function buildF16Table(): Float32Array {
  const bits = new Uint32Array(65536);
  for (let h = 0; h < 65536; h++) {
    const s = (h & 0x8000) << 16,
      e = (h >> 10) & 31,
      m = h & 0x3ff;
    if (e === 31)
      bits[h] = s | 0x7f800000 | (m << 13); // infinity, NaN
    else if (e > 0)
      bits[h] = s | ((e + 112) << 23) | (m << 13); // normal: rebias 15 -> 127
    else {
      f32buf[0] = m * 2 ** -24;
      bits[h] = s | u32buf[0]!;
    } // zero, subnormal: m 2^-24
  }
  return new Float32Array(bits.buffer);
}
export function f16BitsToNumber(bits: number): number {
  return (f16Table ??= buildF16Table())[bits & 0xffff]!;
}
/**
 * f64 -> f16 bits, round to nearest even straight from the double (no double rounding). NaN is
 * 0x7e00 whatever its sign (x86 makes inf - inf negative), as bf16's is 0x7fc0: the GPU kernels
 * write the same quiet NaN.
 */
export function numberToF16Bits(x: number): number {
  if (Number.isNaN(x)) return 0x7e00;
  setFloat16(dv, 0, x, true);
  return dv.getUint16(0, true);
}
export { f16round };

export function bf16BitsToNumber(bits: number): number {
  u32buf[0] = bits << 16;
  return f32buf[0]!;
}

/**
 * f64 -> bf16 bits, round to nearest even. Goes through f32 with round-to-odd, which makes the
 * second rounding exact (f32 keeps more than bf16's 8 bits + 2), so this equals direct rounding.
 */
export function numberToBf16Bits(x: number): number {
  if (Number.isNaN(x)) return 0x7fc0;
  f32buf[0] = x;
  let b = u32buf[0]!;
  const back = f32buf[0]!;
  if (back !== x && Number.isFinite(back) && (b & 1) === 0) {
    // round-to-odd: the f32 rounding was inexact, so the sticky bit must show in the last place
    const towardX = Math.abs(back) < Math.abs(x) ? 1 : -1;
    b = (b + towardX) >>> 0;
  }
  if ((b & 0x7f800000) === 0x7f800000) return (b >>> 16) & 0xffff; // inf stays inf
  const rounded = b + 0x7fff + ((b >>> 16) & 1);
  return (rounded >>> 16) & 0xffff;
}
export function bf16round(x: number): number {
  return bf16BitsToNumber(numberToBf16Bits(x));
}

// ---- element access used by the CPU reference ---------------------------------------------

/** reads element i of a host array of dtype d as a JS number (i64 above 2^53 loses bits) */
export function getElem(d: DType, a: HostArray, i: number): number {
  switch (d) {
    case 'f16':
      return f16BitsToNumber((a as Uint16Array)[i]!);
    case 'bf16':
      return bf16BitsToNumber((a as Uint16Array)[i]!);
    case 'i64':
      return Number((a as BigInt64Array)[i]!);
    default:
      return (a as Float64Array)[i]!;
  }
}

/** rounds a number to what dtype d can hold: floats round to nearest even, ints truncate
 *  toward zero and wrap (NaN -> 0), the same rule the GPU cast kernels use. */
export function roundTo(d: DType, x: number): number {
  switch (d) {
    case 'f64':
      return x;
    case 'f32':
      return Math.fround(x);
    case 'f16':
      return f16round(x);
    case 'bf16':
      return bf16round(x);
    case 'u8':
      return Number.isFinite(x) ? Math.trunc(x) & 0xff : 0;
    case 'u32':
      return Number.isFinite(x) ? Math.trunc(x) >>> 0 : 0;
    case 'i64':
      return Number.isFinite(x) ? Math.trunc(x) : 0;
  }
}

export function setElem(d: DType, a: HostArray, i: number, x: number): void {
  switch (d) {
    case 'f16':
      (a as Uint16Array)[i] = numberToF16Bits(x);
      break;
    case 'bf16':
      (a as Uint16Array)[i] = numberToBf16Bits(x);
      break;
    case 'i64':
      (a as BigInt64Array)[i] = BigInt(roundTo('i64', x));
      break;
    case 'u8':
    case 'u32':
      (a as Uint32Array)[i] = roundTo(d, x);
      break;
    default:
      (a as Float64Array)[i] = x;
  }
}

/** a whole host array as numbers, each read as getElem reads it (the plain typed arrays by one
 *  native copy, not a call an element) */
export function toNumbers(d: DType, a: HostArray): Float64Array {
  const out = new Float64Array(a.length);
  if (d === 'f16' || d === 'bf16' || d === 'i64') {
    for (let i = 0; i < a.length; i++) out[i] = getElem(d, a, i);
  } else {
    out.set(a as Float32Array | Float64Array | Uint8Array | Uint32Array);
  }
  return out;
}
/** numbers into a new host array of dtype d, rounded per roundTo */
export function fromNumbers(d: DType, xs: ArrayLike<number>): HostArray {
  const out = new DTYPE_INFO[d].hostArray(xs.length);
  for (let i = 0; i < xs.length; i++) setElem(d, out, i, xs[i]!);
  return out;
}

/** a number or nested arrays of numbers: what Tensor.from takes and toNested gives */
export type NestedArray = number | NestedArray[];
