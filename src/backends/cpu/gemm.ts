// The CPU's matrix product C = A B on strided operands, and the engine that computes it: the
// system BLAS through koffi where one is installed (ffi/openblas.ts: OpenBLAS, BLIS or MKL),
// else the built-in kernel (cpu/gemm-builtin.ts).
//
// Where BLAS changes rounding: it sums each dot product in a blocked order with fused
// multiply-adds, in the operands' precision (f32 for f32; f16 and bf16 operands are widened to
// f32 exactly, and the f32 result is rounded once more to the dtype). The exact reference
// (cpu/mode.ts, matmul.ts) sums in f64 in index order and rounds once.
//
// An operand is a matrix view: its storage, its first element and a stride per dim. BLAS takes a
// row-major matrix with a leading dimension, or its transpose, so most views pass as they are
// (a transposed weight is a transposed BLAS operand); one that is neither (a broadcast along a
// matrix dim, a step in both dims) is copied to a dense matrix first.
import { ShapeError } from '../../core/errors.ts';
import { readLibraryOverride } from '../../core/config.ts';
import { f16BitsToNumber } from '../../core/dtype.ts';
import { CBLAS_CONST, loadBlas, type Blas } from '../../ffi/openblas.ts';
import { encodeBf16, encodeF16, widenBf16 } from './convert.ts';
import { builtinGemm, builtinName } from './gemm-builtin.ts';
import { cpuExact } from './mode.ts';

export type F = Float32Array | Float64Array;

/** rows x cols elements of `host` at off + i rs + j cs */
export interface Mat<H = F> {
  readonly host: H;
  readonly off: number;
  readonly rs: number;
  readonly cs: number;
}

export type GemmEngine =
  | { readonly kind: 'blas'; readonly blas: Blas }
  | { readonly kind: 'builtin'; readonly why: string };

let engine: GemmEngine | null = null;

/** the engine of the CPU matmul: the BLAS named by ROCM_TENSOR_BLAS_LIB or found on the system, else the built-in kernel */
export function gemmEngine(): GemmEngine {
  if (engine) return engine;
  const override = readLibraryOverride('ROCM_TENSOR_BLAS_LIB');
  if (override !== undefined && override.trim().toLowerCase() === 'none')
    return (engine = { kind: 'builtin', why: 'ROCM_TENSOR_BLAS_LIB=none' });
  try {
    engine = { kind: 'blas', blas: loadBlas() };
  } catch (e) {
    // a library the user named that does not load is an error (LibraryNotFoundError), never a quiet fallback
    if (override !== undefined) throw e;
    engine = { kind: 'builtin', why: `no BLAS found (${(e as Error).message.split(';')[0]})` };
  }
  return engine;
}

/** one line for `rocm-tensor info`: which code computes the CPU matmul */
export function describeGemm(): string {
  const e = gemmEngine();
  if (e.kind === 'builtin') return `${builtinName()}; ${e.why}`;
  const t = e.blas.threads();
  return `${e.blas.name}${e.blas.version ? ` ${e.blas.version}` : ''} (${e.blas.loaded.path}${t ? `, ${t} threads` : ''})`;
}

/** what computes the CPU matmul now: the exact reference when it is on, else the engine */
export function describeCpuMatmul(): string {
  if (cpuExact()) return 'exact f64 reference (ROCM_TENSOR_CPU_EXACT=1 or setCpuExact(true))';
  return describeGemm();
}

/** forgets the engine (tests that switch ROCM_TENSOR_BLAS_LIB) */
export function _resetGemmEngine(): void {
  engine = null;
}

const I32 = 2 ** 31 - 1;
function fits(op: string, m: number, n: number, k: number, ...ld: number[]): void {
  if (m > I32 || n > I32 || k > I32 || ld.some((x) => x > I32))
    throw new ShapeError(`${op}: a ${m}x${k} by ${k}x${n} product exceeds the 32-bit sizes of the CPU BLAS`);
}

/** how BLAS reads a rows x cols view: row-major with leading dim ld, or the transpose; null: copy it.
 *  A dim of size 1 never steps, so its stride is free. */
function blasLayout(rows: number, cols: number, rs: number, cs: number): { t: boolean; ld: number } | null {
  const r1 = rows === 1,
    c1 = cols === 1;
  if ((c1 || cs === 1) && (r1 || rs >= Math.max(1, cols))) return { t: false, ld: r1 ? Math.max(1, cols) : rs };
  if ((r1 || rs === 1) && (c1 || cs >= Math.max(1, rows))) return { t: true, ld: c1 ? Math.max(1, rows) : cs };
  return null;
}

/** a dense row-major copy of a rows x cols view */
export function dense(a: Mat, rows: number, cols: number): F {
  const out = a.host instanceof Float32Array ? new Float32Array(rows * cols) : new Float64Array(rows * cols);
  const h = a.host;
  for (let i = 0; i < rows; i++) {
    const s = a.off + i * a.rs,
      d = i * cols;
    if (a.cs === 1) out.set(h.subarray(s, s + cols), d);
    else for (let j = 0; j < cols; j++) out[d + j] = h[s + j * a.cs]!;
  }
  return out;
}

