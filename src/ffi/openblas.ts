// The CPU BLAS through koffi: the CBLAS interface (32-bit integers) that OpenBLAS, BLIS and Intel
// MKL's libmkl_rt all export, plus each one's optional version and thread-count calls. Matrices
// cross as typed arrays: koffi hands the C function a pointer to their memory for the length of
// the call (no copy), so the caller passes subarray views at the operand's first element.
import { readFileSync } from 'node:fs';
import { readEnv } from '../core/config.ts';
import { openLibrary, BLAS_LIB, type LoadedLibrary } from './loader.ts';
import { withNativeEnv } from './libc-env.ts';
import { declareTable, type NativeTable } from './native.ts';

export const CBLAS_FUNCTIONS = {
  cblas_sgemm: {
    proto:
      'void cblas_sgemm(int order, int transA, int transB, int m, int n, int k, float alpha, ' +
      'const void *a, int lda, const void *b, int ldb, float beta, void *c, int ldc)',
  },
  cblas_dgemm: {
    proto:
      'void cblas_dgemm(int order, int transA, int transB, int m, int n, int k, double alpha, ' +
      'const void *a, int lda, const void *b, int ldb, double beta, void *c, int ldc)',
  },
  cblas_sgemv: {
    proto:
      'void cblas_sgemv(int order, int trans, int m, int n, float alpha, const void *a, int lda, ' +
      'const void *x, int incx, float beta, void *y, int incy)',
  },
  cblas_dgemv: {
    proto:
      'void cblas_dgemv(int order, int trans, int m, int n, double alpha, const void *a, int lda, ' +
      'const void *x, int incx, double beta, void *y, int incy)',
  },
  // OpenBLAS only
  openblas_get_config: { proto: 'const char *openblas_get_config(void)', optional: true },
  openblas_get_num_threads: { proto: 'int openblas_get_num_threads(void)', optional: true },
  openblas_set_num_threads: { proto: 'void openblas_set_num_threads(int n)', optional: true },
  // BLIS only
  bli_info_get_version_str: { proto: 'const char *bli_info_get_version_str(void)', optional: true },
  bli_thread_get_num_threads: { proto: 'int64_t bli_thread_get_num_threads(void)', optional: true },
  // MKL only
  MKL_Get_Version_String: { proto: 'void MKL_Get_Version_String(_Out_ uint8_t *buf, int len)', optional: true },
  MKL_Get_Max_Threads: { proto: 'int MKL_Get_Max_Threads(void)', optional: true },
} as const satisfies NativeTable;

/** CBLAS enum values (cblas.h) */
export const CBLAS_CONST = {
  CblasRowMajor: 101,
  CblasNoTrans: 111,
  CblasTrans: 112,
} as const;

type Buf = ArrayBufferView;
export interface CblasFns {
  cblas_sgemm(
    order: number,
    ta: number,
    tb: number,
    m: number,
    n: number,
    k: number,
    alpha: number,
    a: Buf,
    lda: number,
    b: Buf,
    ldb: number,
    beta: number,
    c: Buf,
    ldc: number,
  ): void;
  cblas_dgemm(
    order: number,
    ta: number,
    tb: number,
    m: number,
    n: number,
    k: number,
    alpha: number,
    a: Buf,
    lda: number,
    b: Buf,
    ldb: number,
    beta: number,
    c: Buf,
    ldc: number,
  ): void;
  cblas_sgemv(
    order: number,
    trans: number,
    m: number,
    n: number,
    alpha: number,
    a: Buf,
    lda: number,
    x: Buf,
    incx: number,
    beta: number,
    y: Buf,
    incy: number,
  ): void;
  cblas_dgemv(
    order: number,
    trans: number,
    m: number,
    n: number,
    alpha: number,
    a: Buf,
    lda: number,
    x: Buf,
    incx: number,
    beta: number,
    y: Buf,
    incy: number,
  ): void;
  openblas_get_config: (() => string | null) | null;
  openblas_get_num_threads: (() => number) | null;
  openblas_set_num_threads: ((n: number) => void) | null;
  bli_info_get_version_str: (() => string | null) | null;
  bli_thread_get_num_threads: (() => number | bigint) | null;
  MKL_Get_Version_String: ((buf: Uint8Array, len: number) => void) | null;
  MKL_Get_Max_Threads: (() => number) | null;
}
const _sameKeys: [keyof typeof CBLAS_FUNCTIONS, keyof CblasFns] extends [keyof CblasFns, keyof typeof CBLAS_FUNCTIONS]
  ? true
  : never = true;
