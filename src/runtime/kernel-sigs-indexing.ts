// Signatures of hip-src/indexing.hip, index-rows.hip and upsample.hip, in the form of KERNEL_SIGNATURES
// in kernel-sigs.ts (which spreads this table in), so test/abi/kernels.test.ts checks them
// against every arch's code-object metadata and the PTX. Imports only types from kernel-sigs.ts,
// so there is no import cycle.
import { DTYPES, FLOAT_DTYPES, INDEX_DTYPES } from '../core/dtype.ts';
import type { ArgSpec } from './arg-spec.ts';

export const INDEX_ID_DTYPES = INDEX_DTYPES;
export type IdDType = (typeof INDEX_ID_DTYPES)[number];
const WIDTHS = ['b1', 'b2', 'b4', 'b8'] as const;

/** y, x, ids, geom (y, x, ids, pos), dimStride, limit, err, tag */
export const GATHER_SIG: readonly ArgSpec[] = ['ptr', 'ptr', 'ptr', 'geom', 'i64', 'u64', 'ptr', 'u32'];
/** win, ids, geom (y, ids, pos, src), dimStride, limit, err, tag */
export const SCATTER_MARK_SIG: readonly ArgSpec[] = ['ptr', 'ptr', 'geom', 'i64', 'u64', 'ptr', 'u32'];
/** y, src, ids, win, geom, dimStride, limit */
export const SCATTER_WRITE_SIG: readonly ArgSpec[] = ['ptr', 'ptr', 'ptr', 'ptr', 'geom', 'i64', 'u64'];
/** y, src, ids, win (or null), geom, dimStride, limit, err, tag */
export const INDEX_SET_SIG: readonly ArgSpec[] = ['ptr', 'ptr', 'ptr', 'ptr', 'geom', 'i64', 'u64', 'ptr', 'u32'];
/** acc, src, ids, geom, dimStride, limit, err, tag */
export const SCATTER_ADD_SIG: readonly ArgSpec[] = ['ptr', 'ptr', 'ptr', 'geom', 'i64', 'u64', 'ptr', 'u32'];

/** the units index_rows moves: element widths, and 16-byte vectors where rows are aligned */
export const ROW_UNITS = ['b1', 'b2', 'b4', 'b8', 'b16'] as const;
export type RowUnit = (typeof ROW_UNITS)[number];
/** y, x, ids, err, yOff, xOff, idsOff, rows, n, len, xPre, xDim, idsStride, limit, group, tag */
export const INDEX_ROWS_SIG: readonly ArgSpec[] = [
  'ptr',
  'ptr',
  'ptr',
  'ptr',
  'i64',
  'i64',
  'i64',
  'u64',
  'u64',
  'u64',
  'i64',
  'i64',
  'i64',
  'u64',
  'u32',
  'u32',
];
/** y, x, ids, err, yOff, xOff, idsOff, rows, n, len, yPre, yDim, xPre, xDim, idsStride, limit, group, tag */
export const PUT_ROWS_SIG: readonly ArgSpec[] = [
  ...(['ptr', 'ptr', 'ptr', 'ptr', 'i64', 'i64', 'i64', 'u64', 'u64', 'u64'] as const),
  ...(['i64', 'i64', 'i64', 'i64', 'i64', 'u64', 'u32', 'u32'] as const),
];
/** acc, src, ids, err, accOff, srcOff, idsOff, rows, n, len, accPre, accDim, srcPre, srcDim, idsStride, limit, group, tag */
export const INDEX_ADD_ROWS_SIG: readonly ArgSpec[] = [
  'ptr',
  'ptr',
  'ptr',
  'ptr',
  'i64',
  'i64',
  'i64',
  'u64',
  'u64',
  'u64',
  'i64',
  'i64',
  'i64',
  'i64',
  'i64',
  'u64',
  'u32',
  'u32',
];
/** y, x, ids, err, yOff, geom (x rows, ids rows), rows, cols, xCol, idsCol, xDim, limit, group, tag */
export const GATHER_ROWS_SIG: readonly ArgSpec[] = [
  'ptr',
  'ptr',
  'ptr',
  'ptr',
  'i64',
  'geom',
  'u64',
  'u64',
  'i64',
  'i64',
  'i64',
  'u64',
  'u32',
  'u32',
];

