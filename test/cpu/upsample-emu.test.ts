// The host emulation of upsample.hip's exact-2x kernels (test/emu/upsample-emu.cpp):
// upsample_nearest_x2 and upsample_bilinear_x2 compiled for the host through their HIP path (a
// block's threads as fibers; test/emu/hip-host) and run at wave sizes 64 and 32 against
// references written from the op's definition, and bit for bit against the kernels they stand
// in for, with x and y against guard pages. The only run these kernels get short of a GPU (and
// the AMD paths' only run at all). A missing g++ fails here, loudly: skipping would pass CI
// without the check ever having run.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { REPO_ROOT } from '../runtime.ts';

const CXX = process.env.CXX || 'g++';

test('the exact-2x upsample kernels match the references and the other kernels bit for bit at wave 64 and 32 (test/emu/upsample-emu.cpp)', () => {
  const probe = spawnSync(CXX, ['--version'], { encoding: 'utf8' });
  if (probe.error || probe.status !== 0) {
    throw new Error(`test/emu/upsample-emu.cpp needs a C++20 compiler: '${CXX}' could not run (${probe.error?.message ?? probe.stderr.trim()}); install g++ (or set CXX)`);
  }
  const dir = mkdtempSync(join(tmpdir(), 'upsample-emu-'));
  try {
    const exe = join(dir, 'upsample-emu');
    const cc = spawnSync(CXX, ['-std=c++20', '-O1', '-Wall', '-Wextra', '-Werror', '-Wno-unknown-pragmas', '-D__HIP__',
      `-I${join(REPO_ROOT, 'test/emu/hip-host')}`, join(REPO_ROOT, 'test/emu/upsample-emu.cpp'), '-o', exe], { encoding: 'utf8', timeout: 300_000 });
    assert.is(cc.status, 0, `compiling test/emu/upsample-emu.cpp failed:\n${cc.stderr}${cc.error?.message ?? ''}`);
    const run = spawnSync(exe, [], { encoding: 'utf8', timeout: 300_000 });
    const out = `${run.stdout}${run.stderr}`;
    assert.is(run.status, 0, `upsample-emu reported mismatches:\n${out}`);
    for (const w of [64, 32]) {
      for (const d of ['f16', 'f32', 'f64']) assert.match(out, new RegExp(`^ok +nearest +${d} +wave ${w}:`, 'm'), `no 'ok' line for nearest ${d} at wave ${w}:\n${out}`);
      for (const d of ['f32', 'f16', 'bf16']) assert.match(out, new RegExp(`^ok +bilinear +${d} +wave ${w}:`, 'm'), `no 'ok' line for bilinear ${d} at wave ${w}:\n${out}`);
    }
    assert.match(out, /^ok: 0 mismatches/m);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test.run();
