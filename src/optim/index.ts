// The `optim` namespace of the package: optimizers, gradient clipping and learning-rate schedules.
export {
  Optimizer,
  type Hyper,
  type ParamGroup,
  type ParamGroupSpec,
  type ParamState,
  type OptimizerState,
  type MasterWeights,
} from './optimizer.ts';
export { SGD, type SGDOptions } from './sgd.ts';
export { Adam, AdamW, type AdamOptions } from './adam.ts';
export { clipGradNorm, clipGradValue } from './clip.ts';
export { GradScaler, type GradScalerOptions, type GradScalerState } from './grad-scaler.ts';
export { saveOptimizer, loadOptimizer } from './state-file.ts';
export { LRScheduler, StepLR, ExponentialLR, CosineAnnealingLR, LinearLR, SequentialLR } from './lr-scheduler.ts';
