// Dynamic loss scaling for f16 training (PyTorch's GradScaler): the loss is multiplied by a
// scale before backward() so small gradients do not flush to zero in f16; before the optimizer
// steps, the gradients are divided by it again and checked. A step whose gradients hold an Inf or
// a NaN (the scale was too large) is skipped and the scale shrinks; after growthInterval good
// steps in a row it grows. The check is one readback per step (a sum of g * 0 over every
// gradient: 0 when all are finite, NaN otherwise), as PyTorch's step() also waits for it.
import { TensorError } from '../core/errors.ts';
import { keep, tidy } from '../core/scope.ts';
import { describeValue } from '../ops/args.ts';
import { noGrad } from '../tensor/autograd.ts';
import type { Tensor } from '../tensor/tensor.ts';
import { checkNumber, type Hyper, type Optimizer } from './optimizer.ts';

export interface GradScalerOptions {
  /** default 2^16 */
  readonly initScale?: number;
  /** default 2 */
  readonly growthFactor?: number;
  /** default 0.5 */
  readonly backoffFactor?: number;
  /** good steps in a row before the scale grows; default 2000 */
  readonly growthInterval?: number;
}

export interface GradScalerState {
  scale: number;
  growthTracker: number;
}

export class GradScaler {
  private scaleValue: number;
  private readonly growthFactor: number;
  private readonly backoffFactor: number;
  private readonly growthInterval: number;
  private growthTracker = 0;
  /** the outcome of this iteration's unscale(): null before it */
  private found: boolean | null = null;

  constructor(o: GradScalerOptions = {}) {
    if (o === null || typeof o !== 'object')
      throw new TensorError(`GradScaler: options must be an object, got ${describeValue(o)}`);
    this.scaleValue = checkNumber('GradScaler', 'initScale', o.initScale ?? 2 ** 16, Number.MIN_VALUE);
    this.growthFactor = checkNumber('GradScaler', 'growthFactor', o.growthFactor ?? 2, 1);
    this.backoffFactor = checkNumber('GradScaler', 'backoffFactor', o.backoffFactor ?? 0.5, Number.MIN_VALUE, 1);
    this.growthInterval = checkNumber('GradScaler', 'growthInterval', o.growthInterval ?? 2000, 1);
    if (!Number.isInteger(this.growthInterval))
      throw new TensorError(`GradScaler: growthInterval must be an integer, got ${this.growthInterval}`);
  }

  /** the current scale */
  get scale(): number {
    return this.scaleValue;
  }

  /** loss times the scale: call backward() on this */
  scaleLoss(loss: Tensor): Tensor {
    return loss.mul(this.scaleValue);
  }

  /** divides every gradient of the optimizer's parameters by the scale (in place of the old
   *  gradient tensors); returns whether they are all finite. Once per iteration (clip after it) */
  unscale<H extends Hyper>(opt: Optimizer<H>): boolean {
    if (this.found !== null) throw new TensorError('GradScaler.unscale: already called since the last update()');
    const grads = opt.paramGroups.flatMap((g) => g.params).filter((p) => p.grad !== null);
    const inv = 1 / this.scaleValue;
    const bad = noGrad(() =>
      tidy(() => {
        let probe: Tensor | null = null;
        for (const p of grads) {
          const g = keep(p.grad!.mul(inv));
          p.grad!.dispose();
          p.grad = g;
          // Inf * 0 and NaN * 0 are NaN: the sum stays 0 only when every gradient is finite
          const z = g.toDtype('f32').mul(0).sum();
          probe = probe === null ? z : probe.add(z);
        }
        return probe === null ? 0 : probe.itemSync();
      }),
    );
    this.found = !Number.isFinite(bad) || bad !== 0;
    return !this.found;
  }

  /** unscales (if not done yet) and steps the optimizer when the gradients are finite; returns
   *  whether it stepped */
  step<H extends Hyper>(opt: Optimizer<H>): boolean {
    if (this.found === null) this.unscale(opt);
    if (this.found) return false;
    opt.step();
    return true;
  }

  /** adjusts the scale for the next iteration: shrinks it after a skipped step, grows it after
   *  growthInterval good ones */
  update(): void {
    if (this.found === null) throw new TensorError('GradScaler.update: call step() (or unscale()) first');
    if (this.found) {
      this.scaleValue *= this.backoffFactor;
      this.growthTracker = 0;
    } else if (++this.growthTracker >= this.growthInterval) {
      this.scaleValue *= this.growthFactor;
      this.growthTracker = 0;
    }
    this.found = null;
  }

  stateDict(): GradScalerState {
    return { scale: this.scaleValue, growthTracker: this.growthTracker };
  }
  loadStateDict(s: GradScalerState): void {
    if (s === null || typeof s !== 'object')
      throw new TensorError(`GradScaler.loadStateDict: expected { scale, growthTracker }, got ${describeValue(s)}`);
    this.scaleValue = checkNumber('GradScaler', 'scale', s.scale, Number.MIN_VALUE);
    this.growthTracker = checkNumber('GradScaler', 'growthTracker', s.growthTracker, 0);
    this.found = null;
  }
}
