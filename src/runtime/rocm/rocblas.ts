// The BLAS interface on rocBLAS (ffi/rocblas.ts), the twin of cuda/cublas.ts. One strided-batched
// GEMM entry point covers every dtype (f32/f64 natively, f16/bf16 with f32 accumulation). Scalars
// are passed in host pointer mode from JS-owned cells, so no device round trip is needed for
// alpha/beta.
import { ShapeError } from '../../core/errors.ts';
import { loadRocblas, ROCBLAS_CONST } from '../../ffi/rocblas.ts';
import type { BlasApi, BlasDType, DevicePtr, GemmParams, GpuStream } from '../gpu.ts';

/** what the BLAS layer needs from the HIP runtime that owns it */
export interface BlasHost {
  readonly device: number;
  activate(): void;
  streamPtr(s: GpuStream): bigint | null;
}

const BLAS_TYPE: Record<BlasDType, number> = {
  f32: ROCBLAS_CONST.rocblas_datatype_f32_r,
  f64: ROCBLAS_CONST.rocblas_datatype_f64_r,
  f16: ROCBLAS_CONST.rocblas_datatype_f16_r,
  bf16: ROCBLAS_CONST.rocblas_datatype_bf16_r,
};

const I32_MAX = 2 ** 31 - 1;

/** one rocBLAS handle per device, pointed at each call's stream before the call */
export function createRocblasBlas(host: BlasHost): BlasApi & { dispose(): void } {
  const rb = loadRocblas();
  const f = rb.fn;
  let handle: bigint | null = null;
  // host-pointer-mode scalars: f64 gemm reads doubles, every other type (f32 compute) floats
  const alpha32 = new Float32Array(1),
    beta32 = new Float32Array(1);
  const alpha64 = new Float64Array(1),
    beta64 = new Float64Array(1);

  const get = (): bigint => {
    if (handle !== null) return handle;
    host.activate();
    const out: [bigint | null] = [null];
    rb.check(f.rocblas_create_handle(out), 'rocblas_create_handle', [host.device]);
    handle = out[0] ?? 0n;
    rb.check(f.rocblas_set_pointer_mode(handle, ROCBLAS_CONST.rocblas_pointer_mode_host), 'rocblas_set_pointer_mode', [
      handle,
    ]);
    return handle;
  };

  return {
    name: 'rocBLAS',
    version: rb.version,
    gemmStridedBatched(p: GemmParams, stream: GpuStream): void {
      for (const [k, v] of [
        ['m', p.m],
        ['n', p.n],
        ['k', p.k],
        ['lda', p.lda],
        ['ldb', p.ldb],
        ['ldc', p.ldc],
        ['batch', p.batch],
      ] as const) {
        if (!Number.isInteger(v) || v < 0 || v > I32_MAX) {
          throw new ShapeError(
            `gemmStridedBatched: ${k}=${v} does not fit rocblas_int (m=${p.m}, n=${p.n}, k=${p.k}, ${p.dtype})`,
          );
        }
      }
      const h = get();
      host.activate();
      const s = host.streamPtr(stream);
      rb.check(f.rocblas_set_stream(h, s), 'rocblas_set_stream', [h, s]);
      const t = BLAS_TYPE[p.dtype];
      const compute = p.dtype === 'f64' ? ROCBLAS_CONST.rocblas_datatype_f64_r : ROCBLAS_CONST.rocblas_datatype_f32_r;
      let alpha: Float32Array | Float64Array, beta: Float32Array | Float64Array;
      if (p.dtype === 'f64') {
        alpha64[0] = p.alpha;
        beta64[0] = p.beta;
        alpha = alpha64;
        beta = beta64;
      } else {
        alpha32[0] = p.alpha;
        beta32[0] = p.beta;
        alpha = alpha32;
        beta = beta32;
      }
      const opA = p.transA ? ROCBLAS_CONST.rocblas_operation_transpose : ROCBLAS_CONST.rocblas_operation_none;
      const opB = p.transB ? ROCBLAS_CONST.rocblas_operation_transpose : ROCBLAS_CONST.rocblas_operation_none;
      // D aliases C: rocBLAS allows c == d when ldc == ldd and the strides match
      const args = [
        h,
        opA,
        opB,
        p.m,
        p.n,
        p.k,
        alpha,
        p.a,
        t,
        p.lda,
        p.strideA,
        p.b,
        t,
        p.ldb,
        p.strideB,
        beta,
        p.c,
        t,
        p.ldc,
        p.strideC,
        p.c,
        t,
        p.ldc,
        p.strideC,
        p.batch,
        compute,
        ROCBLAS_CONST.rocblas_gemm_algo_standard,
        0,
        0,
      ] as const;
      rb.check(f.rocblas_gemm_strided_batched_ex(...args), 'rocblas_gemm_strided_batched_ex', args);
    },
    setWorkspace(ptr: DevicePtr, bytes: number): void {
      if (!Number.isSafeInteger(bytes) || bytes < 0) throw new ShapeError(`setWorkspace: ${bytes} bytes is not a size`);
      const h = get();
      host.activate();
      // from here on rocBLAS draws scratch from this buffer and never allocates; a GEMM needing
      // more than it fails with rocblas_status_memory_error (5) instead
      rb.check(f.rocblas_set_workspace(h, ptr, bytes), 'rocblas_set_workspace', [h, ptr, bytes]);
    },
    dispose(): void {
      if (handle !== null) f.rocblas_destroy_handle(handle);
      handle = null;
    },
  };
}
