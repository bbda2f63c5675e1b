// How the library's dtypes and reduce ops map onto the collectives library's enums, and which
// need a newer library: bf16 and avg arrived in NCCL 2.10 (RCCL has had bf16 since its first
// NCCL-2.7-based releases). Pure tables and checks, no native calls, so the CPU tests cover them.
import type { DType } from '../core/dtype.ts';
import type { Vendor } from '../runtime/gpu.ts';
import { DTypeError, TensorError } from '../core/errors.ts';
import { NCCL_CONST } from '../ffi/nccl.ts';

export const REDUCE_OPS = ['sum', 'prod', 'min', 'max', 'avg'] as const;
export type ReduceOpName = (typeof REDUCE_OPS)[number];

/** every dtype of the library has a twin in the collectives library */
const DTYPE_CODE: Record<DType, number> = {
  f32: NCCL_CONST.ncclFloat32,
  f64: NCCL_CONST.ncclFloat64,
  f16: NCCL_CONST.ncclFloat16,
  bf16: NCCL_CONST.ncclBfloat16,
  u8: NCCL_CONST.ncclUint8,
  u32: NCCL_CONST.ncclUint32,
  i64: NCCL_CONST.ncclInt64,
};

const OP_CODE: Record<ReduceOpName, number> = {
  sum: NCCL_CONST.ncclSum,
  prod: NCCL_CONST.ncclProd,
  min: NCCL_CONST.ncclMin,
  max: NCCL_CONST.ncclMax,
  avg: NCCL_CONST.ncclAvg,
};

/** NCCL_VERSION_CODE: major * 10000 + minor * 100 + patch since 2.9, major * 1000 + minor * 100 + patch before */
export function ncclVersionParts(code: number): [number, number, number] {
  return code >= 10000
    ? [Math.floor(code / 10000), Math.floor(code / 100) % 100, code % 100]
    : [Math.floor(code / 1000), Math.floor(code / 100) % 10, code % 100];
}
export function ncclVersionText(code: number): string {
  return ncclVersionParts(code).join('.');
}
function atLeast(code: number, major: number, minor: number): boolean {
  const [a, b] = ncclVersionParts(code);
  return a > major || (a === major && b >= minor);
}

/** what the collectives library in use can do */
export interface LibraryLevel {
  readonly vendor: Vendor;
  readonly version: number;
}

export function ncclDType(op: string, dtype: DType, lib: LibraryLevel): number {
  const code = DTYPE_CODE[dtype];
  if (code === undefined) throw new DTypeError(`${op}: dtype ${String(dtype)} has no collectives-library type`);
  if (dtype === 'bf16' && lib.vendor === 'cuda' && !atLeast(lib.version, 2, 10)) {
    throw new DTypeError(`${op}: bf16 needs NCCL 2.10 or later; this is NCCL ${ncclVersionText(lib.version)}`);
  }
  return code;
}

export function ncclRedOp(op: string, reduce: ReduceOpName, dtype: DType, lib: LibraryLevel): number {
  const code = OP_CODE[reduce];
  if (code === undefined)
    throw new TensorError(`${op}: unknown reduce op '${String(reduce)}' (expected ${REDUCE_OPS.join(', ')})`);
  if (reduce === 'avg') {
    // the library's integer avg divides after an integer sum that may already have wrapped:
    // refused rather than given a meaning that differs from a float mean
    if (dtype === 'u8' || dtype === 'u32' || dtype === 'i64') {
      throw new DTypeError(`${op}: avg is for float dtypes (f32, f64, f16, bf16), got ${dtype}; use sum and divide`);
    }
    if (!atLeast(lib.version, 2, 10)) {
      throw new TensorError(
        `${op}: avg needs ${lib.vendor === 'rocm' ? 'RCCL' : 'NCCL'} 2.10 or later; this is ${ncclVersionText(lib.version)}`,
      );
    }
  }
  return code;
}

/** the dtype and op names of codes, for messages about what another rank asked for */
export function dtypeOfCode(code: number): string {
  return (Object.keys(DTYPE_CODE) as DType[]).find((d) => DTYPE_CODE[d] === code) ?? `dtype code ${code}`;
}
export function opOfCode(code: number): string {
  return REDUCE_OPS.find((o) => OP_CODE[o] === code) ?? `op code ${code}`;
}
