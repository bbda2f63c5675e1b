// What a GPU is, seen from the ops: one interface, implemented by rocm/runtime.ts (HIP, rocBLAS,
// MIOpen) and cuda/runtime.ts (driver API, cuBLAS, cuDNN). Everything above this file is vendor-neutral.
// Device pointers are branded bigints; streams, events, modules and functions are opaque
// handles owned by the implementation. Sizes and offsets are in bytes unless named otherwise.

declare const devicePtrBrand: unique symbol;
/** a device address; only the storage that owns the allocation does arithmetic on it */
export type DevicePtr = bigint & { readonly [devicePtrBrand]: true };
export const asDevicePtr = (x: bigint): DevicePtr => x as DevicePtr;
/** the null device pointer (an argument a kernel reads as absent) */
export const NULL_PTR: DevicePtr = asDevicePtr(0n);

declare const handleBrand: unique symbol;
export type Handle<Tag extends string> = { readonly [handleBrand]: Tag };
export type GpuStream = Handle<'stream'>;
export type GpuEvent = Handle<'event'>;
export type GpuModule = Handle<'module'>;
export type GpuFunction = Handle<'function'>;
/** an instantiated graph: captured stream work that replays with one launch */
export type GpuGraphExec = Handle<'graphExec'>;

export type Vendor = 'rocm' | 'cuda';

export interface DeviceInfo {
  readonly vendor: Vendor;
  readonly index: number;
  readonly name: string;
  /** code-object key: 'gfx942' (feature suffixes stripped) or 'sm_90' */
  readonly arch: string;
  /** as the runtime reports it: 'gfx942:sramecc+:xnack-' or 'sm_90' */
  readonly archFull: string;
  readonly totalMemory: number;
  readonly multiprocessors: number;
  /** 64 on gfx9 (CDNA), 32 on RDNA and NVIDIA: never assumed */
  readonly warpSize: number;
  readonly maxThreadsPerBlock: number;
  readonly maxSharedMemoryPerBlock: number;
  /** what a kernel may ask for past that by opting in (NVIDIA's cuFuncSetAttribute); AMD has no
   *  opt-in, so the same as maxSharedMemoryPerBlock there */
  readonly maxSharedMemoryPerBlockOptin: number;
  readonly maxGridDim: readonly [number, number, number];
  readonly runtimeVersion: string;
  readonly driverVersion: string;
}

/** page-locked host memory that async copies may read or write; `bytes` is a view onto it */
export interface PinnedBuffer {
  readonly size: number;
  readonly bytes: Uint8Array;
}

import type { KernelParam } from '../ffi/codeobject.ts';
import { fmtShape } from '../core/errors.ts';
export type { KernelParam };

export type BlasDType = 'f32' | 'f64' | 'f16' | 'bf16';

/**
 * One strided-batched GEMM in BLAS (column-major) terms: C = alpha * op(A) op(B) + beta * C,
 * op(A) m x k, op(B) k x n, C m x n; half types accumulate in f32. ops/matmul.ts maps
 * row-major tensors onto this (operands swapped).
 */
export interface GemmParams {
  readonly dtype: BlasDType;
  readonly transA: boolean;
  readonly transB: boolean;
  readonly m: number;
  readonly n: number;
  readonly k: number;
  readonly alpha: number;
  readonly beta: number;
  readonly a: DevicePtr;
  readonly lda: number;
  readonly strideA: number;
  readonly b: DevicePtr;
  readonly ldb: number;
  readonly strideB: number;
  readonly c: DevicePtr;
  readonly ldc: number;
  readonly strideC: number;
  readonly batch: number;
}

export type DnnDType = 'f32' | 'f64' | 'f16' | 'bf16';

/** NCHW convolution (1d convs use H = 1). Weights [cOut, cIn/groups, kH, kW]; for transposed
 *  convolutions weights are [cIn, cOut/groups, kH, kW] and y is the larger tensor. All
 *  tensors contiguous. */
export interface ConvParams {
  readonly dtype: DnnDType;
  readonly n: number;
  readonly cIn: number;
  readonly inH: number;
  readonly inW: number;
  readonly cOut: number;
  readonly kH: number;
  readonly kW: number;
  readonly outH: number;
  readonly outW: number;
  readonly padH: number;
  readonly padW: number;
  readonly strideH: number;
  readonly strideW: number;
  readonly dilationH: number;
  readonly dilationW: number;
  readonly groups: number;
  readonly x: DevicePtr;
  readonly w: DevicePtr;
  readonly y: DevicePtr;
}

