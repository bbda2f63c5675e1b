// The CPU's SIMD loops for f32: src/backends/cpu/wasm/kernels.wat (WebAssembly SIMD: binary
// arithmetic, exp, and the block product behind the matmul where no BLAS is installed),
// instantiated once on first use. The module computes in its own memory, so the data moves in
// and out a block at a time (a block stays in the core's cache: the extra copies cost little
// next to the memory traffic the op has anyway). Results are bit for bit those of the scalar
// loops they replace: add, sub, mul and div of two f32 values round once as f32 arithmetic
// does; exp is fast-math.ts's method with the same constants; the matmul block product sums in
// f32 in k order (gemm-builtin.ts says how that differs from the exact reference).
import { WASM_BASE64 } from './wasm/kernels-wasm.ts';
import { expTable } from './fast-math.ts';
import type { Mat } from './gemm.ts';

interface WasmApi {
  Module: new (bytes: Uint8Array) => object;
  Instance: new (module: object) => { exports: unknown };
}
const WA = (globalThis as unknown as { WebAssembly?: WasmApi }).WebAssembly;

type BinFn = (x: number, y: number, o: number, n: number) => void;
interface KernelExports {
  memory: { buffer: ArrayBuffer; grow(pages: number): number };
  add_vv: BinFn;
  sub_vv: BinFn;
  mul_vv: BinFn;
  div_vv: BinFn;
  add_vs: BinFn;
  sub_vs: BinFn;
  mul_vs: BinFn;
  div_vs: BinFn;
  exp(x: number, o: number, n: number): void;
  gemm(a: number, b: number, c: number, mt: number, nt: number, kc: number, bstride: number, ldc: number): void;
}

// memory (bytes): exp's table at 0 (2^(k/64) for k from -10158, fast-math.ts), then three blocks
// of CH f32 values (x, y, out); the matmul's panels from GEMM_BASE, the memory grown to fit
const CH = 8192;
const X = 163840,
  Y = X + 4 * CH,
  O = Y + 4 * CH,
  GEMM_BASE = O + 4 * CH;
const PAGE = 65536;

let k: KernelExports | null = null;
let failed: string | null = null;
let f32: Float32Array = new Float32Array(0);

function exports(): KernelExports | null {
  if (k || failed) return k;
  try {
    if (!WA) throw new Error('no WebAssembly in this runtime');
    const bytes = Uint8Array.from(atob(WASM_BASE64), (c) => c.charCodeAt(0));
    k = new WA.Instance(new WA.Module(bytes)).exports as KernelExports;
    const t = expTable();
    if (t.byteLength > X) throw new Error('exp table larger than its place in memory');
    new Float64Array(k.memory.buffer, 0, t.length).set(t);
  } catch (e) {
    failed = (e as Error).message;
    k = null;
  }
  return k;
}

/** whether the SIMD kernels run here (WebAssembly with SIMD); else the callers keep their JavaScript loops */
export function wasmKernels(): boolean {
  return exports() !== null;
}

/** why the SIMD kernels do not run, or null when they do */
export function wasmUnavailable(): string | null {
  exports();
  return failed;
}

/** the module's memory as f32, at least `bytes` long (grown when needed) */
function mem(bytes: number): Float32Array {
  const ex = k!;
  if (ex.memory.buffer.byteLength < bytes) ex.memory.grow(Math.ceil((bytes - ex.memory.buffer.byteLength) / PAGE));
  if (f32.buffer !== ex.memory.buffer) f32 = new Float32Array(ex.memory.buffer);
  return f32;
}

export type ArithOp = 'add' | 'sub' | 'mul' | 'div';

/** out[oo..oo+len) = x[xo..xo+len) op y[yo..yo+len) (y null: op c) on f32 arrays; false when the kernels do not run */
export function binaryF32(
  op: ArithOp,
  x: Float32Array,
  xo: number,
  y: Float32Array | null,
  yo: number,
  c: number,
  out: Float32Array,
  oo: number,
  len: number,
): boolean {
  const ex = exports();
  if (!ex) return false;
  const m32 = mem(GEMM_BASE);
  const fn = y ? ex[`${op}_vv`] : ex[`${op}_vs`];
  for (let p = 0; p < len; p += CH) {
    const n = Math.min(CH, len - p),
      bytes = Math.ceil(n / 4) * 16;
    m32.set(x.subarray(xo + p, xo + p + n), X / 4);
    if (y) {
      m32.set(y.subarray(yo + p, yo + p + n), Y / 4);
      fn(X, Y, O, bytes);
    } else fn(X, c, O, bytes);
    out.set(m32.subarray(O / 4, O / 4 + n), oo + p);
  }
  return true;
}

