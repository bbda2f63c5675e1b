// rocBLAS through koffi: prototypes and enum values as data (checked against rocBLAS's headers
// and symbol table by test/abi), declared on first use with the library's version and status
// text. The BLAS interface built on it is runtime/rocm/rocblas.ts.
import { GpuError } from '../core/errors.ts';
import { readEnv } from '../core/config.ts';
import { openLibrary, ROCBLAS_LIB, type LoadedLibrary } from './loader.ts';
import { declareTable, fmtArgs, registerAliases, type NativeAlias, type NativeTable } from './native.ts';
import { HIP_ALIASES } from './hip.ts';

export const ROCBLAS_ALIASES: readonly NativeAlias[] = [
  { name: 'rocblas_status', c: 'rocblas_status', cls: 'enum' },
  { name: 'rocblas_operation', c: 'rocblas_operation', cls: 'enum' },
  { name: 'rocblas_datatype', c: 'rocblas_datatype', cls: 'enum' },
  { name: 'rocblas_gemm_algo', c: 'rocblas_gemm_algo', cls: 'enum' },
  { name: 'rocblas_pointer_mode', c: 'rocblas_pointer_mode', cls: 'enum' },
  { name: 'rocblas_int', c: 'rocblas_int', cls: 'int32', koffi: 'int32_t' },
  { name: 'rocblas_stride', c: 'rocblas_stride', cls: 'int64', koffi: 'int64_t' },
  { name: 'rocblas_handle', c: 'rocblas_handle', cls: 'pointer', handle: true },
  // a writable byte buffer: koffi's `char *` would be an input string
  { name: 'rocblas_charbuf_p', c: 'char *', cls: 'pointer', koffi: 'uint8_t *' },
];

export const ROCBLAS_FUNCTIONS = {
  rocblas_initialize: { proto: 'void rocblas_initialize(void)' },
  rocblas_status_to_string: { proto: 'const char *rocblas_status_to_string(rocblas_status status)' },
  rocblas_get_version_string_size: { proto: 'rocblas_status rocblas_get_version_string_size(_Out_ size_t *len)' },
  rocblas_get_version_string: { proto: 'rocblas_status rocblas_get_version_string(rocblas_charbuf_p buf, size_t len)' },
  rocblas_create_handle: { proto: 'rocblas_status rocblas_create_handle(_Out_ rocblas_handle *handle)' },
  rocblas_destroy_handle: { proto: 'rocblas_status rocblas_destroy_handle(rocblas_handle handle)' },
  rocblas_set_stream: { proto: 'rocblas_status rocblas_set_stream(rocblas_handle handle, hipStream_t stream)' },
  rocblas_set_workspace: {
    proto: 'rocblas_status rocblas_set_workspace(rocblas_handle handle, devptr_t addr, size_t size)',
  },
  rocblas_set_pointer_mode: {
    proto: 'rocblas_status rocblas_set_pointer_mode(rocblas_handle handle, rocblas_pointer_mode pointer_mode)',
  },
  rocblas_gemm_strided_batched_ex: {
    proto:
      'rocblas_status rocblas_gemm_strided_batched_ex(rocblas_handle handle, rocblas_operation transA, ' +
      'rocblas_operation transB, rocblas_int m, rocblas_int n, rocblas_int k, const void *alpha, ' +
      'cdevptr_t a, rocblas_datatype a_type, rocblas_int lda, rocblas_stride stride_a, ' +
      'cdevptr_t b, rocblas_datatype b_type, rocblas_int ldb, rocblas_stride stride_b, const void *beta, ' +
      'cdevptr_t c, rocblas_datatype c_type, rocblas_int ldc, rocblas_stride stride_c, ' +
      'devptr_t d, rocblas_datatype d_type, rocblas_int ldd, rocblas_stride stride_d, ' +
      'rocblas_int batch_count, rocblas_datatype compute_type, rocblas_gemm_algo algo, ' +
      'int32_t solution_index, uint32_t flags)',
  },
} as const satisfies NativeTable;

