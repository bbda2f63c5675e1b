// The optimizers' fused path on a GPU: the parameters of a group that have a gradient, split into
// lists of one parameter dtype, one state dtype and one step count, each updated by one
// multi-tensor op (ops/train.ts: adamStep, sgdStep; one launch each). State tensors are made once
// (zeros, contiguous) and updated in place from then on, so their addresses, and the device
// table of every list, stay the same from step to step. CPU parameters keep the op-composed
// update, which is the reference the fused steps are tested against.
import { keep } from '../core/scope.ts';
import type { DType } from '../core/dtype.ts';
import { StepTable, type StepList } from '../backends/train-options.ts';
import { Tensor } from '../tensor/tensor.ts';
import { Optimizer, isHalf, type Hyper, type ParamState } from './optimizer.ts';

/** one list of a fused step, before its launch */
export interface FusedBucket {
  readonly params: Tensor[];
  readonly states: ParamState[];
  readonly paramDType: DType;
  readonly stateDType: DType;
  /** the step count every parameter of the list reaches (0 for optimizers without one) */
  readonly step: number;
  /** whether its parameters have no state yet */
  readonly fresh: boolean;
}

/**
 * The group's GPU parameters that the fused path takes (contiguous; half parameters under master
 * weights with f32 state), bucketed. `stepOf` gives a parameter's step count after this step.
 */
export function fusedBuckets(
  params: readonly Tensor[],
  master: boolean,
  state: Map<Tensor, ParamState>,
  stateKeys: readonly string[],
  stepOf: (s: ParamState) => number,
): FusedBucket[] {
  const buckets = new Map<string, FusedBucket>();
  for (const p of params) {
    const g = p.grad;
    if (p.device.isCpu || g === null || g.dtype !== p.dtype || !p.isContiguous()) continue;
    const s = state.get(p) ?? {};
    const useMaster = master && isHalf(p);
    // state from a loadStateDict of another dtype, or laid out otherwise, stays composed
    const stateDType: DType = useMaster ? 'f32' : p.dtype;
    const have = stateKeys.map((k) => s[k]);
    const fresh = have.every((t) => t === undefined);
    if (
      !fresh &&
      !have.every((t) => t instanceof Tensor && t.dtype === stateDType && t.isContiguous() && t.device === p.device)
    )
      continue;
    if (useMaster && s.master !== undefined && !(s.master instanceof Tensor && s.master.isContiguous())) continue;
    const step = stepOf(s);
    const key = `${p.dtype}/${stateDType}/${step}/${fresh}`;
    let b = buckets.get(key);
    if (b === undefined) {
      b = { params: [], states: [], paramDType: p.dtype, stateDType, step, fresh };
      buckets.set(key, b);
    }
    b.params.push(p);
    b.states.push(s);
  }
  return [...buckets.values()];
}

/**
 * The bucket's list for the op: the state slots named (made as zeros where missing, and kept),
 * master copies for half parameters with f32 state, and the bucket's table cache from `tables`.
 */
export function fusedList(
  b: FusedBucket,
  slots: readonly string[],
  tables: Map<string, StepTable>,
  tableKey: string,
): StepList<Tensor> {
  const masters = isHalf(b.params[0]!) && b.stateDType === 'f32';
  const state = slots.map((k) =>
    b.params.map((p, i) => {
      const s = b.states[i]!;
      let t = s[k] as Tensor | undefined;
      if (t === undefined) {
        t = keep(Tensor.zeros(p.shape, { dtype: b.stateDType, device: p.device }));
        s[k] = t;
      }
      return t;
    }),
  );
  const ms = masters
    ? b.params.map((p, i) => {
        const s = b.states[i]!;
        let m = s.master as Tensor | undefined;
        if (m === undefined) {
          m = keep(p.toDtype('f32'));
          s.master = m;
        }
        return m;
      })
    : null;
  let cache = tables.get(tableKey);
  if (cache === undefined) {
    cache = new StepTable();
    tables.set(tableKey, cache);
  }
  return { params: b.params, grads: b.params.map((p) => p.grad as Tensor), state, masters: ms, cache };
}

/**
 * An optimizer with a fused path: the lists' device tables, kept from step to step (their
 * addresses stay valid while the state tensors do) and freed with the optimizer.
 */
export abstract class FusedOptimizer<H extends Hyper> extends Optimizer<H> {
  private readonly tables = new Map<string, StepTable>();

  /** the bucket's list for the op (fusedList), its table cached under `tableKey` */
  protected fusedListOf(b: FusedBucket, slots: readonly string[], tableKey: string): StepList<Tensor> {
    return fusedList(b, slots, this.tables, tableKey);
  }

  /** after the bucket's launch: its parameters' state kept (with `step`, if given), each added to `done` */
  protected keepFused(b: FusedBucket, done: Set<Tensor>, step?: number): void {
    b.params.forEach((p, i) => {
      const s = b.states[i]!;
      if (step !== undefined) s.step = step;
      this.state.set(p, s);
      done.add(p);
    });
  }

  override dispose(): void {
    for (const t of this.tables.values()) t.dispose();
    this.tables.clear();
    super.dispose();
  }
}
