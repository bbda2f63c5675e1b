// Signatures of the row-wise kernel families (hip-src/reduce.hip, reduce-rows.hip, softmax.hip,
// norm.hip, rope.hip, scan.hip), in the form of KERNEL_SIGNATURES in kernel-sigs.ts, so the same ABI test checks
// them against every arch's code-object metadata and the PTX.
// It imports only types from kernel-sigs.ts, so that file can spread ROW_KERNEL_SIGNATURES
// into KERNEL_SIGNATURES without an import cycle.
import { DTYPES, FLOAT_DTYPES, type DType } from '../core/dtype.ts';
import { REDUCE_OPS, type ReduceOp } from '../core/op-types.ts';
import type { ArgSpec } from './arg-spec.ts';

const ALL_DTYPES: readonly DType[] = DTYPES;
/** the eps parameter: f64 for f64 data, f32 otherwise (computeSpec in kernel-sigs.ts) */
const computeSpec = (d: DType): 'f32' | 'f64' => (d === 'f64' ? 'f64' : 'f32');

/** the reduce ops a dtype has kernels for: mean is float only */
export function reduceOpsFor(d: DType): readonly ReduceOp[] {
  return REDUCE_OPS.filter((op) => op !== 'mean' || (FLOAT_DTYPES as readonly DType[]).includes(d));
}

/** y, pv, pi, x, yOff, xOff, outer, inner, segLen, mode */
export const REDUCE_ROWS_SIG: readonly ArgSpec[] = [
  'ptr',
  'ptr',
  'ptr',
  'ptr',
  'i64',
  'i64',
  'u64',
  'u64',
  'u64',
  'u32',
];
/** y, x, yOff, xOff, rows, inner: the lean one-warp-per-row case */
export const REDUCE_ROWS32_SIG: readonly ArgSpec[] = ['ptr', 'ptr', 'i64', 'i64', 'u32', 'u32'];
/** the ops and dtypes that have a _rows32 kernel */
export const ROWS32_OPS: readonly ReduceOp[] = ['sum', 'mean', 'min', 'max'];
export const ROWS32_DTYPES: readonly DType[] = ['f32', 'f16', 'bf16'];
/** y, pv, pi, x, yOff, g (operand 0 = x), outer, inner, segLen, mode */
export const REDUCE_STRIDED_SIG: readonly ArgSpec[] = [
  'ptr',
  'ptr',
  'ptr',
  'ptr',
  'i64',
  'geom',
  'u64',
  'u64',
  'u64',
  'u32',
];
/** y, pv, pi, yOff, outer, segs, count, mode */
export const REDUCE_FINAL_SIG: readonly ArgSpec[] = ['ptr', 'ptr', 'ptr', 'i64', 'u64', 'u64', 'u64', 'u32'];

/** y, pv, pi, x, yOff, xOff, rows, cols, xBatch, xRow, segLen, batch, segs, tiles, tx, vec
 *  (hip-src/colreduce.hip: reductions down columns) */
export const REDUCE_COLS_SIG: readonly ArgSpec[] = [
  'ptr',
  'ptr',
  'ptr',
  'ptr',
  'i64',
  'i64',
  'u64',
  'u64',
  'i64',
  'i64',
  'u64',
  'u32',
  'u32',
  'u32',
  'u32',
  'u32',
];

function colReduceSigs(): Map<string, readonly ArgSpec[]> {
  const m = new Map<string, readonly ArgSpec[]>();
  for (const d of ALL_DTYPES) for (const op of reduceOpsFor(d)) m.set(`reduce_${op}_${d}_cols`, REDUCE_COLS_SIG);
  return m;
}

function reduceSigs(): Map<string, readonly ArgSpec[]> {
  const m = new Map<string, readonly ArgSpec[]>();
  for (const d of ALL_DTYPES) {
    for (const op of reduceOpsFor(d)) {
      m.set(`reduce_${op}_${d}_rows`, REDUCE_ROWS_SIG);
      m.set(`reduce_${op}_${d}_strided`, REDUCE_STRIDED_SIG);
      m.set(`reduce_${op}_${d}_final`, REDUCE_FINAL_SIG);
    }
  }
  for (const d of ROWS32_DTYPES) for (const op of ROWS32_OPS) m.set(`reduce_${op}_${d}_rows32`, REDUCE_ROWS32_SIG);
  return m;
}

