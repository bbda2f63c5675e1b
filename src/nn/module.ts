// Module: the base of trainable layers. A module owns its parameters (float leaves that require a
// gradient), its buffers (state that is not trained, such as BatchNorm's running statistics) and
// its child modules, each by name. Names join with dots into the state dict's keys the way
// PyTorch names them ("0.weight", "bn.running_mean"), so a checkpoint maps one to one.
import { type DType, isFloatDType } from '../core/dtype.ts';
import { ShapeError, TensorError, fmtShape } from '../core/errors.ts';
import { keep } from '../core/scope.ts';
import { noGrad } from '../tensor/autograd.ts';
import { Tensor, toDevice, type DeviceLike } from '../tensor/tensor.ts';
import { describeValue } from '../ops/args.ts';
import { assign } from './assign.ts';

const NAME = /^[A-Za-z_][A-Za-z0-9_]*$|^[0-9]+$/;

export abstract class Module {
  /** training mode (train()) or evaluation mode (eval()); Dropout and BatchNorm read it */
  training = true;
  readonly #params = new Map<string, Tensor | null>();
  readonly #buffers = new Map<string, Tensor>();
  readonly #children = new Map<string, Module>();

  /** the layer's name in messages: its class */
  protected get label(): string {
    return this.constructor.name;
  }

  #checkName(kind: string, name: string): void {
    if (!NAME.test(name))
      throw new TensorError(`${this.label}: ${kind} name '${name}' must be an identifier or an index`);
    if (this.#params.has(name) || this.#buffers.has(name) || this.#children.has(name))
      throw new TensorError(`${this.label}: '${name}' is registered already`);
  }

  /** makes t (a float tensor, or null for an absent one such as a bias) a parameter: a leaf
   *  that requires a gradient, owned by this module */
  protected registerParameter(name: string, t: Tensor | null): void {
    this.#checkName('parameter', name);
    if (t !== null) {
      if (!(t instanceof Tensor))
        throw new TensorError(`${this.label}: parameter '${name}' must be a Tensor, got ${describeValue(t)}`);
      if (!isFloatDType(t.dtype))
        throw new TensorError(`${this.label}: parameter '${name}' must have a float dtype, got ${t.describe()}`);
      if (!t.isLeaf) throw new TensorError(`${this.label}: parameter '${name}' must be a leaf; detach() it first`);
      t.requiresGrad = true;
      keep(t);
    }
    this.#params.set(name, t);
  }
  /** t as a buffer: saved in the state dict, moved by to(), never trained */
  protected registerBuffer(name: string, t: Tensor): void {
    this.#checkName('buffer', name);
    this.#buffers.set(name, keep(t));
  }
  protected registerModule(name: string, m: Module): void {
    this.#checkName('module', name);
    if (!(m instanceof Module))
      throw new TensorError(`${this.label}: child '${name}' must be a Module, got ${describeValue(m)}`);
    this.#children.set(name, m);
  }

  /** the parameter called name (subclasses expose theirs through getters) */
  protected param(name: string): Tensor {
    const t = this.#params.get(name);
    if (t === undefined || t === null) throw new TensorError(`${this.label}: no parameter '${name}'`);
    return t;
  }
  protected paramOrNull(name: string): Tensor | null {
    const t = this.#params.get(name);
    if (t === undefined) throw new TensorError(`${this.label}: no parameter '${name}'`);
    return t;
  }
  protected buffer(name: string): Tensor {
    const t = this.#buffers.get(name);
    if (t === undefined) throw new TensorError(`${this.label}: no buffer '${name}'`);
    return t;
  }
  protected child(name: string): Module {
    const m = this.#children.get(name);
    if (m === undefined) throw new TensorError(`${this.label}: no child module '${name}'`);
    return m;
  }

