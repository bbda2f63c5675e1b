// Tensor lifetimes: tidy() scopes (which follow async work through AsyncLocalStorage, so a scope
// survives `await`), a FinalizationRegistry net for tensors nobody disposed, and a registry of
// live tensors for leak hunting.
import { AsyncLocalStorage } from 'node:async_hooks';

export interface Disposable {
  dispose(): void;
  readonly isDisposed: boolean;
}

interface Scope {
  readonly tracked: Disposable[];
}
const scopes = new AsyncLocalStorage<Scope>();

/** called by every new tensor */
export function track(t: Disposable): void {
  scopes.getStore()?.tracked.push(t);
}

/**
 * Marks a class whose instances tidy() keeps whole without looking inside: tensors (a result
 * tensor's own storage, layout and device hold nothing tidy could dispose) and devices. Walking
 * into them made every tidy() cost a walk of the device's runtime, kernel and allocator objects
 * (9 to 16 us a call on Node 20 on the build machine).
 */
export const SCOPE_LEAF: unique symbol = Symbol('rocm-tensor.scopeLeaf');
type Leaf = { readonly [SCOPE_LEAF]?: true };

function collectKept(value: unknown, keep: Set<unknown>, depth = 0): void {
  if (value === null || typeof value !== 'object' || depth > 4) return;
  if (keep.has(value)) return;
  keep.add(value);
  if ((value as Leaf)[SCOPE_LEAF] === true) return;
  if (Array.isArray(value)) for (const v of value) collectKept(v, keep, depth + 1);
  else if (!ArrayBuffer.isView(value)) for (const v of Object.values(value)) collectKept(v, keep, depth + 1);
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
    return out.then(
      (v) => {
        finish(v);
        return v;
      },
      (e) => {
        finish(undefined);
        throw e;
      },
    ) as T;
  }
  finish(out);
  return out;
}

/** keeps a tensor alive past the tidy() scope it was made in */
export function keep<T extends Disposable>(t: T): T {
  const s = scopes.getStore();
  if (s) {
    const i = s.tracked.indexOf(t);
    if (i >= 0) s.tracked.splice(i, 1);
  }
  return t;
}

// ---- forgotten memory and leak hunting -------------------------------------------------------
// The safety net works per allocation, not per tensor: a storage becomes unreachable only when
// every view of it is, so one FinalizationRegistry cell per storage frees forgotten memory,
// and views (and the small tensors of a hot loop) stay cheap: no WeakRef, no registry cell.

/** what the leak registry knows of a live allocation; never references the storage itself */
export interface StorageRecord {
  readonly dtype: string;
  readonly length: number;
  readonly device: string;
  views: number;
}

const live = new Map<number, StorageRecord>();
let nextId = 1;
const net = new FinalizationRegistry<{ id: number; free: (() => void) | null }>(({ id, free }) => {
  live.delete(id);
  free?.();
});

/** what the safety net needs of an allocation */
export interface NetOwner {
  /** builds the function that returns the memory; it must not reference the owner */
  freeFn(): (() => void) | null;
}

// Registration is deferred to the next turn of the event loop: most storages of a hot loop
// are disposed long before that, and a registry cell costs more than the op's own host work.
// Forgotten ones are registered a moment later; the net only ever acts after a GC anyway. A
// storage released before then leaves the pending set at once, so a long synchronous loop (a
// benchmark, a decode step) keeps none of its dead storages alive until the flush: holding them
// made the collector promote and mark every one of them.
const pending = new Map<NetOwner, number>();
let flushQueued = false;
const registered = new WeakSet<object>();
function flush(): void {
  flushQueued = false;
  for (const [owner, id] of pending) {
    net.register(owner, { id, free: owner.freeFn() }, owner);
    registered.add(owner);
  }
  pending.clear();
}

export function registerStorage(owner: NetOwner, rec: StorageRecord): number {
  const id = nextId++;
  live.set(id, rec);
  pending.set(owner, id);
  if (!flushQueued) {
    flushQueued = true;
    setImmediate(flush);
  }
  return id;
}
export function unregisterStorage(owner: NetOwner, id: number): void {
  if (!pending.delete(owner) && registered.has(owner)) net.unregister(owner);
  live.delete(id);
}

/** allocations still held by tensors that were neither disposed nor garbage-collected */
export function liveTensors(): string[] {
  return [...live.values()].map(
    (r) => `${r.dtype}[${r.length}] on ${r.device} (${r.views} view${r.views === 1 ? '' : 's'})`,
  );
}
