// Learning-rate schedules, each in PyTorch's closed form over the epoch count (step() moves it
// on and writes every group's lr). A scheduler records each group's starting lr as initialLr,
// as PyTorch does, so schedules built on the same optimizer share it.
import { TensorError } from '../core/errors.ts';
import { describeValue } from '../ops/args.ts';
/** what a schedule needs of an optimizer: its groups' learning rates */
export interface SchedulableOptimizer {
  readonly paramGroups: { lr: number; initialLr?: number }[];
}
type AnyOptimizer = SchedulableOptimizer;

export abstract class LRScheduler {
  lastEpoch = 0;
  readonly baseLrs: number[];
  constructor(
    protected readonly name: string,
    readonly optimizer: AnyOptimizer,
  ) {
    if (optimizer === null || typeof optimizer !== 'object' || !Array.isArray(optimizer.paramGroups))
      throw new TensorError(`${name}: expected an optimizer, got ${describeValue(optimizer)}`);
    this.baseLrs = optimizer.paramGroups.map((g) => {
      g.initialLr ??= g.lr;
      return g.initialLr;
    });
  }
  /** the lr of a group whose starting lr is base, at epoch */
  abstract lrAt(base: number, epoch: number): number;
  /** writes the lrs of lastEpoch (subclasses call it at the end of their constructor) */
  protected apply(): void {
    this.optimizer.paramGroups.forEach((g, i) => {
      g.lr = this.lrAt(this.baseLrs[i]!, this.lastEpoch);
    });
  }
  /** one epoch (or iteration) on */
  step(): void {
    this.lastEpoch++;
    this.apply();
  }
  getLastLr(): number[] {
    return this.optimizer.paramGroups.map((g) => g.lr);
  }
  stateDict(): { lastEpoch: number; baseLrs: number[] } {
    return { lastEpoch: this.lastEpoch, baseLrs: [...this.baseLrs] };
  }
  loadStateDict(sd: { lastEpoch: number; baseLrs: number[] }): void {
    if (!Number.isSafeInteger(sd?.lastEpoch) || !Array.isArray(sd.baseLrs) || sd.baseLrs.length !== this.baseLrs.length)
      throw new TensorError(
        `${this.name}.loadStateDict: expected { lastEpoch, baseLrs } for ${this.baseLrs.length} groups`,
      );
    this.lastEpoch = sd.lastEpoch;
    this.baseLrs.splice(0, this.baseLrs.length, ...sd.baseLrs);
    this.apply();
  }
}

function positiveInt(op: string, name: string, v: unknown): number {
  if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 1)
    throw new TensorError(`${op}: ${name} must be an integer >= 1, got ${describeValue(v)}`);
  return v;
}
function finite(op: string, name: string, v: unknown, lo: number, hi = Infinity): number {
  if (typeof v !== 'number' || !(v >= lo && v <= hi))
    throw new TensorError(`${op}: ${name} must be a number in [${lo}, ${hi}], got ${describeValue(v)}`);
  return v;
}

/** lr = base gamma^floor(epoch / stepSize) */
export class StepLR extends LRScheduler {
  readonly stepSize: number;
  readonly gamma: number;
  constructor(optimizer: AnyOptimizer, stepSize: number, opts: { gamma?: number } = {}) {
    super('StepLR', optimizer);
    this.stepSize = positiveInt('StepLR', 'stepSize', stepSize);
    this.gamma = finite('StepLR', 'gamma', opts.gamma ?? 0.1, 0);
    this.apply();
  }
  lrAt(base: number, epoch: number): number {
    return base * this.gamma ** Math.floor(epoch / this.stepSize);
  }
}

/** lr = base gamma^epoch */
export class ExponentialLR extends LRScheduler {
  readonly gamma: number;
  constructor(optimizer: AnyOptimizer, gamma: number) {
    super('ExponentialLR', optimizer);
    this.gamma = finite('ExponentialLR', 'gamma', gamma, 0);
    this.apply();
  }
  lrAt(base: number, epoch: number): number {
    return base * this.gamma ** epoch;
  }
}

/** lr = etaMin + (base - etaMin) (1 + cos(pi epoch / tMax)) / 2 */
export class CosineAnnealingLR extends LRScheduler {
  readonly tMax: number;
  readonly etaMin: number;
  constructor(optimizer: AnyOptimizer, tMax: number, opts: { etaMin?: number } = {}) {
    super('CosineAnnealingLR', optimizer);
    this.tMax = positiveInt('CosineAnnealingLR', 'tMax', tMax);
    this.etaMin = finite('CosineAnnealingLR', 'etaMin', opts.etaMin ?? 0, 0);
    this.apply();
  }
  lrAt(base: number, epoch: number): number {
    return this.etaMin + ((base - this.etaMin) * (1 + Math.cos((Math.PI * epoch) / this.tMax))) / 2;
  }
}

/** a linear ramp of the factor from startFactor to endFactor over totalIters, then held: a warm-up */
export class LinearLR extends LRScheduler {
  readonly startFactor: number;
  readonly endFactor: number;
  readonly totalIters: number;
  constructor(optimizer: AnyOptimizer, opts: { startFactor?: number; endFactor?: number; totalIters?: number } = {}) {
    super('LinearLR', optimizer);
    this.startFactor = finite('LinearLR', 'startFactor', opts.startFactor ?? 1 / 3, Number.MIN_VALUE, 1);
    this.endFactor = finite('LinearLR', 'endFactor', opts.endFactor ?? 1, 0, 1);
    this.totalIters = positiveInt('LinearLR', 'totalIters', opts.totalIters ?? 5);
    this.apply();
  }
  lrAt(base: number, epoch: number): number {
    const f =
      this.startFactor + ((this.endFactor - this.startFactor) * Math.min(epoch, this.totalIters)) / this.totalIters;
    return base * f;
  }
}

/**
 * Schedulers one after another: the i-th from milestones[i - 1] on, counting its epochs from 0
 * there (LinearLR warm-up, then CosineAnnealingLR, say). Step only this one.
 */
export class SequentialLR extends LRScheduler {
  constructor(
    optimizer: AnyOptimizer,
    readonly schedulers: readonly LRScheduler[],
    readonly milestones: readonly number[],
  ) {
    super('SequentialLR', optimizer);
    if (schedulers.length < 1 || milestones.length !== schedulers.length - 1)
      throw new TensorError(
        `SequentialLR: needs one milestone fewer than schedulers, got ${schedulers.length} schedulers and ${milestones.length} milestones`,
      );
    milestones.forEach((m, i) => {
      positiveInt('SequentialLR', `milestones[${i}]`, m);
      if (i > 0 && m <= milestones[i - 1]!) throw new TensorError('SequentialLR: milestones must increase');
    });
    for (const s of schedulers)
      if (s.optimizer !== optimizer) throw new TensorError('SequentialLR: every scheduler must be on its optimizer');
    this.apply();
  }
  lrAt(base: number, epoch: number): number {
    let i = 0;
    while (i < this.milestones.length && epoch >= this.milestones[i]!) i++;
    return this.schedulers[i]!.lrAt(base, epoch - (i === 0 ? 0 : this.milestones[i - 1]!));
  }
}
