// The optimizer base: parameter groups with their hyperparameters, per-parameter state, and the
// step loop. A step runs with recording off and inside one tidy() scope; each update writes the
// parameter in place (its tensor object stays the one the module and the optimizer share) and
// replaces the state tensors. Nothing in a step reads a value back from the device.
import { GraphCaptureError, TensorError } from '../core/errors.ts';
import { keep, tidy } from '../core/scope.ts';
import { describeValue } from '../ops/args.ts';
import { noGrad } from '../tensor/autograd.ts';
import { Tensor } from '../tensor/tensor.ts';
import { assign } from '../nn/assign.ts';
import { clearGrads } from '../nn/module.ts';

/** a group's hyperparameters: numbers and flags, by name */
export type Hyper = Record<string, number | boolean>;

/** the flag every optimizer takes: bf16/f16 parameters update an f32 copy (the optimizer's
 *  state 'master') and are written back rounded to their dtype, so updates smaller than the
 *  parameter's resolution still add up: bf16 compute with f32 master weights */
export type MasterWeights = { masterWeights: boolean };

export const isHalf = (p: Tensor): boolean => p.dtype === 'bf16' || p.dtype === 'f16';

/** parameters with hyperparameters that override the optimizer's defaults */
export type ParamGroupSpec<H extends Hyper> = { params: Iterable<Tensor> } & Partial<H>;
/** a group as the optimizer holds it: every hyperparameter filled in (schedulers write lr) */
export type ParamGroup<H extends Hyper> = H & { params: Tensor[]; initialLr?: number };

/** one parameter's state: step counts and tensors (moments, momentum buffers) */
export type ParamState = Record<string, Tensor | number>;

/** stateDict()'s shape: state by parameter index (in group order), groups with their indices */
export interface OptimizerState<H extends Hyper = Hyper> {
  state: Record<number, ParamState>;
  paramGroups: (H & { params: number[]; initialLr?: number })[];
}

export abstract class Optimizer<H extends Hyper> {
  readonly paramGroups: ParamGroup<H>[];
  protected readonly state = new Map<Tensor, ParamState>();

  constructor(
    protected readonly name: string,
    params: Iterable<Tensor> | readonly ParamGroupSpec<H>[],
    defaults: H,
  ) {
    const list = [...(params as Iterable<Tensor | ParamGroupSpec<H>>)];
    const specs: ParamGroupSpec<H>[] =
      list.length > 0 && !(list[0] instanceof Tensor)
        ? (list as ParamGroupSpec<H>[])
        : [{ params: list as Tensor[] } as unknown as ParamGroupSpec<H>];
    const seen = new Set<Tensor>();
    this.paramGroups = specs.map((spec, gi) => {
      if (spec === null || typeof spec !== 'object' || !('params' in spec))
        throw new TensorError(
          `${name}: parameter group ${gi} must be { params, ...options }, got ${describeValue(spec)}`,
        );
      const ps = [...spec.params];
      ps.forEach((p, i) => {
        if (!(p instanceof Tensor))
          throw new TensorError(`${name}: group ${gi} parameter ${i} must be a Tensor, got ${describeValue(p)}`);
        if (!p.requiresGrad || !p.isLeaf)
          throw new TensorError(
            `${name}: group ${gi} parameter ${i} ${p.describe()} must be a leaf that requires a gradient`,
          );
        if (seen.has(p)) throw new TensorError(`${name}: parameter ${p.describe()} appears in more than one place`);
        seen.add(p);
      });
      const group = { ...defaults, ...spec, params: ps } as ParamGroup<H>;
      this.checkHyper(group);
      return group;
    });
    if (seen.size === 0) throw new TensorError(`${name}: got an empty parameter list`);
  }

  /** throws naming the hyperparameter that is out of range */
  protected abstract checkHyper(group: H): void;
  /** one parameter's update: writes p in place (assign) and returns its new state */
  protected abstract update(p: Tensor, grad: Tensor, group: H, state: ParamState): ParamState;

  /**
   * The parameters of a group (those with a gradient) that the optimizer updates itself in fused
   * multi-tensor steps, state included (kept, not tidied); update() runs for the rest. None by
   * default.
   */
  protected fusedStep(_group: ParamGroup<H>, _params: readonly Tensor[], _master: boolean): ReadonlySet<Tensor> {
    return new Set();
  }

  /** one update of every parameter that has a gradient (parameters whose grad is null are skipped) */
  step(): void {
    noGrad(() =>
      tidy(() => {
        for (const group of this.paramGroups) {
          this.checkHyper(group);
          const master = checkFlag(this.name, 'masterWeights', group.masterWeights ?? false);
          const live = group.params.filter((p) => p.grad !== null);
          for (const p of live) if (p.isDisposed) throw new TensorError(`${this.name}.step: a parameter was disposed`);
          const fused = this.fusedStep(group, live, master);
          for (const p of live) {
            if (fused.has(p)) continue;
            // the composed update makes new state tensors and bakes this step's numbers into its
            // ops: a replay would read the old state and repeat the numbers
            if (p.device.isCapturing)
              throw new GraphCaptureError(
                `${this.name}.step: the update of ${p.describe()} cannot be recorded into a graph (only the fused ` +
                  'multi-tensor step can); step the optimizer outside the capture',
              );
            const grad = p.grad as Tensor;
            const old = this.state.get(p) ?? {};
            let next: ParamState;
            if (master && isHalf(p)) {
              // the update runs on the f32 copy, with the gradient widened; p gets it rounded
              const m = (old.master as Tensor | undefined) ?? p.toDtype('f32');
              next = this.update(m, grad.toDtype('f32'), group, old);
              next.master = m;
              assign(p, m);
            } else next = this.update(p, grad, group, old);
            for (const v of Object.values(next)) if (v instanceof Tensor) keep(v);
            for (const [k, v] of Object.entries(old)) if (v instanceof Tensor && next[k] !== v) v.dispose();
            this.state.set(p, next);
          }
        }
      }),
    );
  }

