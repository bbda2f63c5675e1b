// Signatures of hip-src/sort.hip, in the form of KERNEL_SIGNATURES in kernel-sigs.ts, so the
// ABI test checks them against every arch's code-object metadata and the PTX. Types only are
// imported from kernel-sigs.ts, so that file can spread SORT_KERNEL_SIGNATURES without a cycle.
import { DTYPES, type DType } from '../dtype.ts';
import type { ArgSpec } from './kernel-sigs.ts';

/** the key width of a dtype's sort records: 64-bit keys for f64 and i64, 32-bit otherwise */
export type SortKeyKind = 'k32' | 'k64';
export const sortKeyKind = (d: DType): SortKeyKind => (d === 'f64' || d === 'i64' ? 'k64' : 'k32');

/** iy, vy, x, iOff, vOff, xOff, rows, cols, cap, per, desc */
export const SORT_ROWS_SIG: readonly ArgSpec[] = ['ptr', 'ptr', 'ptr', 'i64', 'i64', 'i64', 'u64', 'u64', 'u32', 'u32', 'u32'];
/** w, wi, x, xOff, rows, cols, npow, cap, desc */
export const SORT_CHUNKS_SIG: readonly ArgSpec[] = ['ptr', 'ptr', 'ptr', 'i64', 'u64', 'u64', 'u64', 'u32', 'u32'];
/** iy, vy, w, wi, x, iOff, vOff, xOff, rows, cols, npow */
export const SORT_EMIT_SIG: readonly ArgSpec[] = ['ptr', 'ptr', 'ptr', 'ptr', 'ptr', 'i64', 'i64', 'i64', 'u64', 'u64', 'u64'];
/** w, wi, total, npow, k, j */
export const SORT_MERGE_SIG: readonly ArgSpec[] = ['ptr', 'ptr', 'u64', 'u64', 'u64', 'u64'];
/** w, wi, total, npow, k, cap */
export const SORT_MERGELDS_SIG: readonly ArgSpec[] = ['ptr', 'ptr', 'u64', 'u64', 'u64', 'u32'];

function sortSigs(): Map<string, readonly ArgSpec[]> {
  const m = new Map<string, readonly ArgSpec[]>();
  for (const d of DTYPES) {
    m.set(`sort_rows_${d}`, SORT_ROWS_SIG);
    m.set(`sort_chunks_${d}`, SORT_CHUNKS_SIG);
    m.set(`sort_emit_${d}`, SORT_EMIT_SIG);
  }
  for (const k of ['k32', 'k64'] as const) {
    m.set(`sort_merge_${k}`, SORT_MERGE_SIG);
    m.set(`sort_mergelds_${k}`, SORT_MERGELDS_SIG);
  }
  return m;
}

/** merge into KERNEL_SIGNATURES (kernel-sigs.ts) */
export const SORT_KERNEL_SIGNATURES: Readonly<Record<string, () => ReadonlyMap<string, readonly ArgSpec[]>>> = {
  'sort.hip': sortSigs,
};