export interface PoolParams {
  readonly dtype: DnnDType;
  readonly mode: 'max' | 'avg';
  /** avg only: whether padded cells count in the divisor (PyTorch's count_include_pad) */
  readonly countIncludePad: boolean;
  readonly n: number;
  readonly c: number;
  readonly inH: number;
  readonly inW: number;
  readonly outH: number;
  readonly outW: number;
  readonly kH: number;
  readonly kW: number;
  readonly padH: number;
  readonly padW: number;
  readonly strideH: number;
  readonly strideW: number;
  readonly x: DevicePtr;
  readonly y: DevicePtr;
}

/** pooling's backward: dx from dy, with the forward's x and y (all contiguous, dx written) */
export interface PoolBackwardParams extends PoolParams {
  readonly dy: DevicePtr;
  readonly dx: DevicePtr;
}

/** batch norm in training mode over x [n, c, h, w] (contiguous): batch statistics per channel;
 *  scale, bias and the running statistics in paramDType (f32 beside half data) */
export interface BatchNormTrainParams {
  readonly dtype: DnnDType;
  readonly n: number;
  readonly c: number;
  readonly h: number;
  readonly w: number;
  readonly x: DevicePtr;
  readonly y: DevicePtr;
  readonly scale: DevicePtr;
  readonly bias: DevicePtr;
  /** updated in place: running = (1 - momentum) * running + momentum * batch (variance unbiased) */
  readonly runningMean: DevicePtr | null;
  readonly runningVar: DevicePtr | null;
  readonly momentum: number;
  readonly eps: number;
}

/** its backward: dx, and the scale and bias gradients, from x and dy (batch statistics recomputed) */
export interface BatchNormBackwardParams {
  readonly dtype: DnnDType;
  readonly n: number;
  readonly c: number;
  readonly h: number;
  readonly w: number;
  readonly x: DevicePtr;
  readonly dy: DevicePtr;
  readonly dx: DevicePtr;
  readonly scale: DevicePtr;
  readonly dScale: DevicePtr;
  readonly dBias: DevicePtr;
  readonly eps: number;
}

/** softmax over the last dim of a contiguous [rows, cols] tensor */
export interface SoftmaxParams {
  readonly dtype: DnnDType;
  readonly log: boolean;
  readonly rows: number;
  readonly cols: number;
  readonly x: DevicePtr;
  readonly y: DevicePtr;
}

/** local response normalization across channels of a contiguous [n, c, h, w] x; the libraries'
 *  window is [c - floor((size - 1) / 2), c + ceil((size - 1) / 2)], and both divide alpha by size */
export interface LrnParams {
  readonly dtype: DnnDType;
  readonly n: number;
  readonly c: number;
  readonly h: number;
  readonly w: number;
  readonly size: number;
  readonly alpha: number;
  readonly beta: number;
  readonly k: number;
  readonly x: DevicePtr;
  readonly y: DevicePtr;
}

/** its backward: dx from dy, with the forward's x and y (all contiguous, dx written) */
export interface LrnBackwardParams extends LrnParams {
  readonly dy: DevicePtr;
  readonly dx: DevicePtr;
}

/** one layer and one direction of an LSTM or GRU with PyTorch's gate order (LSTM i, f, g, o; GRU
 *  r, z, n), sequence-major: x [T, B, I], y [T, B, H], states [B, H], every buffer dense */
export interface RnnShape {
  readonly dtype: DnnDType;
  readonly mode: 'lstm' | 'gru';
  readonly T: number;
  readonly B: number;
  readonly I: number;
  readonly H: number;
  /** both biases (input and hidden side), or none */
  readonly bias: boolean;
}
/** an RNN call's shape, as the libraries' error messages name it */
export const rnnWhat = (p: RnnShape): string =>
  `rnn(${p.mode}, ${p.dtype}, x ${fmtShape([p.T, p.B, p.I])}, hidden ${p.H}${p.bias ? '' : ', no bias'})`;

/** the library's buffer sizes for a shape, in bytes (reserve: training mode's, 0 for inference) */
export interface RnnSizes {
  readonly weightBytes: number;
  readonly workspaceBytes: number;
  readonly reserveBytes: number;
}

/** byte offsets in the weight space, per gate in PyTorch's order: each gate's [H, I] input-side and
 *  [H, H] hidden-side matrix (row-major, as PyTorch's weights slice them) and [H] biases */
export interface RnnWeightOffsets {
  readonly wIh: readonly number[];
  readonly wHh: readonly number[];
  readonly bIh: readonly number[];
  readonly bHh: readonly number[];
}

