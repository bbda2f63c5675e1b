// The option records of Tensor's methods: the backends' records over Tensor.
import type * as raw from '../backends/options.ts';
import type { Tensor } from './tensor.ts';

export type { Pair, PoolOptions } from '../backends/options.ts';
export type ConvOptions = raw.ConvOptions<Tensor>;
export type ConvTransposeOptions = raw.ConvTransposeOptions<Tensor>;
export type BatchNormOptions = raw.BatchNormOptions<Tensor>;
export type AttentionOptions = raw.AttentionOptions<Tensor>;
export type RmsNormSpec = raw.RmsNormSpec<Tensor>;
export type LinearOptions = raw.LinearOptions<Tensor>;
export type QkvToCacheArgs = raw.QkvToCacheArgs<Tensor>;
