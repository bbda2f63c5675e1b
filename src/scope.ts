// Tensor lifetimes: tidy() scopes (which follow async work through AsyncLocalStorage, so a scope
// survives `await`), a FinalizationRegistry net for tensors nobody disposed, and a registry of
// live tensors for leak hunting.
import { AsyncLocalStorage } from 'node:async_hooks';
import type { Storage } from './storage.ts';

export interface Disposable { dispose(): void; readonly isDisposed: boolean }

interface Scope { readonly tracked: Disposable[] }
const scopes = new AsyncLocalStorage<Scope>();

/** called by every new tensor */
export function track(t: Disposable): void { scopes.getStore()?.tracked.push(t); }

function collectKept(value: unknown, keep: Set<unknown>, depth = 0): void {
  if (value === null || typeof value !== 'object' || depth > 4) return;
  if (keep.has(value)) return;
  keep.add(value);
  if (Array.isArray(value)) for (const v of value) collectKept(v, keep, depth + 1);
  else if (!(ArrayBuffer.isView(value))) for (const v of Object.values(value)) collectKept(v, keep, depth + 1);
}

/**
 * Runs fn; every tensor created inside that is not part of the result (a tensor, or arrays and
 * plain objects holding tensors) is disposed when fn returns or its promise settles.
 */
export function tidy<T>(fn: () => T): T {
  const scope: Scope = { tracked: [] };
  const finish = (result: unknown) => {
    const keep = new Set<unknown>();
    collectKept(result, keep);
    for (const t of scope.tracked) if (!keep.has(t) && !t.isDisposed) t.dispose();
    // kept tensors belong to the enclosing scope now
    const outer = scopes.getStore();
    if (outer) for (const t of scope.tracked) if (keep.has(t)) outer.tracked.push(t);
  };
  const out = scopes.run(scope, fn);
  if (out instanceof Promise) {
    return out.then((v) => { finish(v); return v; }, (e) => { finish(undefined); throw e; }) as T;
  }
  finish(out);
  return out;
}

/** keeps a tensor alive past the tidy() scope it was made in */
export function keep<T extends Disposable>(t: T): T {
  const s = scopes.getStore();
  if (s) { const i = s.tracked.indexOf(t); if (i >= 0) s.tracked.splice(i, 1); }
  return t;
}

// ---- forgotten tensors and leak hunting ------------------------------------------------------
const live = new Map<number, WeakRef<Disposable & { describe(): string }>>();
let nextId = 1;
const net = new FinalizationRegistry<{ storage: Storage; id: number }>(({ storage, id }) => {
  live.delete(id);
  storage.release();
});

export function register(t: Disposable & { describe(): string }, storage: Storage): number {
  const id = nextId++;
  live.set(id, new WeakRef(t));
  net.register(t, { storage, id }, t);
  return id;
}
export function unregister(t: Disposable, id: number): void {
  net.unregister(t);
  live.delete(id);
}

/** tensors not yet disposed (and not yet garbage-collected) */
export function liveTensors(): string[] {
  const out: string[] = [];
  for (const [id, ref] of live) {
    const t = ref.deref();
    if (!t || t.isDisposed) live.delete(id); else out.push(t.describe());
  }
  return out;
}
