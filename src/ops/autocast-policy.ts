// What autocast does to each op's float inputs, after torch.autocast's lists:
// - 'lower': products and convolutions, where half precision is fast and the libraries accumulate
//   in f32: f32 inputs are cast to the scope's dtype (bf16 or f16).
// - 'f32': ops whose result loses too much in half precision (exponentials and their sums, norms
//   over many elements, losses, long sums): f16 / bf16 inputs are cast up to f32.
// - 'promote': ops that need one dtype across their operands: when float operands differ, all are
//   cast to the widest (f16 with bf16 gives f32), so a half product can meet an f32 residual.
// f64 is never cast down, and integer tensors (ids, masks, targets) never are. Ops not listed run in
// their inputs' dtypes: elementwise math, pooling, copies, and batch norm, whose libraries take half
// data beside f32 statistics and accumulate in f32 (as PyTorch runs it under autocast).
import type { ReduceOp } from '../core/op-types.ts';

export type AutocastPolicy = 'lower' | 'f32' | 'promote';

export interface AutocastRule {
  readonly policy: AutocastPolicy;
  /** applies only to the calls it accepts (the variants of a shared declaration); default all */
  readonly when?: (args: readonly unknown[]) => boolean;
}

const sumOrMean = (args: readonly unknown[]): boolean => {
  const op = args[0] as ReduceOp;
  return op === 'sum' || op === 'mean';
};

/** op name (as declared in the registry) -> its rule */
export const AUTOCAST_POLICY: ReadonlyMap<string, AutocastRule> = new Map<string, AutocastRule>([
  ['matmul', { policy: 'lower' }],
  ['linear', { policy: 'lower' }],
  ['conv1d', { policy: 'lower' }],
  ['conv2d', { policy: 'lower' }],
  ['convTranspose1d', { policy: 'lower' }],
  ['convTranspose2d', { policy: 'lower' }],
  ['scaledDotProductAttention', { policy: 'lower' }],
  // softmax and logSoftmax share one declaration
  ['softmax', { policy: 'f32' }],
  ['layerNorm', { policy: 'f32' }],
  ['rmsNorm', { policy: 'f32' }],
  ['localResponseNorm', { policy: 'f32' }],
  ['crossEntropyRows', { policy: 'f32' }],
  ['cumsum', { policy: 'f32' }],
  // min, max, argmin and argmax are exact in any dtype
  ['reduce', { policy: 'f32', when: sumOrMean }],
  ['binary', { policy: 'promote' }],
  ['compare', { policy: 'promote' }],
  ['where', { policy: 'promote' }],
  ['cat', { policy: 'promote' }],
]);