/** c[co..co + m n) = A (m x k) B (k x n), row-major, f32 or f64 (A, B and c of one type), on the current engine */
export function gemm(a: Mat, b: Mat, c: F, co: number, m: number, n: number, k: number): void {
  if (m === 0 || n === 0) return;
  if (k === 0) {
    c.fill(0, co, co + m * n);
    return;
  }
  const e = gemmEngine();
  if (e.kind === 'builtin') builtinGemm(a, b, c, co, m, n, k);
  else blasGemm(e.blas, a, b, c, co, m, n, k);
}

function blasGemm(blas: Blas, a: Mat, b: Mat, c: F, co: number, m: number, n: number, k: number): void {
  const f = blas.fn,
    f64 = c instanceof Float64Array;
  const { CblasRowMajor: RM, CblasNoTrans: N, CblasTrans: T } = CBLAS_CONST;
  let la = blasLayout(m, k, a.rs, a.cs),
    lb = blasLayout(k, n, b.rs, b.cs);
  let A = a.host.subarray(a.off),
    B = b.host.subarray(b.off);
  const C = c.subarray(co, co + m * n);
  // one row or one column: a matrix-vector product (the vector may step by any nonzero stride)
  if (m === 1 || n === 1) {
    const vec = m === 1 ? { h: A, inc: k === 1 ? 1 : a.cs } : { h: B, inc: k === 1 ? 1 : b.rs };
    const mat = m === 1 ? lb : la;
    if (vec.inc > 0 && vec.inc <= I32 && mat && mat.ld <= I32) {
      const M = m === 1 ? B : A;
      fits('matmul', m, n, k, mat.ld);
      // m = 1: y = B^T x; n = 1: y = A x (row-major, so a transposed operand flips the flag)
      const rows = m === 1 ? n : m;
      const gemv = f64 ? f.cblas_dgemv : f.cblas_sgemv;
      if (m === 1 ? !mat.t : mat.t) gemv(RM, T, k, rows, 1, M, mat.ld, vec.h, vec.inc, 0, C, 1);
      else gemv(RM, N, rows, k, 1, M, mat.ld, vec.h, vec.inc, 0, C, 1);
      return;
    }
  }
  if (!la || la.ld > I32) {
    A = dense(a, m, k);
    la = { t: false, ld: k };
  }
  if (!lb || lb.ld > I32) {
    B = dense(b, k, n);
    lb = { t: false, ld: n };
  }
  fits('matmul', m, n, k, la.ld, lb.ld);
  const gemmFn = f64 ? f.cblas_dgemm : f.cblas_sgemm;
  gemmFn(RM, la.t ? T : N, lb.t ? T : N, m, n, k, 1, A, la.ld, B, lb.ld, 0, C, n);
}

/** elements of one f32 block of a half-precision product (A rows or B columns, times k) */
const HALF_BLOCK = 2 ** 21;
let halfBlock = HALF_BLOCK;
/** a smaller block (tests: several blocks on small matrices); null: the default */
export function _setHalfBlock(elements: number | null): void {
  halfBlock = elements ?? HALF_BLOCK;
}

/**
 * out[co..co + m n) (f16 or bf16 bits) = A B for f16 or bf16 operands: A's rows and B's columns
 * widened to f32 (exact) a block at a time, each block product in f32 on the engine, rounded to
 * the dtype on store.
 */
export function gemmHalf(
  dtype: 'f16' | 'bf16',
  a: Mat<Uint16Array>,
  b: Mat<Uint16Array>,
  out: Uint16Array,
  co: number,
  m: number,
  n: number,
  k: number,
): void {
  if (m === 0 || n === 0) return;
  if (k === 0) {
    out.fill(0, co, co + m * n);
    return;
  }
  const mb = Math.min(m, Math.max(1, Math.floor(halfBlock / k))),
    nb = Math.min(n, Math.max(1, Math.floor(halfBlock / k)));
  const a32 = new Float32Array(mb * k),
    b32 = new Float32Array(k * nb),
    c32 = new Float32Array(mb * nb);
  const widen = (src: Mat<Uint16Array>, dst: Float32Array, rows: number, cols: number, r0: number, c0: number) => {
    const u = new Uint32Array(dst.buffer, 0, rows * cols);
    for (let i = 0; i < rows; i++) {
      const s = src.off + (r0 + i) * src.rs + c0 * src.cs;
      if (dtype === 'bf16') widenBf16(src.host, s, src.cs, u, i * cols, cols);
      else for (let j = 0; j < cols; j++) dst[i * cols + j] = f16BitsToNumber(src.host[s + j * src.cs]!);
    }
  };
  const encode = dtype === 'bf16' ? encodeBf16 : encodeF16;
  for (let j0 = 0; j0 < n; j0 += nb) {
    const nn = Math.min(nb, n - j0);
    widen(b, b32, k, nn, 0, j0);
    for (let i0 = 0; i0 < m; i0 += mb) {
      const mm = Math.min(mb, m - i0);
      widen(a, a32, mm, k, i0, 0);
      gemm({ host: a32, off: 0, rs: k, cs: 1 }, { host: b32, off: 0, rs: nn, cs: 1 }, c32, 0, mm, nn, k);
      for (let i = 0; i < mm; i++) encode(c32, i * nn, out, co + (i0 + i) * n + j0, nn);
    }
  }
}
