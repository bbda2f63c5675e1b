// CUDA conformance 3: our cuDNN 9 declarations against cudnn.h (prototypes, alias types, enum
// values, the algorithm-perf struct layout we read by offset) and libcudnn's symbol table.
// No reachable package ships cuDNN here (Debian's nvidia-cudnn downloads from NVIDIA), so on
// such a machine these checks skip with that reason; a machine with cuDNN 9 runs them.
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
  includeDirs,
  objectMacros,
} from '../../scripts/abi-cuda/check.ts';
import { CUDA_ALIASES } from '../../src/ffi/cuda.ts';
import { CUDNN_ALIASES, CUDNN_CONST, CUDNN_FUNCTIONS, CUDNN_PERF } from '../../src/ffi/cudnn.ts';
import { protoName } from '../../src/ffi/native.ts';

const cudaInclude = findHeader('cuda.h');
const cudnnInclude = findHeader('cudnn.h');
const why = !haveGcc()
  ? 'gcc not found'
  : !cudaInclude
    ? 'cuda.h not found (install the CUDA toolkit or set CUDA_HOME)'
    : !cudnnInclude
      ? `cudnn.h not found in ${includeDirs().join(', ')} (cuDNN 9 is not installed; no reachable package ships it here)`
      : '';
const includes = ['cuda.h', 'cudnn.h'];
const dirs = [...new Set([cudnnInclude, cudaInclude].filter((d): d is string => !!d))];
const { size, fields } = CUDNN_PERF;

if (why) {
  console.log(`SKIP cuda-cudnn header checks: ${why}`);
  test.skip('cuDNN prototypes, aliases, constants and perf struct match cudnn.h', () => {});
  test.skip('no bound cuDNN symbol is renamed by a header macro', () => {});
} else {
  test('cuDNN prototypes, aliases, constants and perf struct match cudnn.h', () => {
    const src = checkSource({
      includes,
      aliases: [...CUDA_ALIASES, ...CUDNN_ALIASES],
      functions: CUDNN_FUNCTIONS,
      constants: CUDNN_CONST,
      structs: {
        cudnnConvolutionFwdAlgoPerf_t: { size, fields },
        cudnnConvolutionBwdDataAlgoPerf_t: { size, fields },
        cudnnConvolutionBwdFilterAlgoPerf_t: { size, fields },
      },
    });
    const r = compileChecks(src, dirs);
    console.log(
      `cudnn.h (${cudnnInclude}): ${Object.keys(CUDNN_FUNCTIONS).length} functions, ${CUDNN_ALIASES.length} aliases, ` +
        `${Object.keys(CUDNN_CONST).length} constants, ${src.count} checks; ${r.failures.size} mismatches`,
    );
    assert.ok(r.ok, `mismatches against cudnn.h:\n${formatFailures(r)}\n${r.stderr.slice(-1500)}`);
  });

  test('no bound cuDNN symbol is renamed by a header macro', () => {
    const macros = objectMacros(includes, dirs);
    const problems = Object.values(CUDNN_FUNCTIONS)
      .map((f) => protoName(f.proto))
      .filter((n) => macros.has(n))
      .map((n) => `${n} is #defined to ${macros.get(n)}`);
    assert.equal(problems, []);
  });
}

const lib = findLibrary(['libcudnn.so.9'], 'ROCM_TENSOR_CUDNN_LIB');
if (!lib) {
  console.log(
    'SKIP cuda-cudnn symbol check: no libcudnn.so.9 found (cuDNN 9 is not installed; no reachable package ships it here)',
  );
  test.skip('libcudnn exports every bound symbol', () => {});
} else {
  test('libcudnn exports every bound symbol', () => {
    const syms = dynamicSymbols(lib);
    const missing: string[] = [];
    for (const [key, spec] of Object.entries(CUDNN_FUNCTIONS)) {
      if (!syms.has(protoName(spec.proto)) && !('optional' in spec && spec.optional)) missing.push(key);
    }
    console.log(
      `${lib}: ${syms.size} symbols; ${Object.keys(CUDNN_FUNCTIONS).length} bound, required missing: ${missing.length}`,
    );
    assert.equal(missing, []);
  });
}

test.run();