  /** clears every parameter's gradient (setToNull: null and disposed, the default; else zeros) */
  zeroGrad(setToNull = true): void {
    for (const group of this.paramGroups) clearGrads(group.params, setToNull);
  }

  /** the state and the groups' hyperparameters, parameters by index; the tensors are copies (yours to dispose) */
  stateDict(): OptimizerState<H> {
    const index = new Map<Tensor, number>();
    const paramGroups = this.paramGroups.map((g) => {
      const { params, ...hyper } = g;
      return { ...(hyper as unknown as H), params: params.map((p) => index.set(p, index.size).size - 1) };
    });
    const state: Record<number, ParamState> = {};
    noGrad(() => {
      for (const [p, s] of this.state) {
        const i = index.get(p);
        if (i === undefined) continue;
        state[i] = Object.fromEntries(Object.entries(s).map(([k, v]) => [k, v instanceof Tensor ? v.mul(1) : v]));
      }
    });
    return { state, paramGroups };
  }

  /** restores a stateDict(): the groups must hold as many parameters as they did; tensors are copied to each parameter's device and dtype */
  loadStateDict(sd: OptimizerState<H>): void {
    if (sd === null || typeof sd !== 'object' || !Array.isArray(sd.paramGroups) || typeof sd.state !== 'object')
      throw new TensorError(`${this.name}.loadStateDict: expected { state, paramGroups }, got ${describeValue(sd)}`);
    if (sd.paramGroups.length !== this.paramGroups.length)
      throw new TensorError(
        `${this.name}.loadStateDict: ${sd.paramGroups.length} parameter groups given, the optimizer has ${this.paramGroups.length}`,
      );
    const params: Tensor[] = [];
    const groupOf = new Map<Tensor, ParamGroup<H>>();
    sd.paramGroups.forEach((g, gi) => {
      const own = this.paramGroups[gi]!;
      if (g.params.length !== own.params.length)
        throw new TensorError(
          `${this.name}.loadStateDict: group ${gi} has ${g.params.length} parameters, the optimizer's has ${own.params.length}`,
        );
      g.params.forEach((idx, j) => {
        params[idx] = own.params[j]!;
        groupOf.set(own.params[j]!, own);
      });
    });
    const fresh = new Map<Tensor, ParamState>();
    noGrad(() => {
      for (const [k, s] of Object.entries(sd.state)) {
        const p = params[Number(k)];
        if (p === undefined)
          throw new TensorError(`${this.name}.loadStateDict: state for parameter ${k}, which no group holds`);
        const copy: ParamState = {};
        for (const [n, v] of Object.entries(s)) {
          if (!(v instanceof Tensor)) {
            copy[n] = v;
            continue;
          }
          if (v.shape.join() !== p.shape.join() && n !== 'step')
            throw new TensorError(
              `${this.name}.loadStateDict: '${n}' of parameter ${k} is ${v.describe()}, the parameter ${p.describe()}`,
            );
          const onDev = v.to(p.device);
          const want = this.stateDType(p, groupOf.get(p)!);
          const t = onDev.dtype === want ? onDev.mul(1) : onDev.toDtype(want);
          onDev.dispose();
          copy[n] = keep(t);
        }
        fresh.set(p, copy);
      }
    });
    this.disposeState();
    for (const [p, s] of fresh) this.state.set(p, s);
    sd.paramGroups.forEach((g, gi) => {
      const { params: _ignored, ...hyper } = g;
      Object.assign(this.paramGroups[gi]!, hyper);
      this.checkHyper(this.paramGroups[gi]!);
    });
  }

  /** the dtype of a parameter's state tensors in `group`: f32 under master weights, else the parameter's */
  private stateDType(p: Tensor, group: ParamGroup<H>): Tensor['dtype'] {
    return group.masterWeights === true && isHalf(p) ? 'f32' : p.dtype;
  }

  private disposeState(): void {
    for (const s of this.state.values()) for (const v of Object.values(s)) if (v instanceof Tensor) v.dispose();
    this.state.clear();
  }

  /** frees the optimizer's state (the parameters are the module's) */
  dispose(): void {
    this.disposeState();
  }
}

/** a number hyperparameter check: finite and at least min (or in [min, max)) */
export function checkNumber(opt: string, name: string, v: unknown, min: number, maxExclusive = Infinity): number {
  if (typeof v !== 'number' || !Number.isFinite(v) || v < min || v >= maxExclusive)
    throw new TensorError(
      `${opt}: ${name} must be a number ${maxExclusive === Infinity ? `>= ${min}` : `in [${min}, ${maxExclusive})`}, got ${describeValue(v)}`,
    );
  return v;
}

export function checkFlag(opt: string, name: string, v: unknown): boolean {
  if (typeof v !== 'boolean') throw new TensorError(`${opt}: ${name} must be a boolean, got ${describeValue(v)}`);
  return v;
}
