// CUDA conformance 2: our cuBLAS declarations against cublas_api.h (prototypes, alias types,
// enum values, no macro-renamed names) and libcublas's dynamic symbol table. cuBLAS headers
// are not part of a plain CUDA toolkit install here: scripts/abi-cuda/fetch.sh caches 12.4's.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import {
  checkSource,
  compileChecks,
  dynamicSymbols,
  findHeader,
  findLibrary,
  formatFailures,
  haveGcc,
  objectMacros,
} from '../../scripts/abi-cuda/check.ts';
import { CUBLAS_ALIASES, CUBLAS_CONST, CUBLAS_FUNCTIONS } from '../../src/ffi/cublas.ts';
import { CUDA_ALIASES } from '../../src/ffi/cuda.ts';
import { protoName } from '../../src/ffi/native.ts';

const cudaInclude = findHeader('cuda.h');
const cublasInclude = findHeader('cublas_api.h');
const why = !haveGcc()
  ? 'gcc not found'
  : !cudaInclude
    ? 'cuda.h not found (install the CUDA toolkit or set CUDA_HOME)'
    : !cublasInclude
      ? 'cublas_api.h not found (no cuBLAS headers; run scripts/abi-cuda/fetch.sh)'
      : '';
const includes = ['cuda.h', 'cublas_v2.h'];
const dirs = [...new Set([cublasInclude, cudaInclude].filter((d): d is string => !!d))];

if (why) {
  console.log(`SKIP cuda-cublas header checks: ${why}`);
  test.skip('cuBLAS prototypes, aliases and constants match cublas_api.h', () => {});
  test.skip('no bound cuBLAS symbol is renamed by a header macro', () => {});
} else {
  test('cuBLAS prototypes, aliases and constants match cublas_api.h', () => {
    const src = checkSource({
      includes,
      aliases: [...CUDA_ALIASES, ...CUBLAS_ALIASES],
      functions: CUBLAS_FUNCTIONS,
      constants: CUBLAS_CONST,
    });
    const r = compileChecks(src, dirs);
    console.log(
      `cublas_api.h (${cublasInclude}): ${Object.keys(CUBLAS_FUNCTIONS).length} functions, ${CUBLAS_ALIASES.length} aliases, ` +
        `${Object.keys(CUBLAS_CONST).length} constants, ${src.count} checks; ${r.failures.size} mismatches`,
    );
    assert.ok(r.ok, `mismatches against cublas_api.h:\n${formatFailures(r)}\n${r.stderr.slice(-1500)}`);
  });

  test('no bound cuBLAS symbol is renamed by a header macro', () => {
    const macros = objectMacros(includes, dirs);
    assert.is(
      macros.get('cublasCreate'),
      'cublasCreate_v2',
      'expected cublas_v2.h to #define cublasCreate cublasCreate_v2',
    );
    const problems = Object.values(CUBLAS_FUNCTIONS)
      .map((f) => protoName(f.proto))
      .filter((n) => macros.has(n))
      .map((n) => `${n} is #defined to ${macros.get(n)}`);
    assert.equal(problems, []);
  });
}

const lib = findLibrary(['libcublas.so.13', 'libcublas.so.12'], 'ROCM_TENSOR_CUBLAS_LIB');
if (!lib) {
  console.log("SKIP cuda-cublas symbol check: no libcublas.so.13/.12 found; scripts/abi-cuda/fetch.sh caches 12.4's");
  test.skip('libcublas exports every bound symbol', () => {});
} else {
  test('libcublas exports every bound symbol', () => {
    const syms = dynamicSymbols(lib);
    const missing = Object.values(CUBLAS_FUNCTIONS)
      .map((f) => protoName(f.proto))
      .filter((n) => !syms.has(n));
    console.log(
      `${lib}: ${syms.size} symbols; ${Object.keys(CUBLAS_FUNCTIONS).length} bound, missing: ${missing.length}`,
    );
    assert.equal(missing, []);
  });
}

test.run();