/** the dtypes with register row kernels (softmax.hip's and norm.hip's _v, _part and _fin,
 *  reduce-rows.hip's _v) */
export const REG_ROW_DTYPES: readonly DType[] = ['f32', 'f16', 'bf16'];
/** the V of the _v<V> kernels (16-byte vectors a thread holds), per family */
export const REG_ROW_VECS = { softmax: [1, 2, 4, 8], norm: [1, 2, 4], fold: [1, 2, 4, 8, 16] } as const;
/** the reductions with register row kernels (reduce-rows.hip) */
export const REG_FOLD_OPS: readonly ReduceOp[] = ['sum', 'mean', 'max', 'min'];
/** part, x, xOff, rows, cols, chunkVecs, chunks: the first kernel of a split row */
const PART_SIG: readonly ArgSpec[] = ['ptr', 'ptr', 'i64', 'u32', 'u32', 'u32', 'u32'];

function softmaxSigs(): Map<string, readonly ArgSpec[]> {
  const m = new Map<string, readonly ArgSpec[]>();
  for (const d of FLOAT_DTYPES) {
    // y, x, yOff, xOff, rows, cols, group
    m.set(`softmax_${d}`, ['ptr', 'ptr', 'i64', 'i64', 'u64', 'u64', 'u32']);
    m.set(`logsoftmax_${d}`, ['ptr', 'ptr', 'i64', 'i64', 'u64', 'u64', 'u32']);
  }
  for (const d of REG_ROW_DTYPES) {
    for (const v of REG_ROW_VECS.softmax) {
      // y, x, yOff, xOff, rows, cols, group
      for (const op of ['softmax', 'logsoftmax'])
        m.set(`${op}_${d}_v${v}`, ['ptr', 'ptr', 'i64', 'i64', 'u32', 'u32', 'u32']);
    }
    m.set(`softmax_part_${d}`, PART_SIG);
    // y, x, part, yOff, xOff, rows, cols, chunkVecs, chunks
    for (const op of ['softmax', 'logsoftmax'])
      m.set(`${op}_fin_${d}`, ['ptr', 'ptr', 'ptr', 'i64', 'i64', 'u32', 'u32', 'u32', 'u32']);
  }
  return m;
}

function normSigs(): Map<string, readonly ArgSpec[]> {
  const m = new Map<string, readonly ArgSpec[]>();
  for (const d of FLOAT_DTYPES) {
    const c = computeSpec(d);
    // y, x, w, b, yOff, xOff, wOff, bOff, rows, cols, eps, hasBias, group
    m.set(`layernorm_${d}`, ['ptr', 'ptr', 'ptr', 'ptr', 'i64', 'i64', 'i64', 'i64', 'u64', 'u64', c, 'u32', 'u32']);
    // y, x, w, yOff, xOff, wOff, rows, cols, eps, group
    m.set(`rmsnorm_${d}`, ['ptr', 'ptr', 'ptr', 'i64', 'i64', 'i64', 'u64', 'u64', c, 'u32']);
  }
  for (const d of REG_ROW_DTYPES) {
    for (const v of REG_ROW_VECS.norm) {
      // y, x, w, b, yOff, xOff, wOff, bOff, rows, cols, eps, hasBias, group
      m.set(`layernorm_${d}_v${v}`, [
        'ptr',
        'ptr',
        'ptr',
        'ptr',
        'i64',
        'i64',
        'i64',
        'i64',
        'u32',
        'u32',
        'f32',
        'u32',
        'u32',
      ]);
      // y, x, w, yOff, xOff, wOff, rows, cols, eps, group
      m.set(`rmsnorm_${d}_v${v}`, ['ptr', 'ptr', 'ptr', 'i64', 'i64', 'i64', 'u32', 'u32', 'f32', 'u32']);
    }
    m.set(`layernorm_part_${d}`, PART_SIG);
    m.set(`rmsnorm_part_${d}`, PART_SIG);
    // y, x, w, b, part, yOff, xOff, wOff, bOff, rows, cols, chunkVecs, chunks, eps, hasBias
    m.set(`layernorm_fin_${d}`, [
      'ptr',
      'ptr',
      'ptr',
      'ptr',
      'ptr',
      'i64',
      'i64',
      'i64',
      'i64',
      'u32',
      'u32',
      'u32',
      'u32',
      'f32',
      'u32',
    ]);
    // y, x, w, part, yOff, xOff, wOff, rows, cols, chunkVecs, chunks, eps
    m.set(`rmsnorm_fin_${d}`, ['ptr', 'ptr', 'ptr', 'ptr', 'i64', 'i64', 'i64', 'u32', 'u32', 'u32', 'u32', 'f32']);
  }
  return m;
}

