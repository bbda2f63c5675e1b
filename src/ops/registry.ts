// The op registry: every op is declared once, with its name, its family, the dtypes it takes, a
// check that validates the arguments and turns them into what the backends take (the output
// shape and dtype rule included), one implementation per backend, and its gradient. Tensor's
// methods call the op a declaration returns; the registry picks the backend from the device, and
// is the one place every op passes through (where autograd records, next to the checks).
import type { DType } from '../core/dtype.ts';
import { NotOnDeviceError, TensorError } from '../core/errors.ts';
import type { Device } from '../device/device.ts';
import { RawTensor } from '../device/raw-tensor.ts';
import { HostMemoryError } from '../device/host-memory.ts';

/** the backends an op can run on: the CPU reference, and the GPU (ROCm and CUDA alike) */
export type BackendName = 'cpu' | 'gpu';
export const BACKENDS: readonly BackendName[] = ['cpu', 'gpu'];

/**
 * An op's gradient: 'none' where no input takes one (integer results, comparisons, sort
 * indices, random draws), 'missing' where the op is differentiable and its rule is still to be
 * written (autograd refuses it by name), or the rule itself.
 */
export type GradSlot<B extends unknown[]> = 'none' | 'missing' | GradRule<B>;
/**
 * Reverse mode: from the output's gradient, [input, its gradient] for the tensor arguments (as
 * they appear in args) that take one, each gradient in its input's shape and dtype; written in
 * terms of other ops, which run with recording off. `wants(t)` says whether backward needs
 * argument t's gradient: one that requires none (a network's images, a mask) may be skipped.
 */
export type GradRule<B extends unknown[]> = (
  gradOut: RawTensor,
  args: B,
  out: RawTensor,
  wants: (t: RawTensor) => boolean,
) => [RawTensor, RawTensor][];

export interface OpDef<A extends unknown[], B extends unknown[], R> {
  readonly name: string;
  /** the op reference groups ops by family (elementwise, reduce, nn, ...) */
  readonly family: string;
  /** one line for the op reference */
  readonly summary: string;
  /** the user-facing names when one declaration serves several (unary: exp, log, ...) */
  readonly variants?: readonly string[];
  /** the dtypes of the main input the op takes; the check enforces them */
  readonly dtypes: readonly DType[];
  /** validates the arguments (throwing the op's error) and returns what the backends take */
  check(...args: A): B;
  /** the device that picks the backend; default: the first tensor argument's */
  device?(...args: B): Device;
  readonly cpu: ((...args: B) => R) | null;
  readonly gpu: ((...args: B) => R) | null;
  readonly grad: GradSlot<B>;
  /** in-place ops: the tensor they write (its storage's version counter moves on) */
  writes?(...args: B): RawTensor;
}

/** what the op reference and the autograd layer read of a declaration */
export interface OpInfo {
  readonly name: string;
  readonly family: string;
  readonly summary: string;
  readonly variants: readonly string[];
  readonly dtypes: readonly DType[];
  readonly backends: readonly BackendName[];
  readonly grad: 'none' | 'missing' | 'rule';
}

/** an op as its callers see it: a function, with its declaration attached */
export type Op<A extends unknown[], R> = ((...args: A) => R) & { readonly info: OpInfo };

const ops = new Map<string, OpInfo>();
const grads = new Map<string, GradSlot<unknown[]>>();

/**
 * Autograd's hook (tensor/autograd.ts installs it while a leaf that requires a gradient is alive,
 * outside noGrad): called with the op's backend arguments and output; for in-place ops, before
 * they write, with the tensor they write.
 */
export type GradRecorder = (op: string, args: readonly unknown[], out: unknown, writes: RawTensor | null) => void;
let recorder: GradRecorder | null = null;
export function setGradRecorder(r: GradRecorder | null): void {
  recorder = r;
}
/** whether autograd will record an op over these tensors: it records now (a leaf that requires a
 *  gradient is alive, outside noGrad) and one of them takes part in autograd */
export function recordsGradOf(...ts: readonly RawTensor[]): boolean {
  return recorder !== null && ts.some((t) => t.gradState !== null);
}

/** what autocast makes of an op's arguments: the arguments to run it with, and the casts among
 *  them that the registry frees once the op has run */
export interface CastArgs {
  readonly args: unknown[];
  readonly temps: RawTensor[];
}
/** autocast's hook (ops/autocast.ts installs it while a scope is open): null leaves the arguments */
export type ArgCaster = (op: string, args: unknown[]) => CastArgs | null;
let caster: ArgCaster | null = null;
export function setArgCaster(c: ArgCaster | null): void {
  caster = c;
}