/** the buffers every RNN call takes: the packed weights, scratch, and the per-sequence lengths
 *  (B int32 values of T, in device memory: cuDNN reads them from kernels) */
export interface RnnBuffers extends RnnShape {
  readonly weights: DevicePtr;
  readonly weightBytes: number;
  readonly workspace: DevicePtr | null;
  readonly workspaceBytes: number;
  readonly reserve: DevicePtr | null;
  readonly reserveBytes: number;
  readonly seqLengths: DevicePtr;
}

/** the forward: y, and the final states where hy / cy are given; training mode fills the reserve
 *  space the backward calls read */
export interface RnnForwardParams extends RnnBuffers {
  readonly training: boolean;
  readonly x: DevicePtr;
  readonly hx: DevicePtr | null;
  readonly cx: DevicePtr | null;
  readonly y: DevicePtr;
  readonly hy: DevicePtr | null;
  readonly cy: DevicePtr | null;
}

/** the backward calls after a training-mode forward on the same buffers: dx, dhx, dcx from dy and
 *  the final states' gradients (data), then the weight gradients added into dweights (weights) */
export interface RnnBackwardParams extends RnnBuffers {
  readonly x: DevicePtr;
  readonly hx: DevicePtr | null;
  readonly cx: DevicePtr | null;
  readonly y: DevicePtr;
  readonly dy: DevicePtr;
  readonly dhy: DevicePtr | null;
  readonly dcy: DevicePtr | null;
  readonly dx: DevicePtr;
  readonly dhx: DevicePtr | null;
  readonly dcx: DevicePtr | null;
  /** a weight space of weightBytes the weight gradients are added to (zero it first) */
  readonly dweights: DevicePtr;
}

/** MIOpen on ROCm, cuDNN on CUDA; loaded on first use so elementwise-only users need neither */
export interface DnnApi {
  readonly name: string;
  readonly version: string;
  convForward(p: ConvParams, stream: GpuStream): void;
  /** transposed convolution, through backward-data */
  convTransposeForward(p: ConvParams, stream: GpuStream): void;
  /**
   * the weight gradient of convForward (backward-filter / backward-weights), overwriting w:
   * p.x is the forward's input, p.y the gradient of its output, p.w the weight gradient written
   */
  convBackwardWeights(p: ConvParams, stream: GpuStream): void;
  poolForward(p: PoolParams, stream: GpuStream): void;
  poolBackward(p: PoolBackwardParams, stream: GpuStream): void;
  batchNormForwardTraining(p: BatchNormTrainParams, stream: GpuStream): void;
  batchNormBackward(p: BatchNormBackwardParams, stream: GpuStream): void;
  softmaxForward(p: SoftmaxParams, stream: GpuStream): void;
  /** an RNN shape's buffer sizes (training: with the reserve space the backward calls need) */
  rnnSizes(p: RnnShape, training: boolean, stream: GpuStream): RnnSizes;
  /** where each PyTorch gate's weights and biases go in a weight space of weightBytes at weights */
  rnnWeightOffsets(p: RnnShape, weights: DevicePtr, weightBytes: number): RnnWeightOffsets;
  rnnForward(p: RnnForwardParams, stream: GpuStream): void;
  rnnBackwardData(p: RnnBackwardParams, stream: GpuStream): void;
  rnnBackwardWeights(p: RnnBackwardParams, stream: GpuStream): void;
  lrnForward(p: LrnParams, stream: GpuStream): void;
  lrnBackward(p: LrnBackwardParams, stream: GpuStream): void;
}

export interface BlasApi {
  readonly name: string;
  readonly version: string;
  gemmStridedBatched(p: GemmParams, stream: GpuStream): void;
  /**
   * sets the workspace on the handle; after it the library must not allocate during a capture.
   * The caller owns the memory and keeps it alive (and unused by anything else) while any
   * GEMM queued with it, or any graph that captured one, may still run. One workspace serves
   * every stream of this handle: GEMMs running concurrently on two streams would share it.
   */
  setWorkspace(ptr: DevicePtr, bytes: number): void;
}

export interface GpuRuntime {
  readonly vendor: Vendor;
  readonly index: number;
  readonly info: DeviceInfo;
  /** the device's own stream that ops use unless the user picked another */
  readonly defaultStream: GpuStream;

  memGetInfo(): { free: number; total: number };
  /** raw device allocation; throws OutOfMemoryError with the numbers */
  malloc(bytes: number): DevicePtr;
  free(ptr: DevicePtr): void;
  hostAlloc(bytes: number): PinnedBuffer;
  hostFree(buf: PinnedBuffer): void;

