// Opens the CPU BLAS and prints its version text and what OPENBLAS_CORETYPE reads afterwards (in
// this process and through libc), for test/cpu/blas.test.ts.
import koffi from 'koffi';
import { loadBlas } from '../../../src/ffi/openblas.ts';

const b = loadBlas();
const getenv = koffi.load('libc.so.6').func('const char *getenv(const char *name)') as (n: string) => string | null;
console.log(
  JSON.stringify({
    name: b.name,
    version: b.version,
    env: process.env.OPENBLAS_CORETYPE ?? null,
    libcEnv: getenv('OPENBLAS_CORETYPE'),
  }),
);
