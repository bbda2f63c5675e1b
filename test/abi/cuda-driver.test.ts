// CUDA conformance 1: every driver API function we declare through koffi has the same type in
// cuda.h (after its _v2 macro renames), our alias types have the size, class and signedness C
// gives them, the enum values and macros we use are the header's, the structs we fill have its
// layout, no bound name is itself
// renamed by a header macro, and libcuda's dynamic symbol table exports every bound symbol.
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
import { CUDA_ALIASES, CUDA_CONST, CUDA_FUNCTIONS, CUDA_STRUCTS } from '../../src/ffi/cuda.ts';
import { protoName } from '../../src/ffi/native.ts';

const cudaInclude = findHeader('cuda.h');
const gcc = haveGcc();
const headerWhy = !gcc
  ? 'gcc not found'
  : !cudaInclude
    ? `cuda.h not found in ${includeDirs().join(', ') || 'any include folder'} (install the CUDA toolkit or set CUDA_HOME)`
    : '';

// a plain name we bind on purpose although cuda.h (12.8+) #defines it to _v2: drivers before
// 12.8 (550 = CUDA 12.4) export only the plain symbol; the signature is the same
const DELIBERATE_PLAIN = new Set(['cuEventElapsedTime']);

if (headerWhy) {
  console.log(`SKIP cuda-driver header checks: ${headerWhy}`);
  test.skip('driver prototypes, aliases and constants match cuda.h', () => {});
  test.skip('no bound driver symbol is renamed by a cuda.h macro', () => {});
} else {
  test('driver prototypes, aliases and constants match cuda.h', () => {
    const src = checkSource({
      includes: ['cuda.h'],
      aliases: CUDA_ALIASES,
      functions: CUDA_FUNCTIONS,
      constants: CUDA_CONST,
      structs: CUDA_STRUCTS,
    });
    const r = compileChecks(src, [cudaInclude!]);
    console.log(
      `cuda.h (${cudaInclude}): ${Object.keys(CUDA_FUNCTIONS).length} functions, ${CUDA_ALIASES.length} aliases, ` +
        `${Object.keys(CUDA_CONST).length} constants, ${src.count} checks; ${r.failures.size} mismatches`,
    );
    assert.ok(r.ok, `mismatches against cuda.h:\n${formatFailures(r)}\n${r.stderr.slice(-1500)}`);
  });

  test('no bound driver symbol is renamed by a cuda.h macro', () => {
    const macros = objectMacros(['cuda.h'], [cudaInclude!]);
    assert.ok(macros.get('cuMemAlloc') === 'cuMemAlloc_v2', 'expected cuda.h to #define cuMemAlloc cuMemAlloc_v2');
    const problems: string[] = [];
    for (const { proto } of Object.values(CUDA_FUNCTIONS)) {
      const name = protoName(proto);
      const target = macros.get(name);
      if (target !== undefined && !DELIBERATE_PLAIN.has(name))
        problems.push(`${name} is #defined to ${target}: bind that symbol`);
    }
    assert.equal(problems, []);
  });
}

const libcuda = findLibrary(['libcuda.so.1', 'libcuda.so'], 'ROCM_TENSOR_CUDA_LIB');
if (!libcuda) {
  console.log(
    'SKIP cuda-driver symbol check: no libcuda.so.1 (or stubs/libcuda.so) found; scripts/abi-cuda/fetch.sh caches the real one',
  );
  test.skip('libcuda exports every bound symbol', () => {});
} else {
  test('libcuda exports every bound symbol', () => {
    const syms = dynamicSymbols(libcuda);
    const missing: string[] = [];
    const optionalMissing: string[] = [];
    for (const [key, spec] of Object.entries(CUDA_FUNCTIONS)) {
      if (syms.has(protoName(spec.proto))) continue;
      ('optional' in spec && spec.optional ? optionalMissing : missing).push(key);
    }
    console.log(
      `${libcuda}: ${syms.size} symbols; ${Object.keys(CUDA_FUNCTIONS).length} bound, required missing: ` +
        `${missing.length}, optional absent: ${optionalMissing.join(', ') || 'none'}`,
    );
    assert.equal(missing, []);
  });
}

test.run();
