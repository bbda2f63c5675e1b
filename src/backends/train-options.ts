// The parameter records of the fused training ops, shared by both backends.
import type { RawTensor } from '../device/raw-tensor.ts';

/**
 * The device table a multi-tensor step launches over (hip-src/optim.hip), kept by its caller from
 * one step to the next: uploaded again only when an address in it changes, so a step captured in
 * a graph replays with the table it was captured with. The CPU ignores it.
 */
export class StepTable {
  /** the table on the device (i64 words), or null before the first GPU step */
  table: RawTensor | null = null;
  /** the words last uploaded */
  words: BigInt64Array | null = null;
  dispose(): void {
    this.table?.dispose();
    this.table = null;
    this.words = null;
  }
}

/**
 * One multi-tensor step's tensors, all on one device: parameters of one dtype, their gradients
 * (the parameter's dtype and shape), state tensors (slot k of every parameter, each contiguous,
 * in the state dtype) and, for half parameters kept in f32, the f32 master copies that the update
 * reads and writes as the weights.
 */
export interface StepList<T extends RawTensor = RawTensor> {
  readonly params: readonly T[];
  readonly grads: readonly T[];
  /** state[k][i]: slot k of parameter i (Adam: expAvg, expAvgSq, then maxExpAvgSq with amsgrad; SGD: the momentum buffer) */
  readonly state: readonly (readonly T[])[];
  readonly masters: readonly T[] | null;
  readonly cache: StepTable;
}

/** Adam's step (PyTorch's update; decoupled: AdamW); stepSize = lr / (1 - beta1^t), invBc2Sqrt = 1 / sqrt(1 - beta2^t) */
export interface AdamStepParams {
  readonly lr: number;
  readonly beta1: number;
  readonly beta2: number;
  readonly eps: number;
  readonly weightDecay: number;
  readonly decoupled: boolean;
  readonly amsgrad: boolean;
  readonly stepSize: number;
  readonly invBc2Sqrt: number;
}

/** SGD's step; first: the momentum buffers start as the step's direction */
export interface SgdStepParams {
  readonly lr: number;
  readonly momentum: number;
  readonly dampening: number;
  readonly weightDecay: number;
  readonly nesterov: boolean;
  readonly first: boolean;
}

/** cross entropy over rows of class logits: class weights [C] or null, the ignored class id, label smoothing */
export interface CrossEntropyParams<T extends RawTensor = RawTensor> {
  readonly weight: T | null;
  readonly ignoreIndex: number;
  readonly smoothing: number;
}
