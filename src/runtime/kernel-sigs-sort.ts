// Signatures of hip-src/sort.hip and hip-src/topk.hip, in the form of KERNEL_SIGNATURES in
// kernel-sigs.ts, so the ABI test checks them against every arch's code-object metadata and the
// PTX. Types only are imported from kernel-sigs.ts, so that file can spread
// SORT_KERNEL_SIGNATURES without a cycle.
import { DTYPES } from '../core/dtype.ts';
import type { ArgSpec } from './arg-spec.ts';

/** items a thread of radix_rows<I>: a row of up to 256 * I elements */
export const RADIX_ROW_ITEMS = [1, 2, 4, 8, 16] as const;

/** iy, vy, x, iOff, vOff, xOff, rows, cols, cap, per, desc */
export const SORT_ROWS_SIG: readonly ArgSpec[] = [
  'ptr',
  'ptr',
  'ptr',
  'i64',
  'i64',
  'i64',
  'u64',
  'u64',
  'u32',
  'u32',
  'u32',
];
/** iy, vy, x, iOff, vOff, xOff, rows, cols, desc */
export const RADIX_ROWS_SIG: readonly ArgSpec[] = ['ptr', 'ptr', 'ptr', 'i64', 'i64', 'i64', 'u64', 'u64', 'u32'];
/** ws, x, xOff, rows, cols, tiles, items, passes, desc */
export const RADIX_COUNTS_SIG: readonly ArgSpec[] = ['ptr', 'ptr', 'i64', 'u64', 'u64', 'u32', 'u32', 'u32', 'u32'];
/** ko, io, ki, ii, ws, koOff, ioOff, kiOff, iiOff, rows, cols, tiles, pass, passes, desc */
export const RADIX_SWEEP_SIG: readonly ArgSpec[] = [
  'ptr',
  'ptr',
  'ptr',
  'ptr',
  'ptr',
  'i64',
  'i64',
  'i64',
  'i64',
  'u64',
  'u64',
  'u32',
  'u32',
  'u32',
  'u32',
];
/** vo, io, x, ii, voOff, ioOff, xOff, iiOff, rows, cols, ld, slen, ostride, k, largest */
export const TOPK_SIG: readonly ArgSpec[] = [
  'ptr',
  'ptr',
  'ptr',
  'ptr',
  'i64',
  'i64',
  'i64',
  'i64',
  'u64',
  'u64',
  'u64',
  'u64',
  'u64',
  'u32',
  'u32',
];

function sortSigs(): Map<string, readonly ArgSpec[]> {
  const m = new Map<string, readonly ArgSpec[]>();
  for (const d of DTYPES) {
    m.set(`sort_rows_${d}`, SORT_ROWS_SIG);
    for (const i of RADIX_ROW_ITEMS) m.set(`radix_rows${i}_${d}`, RADIX_ROWS_SIG);
    m.set(`radix_counts_${d}`, RADIX_COUNTS_SIG);
    m.set(`radix_sweep_${d}`, RADIX_SWEEP_SIG);
  }
  return m;
}

function topkSigs(): Map<string, readonly ArgSpec[]> {
  const m = new Map<string, readonly ArgSpec[]>();
  for (const d of DTYPES) m.set(`topk_${d}`, TOPK_SIG);
  return m;
}

/** merge into KERNEL_SIGNATURES (kernel-sigs.ts) */
export const SORT_KERNEL_SIGNATURES: Readonly<Record<string, () => ReadonlyMap<string, readonly ArgSpec[]>>> = {
  'sort.hip': sortSigs,
  'topk.hip': topkSigs,
};
