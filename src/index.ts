// rocm-tensor: GPU tensors for Node.js and Bun on AMD ROCm (and NVIDIA CUDA, and the CPU).
export {
  Tensor,
  type NestedArray,
  type CreateOptions,
  type RandomOptions,
  type ReadArray,
  type DeviceLike,
} from './tensor/tensor.ts';
export { Device, Stream, type DeviceKind, type CaptureOptions } from './device/device.ts';
export type { RawTensor } from './device/raw-tensor.ts';
export type { Graph } from './device/graph.ts';
export { DTYPES, DTYPE_INFO, isDType, type DType } from './core/dtype.ts';
export { tidy, keep, liveTensors } from './core/scope.ts';
export { noGrad } from './tensor/autograd.ts';
export { autocast, autocastDType, type AutocastDType, type AutocastOptions } from './ops/autocast.ts';
export type { LocalResponseNormOptions } from './backends/lrn-options.ts';
export { captureBackward, CapturedBackward, type CaptureBackwardOptions } from './tensor/captured-backward.ts';
export { setCpuExact } from './backends/cpu/mode.ts';
export type { MemoryStats } from './runtime/allocator.ts';
export type {
  ConvOptions,
  ConvTransposeOptions,
  PoolOptions,
  BatchNormOptions,
  Pair,
  AttentionOptions,
} from './tensor/options.ts';
export type { UnaryOp, BinaryOp, CmpOp, ReduceOp } from './core/op-types.ts';
export { qkvToCache } from './tensor/fused.ts';
export { pagedAttentionTuning } from './backends/gpu/attention-paged.ts';
export type { LinearOptions, RmsNormSpec, QkvToCacheArgs } from './tensor/options.ts';
export type { TopkOptions } from './ops/sort.ts';
export { UNARY_OPS, BINARY_OPS, CMP_OPS, REDUCE_OPS } from './core/op-types.ts';
export {
  TensorError,
  ShapeError,
  DTypeError,
  IndexError,
  DisposedError,
  NotOnDeviceError,
  LibraryNotFoundError,
  GpuError,
  OutOfMemoryError,
  NoKernelForArchError,
  SafetensorsError,
  GraphCaptureError,
} from './core/errors.ts';
export {
  TextTokenizer,
  type ChatMessage,
  type TextStreamer,
  type EncodeOptions,
  type DecodeOptions,
  type ChatTemplateOptions,
} from './text/tokenizer.ts';
export { TokenizerError } from './text/errors.ts';
export {
  Checkpoint,
  saveSafetensors,
  saveShardedSafetensors,
  type TensorInfo,
  type LoadOptions,
  type ShardOptions,
} from './io/safetensors.ts';
export { Linear, type Projection } from './nn/linear.ts';
export { Embedding } from './nn/embedding.ts';
export { RMSNorm } from './nn/norm.ts';
export { RotaryEmbedding, ropeInverseFrequencies, type RopeScaling } from './nn/rotary.ts';
export { KVCache, type KVCacheShape } from './nn/kv-cache.ts';
export { CausalSelfAttention, type AttentionShape, type DevicePositions } from './nn/attention.ts';
export { GatedMLP } from './nn/mlp.ts';
export { MemoryWeights, type WeightSource, type WeightInfo } from './nn/weights.ts';
/** trainable modules, losses and initialisation (PyTorch's torch.nn) */
export * as nn from './nn/public.ts';
/** optimizers, gradient clipping and learning-rate schedules (PyTorch's torch.optim) */
export * as optim from './optim/index.ts';
export { LlamaModel, type ModelLoadOptions } from './models/llama.ts';
export { llamaShard, shardSlices, type LlamaShard, type ShardSlices, type WeightSlice } from './models/llama-shard.ts';
export { parseLlamaConfig, MODEL_TYPES, type LlamaConfig, type ModelType } from './models/llama-config.ts';
export { PretrainedLlama, type GeneratedToken, type PretrainedLoadOptions } from './models/pretrained.ts';
export { generateIds, type GenerateOptions, type GenerateStep, type GenerateTimings } from './models/generate.ts';
export {
  Sampler,
  TokenHistory,
  VocabMask,
  NONFINITE_ID,
  flagNonFinite,
  type Choice,
  type SamplingOptions,
  type SampleContext,
} from './models/sampling.ts';
export { DecodeGraph } from './models/decode-graph.ts';
export { PagedKVCache, type PagedKVShape } from './nn/paged-kv-cache.ts';
export type { PagedStep } from './nn/paged-attention.ts';
export type { PagedAttentionOptions } from './backends/paged-options.ts';
export { pagedMetadata } from './backends/paged-options.ts';
export {
  createServer,
  type ModelServer,
  type ServeOptions,
  type ListeningAddress,
} from './serve/server.ts';
export { Engine, type EngineOptions, type EngineStats, type ServedModel, type SequenceHandle } from './serve/engine.ts';
export type { FinishReason, SequenceRequest, SequenceUsage } from './serve/sequence.ts';
export { StepPlanLeader, followSteps, type PlanLimits, type FollowStats } from './serve/tp-plan.ts';
export {
  rendezvous,
  distEnvFrom,
  RendezvousError,
  type DistEnv,
  type RendezvousOptions,
} from './distributed/rendezvous.ts';
export { launch, type LaunchOptions } from './distributed/launch.ts';
export { Communicator, type CommunicatorOptions, type WaitOptions } from './distributed/communicator.ts';
export {
  DeviceGroup,
  type DeviceGroupOptions,
  type Transfer,
  type GroupReduceOptions,
  type GroupOutOptions,
  type GroupRootOptions,
  type GroupRootReduceOptions,
} from './distributed/group.ts';
export { initProcessGroup, deviceForLocalRank, type InitOptions } from './distributed/init.ts';
export type {
  ReduceOptions as CollectiveReduceOptions,
  OutOptions as CollectiveOutOptions,
  RootOptions as CollectiveRootOptions,
  RootReduceOptions as CollectiveRootReduceOptions,
} from './distributed/plans.ts';
export {
  REDUCE_OPS as COLLECTIVE_REDUCE_OPS,
  type ReduceOpName as CollectiveReduceOp,
} from './distributed/nccl-types.ts';
export { CollectiveError, CollectiveTimeoutError } from './distributed/errors.ts';
export { rankSet, simulatedRanks, type RankSet } from './distributed/rank-set.ts';
export { tensorParallelRank, type TensorParallelOption, type TensorParallelRank } from './distributed/tp-rank.ts';
export { RankRowParallel } from './nn/parallel/rank-projection.ts';
export {
  ColumnParallelLinear,
  RowParallelLinear,
  ParallelGatedMLP,
  shardRows,
  shardCols,
  type ColumnParallelOptions,
  type RowParallelOptions,
} from './nn/parallel/tensor-parallel.ts';
