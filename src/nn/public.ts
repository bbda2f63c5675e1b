// The `nn` namespace of the package: trainable modules, losses and initialisation, with
// PyTorch's names and defaults.
export { Module, UnaryModule, type Layer } from './module.ts';
export { Linear } from './layers/linear.ts';
export {
  Conv1d,
  Conv2d,
  ConvTranspose2d,
  type ConvLayerOptions,
  type ConvTransposeLayerOptions,
} from './layers/conv.ts';
export { BatchNorm1d, BatchNorm2d, type BatchNormLayerOptions } from './layers/batchnorm.ts';
export { LayerNorm, RMSNorm, type NormLayerOptions } from './layers/norm.ts';
export { Embedding } from './layers/embedding.ts';
export { Dropout } from './layers/dropout.ts';
export {
  ReLU,
  LeakyReLU,
  GELU,
  SiLU,
  Tanh,
  Sigmoid,
  Softmax,
  LogSoftmax,
  Flatten,
  Identity,
} from './layers/activations.ts';
export { MaxPool2d, AvgPool2d, type PoolLayerOptions } from './layers/pool.ts';
export {
  MultiheadAttention,
  type MultiheadAttentionOptions,
  type MultiheadAttentionCall,
} from './layers/multihead-attention.ts';
export { Sequential } from './layers/sequential.ts';
export { LocalResponseNorm } from './layers/lrn.ts';
export * from './losses/index.ts';
export { manualSeed, type LayerOptions } from './init.ts';
export * as init from './init.ts';
export { saveModule, loadModule } from './state-file.ts';
export { LSTM, GRU, type RecurrentLayerOptions } from './layers/rnn.ts';
