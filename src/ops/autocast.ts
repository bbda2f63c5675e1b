// autocast(dtype, fn): mixed precision like torch.autocast. While fn runs (and, when it returns a
// promise, until that settles, in fn's async context only), the registry hands each op's
// arguments to the rule of ops/autocast-policy.ts first. Casts go through the toDtype op, so
// autograd carries each gradient back to the original dtype. A leaf that requires a gradient (a
// parameter) is cast once per scope and kept until the scope ends (recast if written in between);
// every other cast is freed as soon as its op has run. With no scope open the registry pays one
// null test per op.
import { AsyncLocalStorage } from 'node:async_hooks';
import type { DType } from '../core/dtype.ts';
import { TensorError } from '../core/errors.ts';
import { RawTensor } from '../device/raw-tensor.ts';
import { AUTOCAST_POLICY, type AutocastPolicy } from './autocast-policy.ts';
import { cast } from './cast.ts';
import { setArgCaster, type CastArgs } from './registry.ts';

/** the half dtypes autocast lowers to */
export type AutocastDType = 'bf16' | 'f16';

export interface AutocastOptions {
  /** false: ops inside run in their inputs' dtypes, also inside an enclosing autocast (default true) */
  readonly enabled?: boolean;
}

interface Scope {
  /** null: autocast switched off in this scope */
  readonly dtype: AutocastDType | null;
  /** parameter casts: source -> [its storage version when cast, dtype, the cast] */
  readonly cache: Map<RawTensor, { version: number; dtype: DType; t: RawTensor }[]>;
}

const scopes = new AsyncLocalStorage<Scope>();
/** scopes entered and not yet finished, over all async contexts: the hook is installed while > 0 */
let open = 0;

const HALF: readonly DType[] = ['f16', 'bf16'];
const RANK: Partial<Record<DType, number>> = { f16: 1, bf16: 1, f32: 2, f64: 3 };
const isFloat = (t: RawTensor): boolean => RANK[t.dtype] !== undefined;

/** a leaf that requires a gradient: autograd gives it a state with no node */
const isParam = (t: RawTensor): boolean => t.gradState !== null && !t.gradState.node;

/** the dtype a float tensor goes to under a policy, or null to leave it */
function target(policy: AutocastPolicy, scope: AutocastDType, t: RawTensor, widest: DType | null): DType | null {
  if (!isFloat(t)) return null;
  switch (policy) {
    case 'lower':
      return t.dtype === 'f32' ? scope : null;
    case 'f32':
      return HALF.includes(t.dtype) ? 'f32' : null;
    case 'promote':
      return widest !== null && t.dtype !== widest ? widest : null;
  }
}

/** every tensor in args: at the top, in arrays, and in plain option objects (two levels) */
function eachTensor(v: unknown, fn: (t: RawTensor) => void, depth = 0): void {
  if (v instanceof RawTensor) fn(v);
  else if (depth < 3 && Array.isArray(v)) for (const x of v) eachTensor(x, fn, depth + 1);
  else if (depth < 3 && v !== null && typeof v === 'object' && Object.getPrototypeOf(v) === Object.prototype)
    for (const x of Object.values(v)) eachTensor(x, fn, depth + 1);
}

/** args with every tensor mapped (arrays and option objects copied only where something changed) */
function mapTensors(v: unknown, fn: (t: RawTensor) => RawTensor, depth = 0): unknown {
  if (v instanceof RawTensor) return fn(v);
  if (depth < 3 && Array.isArray(v)) {
    const out = v.map((x) => mapTensors(x, fn, depth + 1));
    return out.some((x, i) => x !== v[i]) ? out : v;
  }
  if (depth < 3 && v !== null && typeof v === 'object' && Object.getPrototypeOf(v) === Object.prototype) {
    let changed = false;
    const out: Record<string, unknown> = {};
    for (const [k, x] of Object.entries(v)) {
      out[k] = mapTensors(x, fn, depth + 1);
      if (out[k] !== x) changed = true;
    }
    return changed ? out : v;
  }
  return v;
}