function indexRowsSigs(): Map<string, readonly ArgSpec[]> {
  const m = new Map<string, readonly ArgSpec[]>();
  for (const i of INDEX_ID_DTYPES) {
    for (const w of ROW_UNITS) m.set(`index_rows_${w}_${i}`, INDEX_ROWS_SIG);
    for (const w of ROW_UNITS) m.set(`put_rows_${w}_${i}`, PUT_ROWS_SIG);
    for (const w of WIDTHS) m.set(`gather_rows_${w}_${i}`, GATHER_ROWS_SIG);
    for (const d of DTYPES) m.set(`index_add_rows_${d}_${i}`, INDEX_ADD_ROWS_SIG);
  }
  return m;
}

function indexingSigs(): Map<string, readonly ArgSpec[]> {
  const m = new Map<string, readonly ArgSpec[]>();
  for (const i of INDEX_ID_DTYPES) {
    for (const w of WIDTHS) {
      m.set(`gather_${w}_${i}`, GATHER_SIG);
      m.set(`scatter_write_${w}_${i}`, SCATTER_WRITE_SIG);
      m.set(`index_set_${w}_${i}`, INDEX_SET_SIG);
    }
    m.set(`scatter_mark_${i}`, SCATTER_MARK_SIG);
    for (const d of DTYPES) m.set(`scatter_add_${d}_${i}`, SCATTER_ADD_SIG);
  }
  return m;
}

/** y, x, xOff, total, c, h, w, outH, outW, sN, sC, sH, sW */
const UPSAMPLE_COMMON: readonly ArgSpec[] = [
  'ptr',
  'ptr',
  'i64',
  'u64',
  'u64',
  'u64',
  'u64',
  'u64',
  'u64',
  'i64',
  'i64',
  'i64',
  'i64',
];

/** y, x, xOff, tasks, c, h, w, strips, sN, sC, sH: the exact-2x kernels of both modes */
const UPSAMPLE_X2: readonly ArgSpec[] = ['ptr', 'ptr', 'i64', 'u32', 'u64', 'u64', 'u64', 'u64', 'i64', 'i64', 'i64'];

function upsampleSigs(): Map<string, readonly ArgSpec[]> {
  const m = new Map<string, readonly ArgSpec[]>();
  for (const w of ['b2', 'b4', 'b8']) {
    m.set(`upsample_nearest_${w}`, [...UPSAMPLE_COMMON, 'f32', 'f32']);
    // y, x, xOff, rows, c, h, outH, vw, sN, sC, sH, scaleH, dup
    m.set(`upsample_nearest_rows_${w}`, [
      'ptr',
      'ptr',
      'i64',
      'u64',
      'u64',
      'u64',
      'u64',
      'u64',
      'i64',
      'i64',
      'i64',
      'f32',
      'u32',
    ]);
    m.set(`upsample_nearest_x2_${w}`, UPSAMPLE_X2);
  }
  for (const d of ['f32', 'f16', 'bf16']) m.set(`upsample_bilinear_x2_${d}`, UPSAMPLE_X2);
  for (const d of FLOAT_DTYPES) {
    const c = d === 'f64' ? 'f64' : 'f32';
    m.set(`upsample_bilinear_${d}`, [...UPSAMPLE_COMMON, c, c, 'u32']);
    // UPSAMPLE_COMMON less sW (the columns are unit-stride), total counting 16-byte vectors
    m.set(`upsample_bilinear_rows_${d}`, [...UPSAMPLE_COMMON.slice(0, -1), c, c, 'u32']);
  }
  return m;
}

/** merge into KERNEL_SIGNATURES (kernel-sigs.ts) */
export const INDEXING_KERNEL_SIGNATURES: Readonly<Record<string, () => ReadonlyMap<string, readonly ArgSpec[]>>> = {
  'indexing.hip': indexingSigs,
  'index-rows.hip': indexRowsSigs,
  'upsample.hip': upsampleSigs,
};
