// Every prototype string in src/ffi parses in koffi, with the aliases registered as the loaders
// register them. The header checks compare the strings with the C headers, where `unsigned` and
// `unsigned int` are one type; koffi knows only the second, and a library's table is declared
// whole on first use, so one such word would make every call into that library fail.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import koffi from 'koffi';
import { registerAliases, type NativeTable } from '../../src/ffi/native.ts';
import { CUBLAS_ALIASES, CUBLAS_FUNCTIONS } from '../../src/ffi/cublas.ts';
import { CUDA_ALIASES, CUDA_FUNCTIONS } from '../../src/ffi/cuda.ts';
import { CUDNN_ALIASES, CUDNN_FUNCTIONS } from '../../src/ffi/cudnn.ts';
import { HIP_ALIASES, HIP_FUNCTIONS } from '../../src/ffi/hip.ts';
import { MIOPEN_ALIASES, MIOPEN_FUNCTIONS } from '../../src/ffi/miopen.ts';
import { NCCL_ALIASES, NCCL_FUNCTIONS, registerUniqueId } from '../../src/ffi/nccl.ts';
import { ROCBLAS_ALIASES, ROCBLAS_FUNCTIONS } from '../../src/ffi/rocblas.ts';
import { CBLAS_FUNCTIONS } from '../../src/ffi/openblas.ts';

const TABLES: Record<string, NativeTable> = {
  cublas: CUBLAS_FUNCTIONS,
  cuda: CUDA_FUNCTIONS,
  cudnn: CUDNN_FUNCTIONS,
  hip: HIP_FUNCTIONS,
  miopen: MIOPEN_FUNCTIONS,
  nccl: NCCL_FUNCTIONS,
  rocblas: ROCBLAS_FUNCTIONS,
  cblas: CBLAS_FUNCTIONS,
};

test('every prototype of every native table parses in koffi', () => {
  for (const a of [
    CUBLAS_ALIASES,
    CUDA_ALIASES,
    CUDNN_ALIASES,
    HIP_ALIASES,
    MIOPEN_ALIASES,
    NCCL_ALIASES,
    ROCBLAS_ALIASES,
  ])
    registerAliases(a);
  registerUniqueId();
  const bad: string[] = [];
  let n = 0;
  for (const [lib, table] of Object.entries(TABLES))
    for (const [key, spec] of Object.entries(table)) {
      n++;
      try {
        koffi.proto(spec.proto);
      } catch (e) {
        bad.push(`${lib}.${key}: ${(e as Error).message}`);
      }
    }
  assert.ok(n > 200, `${n} prototypes found`);
  assert.equal(bad, [], bad.join('\n'));
});

test.run();
