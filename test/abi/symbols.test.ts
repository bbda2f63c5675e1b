// Conformance 3: every symbol koffi binds (optional ones included: ROCm 6.4 has them all) is
// defined in the dynamic symbol table of the real shared object from Debian's ROCm 6.4 packages
// (and RCCL's librccl1).
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { parseProto } from '../../scripts/abi/cgen.ts';
import { dynamicSymbols, rocmRoot } from '../../scripts/abi/root.ts';
import { ABI_LIBRARIES } from '../../scripts/abi/tables.ts';

test('declared symbols are exported by libamdhip64.so.6, librocblas.so.4, libMIOpen.so.1, librccl.so.1', () => {
  const root = rocmRoot();
  const missing: string[] = [];
  const counts: string[] = [];
  for (const lib of ABI_LIBRARIES) {
    const so = join(root, 'opt/rocm-sos/usr/lib/x86_64-linux-gnu', lib.soname);
    const syms = dynamicSymbols(so);
    // a sanity floor against a misread table: RCCL exports only its API (about 50 symbols)
    assert.ok(syms.size > 20, `${so}: only ${syms.size} dynamic symbols`);
    const names = Object.values(lib.functions).map((f) => parseProto(f.proto).name);
    for (const n of names) if (!syms.has(n)) missing.push(`${n} (${lib.soname})`);
    counts.push(`${lib.soname} ${names.length}`);
  }
  console.log(`symbols: ${counts.join(', ')} checked; ${missing.length} missing`);
  assert.equal(missing, []);
});

test.run();
