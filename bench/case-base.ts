// The case record and the helpers both case lists build rows with: bench/cases.ts (the main
// list) and bench/cases-ops.ts (the op families beyond it) import them from here, and cases.ts
// passes them on to the rest of the bench.
import { DTYPE_INFO, type DType } from '../src/index.ts';

export type BenchOp =
  | 'copy'
  | 'fill'
  | 'gemm'
  | 'add'
  | 'mul'
  | 'exp'
  | 'gelu'
  | 'cast'
  | 'where'
  | 'sum'
  | 'mean'
  | 'max'
  | 'softmax'
  | 'logSoftmax'
  | 'layerNorm'
  | 'rmsNorm'
  | 'matmul'
  | 'linear'
  | 'tinyAdd'
  | 'conv2d'
  | 'convTranspose2d'
  | 'maxPool2d'
  | 'avgPool2d'
  | 'upsampleNearest2d'
  | 'upsampleBilinear2d'
  | 'indexSelect'
  | 'gather'
  | 'scatterAdd'
  | 'indexAdd'
  | 'embedding'
  | 'sort'
  | 'argsort'
  | 'topk'
  | 'cat'
  | 'contiguousT'
  | 'batchNorm'
  | 'rope'
  | 'cumsum'
  | 'attention'
  | 'rand'
  | 'randn';

/** op arguments beyond the shapes, read the same way by ours.ts and compare-torch.py */
export interface CaseParams {
  readonly kernel?: number;
  readonly stride?: number;
  readonly padding?: number;
  /** reductions, indexing, cat, cumsum: the dim the op works along */
  readonly dim?: number;
  /** upsampling: the output's [h, w] */
  readonly size?: readonly number[];
  readonly causal?: boolean;
  /** matmul: an operand made [k, m] (or [n, k]) and passed transposed, a strided view */
  readonly transA?: boolean;
  readonly transB?: boolean;
  /** indexing: the ids' shape (i64 on both sides, as torch requires) and their exclusive bound */
  readonly ids?: readonly number[];
  readonly idsBelow?: number;
  /** topk: how many (the largest, in order) */
  readonly k?: number;
}

/** what the throughput column measures: bytes moved, flops, or host time per op */
export type BenchKind = 'ceiling-memory' | 'ceiling-write' | 'ceiling-compute' | 'memory' | 'compute' | 'host';

export interface BenchCase {
  readonly id: string;
  readonly op: BenchOp;
  readonly kind: BenchKind;
  /** the main input's shape (matmul: A; gemm: [m, n, k]) */
  readonly shape: readonly number[];
  /** matmul: B's shape; linear: the weight's shape [n, k] (x times its transpose) */
  readonly shapeB?: readonly number[];
  readonly dtype: DType;
  /** cast: the target dtype */
  readonly to?: DType;
  /** bytes read + written by one op (memory kinds) */
  readonly bytes: number;
  /** floating-point operations of one op (compute kinds) */
  readonly flops: number;
  /** input sets the timed loop rotates through, so inputs come from memory, not from cache */
  readonly sets: number;
  readonly params?: CaseParams;
  /** the table's op column where the op's name alone would be ambiguous */
  readonly label?: string;
}

export interface TimingRules {
  readonly warmup: number;
  /** and warm-up calls go on until this much wall time has passed: the first few hundred calls
   *  of a JavaScript path run before V8 has optimized it, and the events time the host then
   *  (bf16 sum over dim 0 of [8192, 4096] on an H200: 51.4 and 30.0 us as the first case of two
   *  processes, 25.3 us timed again later in the second) */
  readonly warmupMs: number;
  /** the timed loop aims at this much GPU time, within [minIters, maxIters] */
  readonly targetMs: number;
  readonly minIters: number;
  readonly maxIters: number;
  /** tinyAdd: ops per timed batch, and batches */
  readonly tinyOps: number;
  readonly tinyReps: number;
}

/** larger than any current GPU's last-level cache (MI300X: 256 MB Infinity Cache; H100: 50 MB) */
export const ROTATE_BYTES = 1 << 30;
const MAX_SETS = 16;

export function setsFor(inputBytes: number): number {
  return Math.max(2, Math.min(MAX_SETS, Math.ceil(ROTATE_BYTES / Math.max(1, inputBytes))));
}

export const prod = (s: readonly number[]): number => s.reduce((a, b) => a * b, 1);
export const size = (d: DType): number => DTYPE_INFO[d].size;
export const fmt = (s: readonly number[]): string => `[${s.join(', ')}]`;

export function mem(
  op: BenchOp,
  shape: number[],
  dtype: DType,
  inputBytes: number,
  bytes: number,
  extra: Partial<BenchCase> = {},
): BenchCase {
  const id = `${op}${extra.to ? `->${extra.to}` : ''} ${fmt(shape)} ${dtype}`;
  return { id, op, kind: 'memory', shape, dtype, bytes, flops: 0, sets: setsFor(inputBytes), ...extra };
}
