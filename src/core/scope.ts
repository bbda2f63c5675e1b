// Tensor lifetimes: tidy() scopes (which follow async work through AsyncLocalStorage, so a scope
// survives `await`), a FinalizationRegistry net for tensors nobody disposed, and a registry of
// live tensors for leak hunting.
import { AsyncLocalStorage } from 'node:async_hooks';
import { DTYPE_INFO, type DType } from './dtype.ts';

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
 * plain objects holding tensors) is disposed when fn returns, throws, or its promise settles.
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
  let out: T;
  try {
    out = scopes.run(scope, fn);
  } catch (e) {
    // a throw frees what fn made too: an error in a long-running loop must not leak
    finish(undefined);
    throw e;
  }
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
//
// What it can and cannot do. A CPU storage's memory is a typed array: once nothing references
// the storage the collector reclaims it by itself, in any kind of loop. Device memory goes back
// only when the registry's callback runs, and JavaScript engines run those callbacks as tasks:
// after a collection AND a turn of the event loop. A synchronous loop, or one that only awaits
// promises that are already settled, gets no turn, so nothing can free its forgotten device
// memory until it yields; the allocator's out-of-memory error says so, with the bytes held.

/** what the leak registry knows of a live allocation; never references the storage itself */
export interface StorageRecord {
  readonly dtype: string;
  readonly length: number;
  readonly device: string;
  views: number;
}

/** what the net keeps for a registered storage (never the storage itself) */
interface Held {
  readonly id: number;
  readonly free: (() => void) | null;
  readonly bytes: number;
  readonly device: string;
  /** where it was made: recorded only once forgotten memory has been seen (see SITES_FROM) */
  readonly site: string | null;
}

const MiB = 2 ** 20;
/** storages this large enter the net at once: a registry cell is nothing next to the allocation */
const AT_ONCE_BYTES = MiB;
/** smaller ones wait for the next turn, but never more than this many bytes or storages */
const PENDING_BYTES = 16 * MiB;
const PENDING_COUNT = 4096;
/** device bytes made and not disposed since the last collection the net asked for: past this, it asks again */
const COLLECT_EVERY = 1024 * MiB;
/** forgotten bytes (freed by the net, not by dispose) after which creation sites are recorded, and the warning */
const SITES_FROM = 32 * MiB;
const WARN_FROM = 256 * MiB;

const live = new Map<number, StorageRecord>();
let nextId = 1;
/** bytes of storages made and not yet released, per device ('cpu', 'rocm:0', ...) */
const heldBytes = new Map<string, number>();
let deviceHeld = 0;
let deviceHeldAtCollect = 0;
let forgottenBytes = 0;
let recordSites = false;
let warned = false;
let lastSite: string | null = null;

const net = new FinalizationRegistry<Held>((h) => {
  live.delete(h.id);
  h.free?.();
  hold(h.device, -h.bytes);
  forgottenBytes += h.bytes;
  if (h.site) lastSite = h.site;
  if (forgottenBytes >= SITES_FROM) recordSites = true;
  if (!warned && forgottenBytes >= WARN_FROM) {
    warned = true;
    warnForgotten();
  }
});

function warnForgotten(): void {
  const mib = Math.round(forgottenBytes / MiB);
  const where = lastSite ? ` One was made at:\n${lastSite}` : '';
  const msg =
    `${mib} MiB of tensors were freed by the garbage collector instead of dispose() or tidy(). ` +
    'The collector finds them late (device memory only after a collection and a turn of the event loop), ' +
    `so a loop that drops tensors can run out of memory first: dispose them, or work inside tidy().${where}`;
  process.emitWarning(msg, { type: 'RocmTensorWarning', code: 'RocmTensorForgottenTensors' });
}

function hold(device: string, bytes: number): void {
  heldBytes.set(device, (heldBytes.get(device) ?? 0) + bytes);
  if (device === 'cpu') return;
  deviceHeld += bytes;
  if (deviceHeld < deviceHeldAtCollect) deviceHeldAtCollect = deviceHeld;
  else if (deviceHeld - deviceHeldAtCollect > COLLECT_EVERY) {
    deviceHeldAtCollect = deviceHeld;
    requestCollection();
  }
}