/** the widest float dtype among args' tensors when they differ, else null */
function widestOf(args: readonly unknown[]): DType | null {
  const seen = new Set<DType>();
  eachTensor(args, (t) => {
    if (isFloat(t)) seen.add(t.dtype);
  });
  if (seen.size < 2) return null;
  const ds = [...seen];
  // f16 with bf16 meets in f32, as in PyTorch's promotion
  if (ds.every((d) => HALF.includes(d))) return 'f32';
  return ds.reduce((a, b) => (RANK[b]! > RANK[a]! ? b : a));
}

function castFor(scope: Scope, t: RawTensor, d: DType, temps: RawTensor[]): RawTensor {
  if (!isParam(t)) {
    const c = cast(t, d);
    temps.push(c);
    return c;
  }
  const list = scope.cache.get(t) ?? [];
  const version = t.storage.version;
  const hit = list.find((e) => e.dtype === d);
  if (hit && hit.version === version) return hit.t;
  const c = cast(t, d);
  if (hit) {
    // written since: the stale cast goes, the op's own graph keeps what it saved of it
    hit.t.dispose();
    hit.t = c;
    hit.version = version;
  } else list.push({ version, dtype: d, t: c });
  scope.cache.set(t, list);
  return c;
}

/** the registry's hook: the op's arguments under the current scope's rule, or null to leave them */
function castArgs(op: string, args: unknown[]): CastArgs | null {
  const rule = AUTOCAST_POLICY.get(op);
  if (rule === undefined) return null;
  const scope = scopes.getStore();
  if (scope === undefined || scope.dtype === null) return null;
  if (rule.when && !rule.when(args)) return null;
  const widest = rule.policy === 'promote' ? widestOf(args) : null;
  if (rule.policy === 'promote' && widest === null) return null;
  const temps: RawTensor[] = [];
  const low = scope.dtype;
  try {
    const out = args.map((a) =>
      mapTensors(a, (t) => {
        const d = target(rule.policy, low, t, widest);
        return d === null ? t : castFor(scope, t, d, temps);
      }),
    );
    return { args: out, temps };
  } catch (e) {
    for (const t of temps) t.dispose();
    throw e;
  }
}

function finish(scope: Scope): void {
  for (const list of scope.cache.values()) for (const e of list) e.t.dispose();
  scope.cache.clear();
  open--;
  if (open === 0) setArgCaster(null);
}

/**
 * Runs fn with mixed precision: products, convolutions and attention take their f32 inputs in
 * `dtype` ('bf16' or 'f16'); softmax, norms, losses, sums and means take half inputs in f32; ops
 * that need one dtype across operands (arithmetic, comparisons, where, cat) promote mixed float
 * operands to the widest. Gradients flow back to each input in its own dtype. When fn returns a
 * promise, the scope lasts until it settles and covers only fn's own async work. Scopes nest: the
 * innermost decides, and { enabled: false } switches autocast off inside an enclosing one.
 */
export function autocast<T>(dtype: AutocastDType, fn: () => T, opts: AutocastOptions = {}): T {
  if (dtype !== 'bf16' && dtype !== 'f16')
    throw new TensorError(`autocast: dtype must be 'bf16' or 'f16', got ${JSON.stringify(dtype)}`);
  if (typeof fn !== 'function') throw new TensorError(`autocast: expected a function to run, got ${typeof fn}`);
  if (opts === null || typeof opts !== 'object')
    throw new TensorError(`autocast: options must be an object, got ${String(opts)}`);
  const enabled = opts.enabled ?? true;
  if (typeof enabled !== 'boolean')
    throw new TensorError(`autocast: enabled must be a boolean, got ${JSON.stringify(enabled)}`);
  const scope: Scope = { dtype: enabled ? dtype : null, cache: new Map() };
  open++;
  if (open === 1) setArgCaster(castArgs);
  let out: T;
  try {
    out = scopes.run(scope, fn);
  } catch (e) {
    finish(scope);
    throw e;
  }
  if (out instanceof Promise) {
    return out.then(
      (v) => {
        finish(scope);
        return v;
      },
      (e) => {
        finish(scope);
        throw e;
      },
    ) as T;
  }
  finish(scope);
  return out;
}

/** the dtype autocast lowers to where this runs, or null outside any (enabled) scope */
export function autocastDType(): AutocastDType | null {
  return scopes.getStore()?.dtype ?? null;
}
