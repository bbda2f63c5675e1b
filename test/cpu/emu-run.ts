// Compiles one host emulator of test/emu/ with g++ into a temporary folder, runs it, and returns
// what it printed; a compile failure or a non-zero exit (a mismatch) fails the calling test. A
// missing g++ fails too, loudly: skipping would pass CI without the check ever having run.
import * as assert from 'uvu/assert';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { REPO_ROOT } from '../runtime.ts';

const CXX = process.env.CXX || 'g++';

export interface EmuBuild {
  /** the C++ standard, e.g. 'c++17' */
  readonly std: string;
  /** optimisation level (default 1) */
  readonly opt?: number;
  /** compile kernel sources through their HIP path against test/emu/hip-host (default true) */
  readonly hipHost?: boolean;
  /** for the compile and for the run (default 300 s) */
  readonly timeoutMs?: number;
}

/** `name` is the emulator's file under test/emu without `.cpp` */
export function runEmulator(name: string, build: EmuBuild): string {
  const src = `test/emu/${name}.cpp`,
    timeout = build.timeoutMs ?? 300_000;
  const probe = spawnSync(CXX, ['--version'], { encoding: 'utf8' });
  if (probe.error || probe.status !== 0) {
    throw new Error(
      `${src} needs a ${build.std.toUpperCase()} compiler: '${CXX}' could not run (${probe.error?.message ?? probe.stderr.trim()}); install g++ (or set CXX)`,
    );
  }
  const dir = mkdtempSync(join(tmpdir(), `${name}-`));
  try {
    const exe = join(dir, name);
    // -Wno-unknown-pragmas: the kernels' #pragma unroll means nothing to g++
    const hip =
      (build.hipHost ?? true) ? ['-Wno-unknown-pragmas', '-D__HIP__', `-I${join(REPO_ROOT, 'test/emu/hip-host')}`] : [];
    const cc = spawnSync(
      CXX,
      [
        `-std=${build.std}`,
        `-O${build.opt ?? 1}`,
        '-Wall',
        '-Wextra',
        '-Werror',
        ...hip,
        join(REPO_ROOT, src),
        '-o',
        exe,
      ],
      { encoding: 'utf8', timeout },
    );
    assert.is(cc.status, 0, `compiling ${src} failed:\n${cc.stderr}${cc.error?.message ?? ''}`);
    const run = spawnSync(exe, [], { encoding: 'utf8', timeout });
    const out = `${run.stdout}${run.stderr}`;
    assert.is(run.status, 0, `${name} reported mismatches:\n${out}`);
    return out;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** asserts `out` has a line `ok <pattern>` (pattern: a regex source), naming `what` if not */
export function expectOk(out: string, pattern: string, what: string): void {
  assert.match(out, new RegExp(`^ok +${pattern}`, 'm'), `no 'ok' line for ${what}:\n${out}`);
}
