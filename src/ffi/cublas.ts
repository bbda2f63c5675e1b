// cuBLAS through koffi: prototypes and enum values as data (checked against cublas_api.h and
// libcublas's symbol table by test/abi), declared on first use with the library's status text.
// The twin of rocblas.ts; the BLAS interface built on it is runtime/cuda/cublas.ts.
import { GpuError } from '../core/errors.ts';
import { cudaDirs, openLibrary, type LibrarySpec, type LoadedLibrary } from './loader.ts';
import { declareTable, fmtArgs, registerAliases, type NativeAlias, type NativeTable } from './native.ts';

export const CUBLAS_LIB: LibrarySpec = {
  id: 'cublas',
  envVar: 'ROCM_TENSOR_CUBLAS_LIB',
  sonames: ['libcublas.so.13', 'libcublas.so.12'],
  dirs: cudaDirs,
  install:
    'install cuBLAS (the CUDA toolkit, `apt install libcublas12` on Debian/Ubuntu, or ' +
    '`pip install nvidia-cublas`); or set CUDA_HOME or ROCM_TENSOR_CUBLAS_LIB',
};

export const CUBLAS_ALIASES: readonly NativeAlias[] = [
  { name: 'cublasStatus_t', c: 'cublasStatus_t', cls: 'enum' },
  { name: 'cublasOperation_t', c: 'cublasOperation_t', cls: 'enum' },
  { name: 'cudaDataType', c: 'cudaDataType', cls: 'enum' },
  { name: 'cublasComputeType_t', c: 'cublasComputeType_t', cls: 'enum' },
  { name: 'cublasGemmAlgo_t', c: 'cublasGemmAlgo_t', cls: 'enum' },
  { name: 'cublasMath_t', c: 'cublasMath_t', cls: 'enum' },
  { name: 'cublasHandle_t', c: 'cublasHandle_t', cls: 'pointer', handle: true },
  { name: 'cudaStream_t', c: 'cudaStream_t', cls: 'pointer', handle: true },
];

export const CUBLAS_FUNCTIONS = {
  cublasCreate_v2: { proto: 'cublasStatus_t cublasCreate_v2(cublasHandle_t *handle)' },
  cublasDestroy_v2: { proto: 'cublasStatus_t cublasDestroy_v2(cublasHandle_t handle)' },
  cublasGetVersion_v2: { proto: 'cublasStatus_t cublasGetVersion_v2(cublasHandle_t handle, int *version)' },
  cublasSetStream_v2: { proto: 'cublasStatus_t cublasSetStream_v2(cublasHandle_t handle, cudaStream_t streamId)' },
  cublasSetWorkspace_v2: {
    proto: 'cublasStatus_t cublasSetWorkspace_v2(cublasHandle_t handle, void *workspace, size_t workspaceSizeInBytes)',
  },
  cublasSetMathMode: { proto: 'cublasStatus_t cublasSetMathMode(cublasHandle_t handle, cublasMath_t mode)' },
  cublasGetStatusName: { proto: 'const char *cublasGetStatusName(cublasStatus_t status)' },
  cublasGetStatusString: { proto: 'const char *cublasGetStatusString(cublasStatus_t status)' },
  cublasGemmStridedBatchedEx: {
    proto:
      'cublasStatus_t cublasGemmStridedBatchedEx(cublasHandle_t handle, cublasOperation_t transa, ' +
      'cublasOperation_t transb, int m, int n, int k, const void *alpha, ' +
      'const void *A, cudaDataType Atype, int lda, long long strideA, ' +
      'const void *B, cudaDataType Btype, int ldb, long long strideB, const void *beta, ' +
      'void *C, cudaDataType Ctype, int ldc, long long strideC, int batchCount, ' +
      'cublasComputeType_t computeType, cublasGemmAlgo_t algo)',
  },
} as const satisfies NativeTable;

export const CUBLAS_CONST = {
  CUBLAS_STATUS_SUCCESS: 0,
  CUBLAS_OP_N: 0,
  CUBLAS_OP_T: 1,
  CUDA_R_32F: 0,
  CUDA_R_64F: 1,
  CUDA_R_16F: 2,
  CUDA_R_16BF: 14,
  CUBLAS_COMPUTE_32F: 68,
  CUBLAS_COMPUTE_64F: 70,
  CUBLAS_GEMM_DEFAULT: -1,
  // no TF32 for f32 inputs: results must match the CPU reference at f32 tolerances
  CUBLAS_DEFAULT_MATH: 0,
} as const;

type R = number;
type H = bigint;
export interface CublasFns {
  cublasCreate_v2(out: BigUint64Array): R;
  cublasDestroy_v2(h: H): R;
  cublasGetVersion_v2(h: H, out: Int32Array): R;
  cublasSetStream_v2(h: H, s: bigint | null): R;
  cublasSetWorkspace_v2(h: H, workspace: bigint, bytes: number): R;
  cublasSetMathMode(h: H, mode: number): R;
  cublasGetStatusName(s: number): string | null;
  cublasGetStatusString(s: number): string | null;
  cublasGemmStridedBatchedEx(
    h: H,
    ta: number,
    tb: number,
    m: number,
    n: number,
    k: number,
    alpha: ArrayBufferView,
    a: bigint,
    at: number,
    lda: number,
    sa: number,
    b: bigint,
    bt: number,
    ldb: number,
    sb: number,
    beta: ArrayBufferView,
    c: bigint,
    ct: number,
    ldc: number,
    sc: number,
    batch: number,
    compute: number,
    algo: number,
  ): R;
}
type CublasKey = keyof typeof CUBLAS_FUNCTIONS;
const _sameKeys: [CublasKey, keyof CublasFns] extends [keyof CublasFns, CublasKey] ? true : never = true;
void _sameKeys;

export interface Cublas {
  readonly loaded: LoadedLibrary;
  readonly fn: CublasFns;
  statusText(status: number): string;
  check(status: number, call: string, args: readonly unknown[]): void;
}

let cublas: Cublas | null = null;

/** opens libcublas (13, else 12) and declares its functions once */
export function loadCublas(): Cublas {
  if (cublas) return cublas;
  const loaded = openLibrary(CUBLAS_LIB);
  registerAliases(CUBLAS_ALIASES);
  const fn = Object.fromEntries(declareTable(loaded.lib, CUBLAS_FUNCTIONS, loaded.path)) as unknown as CublasFns;
  const statusText = (s: number): string =>
    `${fn.cublasGetStatusName(s) ?? `cublasStatus ${s}`} (${s}): ${fn.cublasGetStatusString(s) ?? ''}`;
  const check = (s: number, call: string, args: readonly unknown[]): void => {
    if (s === CUBLAS_CONST.CUBLAS_STATUS_SUCCESS) return;
    throw new GpuError(`${call}(${fmtArgs(args)}) failed: ${statusText(s)}`, s, call);
  };
  cublas = { loaded, fn, statusText, check };
  return cublas;
}
