// Whether the CPU computes as the exact reference. By default matmul and linear go through BLAS
// (or the built-in kernel), which sums in a blocked order with fused multiply-adds, in f32 for
// f32, f16 and bf16 operands: results differ from the in-order f64 sum in the last bits
// (cpu/gemm.ts). f32 exp takes a table-driven evaluation (cpu/fast-math.ts: within about 4e-16
// of e^x before the rounding to f32; a few inputs in 10^8 round the other way). The exact
// reference sums every product in f64 in index order and rounds once to the dtype, and calls
// Math.exp; the GPU test suites compare against it. Every other CPU op is exact either way.
import { readEnv } from '../../core/config.ts';

let forced: boolean | null = null;

/** true while the CPU computes as the exact f64 reference (setCpuExact, else ROCM_TENSOR_CPU_EXACT=1) */
export function cpuExact(): boolean {
  return forced ?? readEnv('ROCM_TENSOR_CPU_EXACT') === true;
}

/** turns the exact CPU reference on or off whatever the environment says; null: back to the environment */
export function setCpuExact(on: boolean | null): void {
  forced = on;
}
