// The CPU's fast path for random words and values: src/backends/cpu/wasm/random.wat (Philox on four
// blocks at once in SIMD lanes; rand's and randn's f32, randint's integers as i64, dropout on
// f32 data, and the f32 -> f16/bf16 rounding), instantiated once on first use. The module works
// a chunk (1 MiB of output) at a time in its own memory and each chunk goes straight into the
// output in its dtype: no array of the whole size in between (converting one after the draw,
// a function call an element, took most of the time of f16, bf16 and f64). Results are the
// scalar reference's (philox.ts, normal.ts, src/core/dtype.ts's rounding) bit for bit; the CPU tests
// compare the two.
import { WASM_BASE64 } from './wasm/random-wasm.ts';
import { allocHost } from '../../device/host-memory.ts';
import { RANDN_TABLE } from './randn-table.ts';
import { roundKeys } from './philox.ts';
import { numberToBf16Bits, numberToF16Bits, type FLOAT_DTYPES } from '../../core/dtype.ts';

/** the part of the WebAssembly API used here (the project's TypeScript libs do not declare it) */
interface WasmApi {
  Module: new (bytes: Uint8Array) => object;
  Instance: new (module: object) => { exports: unknown };
}
const WA = (globalThis as unknown as { WebAssembly: WasmApi }).WebAssembly;

interface RandomExports {
  memory: { buffer: ArrayBuffer };
  words(ks: number, b: number, bhi: number, quads: number, out: number, tmp: number): void;
  uniform(ks: number, b: number, bhi: number, quads: number, out: number, tmp: number): void;
  normal(ks: number, b: number, bhi: number, quads: number, out: number, tmp: number, tab: number): void;
  half(src: number, dst: number, groups: number, one: number, bf: number): void;
  integers(
    ks: number,
    b: number,
    bhi: number,
    quads: number,
    out: number,
    tmp: number,
    range: number,
    full: number,
    lowlo: number,
    lowhi: number,
  ): void;
  dropout(
    ks: number,
    b: number,
    bhi: number,
    quads: number,
    out: number,
    tmp: number,
    thr: number,
    scale: number,
  ): void;
}

// memory layout (bytes): round keys, Philox scratch, randn's table, the output chunk (CHUNK
// 32-bit values), then its values as 16-bit floats
const KS = 0,
  TMP = 128,
  TAB = 8192,
  OUT = 16384,
  CHUNK_QUADS = 16384; // 1 MiB of output a call
const CHUNK = 16 * CHUNK_QUADS,
  HALF = OUT + 4 * CHUNK;
/** a 16-bit conversion's `one` that no value matches (keeps every value) */
const KEEP_ALL = 0x10000;

/** the module and views of its chunk (its memory never grows, so the views stay valid) */
interface Module {
  ex: RandomExports;
  f32: Float32Array;
  i32: Int32Array;
  u16: Uint16Array;
}

let moduleCache: Module | undefined;
function wasm(): Module {
  if (!moduleCache) {
    const bytes = Uint8Array.from(atob(WASM_BASE64), (c) => c.charCodeAt(0));
    const ex = new WA.Instance(new WA.Module(bytes)).exports as RandomExports,
      buf = ex.memory.buffer;
    if (buf.byteLength < HALF + 2 * CHUNK)
      throw new Error('random.wat: memory smaller than the output chunk and its 16-bit copy');
    new Float32Array(buf, TAB, RANDN_TABLE.length).set(RANDN_TABLE);
    moduleCache = {
      ex,
      f32: new Float32Array(buf, OUT, CHUNK),
      i32: new Int32Array(buf, OUT, CHUNK),
      u16: new Uint16Array(buf, HALF, CHUNK),
    };
  }
  return moduleCache;
}

type Kind = 'words' | 'uniform' | 'normal';

