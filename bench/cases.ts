// The benchmark cases, defined once: bench/run.ts times them here and hands the same list (as
// JSON) to bench/compare-torch.py, so both sides run the same ops, shapes, dtypes, rotation
// and iteration rules.
import { DTYPE_INFO, type DType } from '../src/index.ts';
import { opCases } from './cases-ops.ts';

export type BenchOp =
  | 'copy' | 'fill' | 'gemm'
  | 'add' | 'mul' | 'exp' | 'gelu' | 'cast' | 'where'
  | 'sum' | 'mean' | 'max' | 'softmax' | 'logSoftmax' | 'layerNorm' | 'rmsNorm'
  | 'matmul' | 'linear' | 'tinyAdd'
  | 'conv2d' | 'convTranspose2d' | 'maxPool2d' | 'avgPool2d' | 'upsampleNearest2d' | 'upsampleBilinear2d'
  | 'indexSelect' | 'gather' | 'scatterAdd' | 'indexAdd' | 'embedding' | 'sort' | 'argsort' | 'topk'
  | 'cat' | 'contiguousT' | 'batchNorm' | 'rope' | 'cumsum' | 'attention'
  | 'rand' | 'randn';

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

export function mem(op: BenchOp, shape: number[], dtype: DType, inputBytes: number, bytes: number, extra: Partial<BenchCase> = {}): BenchCase {
  const id = `${op}${extra.to ? `->${extra.to}` : ''} ${fmt(shape)} ${dtype}`;
  return { id, op, kind: 'memory', shape, dtype, bytes, flops: 0, sets: setsFor(inputBytes), ...extra };
}

