// The host emulation of the copy kernels (test/emu/copy-emu.cpp): copy.hip's tiled transpose
// (hip-src/transpose.h) at every element width and cat_rows, and index-rows.hip's
// index_add_rows, compiled for the host through their HIP path (a block's threads as fibers,
// real barriers; test/emu/hip-host) and run at wave sizes 64 and 32 against references written
// from the index formulas, every byte of the outputs checked (poison where nothing is written).
// A missing g++ fails here, loudly: skipping would pass CI without the check ever having run.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { REPO_ROOT } from '../runtime.ts';

const CXX = process.env.CXX || 'g++';

test('transpose, cat_rows and index_add_rows match their references at wave 64 and 32 (test/emu/copy-emu.cpp)', () => {
  const probe = spawnSync(CXX, ['--version'], { encoding: 'utf8' });
  if (probe.error || probe.status !== 0) {
    throw new Error(`test/emu/copy-emu.cpp needs a C++20 compiler: '${CXX}' could not run (${probe.error?.message ?? probe.stderr.trim()}); install g++ (or set CXX)`);
  }
  const dir = mkdtempSync(join(tmpdir(), 'copy-emu-'));
  try {
    const exe = join(dir, 'copy-emu');
    const cc = spawnSync(CXX, ['-std=c++20', '-O1', '-Wall', '-Wextra', '-Werror', '-Wno-unknown-pragmas', '-D__HIP__',
      `-I${join(REPO_ROOT, 'test/emu/hip-host')}`, join(REPO_ROOT, 'test/emu/copy-emu.cpp'), '-o', exe], { encoding: 'utf8', timeout: 300_000 });
    assert.is(cc.status, 0, `compiling test/emu/copy-emu.cpp failed:\n${cc.stderr}${cc.error?.message ?? ''}`);
    const run = spawnSync(exe, [], { encoding: 'utf8', timeout: 300_000 });
    const out = `${run.stdout}${run.stderr}`;
    assert.is(run.status, 0, `copy-emu reported mismatches:\n${out}`);
    for (const w of [64, 32]) {
      for (const b of [1, 2, 4, 8]) assert.match(out, new RegExp(`^ok +transpose b${b} wave ${w}:`, 'm'), `no 'ok' line for transpose b${b} at wave ${w}:\n${out}`);
      assert.match(out, new RegExp(`^ok +cat_rows wave ${w}:`, 'm'), `no 'ok' line for cat_rows at wave ${w}:\n${out}`);
      assert.match(out, new RegExp(`^ok +index_add_rows wave ${w}:`, 'm'), `no 'ok' line for index_add_rows at wave ${w}:\n${out}`);
    }
    assert.match(out, /^ok: 0 mismatches/m);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test.run();