/** the module's export for kind on quads quads of blocks from block hi 2^32 + lo, into the chunk */
function run(ex: RandomExports, kind: Kind, lo: number, hi: number, quads: number): void {
  if (kind === 'normal') ex.normal(KS, lo, hi, quads, OUT, TMP, TAB - 4064);
  else ex[kind](KS, lo, hi, quads, OUT, TMP);
}

/** per values a Philox block (4 for words, uniform, normal, dropout; 2 for integers) for blocks
 *  first .. first + ceil(n / per) - 1 (first a multiple of 4), a chunk at a time: chunk(lo, hi,
 *  quads, at, count) is for values at .. at + count - 1 of the n (count a multiple of 4 per but
 *  in the last chunk), from block hi 2^32 + lo on */
function chunks(
  n: number,
  per: 2 | 4,
  k0: number,
  k1: number,
  first: number,
  chunk: (lo: number, hi: number, quads: number, at: number, count: number) => void,
): void {
  const { ex } = wasm();
  new Int32Array(ex.memory.buffer, KS, 20).set(roundKeys(k0, k1));
  const blocks = first + Math.ceil(n / per);
  for (let b = first; b < blocks; ) {
    const lo = b % 4294967296,
      hi = Math.floor(b / 4294967296);
    // quads from b, within the chunk and within this run of 2^32 blocks (b is a multiple of 4)
    const quads = Math.min(CHUNK_QUADS, Math.ceil((blocks - b) / 4), (4294967296 - lo) / 4);
    const at = per * (b - first),
      count = Math.min(4 * per * quads, n - at);
    chunk(lo | 0, hi | 0, quads, at, count);
    b += 4 * quads;
  }
}

/** the Philox words of blocks first .. first + blocks - 1, block-major (int32 bit patterns);
 *  first (a multiple of 4) lets the tests reach counters past 2^32 */
export function philoxWords(blocks: number, k0: number, k1: number, first = 0): Int32Array {
  if (first % 4 !== 0) throw new RangeError(`philoxWords: first block ${first} is not a multiple of 4`);
  const out = new Int32Array(4 * blocks);
  eachWords(out.length, k0, k1, (w, at, count) => out.set(w.subarray(0, count), at), first);
  return out;
}

/** each(w, at, count): words at .. at + count - 1 of the first n words (block-major, int32 bit
 *  patterns, from block first on) in w[0 .. count - 1], a view of the module's memory that the
 *  next chunk overwrites; count is a multiple of 16 but in the last chunk, so for an even n
 *  (64-bit draws) a draw's two words are always in the same chunk */
export function eachWords(
  n: number,
  k0: number,
  k1: number,
  each: (w: Int32Array, at: number, count: number) => void,
  first = 0,
): void {
  const { ex, i32 } = wasm();
  chunks(n, 4, k0, k1, first, (lo, hi, q, at, count) => {
    run(ex, 'words', lo, hi, q);
    each(i32, at, count);
  });
}

/** randint's integers: element i is low + floor(w range / 2^64), w the 64-bit draw of words
 *  2(i & 1) (high) and 2(i & 1) + 1 of block i >> 1, for range in [1, 2^32] and low + range
 *  within the safe integers. each(v, at, count): elements at .. at + count - 1 as little-endian
 *  i64 (low word, then high word) in v[0 .. 2 count - 1], a view of the module's memory that
 *  the next chunk overwrites */
export function eachInteger(
  n: number,
  k0: number,
  k1: number,
  low: number,
  range: number,
  each: (v: Int32Array, at: number, count: number) => void,
): void {
  const { ex, i32 } = wasm(),
    full = range === 4294967296;
  const lowHi = Math.floor(low / 4294967296),
    lowLo = low - lowHi * 4294967296;
  chunks(n, 2, k0, k1, 0, (lo, hi, q, at, count) => {
    ex.integers(KS, lo, hi, q, OUT, TMP, full ? 0 : range | 0, full ? -1 : 0, lowLo | 0, lowHi | 0);
    each(i32, at, count);
  });
}