/**
 * The gradients of the arguments a rule is asked for, each made only when wanted (`t` null: an
 * absent optional argument); those made are disposed if a later one fails.
 */
export function wantedGrads(
  wants: (t: RawTensor) => boolean,
  parts: readonly [RawTensor | null | undefined, () => RawTensor][],
): [RawTensor, RawTensor][] {
  const out: [RawTensor, RawTensor][] = [];
  try {
    for (const [t, make] of parts) if (t && wants(t)) out.push([t, make()]);
  } catch (e) {
    for (const [, g] of out) g.dispose();
    throw e;
  }
  return out;
}

/** a gradient rule that runs without autocast: it computes in the dtypes the forward saved */
function uncast<B extends unknown[]>(rule: GradRule<B>): GradRule<B> {
  return (g, args, out, wants) => {
    if (caster === null) return rule(g, args, out, wants);
    const c = caster;
    caster = null;
    try {
      return rule(g, args, out, wants);
    } finally {
      caster = c;
    }
  };
}

/** the gradient slot of an op */
export function gradRuleOf(name: string): GradSlot<unknown[]> {
  const g = grads.get(name);
  if (g === undefined) throw new TensorError(`op registry: no op '${name}'`);
  return g;
}

/** gives a declared op its gradient rule (the rules live in ops/grads.ts, written in other ops) */
export function defineGrad<B extends unknown[]>(name: string, rule: GradRule<B>): void {
  if (!ops.has(name)) throw new TensorError(`op registry: no op '${name}' to give a gradient`);
  grads.set(name, uncast(rule) as unknown as GradRule<unknown[]>);
}

function firstDevice(args: readonly unknown[], name: string): Device {
  for (const a of args) if (a instanceof RawTensor) return a.device;
  throw new TensorError(`${name}: internal: no tensor argument to dispatch on`);
}

/** declares an op once; the returned function checks, dispatches and runs it */
export function defineOp<A extends unknown[], B extends unknown[], R>(def: OpDef<A, B, R>): Op<A, R> {
  if (ops.has(def.name)) throw new TensorError(`op registry: '${def.name}' is declared twice`);
  const info: OpInfo = {
    name: def.name,
    family: def.family,
    summary: def.summary,
    variants: def.variants ?? [def.name],
    dtypes: def.dtypes,
    backends: BACKENDS.filter((b) => def[b] !== null),
    // read from the slot, which defineGrad may fill after the declaration
    get grad() {
      const g = gradRuleOf(def.name);
      return typeof g === 'function' ? 'rule' : g;
    },
  };
  ops.set(def.name, info);
  grads.set(def.name, (typeof def.grad === 'function' ? uncast(def.grad) : def.grad) as GradSlot<unknown[]>);
  const { check, cpu, gpu, name, writes } = def;
  const deviceOf = def.device;
  // under autocast: the op runs on its arguments cast by its rule, and the ops it runs inside see
  // no autocast
  const runCast = (args: A): R => {
    const c = caster!;
    caster = null;
    try {
      const cast = c(name, args);
      if (cast === null) return run(...args);
      try {
        return run(...(cast.args as A));
      } finally {
        for (const t of cast.temps) t.dispose();
      }
    } finally {
      caster = c;
    }
  };
  const run = (...args: A): R => {
    if (caster !== null) return runCast(args);
    const b = check(...args);
    const dev = deviceOf ? deviceOf(...b) : firstDevice(b, name);
    const impl = dev.isCpu ? cpu : gpu;
    if (impl === null) throw new NotOnDeviceError(`${name}: not on ${dev.kind} devices yet (on ${dev})`);
    if (writes !== undefined) {
      const w = writes(...b);
      w.storage.version++;
      if (recorder !== null) recorder(name, b, undefined, w);
    }
    if (recorder === null) return dev.isCpu ? runCpu(name, impl, b) : impl(...b);
    // the ops an op runs inside are its own business: only the op itself is recorded
    const rec = recorder;
    recorder = null;
    let out: R;
    try {
      out = dev.isCpu ? runCpu(name, impl, b) : impl(...b);
    } finally {
      recorder = rec;
    }
    if (writes === undefined) rec(name, b, out, null);
    return out;
  };
  return Object.assign(run, { info });
}

/** a CPU op's call: an allocation too large for the machine is named by the innermost op */
function runCpu<B extends unknown[], R>(name: string, impl: (...args: B) => R, b: B): R {
  try {
    return impl(...b);
  } catch (e) {
    if (e instanceof HostMemoryError && e.op === null) {
      e.op = name;
      e.message = `${name}: ${e.message}`;
    }
    throw e;
  }
}

/** every declared op, in declaration order (the op reference is generated from this) */
export function registeredOps(): OpInfo[] {
  return [...ops.values()];
}