/** out[oo..oo+len) = e^x for x at src[s], src[s + stride], ... (fast-math.ts's values); false when the kernels do not run */
export function expF32Wasm(
  src: Float32Array,
  s: number,
  stride: number,
  out: Float32Array,
  oo: number,
  len: number,
): boolean {
  const ex = exports();
  if (!ex) return false;
  const m32 = mem(GEMM_BASE);
  for (let p = 0; p < len; p += CH) {
    const n = Math.min(CH, len - p);
    if (stride === 1) m32.set(src.subarray(s + p, s + p + n), X / 4);
    else for (let i = 0; i < n; i++) m32[X / 4 + i] = src[s + (p + i) * stride]!;
    ex.exp(X, O, Math.ceil(n / 4) * 16);
    out.set(m32.subarray(O / 4, O / 4 + n), oo + p);
  }
  return true;
}

// the matmul's blocking: A blocks of MC rows by KC steps of k (64 KiB), B panels of 8 columns
// over all of k for NC columns at a time (about 8 MiB), a C block of MC rows by NC columns
const MC = 64,
  KC = 256,
  B_BYTES = 8 * 2 ** 20;

/** c[co..co + m n) = A B (row-major m x n) for f32 views; false when the kernels do not run */
export function gemmF32Wasm(a: Mat, b: Mat, c: Float32Array, co: number, m: number, n: number, kk: number): boolean {
  const ex = exports();
  if (!ex) return false;
  const nc = Math.min(Math.ceil(n / 8) * 8, Math.max(8, Math.floor(B_BYTES / (32 * kk)) * 8));
  const ah = a.host,
    bh = b.host;
  // byte addresses: B panels, then the C block, then the A block
  const bBase = GEMM_BASE,
    cBase = bBase + nc * kk * 4,
    aBase = cBase + MC * nc * 4;
  const m32 = mem(aBase + MC * KC * 4);
  for (let j0 = 0; j0 < n; j0 += nc) {
    const cols = Math.min(nc, n - j0),
      nt = Math.ceil(cols / 8),
      ncp = nt * 8;
    // B panel jt: kk steps of 8 values, columns past n as zeros
    for (let jt = 0; jt < nt; jt++) {
      const base = bBase / 4 + jt * kk * 8;
      const w = Math.min(8, cols - jt * 8);
      for (let q = 0; q < kk; q++) {
        const src = b.off + q * b.rs + (j0 + jt * 8) * b.cs,
          dst = base + q * 8;
        for (let j = 0; j < w; j++) m32[dst + j] = bh[src + j * b.cs]!;
        for (let j = w; j < 8; j++) m32[dst + j] = 0;
      }
    }
    for (let i0 = 0; i0 < m; i0 += MC) {
      const rows = Math.min(MC, m - i0),
        mt = Math.ceil(rows / 4);
      m32.fill(0, cBase / 4, cBase / 4 + mt * 4 * ncp);
      for (let k0 = 0; k0 < kk; k0 += KC) {
        const kc = Math.min(KC, kk - k0);
        // A panel it: kc steps of its 4 rows' values, rows past m as zeros
        for (let it = 0; it < mt; it++) {
          const base = aBase / 4 + it * kc * 4;
          for (let r = 0; r < 4; r++) {
            const i = i0 + it * 4 + r;
            if (i >= m) {
              for (let q = 0; q < kc; q++) m32[base + q * 4 + r] = 0;
              continue;
            }
            const src = a.off + i * a.rs + k0 * a.cs;
            for (let q = 0; q < kc; q++) m32[base + q * 4 + r] = ah[src + q * a.cs]!;
          }
        }
        ex.gemm(aBase, bBase + k0 * 32, cBase, mt, nt, kc, kk * 32, ncp * 4);
      }
      for (let r = 0; r < rows; r++) {
        const s = cBase / 4 + r * ncp;
        c.set(m32.subarray(s, s + cols), co + (i0 + r) * n + j0);
      }
    }
  }
  return true;
}