  /** synchronous copies from and to ordinary JS memory */
  copyHtoD(dst: DevicePtr, src: ArrayBufferView): void;
  copyDtoH(dst: ArrayBufferView, src: DevicePtr): void;
  /** async copies: host memory must be pinned memory we own */
  copyHtoDAsync(dst: DevicePtr, src: PinnedBuffer, srcOffset: number, bytes: number, stream: GpuStream): void;
  copyDtoHAsync(dst: PinnedBuffer, dstOffset: number, src: DevicePtr, bytes: number, stream: GpuStream): void;
  copyDtoDAsync(dst: DevicePtr, src: DevicePtr, bytes: number, stream: GpuStream): void;
  memsetAsync(dst: DevicePtr, byte: number, bytes: number, stream: GpuStream): void;

  streamCreate(): GpuStream;
  streamDestroy(s: GpuStream): void;
  streamSynchronize(s: GpuStream): void;
  streamWaitEvent(s: GpuStream, e: GpuEvent): void;
  eventCreate(timing?: boolean): GpuEvent;
  eventRecord(e: GpuEvent, s: GpuStream): void;
  eventSynchronize(e: GpuEvent): void;
  /** true when the work before the event has finished */
  eventQuery(e: GpuEvent): boolean;
  eventElapsedMs(start: GpuEvent, end: GpuEvent): number;
  eventDestroy(e: GpuEvent): void;
  synchronize(): void;

  /** .hsaco (raw ELF or offload bundle) on ROCm; PTX or cubin on CUDA */
  moduleLoad(image: Uint8Array): GpuModule;
  moduleGetFunction(m: GpuModule, name: string): GpuFunction;
  moduleUnload(m: GpuModule): void;
  /** parameter layout from the driver where it can tell (CUDA 12.4+); null on ROCm, where the
   *  code object's metadata says it */
  functionParams(f: GpuFunction): KernelParam[] | null;
  /** whether eager launches of `f` may be set up before the kernel queued ahead of them ends, the
   *  kernel itself waiting for it (NVIDIA sm_90+: programmatic dependent launch; captured
   *  launches keep ordinary order); false on ROCm */
  startsEarly(f: GpuFunction): boolean;
  /** launch with a packed argument buffer (the `extra` path; end marker per vendor) */
  launch(
    f: GpuFunction,
    grid: readonly [number, number, number],
    block: readonly [number, number, number],
    sharedBytes: number,
    stream: GpuStream,
    args: Uint8Array,
  ): void;

  /**
   * starts capturing work queued on `s` (relaxed mode: other threads' unsafe calls are not
   * errors). Work on `s` is recorded, not run, until captureEnd. A synchronize of `s`, or a
   * call on the legacy NULL stream while `s` captures, fails and invalidates the capture.
   */
  captureBegin(s: GpuStream): void;
  /** ends the capture and instantiates it; the graph itself is destroyed at once (the exec keeps
   *  what it needs). Throws GpuError ("the capture was invalidated by ...") when a forbidden
   *  call broke the capture; `s` is no longer capturing either way. */
  captureEnd(s: GpuStream): GpuGraphExec;
  /** true while `s` is capturing (also when the capture was invalidated and still needs captureEnd) */
  isCapturing(s: GpuStream): boolean;
  /** replays the captured work on `s`, ordered like any other work queued there */
  graphLaunch(g: GpuGraphExec, s: GpuStream): void;
  /** frees the exec; launches already queued still complete */
  graphExecDestroy(g: GpuGraphExec): void;

  /**
   * For libraries that take the vendor's own handles (RCCL / NCCL): the native stream pointer
   * (hipStream_t / CUstream) of a live stream of this device.
   */
  nativeStream(s: GpuStream): bigint;
  /**
   * Runs fn, a call into a library that may switch the current device itself (RCCL / NCCL do,
   * in ncclCommInitAll and ncclGroupEnd), with this device current on the calling thread, then
   * forgets which device is current so the runtime's next call makes its own device current
   * again instead of trusting a cached value the library may have changed.
   */
  callForeign<T>(fn: () => T): T;

  /** rocBLAS / cuBLAS, loaded on first use */
  blas(): BlasApi;
  /** MIOpen / cuDNN, loaded on first use */
  dnn(): DnnApi;
  /** whether the DNN library's calls may be recorded into a graph (once their plans and
   *  workspaces exist): true where a GPU run showed replays equal eager calls */
  readonly dnnCapturable: boolean;
}
