// Signatures of the decode-step and attention kernels (hip-src/gemv-fused.hip, attention.hip, flash.hip, the paged-*.hip), in the form of
// KERNEL_SIGNATURES in kernel-sigs.ts (which spreads DECODE_KERNEL_SIGNATURES), so the ABI test
// checks them against every arch's code object and the PTX. Types only are imported from
// kernel-sigs.ts, so there is no cycle.
import type { ArgSpec } from './arg-spec.ts';

function gemvFusedSigs(): Map<string, readonly ArgSpec[]> {
  const m = new Map<string, readonly ArgSpec[]>();
  for (const d of ['f32', 'f16', 'bf16']) {
    for (const n of ['n', 'r']) {
      // y, x, w, g, bias, r; their offsets; n, k, ldw, eps, flags, split
      const linear: ArgSpec[] = [
        ...Array<ArgSpec>(6).fill('ptr'),
        ...Array<ArgSpec>(6).fill('i64'),
        'u32',
        'u32',
        'u64',
        'f32',
        'u32',
        'u32',
      ];
      m.set(`gemvf_${n}_${d}`, linear);
      m.set(`gemvf_swiglu_${n}_${d}`, linear);
      // q, kc, vc, x, w, g, bias, cos, sin, posPtr; offsets of all but posPtr; k, ldw, eps,
      // flags, split, heads, kvHeads, d, pos, headStride, posStride
      m.set(`gemvf_qkv_${n}_${d}`, [
        ...Array<ArgSpec>(10).fill('ptr'),
        ...Array<ArgSpec>(9).fill('i64'),
        'u32',
        'u64',
        'f32',
        'u32',
        'u32',
        'u32',
        'u32',
        'u32',
        'u32',
        'i64',
        'i64',
      ]);
    }
  }
  return m;
}

/**
 * What both attention kernel families take after their pointers (attention.ts operands' tail):
 * the offsets of o, q, k, v, mask; hq, hkv, tq, tk, d (and dv for attn_decode); q, k, v strides
 * (3 each), mask strides (4); maskKind, hasDiag, diag, window, scale
 */
function attentionTail(withDv: boolean): ArgSpec[] {
  return [
    ...Array<ArgSpec>(5).fill('i64'),
    ...Array<ArgSpec>(withDv ? 6 : 5).fill('u32'),
    ...Array<ArgSpec>(13).fill('i64'),
    'u32',
    'u32',
    'i64',
    'i64',
    'f32',
  ];
}

function attentionSigs(): Map<string, readonly ArgSpec[]> {
  const m = new Map<string, readonly ArgSpec[]>();
  for (const d of ['f32', 'f16', 'bf16']) {
    // o, wso, wsml, q, k, v, mask; the tail with dv; splits, perSplit
    for (const rt of [1, 4])
      m.set(`attn_decode_r${rt}_${d}`, [...Array<ArgSpec>(7).fill('ptr'), ...attentionTail(true), 'u32', 'u32']);
    // o, wso, wsml, oOff, splits, dv
    m.set(`attn_merge_${d}`, ['ptr', 'ptr', 'ptr', 'i64', 'u32', 'u32']);
  }
  return m;
}

function flashSigs(): Map<string, readonly ArgSpec[]> {
  const m = new Map<string, readonly ArgSpec[]>();
  for (const d of ['f16', 'bf16']) {
    for (const hd of [64, 80, 96, 128, 256]) {
      const tail = attentionTail(false);
      // o, q, k, v, mask; the tail; lse (null, or the rows' log-sum-exp for the gradient), its offset
      m.set(`flash_fwd_${d}_${hd}`, [...Array<ArgSpec>(5).fill('ptr'), ...tail, 'ptr', 'i64']);
      // o, wso, wsml, q, k, v, mask; the tail; splits, perSplit
      m.set(`flash_dec_${d}_${hd}`, [...Array<ArgSpec>(7).fill('ptr'), ...tail, 'u32', 'u32']);
    }
  }
  return m;
}

function pagedSigs(): Map<string, readonly ArgSpec[]> {
  const m = new Map<string, readonly ArgSpec[]>();
  for (const d of ['f32', 'f16', 'bf16']) {
    // o, wso, wsml, q, key pool, value pool, table, meta, err; offsets of o, q, k, v, table, meta;
    // seqs, hq, hkv, d, dv, blockSize, blocks, maxBlocks, tableI64, tag, splits, maxQ, listAt;
    // q (2), pool (3 + 3) and table (2) strides, window; scale
    for (const rt of [1, 4])
      m.set(`paged_attn_r${rt}_${d}`, [
        ...Array<ArgSpec>(9).fill('ptr'),
        ...Array<ArgSpec>(6).fill('i64'),
        ...Array<ArgSpec>(13).fill('u32'),
        ...Array<ArgSpec>(11).fill('i64'),
        'f32',
      ]);
  }
  return m;
}

/**
 * The matrix-core paged kernels' signatures, `${name}_${dtype}_${bucket}`: `ptrs` pointers, the
 * six offsets, `u32s` u32 arguments, the nine q, pool, table strides and window, the scale
 */
function matrixPagedSigs(name: string, ptrs: number, u32s: number): Map<string, readonly ArgSpec[]> {
  const m = new Map<string, readonly ArgSpec[]>();
  for (const d of ['f16', 'bf16'])
    for (const hd of [64, 128])
      m.set(`${name}_${d}_${hd}`, [
        ...Array<ArgSpec>(ptrs).fill('ptr'),
        ...Array<ArgSpec>(6).fill('i64'),
        ...Array<ArgSpec>(u32s).fill('u32'),
        ...Array<ArgSpec>(9).fill('i64'),
        'f32',
      ]);
  return m;
}

// o, q, key pool, value pool, table, meta, err; offsets of o, q, k, v, table, meta; seqs, hq,
// hkv, d, blockSize, blocks, maxBlocks, tableI64, tag; q (2), pool (2 + 2) and table (2)
// strides, window; scale
const pagedPrefillSigs = () => matrixPagedSigs('paged_fwd', 7, 9);
// o, wso, wsml, q, key pool, value pool, table, meta, err; offsets of o, q, k, v, table, meta;
// seqs, hq, hkv, d, blockSize, blocks, maxBlocks, tableI64, tag, splits, listAt; q (2), pool
// (2 + 2) and table (2) strides, window; scale
const pagedDecodeSigs = () => matrixPagedSigs('paged_dec', 9, 11);

export const DECODE_KERNEL_SIGNATURES: Readonly<Record<string, () => ReadonlyMap<string, readonly ArgSpec[]>>> = {
  'gemv-fused.hip': gemvFusedSigs,
  'attention.hip': attentionSigs,
  'flash.hip': flashSigs,
  'paged-attention.hip': pagedSigs,
  'paged-prefill.hip': pagedPrefillSigs,
  'paged-decode.hip': pagedDecodeSigs,
};