/** asks the engine for a collection where it offers one (Bun always; Node with --expose-gc) */
function requestCollection(): void {
  const g = globalThis as { Bun?: { gc(force: boolean): void }; gc?: () => void };
  if (g.Bun) g.Bun.gc(false);
  else g.gc?.();
}

/** the user's frames of a creation stack (the library's own are left out where they can be told apart) */
function creationSite(): string | null {
  const stack = new Error().stack;
  if (!stack) return null;
  const frames = stack.split('\n').slice(1);
  const inLib = /[\\/]src[\\/](core|device|ops|backends|tensor|runtime)[\\/]/;
  const user = frames.filter((f) => !inLib.test(f));
  return (user.length ? user : frames.slice(2)).slice(0, 4).join('\n');
}

/** what the safety net needs of an allocation */
export interface NetOwner {
  /** builds the function that returns the memory; it must not reference the owner */
  freeFn(): (() => void) | null;
}

// Registration of small storages is deferred to the next turn of the event loop: most storages
// of a hot loop are disposed long before that, and a registry cell costs more than the op's own
// host work. A storage released before then leaves the pending set at once. The pending set
// holds its storages strongly, so it is bounded: large storages enter the net at once, and the
// set is flushed when it passes PENDING_BYTES or PENDING_COUNT. Unbounded, a synchronous loop
// that dropped large tensors kept every one of them until the loop ended.
const pending = new Map<NetOwner, { readonly id: number; readonly bytes: number; readonly device: string }>();
let pendingBytes = 0;
let flushQueued = false;
const registered = new WeakSet<object>();

function enter(owner: NetOwner, id: number, bytes: number, device: string, site: string | null): void {
  net.register(owner, { id, free: owner.freeFn(), bytes, device, site }, owner);
  registered.add(owner);
}
function flushPending(): void {
  for (const [owner, p] of pending) enter(owner, p.id, p.bytes, p.device, null);
  pending.clear();
  pendingBytes = 0;
}
function onTurn(): void {
  flushQueued = false;
  flushPending();
}

const bytesOf = (rec: StorageRecord): number => rec.length * (DTYPE_INFO[rec.dtype as DType]?.size ?? 8);

export function registerStorage(owner: NetOwner, rec: StorageRecord): number {
  const id = nextId++;
  live.set(id, rec);
  const bytes = bytesOf(rec);
  hold(rec.device, bytes);
  if (bytes >= AT_ONCE_BYTES) {
    enter(owner, id, bytes, rec.device, recordSites ? creationSite() : null);
    return id;
  }
  pending.set(owner, { id, bytes, device: rec.device });
  pendingBytes += bytes;
  if (pendingBytes > PENDING_BYTES || pending.size > PENDING_COUNT) flushPending();
  else if (!flushQueued) {
    flushQueued = true;
    setImmediate(onTurn);
  }
  return id;
}
export function unregisterStorage(owner: NetOwner, id: number): void {
  const p = pending.get(owner);
  if (p) {
    pending.delete(owner);
    pendingBytes -= p.bytes;
  } else if (registered.has(owner)) net.unregister(owner);
  const rec = live.get(id);
  if (rec) hold(rec.device, -bytesOf(rec));
  live.delete(id);
}

/**
 * For an out-of-memory error on `device`: how much its tensors that are not disposed hold, and
 * why forgotten ones may not have come back yet.
 */
export function heldNote(device: string): string {
  const held = heldBytes.get(device) ?? 0;
  return (
    `; tensors not yet disposed hold ${(held / MiB).toFixed(1)} MiB on ${device} (liveTensors() lists them). ` +
    'Tensors dropped without dispose() come back only after a garbage collection and a turn of the event loop, ' +
    'never inside a synchronous loop: dispose() them or use tidy()'
  );
}

/** allocations still held by tensors that were neither disposed nor garbage-collected */
export function liveTensors(): string[] {
  return [...live.values()].map(
    (r) => `${r.dtype}[${r.length}] on ${r.device} (${r.views} view${r.views === 1 ? '' : 's'})`,
  );
}
