// Compiles one host emulator of test/emu/ with g++ into a temporary folder, runs it, and returns
// what it printed; a compile failure or a non-zero exit (a mismatch) fails the calling test. A
// missing g++ fails too, loudly: skipping would pass CI without the check ever having run.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  copyFileSync,
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { rocmRoot, runInRoot } from '../../scripts/abi/root.ts';
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

// ---- built emulators, kept by what they were built from ------------------------------------------
// The suite runs every file under Node and under Bun: the second run of an emulator reuses the
// first one's executable when the sources (test/emu, hip-src), the edits and the compile
// arguments are the same, instead of compiling again.

let sourcesHash: string | null = null;
/** a hash of every file under test/emu and hip-src */
function sources(): string {
  if (sourcesHash) return sourcesHash;
  const h = createHash('sha256');
  const walk = (dir: string): void => {
    for (const e of readdirSync(dir, { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))) {
      const p = join(dir, e.name);
      if (e.isDirectory()) walk(p);
      else h.update(relative(REPO_ROOT, p)).update('\0').update(readFileSync(p)).update('\0');
    }
  };
  walk(join(REPO_ROOT, 'test/emu'));
  walk(join(REPO_ROOT, 'hip-src'));
  return (sourcesHash = h.digest('hex'));
}
const buildKey = (parts: unknown): string =>
  createHash('sha256').update(sources()).update(JSON.stringify(parts)).digest('hex').slice(0, 24);