export function benchCases(quick: boolean): BenchCase[] {
  const out: BenchCase[] = [];
  // ceilings, measured in the same run
  const GiB = 1 << 30;
  out.push({ id: 'ceiling: device copy 1 GiB', op: 'copy', kind: 'ceiling-memory', shape: [GiB], dtype: 'u8', bytes: 2 * GiB, flops: 0, sets: 1 });
  // what a write-only op (random numbers) is held to: the driver's memset of 1 GiB
  out.push({ id: 'ceiling: device write 1 GiB', op: 'fill', kind: 'ceiling-write', shape: [GiB], dtype: 'u8', bytes: GiB, flops: 0, sets: 1 });
  for (const d of ['bf16', 'f16', 'f32'] as const) {
    const n = 8192;
    out.push({ id: `ceiling: library gemm ${n}^3 ${d}`, op: 'gemm', kind: 'ceiling-compute', shape: [n, n, n], dtype: d, bytes: 0, flops: 2 * n ** 3, sets: 1 });
  }
  // elementwise at 2^26 and 2^28 elements
  for (const n of quick ? [2 ** 26] : [2 ** 26, 2 ** 28]) {
    for (const d of ['f32', 'bf16'] as const) {
      const s = size(d);
      out.push(mem('add', [n], d, 2 * n * s, 3 * n * s));
      out.push(mem('mul', [n], d, 2 * n * s, 3 * n * s));
      out.push(mem('exp', [n], d, n * s, 2 * n * s));
      out.push(mem('gelu', [n], d, n * s, 2 * n * s));
      const to: DType = d === 'f32' ? 'bf16' : 'f32';
      out.push(mem('cast', [n], d, n * s, n * (s + size(to)), { to }));
      // cond is u8 (torch: bool, also one byte)
      out.push(mem('where', [n], d, n * (1 + 2 * s), n * (1 + 3 * s)));
    }
  }
  // broadcasting as models do it: a weight along the rows, a value per row (bytes: x read, y
  // written; the broadcast operand is small)
  for (const [op, b, d] of [['mul', [4096], 'bf16'], ['add', [8192, 1], 'bf16'], ['mul', [4096], 'f32']] as const) {
    const x = [8192, 4096], n = prod(x), s = size(d);
    out.push({ ...mem(op, x, d, n * s, 2 * n * s + prod(b) * s), id: `${op} [8192, 4096] by ${fmt(b)} ${d}`, shapeB: b, label: `${op} broadcast ${fmt(b)}` });
  }
  // random numbers generated on the device: bytes written only, held to the write ceiling (the
  // driver's memset) rather than the copy's read + write
  for (const n of quick ? [2 ** 26] : [2 ** 20, 2 ** 28]) {
    for (const d of n === 2 ** 20 ? (['f32'] as const) : (['f32', 'bf16'] as const)) {
      out.push(mem('randn', [n], d, 0, n * size(d)));
      out.push(mem('rand', [n], d, 0, n * size(d)));
    }
  }
  // reductions and normalizations over the last dim of [8192, 4096]
  const rows = 8192, cols = 4096;
  for (const d of ['f32', 'bf16'] as const) {
    const s = size(d), n = rows * cols;
    out.push(mem('sum', [rows, cols], d, n * s, n * s + rows * s));
    out.push(mem('max', [rows, cols], d, n * s, n * s + rows * s));
    out.push(mem('softmax', [rows, cols], d, n * s, 2 * n * s));
    out.push(mem('layerNorm', [rows, cols], d, n * s, 2 * n * s + 2 * cols * s));
    out.push(mem('rmsNorm', [rows, cols], d, n * s, 2 * n * s + cols * s));
  }
  // the rest of the row family, bf16 only
  {
    const n = rows * cols;
    out.push(mem('mean', [rows, cols], 'bf16', n * 2, n * 2 + rows * 2));
    out.push(mem('logSoftmax', [rows, cols], 'bf16', n * 2, 2 * n * 2));
  }
  // matmul
  for (const d of ['f32', 'bf16', 'f16'] as const) {
    const m = 4096;
    out.push({ id: `matmul [${m}, ${m}] x [${m}, ${m}] ${d}`, op: 'matmul', kind: 'compute', shape: [m, m], shapeB: [m, m], dtype: d, bytes: 0, flops: 2 * m ** 3, sets: setsFor(2 * m * m * size(d)) });
  }
  {
    const b = 32, m = 1024;
    out.push({ id: `matmul [${b}, ${m}, ${m}] x [${b}, ${m}, ${m}] bf16`, op: 'matmul', kind: 'compute', shape: [b, m, m], shapeB: [b, m, m], dtype: 'bf16', bytes: 0, flops: 2 * b * m ** 3, sets: setsFor(2 * b * m * m * 2) });
  }
  // decode-sized products: x [m, k] times an nn.Linear weight [n, k] transposed (the weight
  // bytes dominate, so these are memory rows), and the norm of one token
  for (const [m, n, k] of [[1, 14336, 4096], [1, 4096, 14336], [4, 14336, 4096], [1, 128256, 4096]] as const) {
    const bytes = (n * k + m * k + m * n) * 2;
    out.push({ id: `linear [${m}, ${k}] x [${n}, ${k}]^T bf16`, op: 'linear', kind: 'memory', shape: [m, k], shapeB: [n, k], dtype: 'bf16', bytes, flops: 0, sets: setsFor(bytes) });
  }
  out.push(mem('rmsNorm', [1, 4096], 'bf16', 4096 * 2, 3 * 4096 * 2));
  // every other op family (issue 13), each beside PyTorch
  out.push(...opCases());
  // the host cost of one tiny async op
  out.push({ id: 'tiny add [4] f32 (host time per op)', op: 'tinyAdd', kind: 'host', shape: [4], dtype: 'f32', bytes: 0, flops: 0, sets: 1 });
  return out;
}

export function timingRules(quick: boolean): TimingRules {
  return quick
    ? { warmup: 2, warmupMs: 10, targetMs: 60, minIters: 5, maxIters: 30, tinyOps: 2000, tinyReps: 3 }
    : { warmup: 5, warmupMs: 50, targetMs: 400, minIters: 15, maxIters: 200, tinyOps: 10_000, tinyReps: 7 };
}

export function numelOf(c: BenchCase): number { return prod(c.shape); }
