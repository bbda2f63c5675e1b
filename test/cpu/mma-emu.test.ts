// The host emulation of flash.hip's matrix-core layouts (test/emu/mma-emu.cpp): compiled with g++
// into a temporary folder and run. It holds hip-src/mma-layout.h, the kernel's lane and element
// index arithmetic, against models of MFMA (gfx90a/gfx942/gfx950), WMMA (gfx11, gfx12), the gfx1030
// FMA path and NVIDIA's m16n8k16, written from the vendors' layout descriptions: the only check
// the AMD paths get short of an AMD GPU. A missing g++ fails here, loudly: skipping would pass CI
// without the check ever having run.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { REPO_ROOT } from '../runtime.ts';

const CXX = process.env.CXX || 'g++';

test('mma-layout.h matches the instruction models on every family (test/emu/mma-emu.cpp)', () => {
  const probe = spawnSync(CXX, ['--version'], { encoding: 'utf8' });
  if (probe.error || probe.status !== 0) {
    throw new Error(`test/emu/mma-emu.cpp needs a C++17 compiler: '${CXX}' could not run (${probe.error?.message ?? probe.stderr.trim()}); install g++ (or set CXX)`);
  }
  const dir = mkdtempSync(join(tmpdir(), 'mma-emu-'));
  try {
    const exe = join(dir, 'mma-emu');
    const cc = spawnSync(CXX, ['-std=c++17', '-O1', '-Wall', '-Wextra', '-Werror', join(REPO_ROOT, 'test/emu/mma-emu.cpp'), '-o', exe],
      { encoding: 'utf8', timeout: 120_000 });
    assert.is(cc.status, 0, `compiling test/emu/mma-emu.cpp failed:\n${cc.stderr}${cc.error?.message ?? ''}`);
    const run = spawnSync(exe, [], { encoding: 'utf8', timeout: 60_000 });
    const out = `${run.stdout}${run.stderr}`;
    assert.is(run.status, 0, `mma-emu reported mismatches:\n${out}`);
    // every family reported, and the summary line says nothing mismatched
    for (const fam of ['mfma', 'wmma11', 'wmma12', 'fma', 'nv']) assert.match(out, new RegExp(`^ok +${fam} `, 'm'), `no 'ok' line for ${fam}:\n${out}`);
    assert.match(out, /^ok: 0 mismatches/m);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test.run();