/** the cached executable for key, or null */
function cached(cacheDir: string, key: string, name: string): string | null {
  const p = join(cacheDir, key, name);
  return existsSync(p) ? p : null;
}
/** keeps exe under key (written beside, then renamed: a concurrent reader never sees half a file) */
function keepBuilt(cacheDir: string, key: string, name: string, exe: string): void {
  const dir = join(cacheDir, key);
  mkdirSync(dir, { recursive: true });
  const tmp = join(dir, `${name}.${process.pid}`);
  copyFileSync(exe, tmp);
  renameSync(tmp, join(dir, name));
}
const CACHE = join(process.env.ROCM_TENSOR_CACHE ?? join(homedir(), '.cache/rocm-tensor'), 'emu-bin');

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
    // -Wno-unknown-pragmas: the kernels' #pragma unroll means nothing to g++
    const hip =
      (build.hipHost ?? true) ? ['-Wno-unknown-pragmas', '-D__HIP__', `-I${join(REPO_ROOT, 'test/emu/hip-host')}`] : [];
    const key = buildKey([CXX, probe.stdout, name, build.std, build.opt ?? 1, hip.slice(0, 2)]);
    const exe = cached(CACHE, key, name) ?? join(dir, name);
    const cc =
      exe !== join(dir, name)
        ? { status: 0, stderr: '', error: undefined }
        : spawnSync(
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
    if (exe === join(dir, name)) keepBuilt(CACHE, key, name, exe);
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

// ---- emulators built with clang ----------------------------------------------------------------
// flash-emu.cpp needs clang (the kernels' ext_vector_type operands and _Float16, which g++ does
// not take): clang 21 of the cached Debian-unstable root (scripts/rocm-root.sh), which CI builds
// before the tests and the ABI suite already runs in. It runs through chroot, so it needs root;
// without root it is the one case where an emulator skips, saying why.

/** one textual change to a kernel source, for the mutation controls: `from` must occur once */
export interface SourceEdit {
  readonly file: string;
  readonly from: string;
  readonly to: string;
}

export interface RootEmuBuild {
  readonly std: string;
  /** -D macros: the arch (e.g. __gfx942__) */
  readonly defines: readonly string[];
  readonly opt?: number;
  readonly args?: readonly string[];
  readonly edits?: readonly SourceEdit[];
  readonly timeoutMs?: number;
}

export interface RootEmuRun {
  readonly status: number | null;
  readonly out: string;
}

/** the root's path, or why the clang emulators cannot run here (not root: no chroot) */
export function clangRoot(): { root: string } | { skip: string } {
  if (typeof process.getuid === 'function' && process.getuid() !== 0)
    return { skip: 'the clang-built emulators run clang 21 inside the ROCm root through chroot, which needs root' };
  return { root: rocmRoot() };
}

let serial = 0;

/** compiles test/emu/<name>.cpp with clang++-21 inside the root and runs it; a compile error fails */
export function runEmulatorInRoot(root: string, name: string, build: RootEmuBuild): RootEmuRun {
  const inner = `/tmp/rocm-tensor-emu/${name}-${process.pid}-${serial++}`;
  const host = join(root, inner);
  const timeout = build.timeoutMs ?? 300_000;
  try {
    cpSync(join(REPO_ROOT, 'test/emu'), join(host, 'test/emu'), { recursive: true });
    cpSync(join(REPO_ROOT, 'hip-src'), join(host, 'hip-src'), { recursive: true });
    for (const e of build.edits ?? []) {
      const p = join(host, 'hip-src', e.file);
      const text = readFileSync(p, 'utf8');
      const at = text.indexOf(e.from);
      assert.ok(at >= 0 && text.indexOf(e.from, at + 1) < 0, `the edit of ${e.file} must match once: ${e.from}`);
      writeFileSync(p, text.slice(0, at) + e.to + text.slice(at + e.from.length));
    }
    const key = buildKey([name, build.std, build.opt ?? 1, build.defines, build.edits ?? []]);
    const rootCache = join(root, 'tmp/rocm-tensor-emu-bin');
    const hit = cached(rootCache, key, name);
    const exe = hit ? `/${relative(root, hit)}` : `${inner}/${name}`;
    const cc = hit
      ? { status: 0, stderr: '' }
      : runInRoot(
          root,
          [
            'clang++-21',
            `-std=${build.std}`,
            `-O${build.opt ?? 1}`,
            // the kernels pin 32-byte WMMA accumulators with an inline asm "v" operand: on x86 that
            // takes an AVX register
            '-mavx',
            '-Wall',
            '-Wextra',
            '-Werror',
            '-Wno-unknown-pragmas',
            '-D__HIP__',
            ...build.defines.map((d) => `-D${d}`),
            `-I${inner}/test/emu/hip-host`,
            `${inner}/test/emu/${name}.cpp`,
            '-o',
            exe,
          ],
          timeout,
        );
    assert.is(
      cc.status,
      0,
      `compiling test/emu/${name}.cpp (${build.defines.join(' ')}) failed:\n${cc.stderr.slice(-6000)}`,
    );
    if (!hit) keepBuilt(rootCache, key, name, join(root, exe));
    const run = runInRoot(root, [exe, ...(build.args ?? [])], timeout);
    assert.not.ok(run.timedOut, `${name} (${build.defines.join(' ')}) ran past ${timeout} ms`);
    return { status: run.status, out: `${run.stdout}${run.stderr}` };
  } finally {
    rmSync(host, { recursive: true, force: true });
  }
}

/** the AMD code paths a clang emulator is built for, with their wave sizes */
export const AMD_ARCHS: readonly (readonly [arch: string, wave: number])[] = [
  ['gfx942', 64],
  ['gfx90a', 64],
  ['gfx1100', 32],
  ['gfx1200', 32],
  ['gfx1030', 32],
];

export interface PerArchTests {
  /** the test's title for one code path */
  readonly title: (arch: string, wave: number) => string;
  /** what the test file logs before the skip reason, and the skipped test's title, without root */
  readonly skipLog: string;
  readonly skipTitle: string;
  /** checks the output of a run that exited 0 */
  readonly check: (out: string, arch: string, wave: number) => void;
}

/**
 * registers one test per AMD code path: test/emu/<name>.cpp built for it (C++20) and run, a
 * non-zero exit failing; without root one skipped test, logging why
 */
export function testOnAmdArchs(name: string, t: PerArchTests): void {
  const where = clangRoot();
  if ('skip' in where) {
    console.log(`${t.skipLog}: ${where.skip}`);
    test.skip(t.skipTitle, () => {});
    return;
  }
  for (const [arch, wave] of AMD_ARCHS) {
    test(t.title(arch, wave), () => {
      const r = runEmulatorInRoot(where.root, name, { std: 'c++20', defines: [`__${arch}__`] });
      assert.is(r.status, 0, `${name} (${arch}) reported mismatches:\n${r.out}`);
      t.check(r.out, arch, wave);
    });
  }
}