void _sameKeys;

export interface Blas {
  readonly loaded: LoadedLibrary;
  readonly fn: CblasFns;
  /** 'OpenBLAS', 'BLIS', 'MKL' or, for another library with the CBLAS symbols, 'BLAS' */
  readonly name: string;
  /** the library's own version text, or '' when it has no call for it */
  readonly version: string;
  /** the threads it computes with, or null when it cannot say */
  threads(): number | null;
}

let blas: Blas | null = null;

/** whether the CPU and the kernel run AVX-512 (the flags OpenBLAS's SkylakeX kernels use) */
function hasAvx512(): boolean {
  try {
    const flags = /^flags\s*:(.*)$/m.exec(readFileSync('/proc/cpuinfo', 'utf8'))?.[1]?.split(/\s+/) ?? [];
    return ['avx512f', 'avx512dq', 'avx512bw', 'avx512vl'].every((f) => flags.includes(f));
  } catch {
    return false;
  }
}

/**
 * opens the library, choosing OpenBLAS's AVX-512 kernels where the CPU has AVX-512 and the user
 * did not choose (OPENBLAS_CORETYPE): OpenBLAS picks its kernels once, when it loads, from its
 * own CPU table, and releases before 0.3.22 (Debian 12 ships 0.3.21) take AMD Zen 4 for a
 * Haswell and run the AVX2 kernels, half the speed of the SkylakeX ones there. The variable is
 * unset again once the library is loaded, so child processes see the environment they had.
 */
function openBlasLibrary(): LoadedLibrary {
  if (readEnv('OPENBLAS_CORETYPE') !== undefined || !hasAvx512()) return openLibrary(BLAS_LIB);
  return withNativeEnv('OPENBLAS_CORETYPE', 'SkylakeX', () => openLibrary(BLAS_LIB));
}

/** opens the CPU BLAS (ROCM_TENSOR_BLAS_LIB, else the search of BLAS_LIB); throws LibraryNotFoundError */
export function loadBlas(): Blas {
  if (blas) return blas;
  const loaded = openBlasLibrary();
  const fn = Object.fromEntries(declareTable(loaded.lib, CBLAS_FUNCTIONS, loaded.path)) as unknown as CblasFns;
  let name = 'BLAS',
    version = '';
  if (fn.openblas_get_config) {
    name = 'OpenBLAS';
    version = (fn.openblas_get_config() ?? '').replace(/^OpenBLAS\s*/, '').trim();
  } else if (fn.bli_info_get_version_str) {
    name = 'BLIS';
    version = fn.bli_info_get_version_str() ?? '';
  } else if (fn.MKL_Get_Version_String) {
    name = 'MKL';
    const buf = new Uint8Array(256);
    fn.MKL_Get_Version_String(buf, buf.length);
    const nul = buf.indexOf(0);
    version = new TextDecoder().decode(buf.subarray(0, nul < 0 ? buf.length : nul)).trim();
  }
  const threads = (): number | null => {
    if (fn.openblas_get_num_threads) return fn.openblas_get_num_threads();
    if (fn.bli_thread_get_num_threads) return Number(fn.bli_thread_get_num_threads());
    if (fn.MKL_Get_Max_Threads) return fn.MKL_Get_Max_Threads();
    return null;
  };
  blas = { loaded, fn, name, version, threads };
  return blas;
}

/** forgets the opened BLAS (tests that switch ROCM_TENSOR_BLAS_LIB; koffi keeps the library mapped) */
export function _resetBlas(): void {
  blas = null;
}
