// Signatures of the attention-gradient kernels (hip-src/flash-bwd.hip), in the form of
// KERNEL_SIGNATURES in kernel-sigs.ts (which spreads FLASH_BWD_KERNEL_SIGNATURES), so the ABI test
// checks them against every arch's code object and the PTX. Types only are imported from
// kernel-sigs.ts, so there is no cycle.
import type { ArgSpec } from './arg-spec.ts';

/** the head-dim buckets flash-bwd.hip instantiates (the forward's, flash.ts FLASH_HEAD_DIMS) */
export const FLASH_BWD_HEAD_DIMS = [64, 80, 96, 128, 256] as const;
export const FLASH_BWD_DTYPES = ['f32', 'f16', 'bf16'] as const;
/** the dtypes and head-dim buckets with the tiled matrix-core kernels (flash_bwd_*_tc_*) */
export const FLASH_BWD_TILED_DTYPES = ['f16', 'bf16'] as const;
export const FLASH_BWD_TILED_HEAD_DIMS = [64, 80, 96, 128] as const;

function flashBwdSigs(): Map<string, readonly ArgSpec[]> {
  // nine pointers and their offsets; hq, hkv, tq, tk, d; the mask's four strides; maskKind,
  // hasDiag, diag, window, scale; mma (1: the matrix-core body where the arch has one)
  const sig: ArgSpec[] = [
    ...Array<ArgSpec>(9).fill('ptr'),
    ...Array<ArgSpec>(9).fill('i64'),
    ...Array<ArgSpec>(5).fill('u32'),
    ...Array<ArgSpec>(4).fill('i64'),
    'u32',
    'u32',
    'i64',
    'i64',
    'f32',
    'u32',
  ];
  const m = new Map<string, readonly ArgSpec[]>();
  for (const d of FLASH_BWD_DTYPES) {
    for (const hd of FLASH_BWD_HEAD_DIMS) {
      // dq, lse, dd, q, k, v, o, dout, mask
      m.set(`flash_bwd_dq_${d}_${hd}`, sig);
      // dk, dv, lse, dd, q, k, v, dout, mask
      m.set(`flash_bwd_dkdv_${d}_${hd}`, sig);
    }
  }
  // the tiled matrix-core body's kernels (f16 and bf16 up to head dim 128), the same arguments
  for (const d of FLASH_BWD_TILED_DTYPES) {
    for (const hd of FLASH_BWD_TILED_HEAD_DIMS) {
      m.set(`flash_bwd_dq_tc_${d}_${hd}`, sig);
      m.set(`flash_bwd_dkdv_tc_${d}_${hd}`, sig);
    }
  }
  return m;
}

export const FLASH_BWD_KERNEL_SIGNATURES: Readonly<Record<string, () => ReadonlyMap<string, readonly ArgSpec[]>>> = {
  'flash-bwd.hip': flashBwdSigs,
};
