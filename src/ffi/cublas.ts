// cuBLAS through koffi: prototypes and enum values as data (checked against cublas_api.h and
// libcublas's symbol table by test/abi), declared on first use, one handle per device, and the
// strided-batched GEMM that ops/matmul.ts needs. The twin of rocblas.ts.
import { DTypeError, GpuError, ShapeError } from '../core/errors.ts';
import type { BlasApi, BlasDType, DevicePtr, GemmParams } from '../runtime/gpu.ts';
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

const DATA_TYPE: Record<BlasDType, number> = {
  f32: CUBLAS_CONST.CUDA_R_32F,
  f64: CUBLAS_CONST.CUDA_R_64F,
  f16: CUBLAS_CONST.CUDA_R_16F,
  bf16: CUBLAS_CONST.CUDA_R_16BF,
};

/** what the BLAS layer needs from the device: make its context current, name it in errors */
export interface CublasHost {
  readonly label: string;
  enter(): void;
}

/**
 * A cuBLAS handle bound to one device. The handle is created with the device's context current;
 * the stream is set only when it changes (cublasSetStream also resets cuBLAS's workspace to its
 * own pool, so a workspace set with setWorkspace is set again after it).
 */
export class CublasApi implements BlasApi {
  readonly name = 'cuBLAS';
  readonly version: string;
  private readonly lib: Cublas;
  private readonly handle: bigint;
  private lastStream: bigint | null | undefined = undefined;
  private workspace: { ptr: DevicePtr; bytes: number } | null = null;
  // alpha/beta live in host memory (the default pointer mode), f32 for every type but f64
  private readonly f32 = new Float32Array(2);
  private readonly f64 = new Float64Array(2);
  private readonly alpha32 = this.f32.subarray(0, 1);
  private readonly beta32 = this.f32.subarray(1, 2);
  private readonly alpha64 = this.f64.subarray(0, 1);
  private readonly beta64 = this.f64.subarray(1, 2);

  constructor(
    private readonly host: CublasHost,
    private readonly streamPtr: (s: unknown) => bigint | null,
  ) {
    this.lib = loadCublas();
    host.enter();
    const out = new BigUint64Array(1);
    this.lib.check(this.lib.fn.cublasCreate_v2(out), 'cublasCreate_v2', [`<${host.label}>`]);
    this.handle = out[0]!;
    const v = new Int32Array(1);
    this.lib.check(this.lib.fn.cublasGetVersion_v2(this.handle, v), 'cublasGetVersion_v2', [this.handle]);
    const ver = v[0]!;
    this.version = `${Math.floor(ver / 10000)}.${Math.floor((ver % 10000) / 100)}.${ver % 100}`;
    this.lib.check(this.lib.fn.cublasSetMathMode(this.handle, CUBLAS_CONST.CUBLAS_DEFAULT_MATH), 'cublasSetMathMode', [
      this.handle,
      CUBLAS_CONST.CUBLAS_DEFAULT_MATH,
    ]);
  }

  gemmStridedBatched(p: GemmParams, stream: Parameters<BlasApi['gemmStridedBatched']>[1]): void {
    const type = DATA_TYPE[p.dtype];
    if (type === undefined) throw new DTypeError(`gemmStridedBatched: cuBLAS has no path for dtype ${String(p.dtype)}`);
    this.host.enter();
    const s = this.streamPtr(stream);
    if (s !== this.lastStream) {
      this.lib.check(this.lib.fn.cublasSetStream_v2(this.handle, s), 'cublasSetStream_v2', [this.handle, s]);
      this.lastStream = s;
      if (this.workspace) this.applyWorkspace();
    }
    const wide = p.dtype === 'f64';
    const alpha = wide ? this.alpha64 : this.alpha32;
    const beta = wide ? this.beta64 : this.beta32;
    alpha[0] = p.alpha;
    beta[0] = p.beta;
    const compute = wide ? CUBLAS_CONST.CUBLAS_COMPUTE_64F : CUBLAS_CONST.CUBLAS_COMPUTE_32F;
    const ta = p.transA ? CUBLAS_CONST.CUBLAS_OP_T : CUBLAS_CONST.CUBLAS_OP_N;
    const tb = p.transB ? CUBLAS_CONST.CUBLAS_OP_T : CUBLAS_CONST.CUBLAS_OP_N;
    const status = this.lib.fn.cublasGemmStridedBatchedEx(
      this.handle,
      ta,
      tb,
      p.m,
      p.n,
      p.k,
      alpha,
      p.a,
      type,
      p.lda,
      p.strideA,
      p.b,
      type,
      p.ldb,
      p.strideB,
      beta,
      p.c,
      type,
      p.ldc,
      p.strideC,
      p.batch,
      compute,
      CUBLAS_CONST.CUBLAS_GEMM_DEFAULT,
    );
    if (status !== CUBLAS_CONST.CUBLAS_STATUS_SUCCESS) {
      throw new GpuError(
        `cublasGemmStridedBatchedEx(${p.dtype}, trans=${p.transA ? 'T' : 'N'}${p.transB ? 'T' : 'N'}, ` +
          `m=${p.m}, n=${p.n}, k=${p.k}, alpha=${p.alpha}, beta=${p.beta}, lda=${p.lda}, ldb=${p.ldb}, ldc=${p.ldc}, ` +
          `strides=${p.strideA}/${p.strideB}/${p.strideC}, batch=${p.batch}) on ${this.host.label} failed: ` +
          this.lib.statusText(status),
        status,
        'cublasGemmStridedBatchedEx',
      );
    }
  }

  setWorkspace(ptr: DevicePtr, bytes: number): void {
    if (!Number.isSafeInteger(bytes) || bytes < 0) throw new ShapeError(`setWorkspace: ${bytes} bytes is not a size`);
    this.host.enter();
    this.workspace = { ptr, bytes };
    this.applyWorkspace();
  }

  // cuBLAS then takes its scratch from this buffer and allocates none (what a capture needs);
  // it wants 256-byte alignment, which every device allocation has
  private applyWorkspace(): void {
    const w = this.workspace!;
    this.lib.check(this.lib.fn.cublasSetWorkspace_v2(this.handle, w.ptr, w.bytes), 'cublasSetWorkspace_v2', [
      this.handle,
      w.ptr,
      w.bytes,
    ]);
  }

  destroy(): void {
    this.host.enter();
    this.lib.check(this.lib.fn.cublasDestroy_v2(this.handle), 'cublasDestroy_v2', [this.handle]);
  }
}