  /** [name, child] for the direct children */
  namedChildren(): [string, Module][] {
    return [...this.#children];
  }
  children(): Module[] {
    return [...this.#children.values()];
  }
  /** this module and every module below it, with dotted names ('' for this one) */
  namedModules(prefix = ''): [string, Module][] {
    const out: [string, Module][] = [[prefix, this]];
    for (const [n, m] of this.#children) out.push(...m.namedModules(prefix === '' ? n : `${prefix}.${n}`));
    return out;
  }
  /** every parameter of this module and its descendants, with dotted names, in registration order */
  namedParameters(): [string, Tensor][] {
    const out: [string, Tensor][] = [];
    for (const [prefix, m] of this.namedModules()) {
      for (const [n, t] of m.#params) if (t !== null) out.push([prefix === '' ? n : `${prefix}.${n}`, t]);
    }
    return out;
  }
  parameters(): Tensor[] {
    return this.namedParameters().map(([, t]) => t);
  }
  namedBuffers(): [string, Tensor][] {
    const out: [string, Tensor][] = [];
    for (const [prefix, m] of this.namedModules()) {
      for (const [n, t] of m.#buffers) out.push([prefix === '' ? n : `${prefix}.${n}`, t]);
    }
    return out;
  }
  buffers(): Tensor[] {
    return this.namedBuffers().map(([, t]) => t);
  }

  /** sets training mode here and below; returns this */
  train(mode = true): this {
    if (typeof mode !== 'boolean')
      throw new TensorError(`${this.label}.train: expected a boolean, got ${describeValue(mode)}`);
    for (const [, m] of this.namedModules()) m.training = mode;
    return this;
  }
  /** evaluation mode here and below (train(false)) */
  eval(): this {
    return this.train(false);
  }

  /**
   * Clears the parameters' gradients. setToNull (the default, as in PyTorch): grad becomes null
   * and the gradient tensor is disposed (it belongs to the parameter); false: filled with zeros.
   */
  zeroGrad(setToNull = true): void {
    clearGrads(this.parameters(), setToNull);
  }

  /**
   * Moves every parameter and buffer to device and (float tensors only) dtype, in place of the
   * old ones, which are disposed along with any gradient; returns this. Build optimizers after
   * moving a module: they hold the parameter tensors themselves.
   */
  to(device?: DeviceLike | null, dtype?: DType): this {
    const dev = device === undefined || device === null ? null : toDevice(device);
    if (dtype !== undefined && !isFloatDType(dtype))
      throw new TensorError(`${this.label}.to: dtype must be a float dtype, got ${describeValue(dtype)}`);
    const moved = (t: Tensor): Tensor | null => {
      const d = dev ?? t.device;
      const dt = dtype !== undefined && isFloatDType(t.dtype) ? dtype : t.dtype;
      if (d === t.device && dt === t.dtype) return null;
      return noGrad(() => {
        const onDev = t.to(d);
        if (dt === onDev.dtype) return onDev;
        const cast = onDev.toDtype(dt);
        onDev.dispose();
        return cast;
      });
    };
    for (const [, m] of this.namedModules()) {
      for (const [n, p] of m.#params) {
        if (p === null) continue;
        const q = moved(p);
        if (q === null) continue;
        const wants = p.requiresGrad;
        p.grad?.dispose();
        p.dispose();
        q.requiresGrad = wants;
        m.#params.set(n, keep(q));
      }
      for (const [n, b] of m.#buffers) {
        const q = moved(b);
        if (q === null) continue;
        b.dispose();
        m.#buffers.set(n, keep(q));
      }
    }
    return this;
  }

  /** the parameters and buffers by dotted name: the module's own tensors (do not dispose them) */
  stateDict(): Record<string, Tensor> {
    const out: Record<string, Tensor> = {};
    for (const [n, t] of this.namedParameters()) out[n] = t;
    for (const [n, t] of this.namedBuffers()) out[n] = t;
    return out;
  }

  /**
   * Copies the values of `state` (tensors by dotted name, as stateDict() gives them) into this
   * module's tensors, converting device and dtype; shapes must match. strict (default): every
   * name on both sides must match, else nothing is written and the error lists the differences.
   */
  loadStateDict(
    state: Readonly<Record<string, Tensor>> | ReadonlyMap<string, Tensor>,
    opts: { strict?: boolean } = {},
  ): { missing: string[]; unexpected: string[] } {
    const given = state instanceof Map ? new Map(state) : new Map(Object.entries(state));
    const own = this.stateDict();
    const missing = Object.keys(own).filter((n) => !given.has(n));
    const unexpected = [...given.keys()].filter((n) => !(n in own));
    if ((opts.strict ?? true) && (missing.length > 0 || unexpected.length > 0)) {
      const parts = [];
      if (missing.length > 0) parts.push(`missing: ${missing.join(', ')}`);
      if (unexpected.length > 0) parts.push(`unexpected: ${unexpected.join(', ')}`);
      throw new TensorError(`${this.label}.loadStateDict: names do not match (${parts.join('; ')})`);
    }
    for (const [n, dst] of Object.entries(own)) {
      const src = given.get(n);
      if (src === undefined) continue;
      if (!(src instanceof Tensor))
        throw new TensorError(`${this.label}.loadStateDict: '${n}' must be a Tensor, got ${describeValue(src)}`);
      if (fmtShape(src.shape) !== fmtShape(dst.shape))
        throw new ShapeError(
          `${this.label}.loadStateDict: '${n}' is ${src.describe()}, the module's is ${dst.describe()}`,
        );
    }
    noGrad(() => {
      for (const [n, dst] of Object.entries(own)) {
        const src = given.get(n);
        if (src !== undefined) assign(dst, src);
      }
    });
    return { missing, unexpected };
  }

  /** disposes every parameter (with its gradient), buffer and child module */
  dispose(): void {
    for (const p of this.#params.values()) {
      p?.grad?.dispose();
      p?.dispose();
    }
    for (const b of this.#buffers.values()) b.dispose();
    for (const m of this.#children.values()) m.dispose();
  }
}

/** clears each parameter's gradient: null and disposed (setToNull), else filled with zeros */
export function clearGrads(params: Iterable<Tensor>, setToNull: boolean): void {
  for (const p of params) {
    if (p.grad === null) continue;
    if (setToNull) {
      p.grad.dispose();
      p.grad = null;
    } else p.grad.fill(0);
  }
}

/** a module that maps one tensor to one tensor: what Sequential chains */
export interface Layer {
  forward(x: Tensor): Tensor;
}

/** a module with a one-tensor forward */
export abstract class UnaryModule extends Module implements Layer {
  abstract forward(x: Tensor): Tensor;
}
