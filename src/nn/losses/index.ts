// The losses, as functions (PyTorch's torch.nn.functional names in camel case).
export type { Reduction } from './common.ts';
export { crossEntropy, nllLoss, type CrossEntropyOptions, type NllOptions } from './classification.ts';
export {
  mseLoss,
  l1Loss,
  smoothL1Loss,
  huberLoss,
  binaryCrossEntropyWithLogits,
  type ReductionOptions,
  type BceOptions,
} from './regression.ts';
