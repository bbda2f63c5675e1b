// SGD with PyTorch's update: d = g + weightDecay p; with momentum, buf = momentum buf +
// (1 - dampening) d (buf = d on the first step) and d = nesterov ? d + momentum buf : buf;
// p -= lr d.
// On a GPU (fused, the default) the group's parameters are updated by one multi-tensor op per
// parameter dtype (ops/train.ts sgdStep, one launch); on the CPU, and for parameters the fused
// path does not take (not contiguous, state of another dtype), the update is composed from
// elementwise ops, as the reference.
import { TensorError } from '../core/errors.ts';
import { assign } from '../nn/assign.ts';
import { sgdStep } from '../ops/train.ts';
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

export type SGDOptions = {
  lr: number;
  momentum: number;
  dampening: number;
  weightDecay: number;
  nesterov: boolean;
  /** GPU parameters: one multi-tensor step per dtype (default true); the CPU always composes */
  fused: boolean;
} & MasterWeights;

export class SGD extends FusedOptimizer<SGDOptions> {
  constructor(params: Iterable<Tensor> | readonly ParamGroupSpec<SGDOptions>[], opts: Partial<SGDOptions> = {}) {
    super('SGD', params, {
      lr: 1e-3,
      momentum: 0,
      dampening: 0,
      weightDecay: 0,
      nesterov: false,
      fused: true,
      masterWeights: false,
      ...opts,
    });
  }
  protected checkHyper(g: SGDOptions): void {
    checkNumber('SGD', 'lr', g.lr, 0);
    checkNumber('SGD', 'momentum', g.momentum, 0);
    checkNumber('SGD', 'dampening', g.dampening, 0);
    checkNumber('SGD', 'weightDecay', g.weightDecay, 0);
    checkFlag('SGD', 'fused', g.fused);
    if (checkFlag('SGD', 'nesterov', g.nesterov) && (g.momentum <= 0 || g.dampening !== 0))
      throw new TensorError(
        `SGD: nesterov needs momentum > 0 and dampening 0, got momentum ${g.momentum}, dampening ${g.dampening}`,
      );
  }
  protected override fusedStep(
    g: ParamGroup<SGDOptions>,
    params: readonly Tensor[],
    master: boolean,
  ): ReadonlySet<Tensor> {
    const done = new Set<Tensor>();
    if (!g.fused) return done;
    const slots = g.momentum !== 0 ? ['momentumBuffer'] : [];
    const gi = this.paramGroups.indexOf(g);
    for (const b of fusedBuckets(params, master, this.state, slots, () => 0)) {
      const list = this.fusedListOf(b, slots, `${gi}/${b.paramDType}/${b.stateDType}/${b.fresh}`);
      sgdStep(list, {
        lr: g.lr,
        momentum: g.momentum,
        dampening: g.dampening,
        weightDecay: g.weightDecay,
        nesterov: g.nesterov,
        first: b.fresh,
      });
      this.keepFused(b, done);
    }
    return done;
  }
  protected update(p: Tensor, grad: Tensor, g: SGDOptions, s: ParamState): ParamState {
    let d = g.weightDecay !== 0 ? grad.add(p.mul(g.weightDecay)) : grad;
    const next: ParamState = {};
    if (g.momentum !== 0) {
      const prev = s.momentumBuffer as Tensor | undefined;
      // the first buffer is a copy of d (never the gradient tensor itself, which zeroGrad frees)
      const buf = prev === undefined ? d.mul(1) : prev.mul(g.momentum).add(d.mul(1 - g.dampening));
      next.momentumBuffer = buf;
      d = g.nesterov ? d.add(buf.mul(g.momentum)) : buf;
    }
    assign(p, p.sub(d.mul(g.lr)));
    return next;
  }
}
