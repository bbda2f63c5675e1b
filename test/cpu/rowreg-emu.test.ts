// The host emulation of the register row kernels (test/emu/rowreg-emu.cpp): softmax.hip's and
// norm.hip's _v<V>, _part and _fin kernels, reduce-rows.hip's and scan.hip's, compiled for the
// host through their HIP path (a
// block's threads as fibers, real barriers and shuffles; test/emu/hip-host) and run at wave
// sizes 64 and 32 against double-precision references: the only run the AMD code gets short of
// an AMD GPU, and a check of the group, row and chunk arithmetic both vendors share. A missing
// g++ fails here, loudly: skipping would pass CI without the check ever having run.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { REPO_ROOT } from '../runtime.ts';

const CXX = process.env.CXX || 'g++';

test('the register row kernels and cumsum match double-precision references at wave 64 and 32 (test/emu/rowreg-emu.cpp)', () => {
  const probe = spawnSync(CXX, ['--version'], { encoding: 'utf8' });
  if (probe.error || probe.status !== 0) {
    throw new Error(`test/emu/rowreg-emu.cpp needs a C++20 compiler: '${CXX}' could not run (${probe.error?.message ?? probe.stderr.trim()}); install g++ (or set CXX)`);
  }
  const dir = mkdtempSync(join(tmpdir(), 'rowreg-emu-'));
  try {
    const exe = join(dir, 'rowreg-emu');
    const cc = spawnSync(CXX, ['-std=c++20', '-O1', '-Wall', '-Wextra', '-Werror', '-Wno-unknown-pragmas', '-D__HIP__',
      `-I${join(REPO_ROOT, 'test/emu/hip-host')}`, join(REPO_ROOT, 'test/emu/rowreg-emu.cpp'), '-o', exe], { encoding: 'utf8', timeout: 300_000 });
    assert.is(cc.status, 0, `compiling test/emu/rowreg-emu.cpp failed:\n${cc.stderr}${cc.error?.message ?? ''}`);
    const run = spawnSync(exe, [], { encoding: 'utf8', timeout: 300_000 });
    const out = `${run.stdout}${run.stderr}`;
    assert.is(run.status, 0, `rowreg-emu reported mismatches:\n${out}`);
    for (const d of ['f32', 'f16', 'bf16']) for (const w of [64, 32]) assert.match(out, new RegExp(`^ok +${d} +wave ${w}:`, 'm'), `no 'ok' line for ${d} at wave ${w}:\n${out}`);
    assert.match(out, /^ok: 0 mismatches/m);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test.run();