function foldSigs(): Map<string, readonly ArgSpec[]> {
  const m = new Map<string, readonly ArgSpec[]>();
  // y, x, yOff, xOff, rows, cols, group
  for (const d of REG_ROW_DTYPES)
    for (const op of REG_FOLD_OPS)
      for (const v of REG_ROW_VECS.fold)
        m.set(`reduce_${op}_${d}_v${v}`, ['ptr', 'ptr', 'i64', 'i64', 'u32', 'u32', 'u32']);
  return m;
}

function scanSigs(): Map<string, readonly ArgSpec[]> {
  const m = new Map<string, readonly ArgSpec[]>();
  // y, x, yOff, xOff, rows, cols
  for (const d of FLOAT_DTYPES) m.set(`cumsum_${d}`, ['ptr', 'ptr', 'i64', 'i64', 'u32', 'u32']);
  return m;
}

export const ROPE_KERNEL_LAYOUTS = ['halves', 'interleaved', 'thd'] as const;

function ropeSigs(): Map<string, readonly ArgSpec[]> {
  const m = new Map<string, readonly ArgSpec[]>();
  for (const d of FLOAT_DTYPES) {
    for (const l of ROPE_KERNEL_LAYOUTS) {
      // y, x, cos, sin, yOff, xOff, cOff, sOff, pairs, s1, s2, half, x's strides of dims 0-2
      m.set(`rope_${l}_${d}`, [
        ...Array<ArgSpec>(4).fill('ptr'),
        ...Array<ArgSpec>(4).fill('i64'),
        ...Array<ArgSpec>(4).fill('u64'),
        ...Array<ArgSpec>(3).fill('i64'),
      ]);
    }
  }
  return m;
}

/** batchnorm.hip's (x dtype, per-channel dtype) pairs: the per-channel tensors in x's dtype, or f32 for half data */
const BATCHNORM_PAIRS: readonly (readonly [DType, DType])[] = [
  ['f32', 'f32'],
  ['f64', 'f64'],
  ['f16', 'f16'],
  ['f16', 'f32'],
  ['bf16', 'bf16'],
  ['bf16', 'f32'],
];

function batchNormSigs(): Map<string, readonly ArgSpec[]> {
  const m = new Map<string, readonly ArgSpec[]>();
  for (const [d, p] of BATCHNORM_PAIRS) {
    // y, x, mean, var, w, b, yOff, xOff, mOff, vOff, wOff, bOff, planes, c, plane, eps, flags
    m.set(`batchnorm_${d}_${p}`, [
      'ptr',
      'ptr',
      'ptr',
      'ptr',
      'ptr',
      'ptr',
      'i64',
      'i64',
      'i64',
      'i64',
      'i64',
      'i64',
      'u64',
      'u32',
      'u64',
      computeSpec(d),
      'u32',
    ]);
  }
  return m;
}

/** merge into KERNEL_SIGNATURES (kernel-sigs.ts) or check beside it */
export const ROW_KERNEL_SIGNATURES: Readonly<Record<string, () => ReadonlyMap<string, readonly ArgSpec[]>>> = {
  'reduce.hip': reduceSigs,
  'colreduce.hip': colReduceSigs,
  'reduce-rows.hip': foldSigs,
  'softmax.hip': softmaxSigs,
  'norm.hip': normSigs,
  'batchnorm.hip': batchNormSigs,
  'rope.hip': ropeSigs,
  'scan.hip': scanSigs,
};
