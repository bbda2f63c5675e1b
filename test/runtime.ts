// Which JavaScript runtime runs this process (Node or Bun), a full garbage collection on
// either, and how to start a TypeScript file or worker under either: the runner, the worker,
// examples and package tests start their children with these.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';

export type RuntimeName = 'node' | 'bun';
export const RUNTIMES: readonly RuntimeName[] = ['node', 'bun'];

/** the part of Bun's global these helpers use (the project does not depend on Bun's types) */
interface BunGlobal {
  gc(force: boolean): void;
}
const bunGlobal = (globalThis as { Bun?: BunGlobal }).Bun;

/** the repository root: children that run TypeScript start there (tsx resolves from it) */
export const REPO_ROOT = new URL('..', import.meta.url).pathname;

/** Bun also fills process.versions.node (with the Node version it mimics): test for bun first */
export const runtime: RuntimeName = process.versions.bun ? 'bun' : 'node';

export function isRuntimeName(s: string): s is RuntimeName {
  return (RUNTIMES as readonly string[]).includes(s);
}

/**
 * A full, synchronous collection: Bun.gc(true) under Bun, gc() under Node, which test/run.ts
 * starts with --expose-gc. Throws when neither is there, so a safety-net test cannot pass
 * without collecting anything.
 */
export function collectGarbage(): void {
  if (bunGlobal) {
    bunGlobal.gc(true);
    return;
  }
  const gc = (globalThis as { gc?: () => void }).gc;
  if (!gc) throw new Error('no gc(): start node with --expose-gc (test/run.ts does)');
  gc();
}

/**
 * The executable of a runtime: this process's own when it is that runtime; else $NODE / $BUN;
 * else, for Bun, the one the `bun` devDependency installed (scripts/bun.sh checks it works);
 * else the name, found on PATH.
 */
export function runtimePath(name: RuntimeName): string {
  if (name === runtime) return process.execPath;
  const env = process.env[name.toUpperCase()];
  if (env) return env;
  const local = join(REPO_ROOT, 'node_modules', '.bin', name);
  return name === 'bun' && existsSync(local) ? local : name;
}

/**
 * argv that runs a TypeScript file under a runtime. Bun runs TypeScript itself and collects
 * garbage through Bun.gc; Node needs tsx (resolved from the repository root, the children's
 * working directory) and --expose-gc.
 */
export function tsCommand(
  name: RuntimeName,
  file: string,
  args: readonly string[] = [],
): { cmd: string; args: string[] } {
  const cmd = runtimePath(name);
  return name === 'bun'
    ? { cmd, args: [file, ...args] }
    : { cmd, args: ['--import', 'tsx', '--expose-gc', file, ...args] };
}

/**
 * A worker thread running a TypeScript module. Bun runs it as is. Node 20 does not carry the
 * main thread's tsx hooks into workers (not even with --import tsx in execArgv), so there the
 * worker starts from a short script that registers tsx and then imports the module.
 */
export function tsWorker(url: URL, workerData: unknown): Worker {
  if (runtime === 'bun') return new Worker(url, { workerData });
  const api = import.meta.resolve('tsx/esm/api');
  const boot = `import(${JSON.stringify(api)}).then((m) => m.tsImport(${JSON.stringify(url.href)}, ${JSON.stringify(import.meta.url)}))`;
  return new Worker(boot, { eval: true, workerData });
}