export const ROCBLAS_CONST = {
  rocblas_status_success: 0,
  rocblas_status_memory_error: 5,
  rocblas_operation_none: 111,
  rocblas_operation_transpose: 112,
  rocblas_datatype_f16_r: 150,
  rocblas_datatype_f32_r: 151,
  rocblas_datatype_f64_r: 152,
  rocblas_datatype_bf16_r: 168,
  rocblas_gemm_algo_standard: 0,
  rocblas_pointer_mode_host: 0,
} as const;

type Ptr = bigint;
type Status = number;
export interface RocblasFns {
  rocblas_initialize(): void;
  rocblas_status_to_string(s: number): string | null;
  rocblas_get_version_string_size(out: [number]): Status;
  rocblas_get_version_string(buf: Uint8Array, len: number): Status;
  rocblas_create_handle(out: [Ptr | null]): Status;
  rocblas_destroy_handle(h: Ptr): Status;
  rocblas_set_stream(h: Ptr, s: Ptr | null): Status;
  rocblas_set_workspace(h: Ptr, addr: Ptr, size: number): Status;
  rocblas_set_pointer_mode(h: Ptr, mode: number): Status;
  rocblas_gemm_strided_batched_ex(
    h: Ptr,
    ta: number,
    tb: number,
    m: number,
    n: number,
    k: number,
    alpha: ArrayBufferView,
    a: Ptr,
    at: number,
    lda: number,
    sa: number,
    b: Ptr,
    bt: number,
    ldb: number,
    sb: number,
    beta: ArrayBufferView,
    c: Ptr,
    ct: number,
    ldc: number,
    sc: number,
    d: Ptr,
    dt: number,
    ldd: number,
    sd: number,
    batch: number,
    compute: number,
    algo: number,
    solution: number,
    flags: number,
  ): Status;
}
const _sameKeys: [keyof typeof ROCBLAS_FUNCTIONS, keyof RocblasFns] extends [
  keyof RocblasFns,
  keyof typeof ROCBLAS_FUNCTIONS,
]
  ? true
  : never = true;
void _sameKeys;

export interface Rocblas {
  readonly loaded: LoadedLibrary;
  readonly fn: RocblasFns;
  readonly version: string;
  check(status: number, call: string, args: readonly unknown[]): void;
}

let rocblas: Rocblas | null = null;

export function loadRocblas(): Rocblas {
  if (rocblas) return rocblas;
  const loaded = openLibrary(ROCBLAS_LIB);
  registerAliases(HIP_ALIASES);
  registerAliases(ROCBLAS_ALIASES);
  const fn = Object.fromEntries(declareTable(loaded.lib, ROCBLAS_FUNCTIONS, loaded.path)) as unknown as RocblasFns;
  const check = (status: number, call: string, args: readonly unknown[]): void => {
    if (status === ROCBLAS_CONST.rocblas_status_success) return;
    const text = fn.rocblas_status_to_string(status) ?? `rocblas_status ${status}`;
    throw new GpuError(`${call}(${fmtArgs(args)}) failed: ${text} (${status})`, status, call);
  };
  // rocblas_initialize loads every Tensile kernel for the visible devices up front (seconds);
  // opt-in, since lazy loading per kernel is what most short-lived processes want
  if (readEnv('ROCM_TENSOR_ROCBLAS_PRELOAD') === true) fn.rocblas_initialize();
  const len: [number] = [0];
  check(fn.rocblas_get_version_string_size(len), 'rocblas_get_version_string_size', []);
  const buf = new Uint8Array(Math.max(len[0], 1));
  check(fn.rocblas_get_version_string(buf, buf.length), 'rocblas_get_version_string', [buf.length]);
  const nul = buf.indexOf(0);
  const version = new TextDecoder().decode(buf.subarray(0, nul < 0 ? buf.length : nul));
  rocblas = { loaded, fn, version, check };
  return rocblas;
}
