// The loader's miss message says what it looked for, where, and how to install it.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { LibraryNotFoundError } from '../../src/core/errors.ts';
import { HIP_LIB, openLibrary, rocmDirs, type LibrarySpec } from '../../src/ffi/loader.ts';

const dir = mkdtempSync(join(tmpdir(), 'rt-loader-'));
// a file that exists under the soname but is no shared object: must be listed with dlopen's error
writeFileSync(join(dir, 'libnotreal-rt.so.7'), 'not an ELF file');

const spec: LibrarySpec = {
  id: 'notreal-test',
  envVar: 'ROCM_TENSOR_NOTREAL_LIB',
  sonames: ['libnotreal-rt.so.7', 'libnotreal-rt.so'],
  dirs: () => [dir, '/nonexistent/rocm/lib'],
  install: 'apt install libnotreal7',
};

function missError(s: LibrarySpec): string {
  try {
    openLibrary(s);
  } catch (e) {
    assert.instance(e, LibraryNotFoundError);
    return (e as Error).message;
  }
  assert.unreachable('openLibrary found a library that does not exist');
  return '';
}

test('a missing library names every soname, directory, attempt and the install hint', () => {
  const msg = missError(spec);
  for (const s of spec.sonames) assert.ok(msg.includes(s), `message lacks soname ${s}: ${msg}`);
  for (const d of spec.dirs()) assert.ok(msg.includes(d), `message lacks directory ${d}: ${msg}`);
  assert.ok(msg.includes(join(dir, 'libnotreal-rt.so.7') + ' ('), `message lacks the failed on-disk attempt: ${msg}`);
  assert.ok(msg.includes('ROCM_TENSOR_NOTREAL_LIB'), 'message lacks the override variable');
  assert.ok(msg.includes('apt install libnotreal7'), 'message lacks the install hint');
  assert.ok(msg.startsWith('openLibrary(notreal-test)'), msg);
});

test('a failing explicit override is reported, not silently replaced', () => {
  process.env.ROCM_TENSOR_NOTREAL_LIB = '/nowhere/libnotreal-rt.so.7';
  try {
    const msg = missError(spec);
    assert.ok(msg.includes('ROCM_TENSOR_NOTREAL_LIB=/nowhere/libnotreal-rt.so.7'), msg);
  } finally {
    delete process.env.ROCM_TENSOR_NOTREAL_LIB;
  }
});

test('ROCm search order: ROCM_PATH, HIP_PATH, /opt/rocm, then system directories', () => {
  process.env.ROCM_PATH = '/custom/rocm';
  process.env.HIP_PATH = '/custom/hip';
  try {
    const d = rocmDirs();
    assert.is(d[0], '/custom/rocm/lib');
    assert.ok(d.indexOf('/custom/hip/lib') < d.indexOf('/opt/rocm/lib'));
    assert.ok(d.indexOf('/opt/rocm/lib') < d.indexOf('/usr/lib/x86_64-linux-gnu'));
  } finally {
    delete process.env.ROCM_PATH;
    delete process.env.HIP_PATH;
  }
  assert.equal(HIP_LIB.sonames.slice(0, 2), ['libamdhip64.so.6', 'libamdhip64.so.5']);
});

test.run();
