// The CPU's fast path for random words and f32 values: src/ops/cpu/wasm/random.wat (Philox on
// four blocks at once in SIMD lanes, and randn's and rand's f32 maps), instantiated once on
// first use. Results are the scalar reference's (philox.ts, normal.ts) bit for bit; the CPU
// tests compare the two.
import { WASM_BASE64 } from './wasm/random-wasm.ts';
import { RANDN_TABLE } from './randn-table.ts';
import { roundKeys } from './philox.ts';

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
}

// memory layout (bytes): round keys, Philox scratch, randn's table, then the output chunk
const KS = 0, TMP = 128, TAB = 8192, OUT = 16384, CHUNK_QUADS = 16384;  // 1 MiB of output a call

let exportsCache: RandomExports | undefined;
function wasm(): RandomExports {
  if (!exportsCache) {
    const bytes = Uint8Array.from(atob(WASM_BASE64), (c) => c.charCodeAt(0));
    const ex = new WA.Instance(new WA.Module(bytes)).exports as RandomExports;
    if (ex.memory.buffer.byteLength < OUT + 64 * CHUNK_QUADS) throw new Error('random.wat: memory smaller than the output chunk');
    new Float32Array(ex.memory.buffer, TAB, RANDN_TABLE.length).set(RANDN_TABLE);
    exportsCache = ex;
  }
  return exportsCache;
}

type Kind = 'words' | 'uniform' | 'normal';

/** 4 values a Philox block for blocks first .. first + ceil(n / 4) - 1 (first a multiple of 4),
 *  the first n into dst */
function fill(kind: Kind, k0: number, k1: number, dst: Float32Array | Int32Array, first = 0): void {
  const ex = wasm(), n = dst.length;
  new Int32Array(ex.memory.buffer, KS, 20).set(roundKeys(k0, k1));
  const blocks = first + Math.ceil(n / 4);
  const src = dst instanceof Float32Array ? new Float32Array(ex.memory.buffer, OUT, 16 * CHUNK_QUADS) : new Int32Array(ex.memory.buffer, OUT, 16 * CHUNK_QUADS);
  for (let b = first; b < blocks;) {
    const lo = b % 4294967296, hi = Math.floor(b / 4294967296);
    // quads from b, within the chunk and within this run of 2^32 blocks (b is a multiple of 4)
    const quads = Math.min(CHUNK_QUADS, Math.ceil((blocks - b) / 4), (4294967296 - lo) / 4);
    if (kind === 'normal') ex.normal(KS, lo | 0, hi | 0, quads, OUT, TMP, TAB - 4064);
    else ex[kind](KS, lo | 0, hi | 0, quads, OUT, TMP);
    const at = 4 * (b - first), count = Math.min(16 * quads, n - at);
    dst.set(src.subarray(0, count), at);
    b += 4 * quads;
  }
}

/** the Philox words of blocks first .. first + blocks - 1, block-major (int32 bit patterns);
 *  first (a multiple of 4) lets the tests reach counters past 2^32 */
export function philoxWords(blocks: number, k0: number, k1: number, first = 0): Int32Array {
  if (first % 4 !== 0) throw new RangeError(`philoxWords: first block ${first} is not a multiple of 4`);
  const out = new Int32Array(4 * blocks);
  fill('words', k0, k1, out, first);
  return out;
}

/** rand's f32 values: element i is (w >>> 8) 2^-24 of word i */
export function uniformF32(n: number, k0: number, k1: number): Float32Array {
  const out = new Float32Array(n);
  fill('uniform', k0, k1, out);
  return out;
}

/** randn's f32 values: element i is the normal of word i (normal.ts) */
export function normalF32(n: number, k0: number, k1: number): Float32Array {
  const out = new Float32Array(n);
  fill('normal', k0, k1, out);
  return out;
}
