// The CPU matmul where no BLAS is installed. f32: the WebAssembly SIMD block product
// (wasm-kernels.ts: 4 x 8 tiles, four lanes, sums in f32 in k order, one rounding per multiply
// and per add, so results differ from the exact reference's f64 sums in the last bits). f64, and
// f32 where WebAssembly SIMD does not run: plain loops in the order that reads both operands
// along rows (C row i += A[i, q] B row q), B packed dense once per call, each output row
// accumulated in f64 and rounded once on store: the exact reference's result (the same products
// added in the same order).
import type { F, Mat } from './gemm.ts';
import { gemmF32Wasm, wasmUnavailable } from './wasm-kernels.ts';

export function builtinName(): string {
  const why = wasmUnavailable();
  return why === null
    ? 'built-in kernel (WebAssembly SIMD for f32, JavaScript loops for f64)'
    : `built-in kernel (JavaScript loops; WebAssembly SIMD unavailable: ${why})`;
}

export function builtinGemm(a: Mat, b: Mat, c: F, co: number, m: number, n: number, k: number): void {
  // one row or one column (a decode step's projection): dot products, nothing packed
  if (m === 1 || n === 1) {
    dotGemm(a, b, c, co, m, n, k);
    return;
  }
  if (c instanceof Float32Array && gemmF32Wasm(a, b, c, co, m, n, k)) return;
  loopGemm(a, b, c, co, m, n, k);
}

/** each output element one dot product in f64, in k order (the exact reference's sum); reads
 *  both operands in place, which suits a weight seen transposed (its rows are the columns of B) */
export function dotGemm(a: Mat, b: Mat, c: F, co: number, m: number, n: number, k: number): void {
  const ah = a.host,
    bh = b.host,
    acs = a.cs,
    brs = b.rs;
  for (let i = 0; i < m; i++) {
    for (let j = 0; j < n; j++) {
      const ao = a.off + i * a.rs,
        bo = b.off + j * b.cs;
      let s = 0;
      if (acs === 1 && brs === 1) for (let q = 0; q < k; q++) s += ah[ao + q]! * bh[bo + q]!;
      else for (let q = 0; q < k; q++) s += ah[ao + q * acs]! * bh[bo + q * brs]!;
      c[co + i * n + j] = s;
    }
  }
}

/** the plain loops (f64 accumulation, the exact reference's order) */
export function loopGemm(a: Mat, b: Mat, c: F, co: number, m: number, n: number, k: number): void {
  // B dense row-major (k x n) unless it already is
  let bh: F = b.host,
    bo = b.off;
  if (!(b.cs === 1 && (b.rs === n || k === 1))) {
    bh = new Float64Array(k * n);
    for (let q = 0; q < k; q++) for (let j = 0; j < n; j++) bh[q * n + j] = b.host[b.off + q * b.rs + j * b.cs]!;
    bo = 0;
  }
  const acc = new Float64Array(n);
  const ah = a.host;
  for (let i = 0; i < m; i++) {
    acc.fill(0);
    const ar = a.off + i * a.rs;
    for (let q = 0; q < k; q++) {
      const x = ah[ar + q * a.cs]!,
        br = bo + q * n;
      for (let j = 0; j < n; j++) acc[j] += x * bh[br + j]!;
    }
    c.set(acc, co + i * n);
  }
}