/** the float dtypes, as the random values come in them */
export type FloatOut = (typeof FLOAT_DTYPES)[number];
/** the host array of each float dtype */
export interface FloatArrays {
  f32: Float32Array;
  f64: Float64Array;
  f16: Uint16Array;
  bf16: Uint16Array;
}

/** the chunk's first count f32 values into dst from element at, in dst's dtype: f64 by the
 *  typed-array copy (exact widening), f16/bf16 rounded by the module, where a value that rounds
 *  to `one` becomes one - 1 (rand's values stay below 1) */
function store(m: Module, dtype: FloatOut, dst: FloatArrays[FloatOut], count: number, at: number, one: number): void {
  if (dtype === 'f16' || dtype === 'bf16') {
    m.ex.half(OUT, HALF, Math.ceil(count / 8), one, dtype === 'bf16' ? 1 : 0);
    dst.set(m.u16.subarray(0, count), at);
  } else dst.set(m.f32.subarray(0, count), at);
}

/** rand's values (element i: (w >>> 8) 2^-24 of word i, in f32, then rounded to f16/bf16 with
 *  1.0 replaced by the largest value below 1, or widened to f64) or randn's (the normal of word
 *  i, normal.ts, then rounded or widened) */
export function floats<D extends FloatOut>(
  kind: 'uniform' | 'normal',
  n: number,
  k0: number,
  k1: number,
  dtype: D,
): FloatArrays[D] {
  const m = wasm(),
    dst = newFloats(dtype, n);
  const one =
    kind === 'normal'
      ? KEEP_ALL
      : dtype === 'f16'
        ? numberToF16Bits(1)
        : dtype === 'bf16'
          ? numberToBf16Bits(1)
          : KEEP_ALL;
  chunks(n, 4, k0, k1, 0, (lo, hi, q, at, count) => {
    run(m.ex, kind, lo, hi, q);
    store(m, dtype, dst, count, at, one);
  });
  return dst;
}

/** an output the draw writes in full: from the CPU's allocator (huge pages, the cache of freed blocks) */
const newFloats = <D extends FloatOut>(dtype: D, n: number): FloatArrays[D] =>
  allocHost(dtype, n, false) as FloatArrays[D];

/** dropout of data exact in f32 (f32, f16, bf16 tensors): x[i] scale, one f32 multiply, where
 *  (w >>> 8) >= thr for word i (rand's u >= p), else +0; in f32 or rounded to f16/bf16. x goes
 *  into the chunk through the typed-array copy (exact: each value is an f32) */
export function dropoutF32<D extends 'f32' | 'f16' | 'bf16'>(
  x: Float32Array | Float64Array,
  k0: number,
  k1: number,
  thr: number,
  scale: number,
  dtype: D,
): FloatArrays[D] {
  const m = wasm(),
    out = newFloats(dtype, x.length),
    scaleBits = new Int32Array(Float32Array.of(scale).buffer)[0]!;
  chunks(x.length, 4, k0, k1, 0, (lo, hi, q, at, count) => {
    m.f32.set(x.subarray(at, at + count));
    m.ex.dropout(KS, lo, hi, q, OUT, TMP, thr, scaleBits);
    store(m, dtype, out, count, at, KEEP_ALL);
  });
  return out;
}

/** f32 values rounded to f16 or bf16 bits (NaN 0x7e00 and 0x7fc0), as src/core/dtype.ts rounds */
export function halfFromF32(v: Float32Array, dtype: 'f16' | 'bf16'): Uint16Array {
  const m = wasm(),
    out = new Uint16Array(v.length);
  for (let at = 0; at < v.length; at += CHUNK) {
    const count = Math.min(CHUNK, v.length - at);
    m.f32.set(v.subarray(at, at + count));
    store(m, dtype, out, count, at, KEEP_ALL);
  }
  return out;
}
