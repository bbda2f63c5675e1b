// Adam and AdamW with PyTorch's update. With t the parameter's step count:
//   m = b1 m + (1 - b1) g;  v = b2 v + (1 - b2) g^2;  (amsgrad: vmax = max(vmax, v), used for v)
//   p -= lr / (1 - b1^t) * m / (sqrt(v) / sqrt(1 - b2^t) + eps)
// Adam adds weightDecay p to g first (L2); AdamW multiplies p by 1 - lr weightDecay instead
// (decoupled). The bias corrections are host numbers: no value is read back.
// On a GPU (fused, the default) the group's parameters are updated by one multi-tensor op per
// parameter dtype and step count (ops/train.ts adamStep, one launch); on the CPU, and for
// parameters the fused path does not take (not contiguous, state of another dtype), the update is
// composed from elementwise ops, as the reference.
import { assign } from '../nn/assign.ts';
import { adamStep } from '../ops/train.ts';
import type { Tensor } from '../tensor/tensor.ts';
import { FusedOptimizer, fusedBuckets } from './fused.ts';
import {
  type MasterWeights,
  type ParamGroup,
  type ParamGroupSpec,
  type ParamState,
  checkFlag,
  checkNumber,
} from './optimizer.ts';

export type AdamOptions = {
  lr: number;
  beta1: number;
  beta2: number;
  eps: number;
  weightDecay: number;
  amsgrad: boolean;
  /** GPU parameters: one multi-tensor step per dtype and step count (default true); the CPU always composes */
  fused: boolean;
} & MasterWeights;

abstract class AdamBase extends FusedOptimizer<AdamOptions> {
  protected abstract readonly decoupled: boolean;
  protected checkHyper(g: AdamOptions): void {
    checkNumber(this.name, 'lr', g.lr, 0);
    checkNumber(this.name, 'beta1', g.beta1, 0, 1);
    checkNumber(this.name, 'beta2', g.beta2, 0, 1);
    checkNumber(this.name, 'eps', g.eps, 0);
    checkNumber(this.name, 'weightDecay', g.weightDecay, 0);
    checkFlag(this.name, 'amsgrad', g.amsgrad);
    checkFlag(this.name, 'fused', g.fused);
  }
  protected override fusedStep(
    g: ParamGroup<AdamOptions>,
    params: readonly Tensor[],
    master: boolean,
  ): ReadonlySet<Tensor> {
    const done = new Set<Tensor>();
    if (!g.fused) return done;
    const slots = g.amsgrad ? ['expAvg', 'expAvgSq', 'maxExpAvgSq'] : ['expAvg', 'expAvgSq'];
    const gi = this.paramGroups.indexOf(g);
    const buckets = fusedBuckets(params, master, this.state, slots, (s) => ((s.step as number | undefined) ?? 0) + 1);
    for (const b of buckets) {
      const t = b.step;
      const list = this.fusedListOf(b, slots, `${gi}/${b.paramDType}/${b.stateDType}/${g.amsgrad}`);
      adamStep(list, {
        lr: g.lr,
        beta1: g.beta1,
        beta2: g.beta2,
        eps: g.eps,
        weightDecay: g.weightDecay,
        decoupled: this.decoupled,
        amsgrad: g.amsgrad,
        stepSize: g.lr / (1 - g.beta1 ** t),
        invBc2Sqrt: 1 / Math.sqrt(1 - g.beta2 ** t),
      });
      this.keepFused(b, done, t);
    }
    return done;
  }
  protected update(p: Tensor, grad: Tensor, g: AdamOptions, s: ParamState): ParamState {
    const t = ((s.step as number | undefined) ?? 0) + 1;
    const gr = !this.decoupled && g.weightDecay !== 0 ? grad.add(p.mul(g.weightDecay)) : grad;
    const m0 = s.expAvg as Tensor | undefined,
      v0 = s.expAvgSq as Tensor | undefined;
    const m = m0 === undefined ? gr.mul(1 - g.beta1) : m0.mul(g.beta1).add(gr.mul(1 - g.beta1));
    const v = v0 === undefined ? gr.sqr().mul(1 - g.beta2) : v0.mul(g.beta2).add(gr.sqr().mul(1 - g.beta2));
    const next: ParamState = { step: t, expAvg: m, expAvgSq: v };
    let vUsed = v;
    if (g.amsgrad) {
      const vm0 = s.maxExpAvgSq as Tensor | undefined;
      vUsed = vm0 === undefined ? v.mul(1) : vm0.maximum(v);
      next.maxExpAvgSq = vUsed;
    }
    const bc1 = 1 - g.beta1 ** t,
      bc2 = 1 - g.beta2 ** t;
    const denom = vUsed
      .sqrt()
      .mul(1 / Math.sqrt(bc2))
      .add(g.eps);
    const base = this.decoupled && g.weightDecay !== 0 ? p.mul(1 - g.lr * g.weightDecay) : p;
    assign(p, base.sub(m.div(denom).mul(g.lr / bc1)));
    return next;
  }
}

/** Adam (defaults: lr 1e-3, betas 0.9 and 0.999, eps 1e-8, weightDecay 0 as L2) */
export class Adam extends AdamBase {
  protected readonly decoupled = false;
  constructor(params: Iterable<Tensor> | readonly ParamGroupSpec<AdamOptions>[], opts: Partial<AdamOptions> = {}) {
    super('Adam', params, {
      lr: 1e-3,
      beta1: 0.9,
      beta2: 0.999,
      eps: 1e-8,
      weightDecay: 0,
      amsgrad: false,
      fused: true,
      masterWeights: false,
      ...opts,
    });
  }
}

/** AdamW (as Adam, with decoupled weight decay, default 0.01) */
export class AdamW extends AdamBase {
  protected readonly decoupled = true;
  constructor(params: Iterable<Tensor> | readonly ParamGroupSpec<AdamOptions>[], opts: Partial<AdamOptions> = {}) {
    super('AdamW', params, {
      lr: 1e-3,
      beta1: 0.9,
      beta2: 0.999,
      eps: 1e-8,
      weightDecay: 1e-2,
      amsgrad: false,
      fused: true,
      masterWeights: false,
      ...opts,
    });
  }
}
