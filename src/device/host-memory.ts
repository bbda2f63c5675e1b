// Memory of CPU tensors: host typed arrays, with two things a plain `new Float32Array(n)` lacks.
//
// A size check. V8 hands out typed arrays far larger than the machine (the pages are only
// committed when written), so an oversized tensor used to be found by the kernel's OOM killer
// halfway through filling it. An allocation of 64 MiB or more is checked against the memory
// the system has available first, and one that cannot fit is a HostMemoryError naming the
// element count, dtype and bytes (the op registry adds the op's name).
//
// Fresh memory costs a page fault per 4 KiB page on first write, which on some virtual machines
// is most of an elementwise op's time (an f32 add over 2^24 elements: about 200 ms of faults
// against 17 ms of adding). Two things cut it. Blocks of 4 MiB and up ask for huge pages before
// their first write (ffi/libc-mem.ts: 12-19 ms for the same 64 MiB once warm). And freed tensor
// memory of 4 KiB and up is kept, up to ROCM_TENSOR_CPU_CACHE bytes, for the next allocation of
// the same byte size. Only arrays made here for a Storage are kept (never one a user passed in or
// got back from a readback), and only once the last view of their storage is gone.
import { freemem, totalmem } from 'node:os';
import { DTYPE_INFO, type DType, type HostArray } from '../core/dtype.ts';
import { OutOfMemoryError } from '../core/errors.ts';
import { readEnv } from '../core/config.ts';
import { adviseHugePages } from '../ffi/libc-mem.ts';

/** a CPU allocation the machine cannot hold; `op` is filled in by the op registry */
export class HostMemoryError extends OutOfMemoryError {
  op: string | null = null;
}

const CHECK_FROM = 64 * 2 ** 20;
const CACHE_FROM = 4 * 2 ** 10;
const HUGE_FROM = 4 * 2 ** 20;
const DEFAULT_CACHE = 512 * 2 ** 20;

const owned = new WeakSet<ArrayBufferLike>();
const free = new Map<number, ArrayBuffer[]>();
let cached = 0;

function fmtBytes(b: number): string {
  for (const [unit, s] of [
    [2 ** 40, 'TiB'],
    [2 ** 30, 'GiB'],
    [2 ** 20, 'MiB'],
    [2 ** 10, 'KiB'],
  ] as const)
    if (b >= unit) return `${+(b / unit).toFixed(1)} ${s}`;
  return `${b} bytes`;
}

function tooLarge(dtype: DType, n: number, bytes: number, why: string): HostMemoryError {
  return new HostMemoryError(
    `cannot allocate ${n} ${dtype} elements (${fmtBytes(bytes)}) in CPU memory: ${why}`,
    0,
    'host allocation',
  );
}

/** checks that `bytes` fit in the memory available now (large blocks only); frees the cache first if that helps */
function checkFits(dtype: DType, n: number, bytes: number): void {
  if (bytes < CHECK_FROM) return;
  let avail = freemem();
  if (bytes > avail && cached > 0) {
    clearHostCache();
    avail = freemem();
  }
  if (bytes > avail)
    throw tooLarge(dtype, n, bytes, `${fmtBytes(avail)} of the machine's ${fmtBytes(totalmem())} are available`);
}

/**
 * A host array of n elements of dtype for a new Storage: from the cache when a block of its byte
 * size is there, else new. `zero`: every element 0 (a new array is; a cached one is cleared);
 * without it a cached block keeps old values, for outputs the caller writes in full.
 */
export function allocHost(dtype: DType, n: number, zero = true): HostArray {
  const ctor = DTYPE_INFO[dtype].hostArray;
  const bytes = n * DTYPE_INFO[dtype].size;
  if (!Number.isSafeInteger(n) || n < 0) throw tooLarge(dtype, n, bytes, 'not an element count');
  if (bytes >= CACHE_FROM) {
    const list = free.get(bytes);
    const buf = list?.pop();
    if (buf) {
      if (list!.length === 0) free.delete(bytes);
      cached -= bytes;
      const a = new ctor(buf, 0, n);
      if (zero) new Uint8Array(buf).fill(0);
      return a;
    }
  }
  checkFits(dtype, n, bytes);
  let a: HostArray;
  try {
    a = new ctor(n);
  } catch (e) {
    if (e instanceof RangeError) throw tooLarge(dtype, n, bytes, e.message);
    throw e;
  }
  // huge pages for large blocks, asked for before the first write (ffi/libc-mem.ts)
  if (bytes >= HUGE_FROM) adviseHugePages(a);
  if (bytes >= CACHE_FROM) owned.add(a.buffer);
  return a;
}

/** the bytes the cache may hold, from ROCM_TENSOR_CPU_CACHE */
function cacheLimit(): number {
  return readEnv('ROCM_TENSOR_CPU_CACHE') ?? DEFAULT_CACHE;
}

/** takes back the array of a freed Storage: kept for reuse when allocHost made it and the cache has room */
export function recycleHost(a: HostArray): void {
  const buf = a.buffer;
  const bytes = buf.byteLength;
  if (bytes < CACHE_FROM || a.byteOffset !== 0 || a.byteLength !== bytes || !owned.has(buf)) return;
  if (cached + bytes > cacheLimit()) return;
  const list = free.get(bytes);
  if (list) list.push(buf as ArrayBuffer);
  else free.set(bytes, [buf as ArrayBuffer]);
  cached += bytes;
}

/** drops every cached block (the garbage collector then returns them to the system) */
export function clearHostCache(): void {
  free.clear();
  cached = 0;
}

/** bytes held by the cache of freed CPU memory */
export function hostCacheBytes(): number {
  return cached;
}
