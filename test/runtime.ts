// Which JavaScript runtime runs this process (Node or Bun), a full garbage collection on
// either, and how to start a TypeScript file under either: the runner, the examples test and
// the package test start their children with these.
import { existsSync } from 'node:fs';
import { join } from 'node:path';

export type RuntimeName = 'node' | 'bun';
export const RUNTIMES: readonly RuntimeName[] = ['node', 'bun'];

/** the part of Bun's global these helpers use (the project does not depend on Bun's types) */
interface BunGlobal { gc(force: boolean): void }
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
  if (bunGlobal) { bunGlobal.gc(true); return; }
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
export function tsCommand(name: RuntimeName, file: string, args: readonly string[] = []): { cmd: string; args: string[] } {
  const cmd = runtimePath(name);
  return name === 'bun'
    ? { cmd, args: [file, ...args] }
    : { cmd, args: ['--import', 'tsx', '--expose-gc', file, ...args] };
}
