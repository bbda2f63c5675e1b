// The BLAS interface on cuBLAS (ffi/cublas.ts), the twin of rocm/rocblas.ts: one handle per
// device and the strided-batched GEMM that matmul needs.
import { DTypeError, GpuError, ShapeError } from '../../core/errors.ts';
import { CUBLAS_CONST, loadCublas, type Cublas } from '../../ffi/cublas.ts';
import type { BlasApi, BlasDType, DevicePtr, GemmParams } from '../gpu.ts';

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
