// Elementwise losses between a prediction and a target of the same shape (PyTorch's mse_loss,
// l1_loss, smooth_l1_loss, huber_loss and binary_cross_entropy_with_logits), composed from
// elementwise ops whose gradients exist.
import { TensorError } from '../../core/errors.ts';
import { tidy } from '../../core/scope.ts';
import { Tensor } from '../../tensor/tensor.ts';
import { type Reduction, checkReduction, floatArg, reduceLoss, samePair } from './common.ts';

export interface ReductionOptions {
  reduction?: Reduction;
}

/** (input - target)^2 */
export function mseLoss(input: Tensor, target: Tensor, opts: ReductionOptions = {}): Tensor {
  const r = checkReduction('mseLoss', opts.reduction);
  const [x, y] = samePair('mseLoss', input, target);
  return tidy(() => reduceLoss(x.sub(y).sqr(), r));
}

/** |input - target| */
export function l1Loss(input: Tensor, target: Tensor, opts: ReductionOptions = {}): Tensor {
  const r = checkReduction('l1Loss', opts.reduction);
  const [x, y] = samePair('l1Loss', input, target);
  return tidy(() => reduceLoss(x.sub(y).abs(), r));
}

function nonNegative(loss: string, name: string, v: number): number {
  if (typeof v !== 'number' || !(v >= 0) || !Number.isFinite(v))
    throw new TensorError(`${loss}: ${name} must be a finite number >= 0, got ${String(v)}`);
  return v;
}

/** 0.5 d^2 / beta where |d| < beta, else |d| - 0.5 beta (d = input - target; beta 0: l1Loss) */
export function smoothL1Loss(input: Tensor, target: Tensor, opts: ReductionOptions & { beta?: number } = {}): Tensor {
  const r = checkReduction('smoothL1Loss', opts.reduction);
  const beta = nonNegative('smoothL1Loss', 'beta', opts.beta ?? 1);
  const [x, y] = samePair('smoothL1Loss', input, target);
  return tidy(() => {
    const d = x.sub(y),
      a = d.abs();
    if (beta === 0) return reduceLoss(a, r);
    return reduceLoss(Tensor.where(a.lt(beta), d.sqr().mul(0.5 / beta), a.sub(0.5 * beta)), r);
  });
}

/** 0.5 d^2 where |d| < delta, else delta (|d| - 0.5 delta) */
export function huberLoss(input: Tensor, target: Tensor, opts: ReductionOptions & { delta?: number } = {}): Tensor {
  const r = checkReduction('huberLoss', opts.reduction);
  const delta = nonNegative('huberLoss', 'delta', opts.delta ?? 1);
  const [x, y] = samePair('huberLoss', input, target);
  return tidy(() => {
    const d = x.sub(y),
      a = d.abs();
    return reduceLoss(Tensor.where(a.lt(delta), d.sqr().mul(0.5), a.sub(0.5 * delta).mul(delta)), r);
  });
}

export interface BceOptions extends ReductionOptions {
  /** the positive class's weight, broadcast against the input (per class: [C] for [N, C]) */
  posWeight?: Tensor;
  /** each element's weight, broadcast against the input */
  weight?: Tensor;
}

/**
 * The binary cross entropy of sigmoid(input) against target in [0, 1], stable for any logit:
 * (1 - y) x + (1 + (pw - 1) y) (log(1 + exp(-|x|)) + max(-x, 0)), the softplus written so that
 * exp never overflows.
 */
export function binaryCrossEntropyWithLogits(input: Tensor, target: Tensor, opts: BceOptions = {}): Tensor {
  const op = 'binaryCrossEntropyWithLogits';
  const r = checkReduction(op, opts.reduction);
  const [x, y] = samePair(op, input, target);
  const pw = opts.posWeight === undefined ? null : floatArg(op, 'posWeight', opts.posWeight);
  const w = opts.weight === undefined ? null : floatArg(op, 'weight', opts.weight);
  return tidy(() => {
    // softplus(-x) = log(1 + exp(-|x|)) + max(-x, 0); exp(-|x|) is in (0, 1]
    const softplusNeg = x.abs().neg().exp().add(1).log().add(x.neg().relu());
    const weighted = pw === null ? softplusNeg : softplusNeg.mul(pw.sub(1).mul(y).add(1));
    let loss = y.neg().add(1).mul(x).add(weighted);
    if (w !== null) loss = loss.mul(w);
    return reduceLoss(loss, r);
  });
}
