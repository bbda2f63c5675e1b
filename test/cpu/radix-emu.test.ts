// The host emulation of the radix sort and top-k kernels (test/emu/radix-emu.cpp): hip-src/sort.hip
// and hip-src/topk.hip themselves, compiled with g++ against a stand-in HIP runtime whose GPU
// threads are fibers, run with 32- and 64-lane waves against a stable sort of the values. No
// AMD GPU runs the wave64 paths; this checks their logic (ballots, ranks, scans, the select and
// its levels) on every dtype. A missing g++ fails here, loudly: skipping would pass CI without
// the check ever having run.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { REPO_ROOT } from '../runtime.ts';

const CXX = process.env.CXX || 'g++';
const DTYPES = ['f32', 'f64', 'f16', 'bf16', 'u8', 'u32', 'i64'];

test('sort.hip and topk.hip match a stable sort on 32- and 64-lane waves (test/emu/radix-emu.cpp)', () => {
  const probe = spawnSync(CXX, ['--version'], { encoding: 'utf8' });
  if (probe.error || probe.status !== 0) {
    throw new Error(`test/emu/radix-emu.cpp needs a C++17 compiler: '${CXX}' could not run (${probe.error?.message ?? probe.stderr.trim()}); install g++ (or set CXX)`);
  }
  const dir = mkdtempSync(join(tmpdir(), 'radix-emu-'));
  try {
    const exe = join(dir, 'radix-emu');
    // -Wno-unknown-pragmas: the kernels' #pragma unroll means nothing to g++
    const cc = spawnSync(CXX, ['-std=c++17', '-O2', '-Wall', '-Wextra', '-Werror', '-Wno-unknown-pragmas', '-D__HIP__',
      `-I${join(REPO_ROOT, 'test/emu/hip-host')}`, join(REPO_ROOT, 'test/emu/radix-emu.cpp'), '-o', exe],
    { encoding: 'utf8', timeout: 240_000 });
    assert.is(cc.status, 0, `compiling test/emu/radix-emu.cpp failed:\n${cc.stderr}${cc.error?.message ?? ''}`);
    const run = spawnSync(exe, [], { encoding: 'utf8', timeout: 240_000 });
    const out = `${run.stdout}${run.stderr}`;
    assert.is(run.status, 0, `radix-emu reported mismatches:\n${out}`);
    for (const wave of [32, 64]) {
      for (const d of DTYPES) assert.match(out, new RegExp(`^ok +${d} +wave${wave}$`, 'm'), `no 'ok' line for ${d} wave${wave}:\n${out}`);
    }
    assert.match(out, /^ok: 14 groups, 0 mismatches/m);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test.run();
