// The Debian-unstable root with the real ROCm 6.4 headers, compiler and shared objects
// (scripts/rocm-root.sh, cached), and running commands inside it with a time limit.
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';

const repo = new URL('../..', import.meta.url).pathname;
let cached: string | null = null;

/** builds or reuses the root with shared objects; throws (never skips) when that fails */
export function rocmRoot(): string {
  if (cached) return cached;
  const script = join(repo, 'scripts/rocm-root.sh');
  const r = spawnSync('bash', [script], {
    env: { ...process.env, ROCM_ROOT_PARTS: 'all' },
    encoding: 'utf8',
    timeout: 600_000,
  });
  if (r.status !== 0) {
    throw new Error(`scripts/rocm-root.sh failed (status ${r.status ?? r.signal}):\n${(r.stderr ?? '').slice(-4000)}`);
  }
  const path = r.stdout.trim().split('\n').pop() ?? '';
  if (!path) throw new Error('scripts/rocm-root.sh printed no root path');
  cached = path;
  return path;
}

/** writes a file at `inner` (absolute path inside the root) */
export function writeInRoot(root: string, inner: string, text: string | Uint8Array): void {
  const p = join(root, inner);
  mkdirSync(dirname(p), { recursive: true });
  writeFileSync(p, text);
}

export interface RootRun {
  readonly status: number | null;
  readonly stdout: string;
  readonly stderr: string;
  readonly timedOut: boolean;
}

export interface RootOptions {
  /** extra environment inside the root (it starts from an empty one) */
  readonly env?: Record<string, string>;
  /**
   * mount /proc inside the root, in a mount namespace of the command's own (unshare), so the
   * mount goes away with it: Bun aborts at start without /proc (it reads /proc/self/maps),
   * Node and the compilers do not need it
   */
  readonly proc?: boolean;
}

/** runs argv inside the root (chroot, as root) with a hard time limit */
export function runInRoot(root: string, argv: readonly string[], timeoutMs = 60_000, opts: RootOptions = {}): RootRun {
  const envArgs = Object.entries({ PATH: '/usr/local/bin:/usr/bin:/bin', HOME: '/root', LANG: 'C', ...opts.env }).map(
    ([k, v]) => `${k}=${v}`,
  );
  const chroot = ['chroot', root, '/usr/bin/env', '-i', ...envArgs, ...argv];
  // sh execs chroot, so the time limit's SIGKILL reaches the command itself
  const [cmd, ...args] = opts.proc
    ? [
        'unshare',
        '--mount',
        '--',
        'sh',
        '-c',
        'mount -t proc proc "$1/proc" && shift && exec "$@"',
        'sh',
        root,
        ...chroot,
      ]
    : chroot;
  const r = spawnSync(cmd!, args, {
    encoding: 'utf8',
    timeout: timeoutMs,
    killSignal: 'SIGKILL',
    maxBuffer: 64 << 20,
  });
  return {
    status: r.status,
    stdout: r.stdout ?? '',
    stderr: r.stderr ?? '',
    timedOut: r.error !== undefined && /ETIMEDOUT/.test(String(r.error)),
  };
}

/** the dynamic symbols a shared object defines (nm -D on the host; binutils reads any ELF) */
export function dynamicSymbols(path: string): Set<string> {
  const out = execFileSync('nm', ['-D', '--defined-only', path], { encoding: 'utf8', maxBuffer: 256 << 20 });
  const names = new Set<string>();
  for (const line of out.split('\n')) {
    const f = line.trim().split(/\s+/);
    const sym = f[f.length - 1];
    if (f.length >= 3 && sym) names.add(sym.replace(/@.*$/, ''));
  }
  return names;
}
