// What differs between the vendors above the runtime: the launch shapes the kernels were compiled
// for (hip-src/compat.h and the kernels' per-vendor configs) and the tunings measured per vendor.
// The GPU backend reads these through Device.tuning and never tests the vendor itself; each
// vendor's values, and why they are what they are, live in rocm/tuning.ts and cuda/tuning.ts.
import type { Vendor } from './gpu.ts';
import { CUDA_TUNING } from './cuda/tuning.ts';
import { ROCM_TUNING } from './rocm/tuning.ts';

/** a flash_fwd block: query rows, threads, dynamic LDS bytes */
export interface FlashFwdShape {
  readonly rows: number;
  readonly threads: number;
  readonly shared: number;
}

export interface VendorTuning {
  /** 16-byte vectors a thread of the contiguous elementwise kernels takes (RT_UNROLL, hip-src/elementwise.h) */
  readonly mapUnroll: number;
  /** threads a block of a contiguous elementwise launch (ROCM_TENSOR_CONTIG_BLOCK overrides) */
  readonly contigBlock: number;
  /** bytes of a lane mask in the radix kernels (radix.h LaneMask) */
  readonly laneMaskBytes: number;
  /** flash_fwd's block for a head-dim bucket (flash.hip FlCfg) */
  flashFwd(bucket: number): FlashFwdShape;
  /** keys a flash_dec block takes at a time (FlCfg's BN), at the device's wave size */
  flashDecodeKeyBlock(wave: number, bucket: number): number;
  /** flash_dec can run several splits as the warps of one block, each with dynamic LDS */
  readonly flashDecodeGroups: boolean;
  /** threads of one flash_dec split (a warp, or a row-wave) */
  readonly flashDecodeSplitThreads: number;
  /** gemv-fused: blocks a multiprocessor for the paired (SwiGLU) product; 0: one block a unit */
  readonly gemvPairBlocksPerMp: number;
  /** gemv-fused: waves a plain (one row a unit) product gives each row at least */
  readonly gemvPlainLeastSplit: number;
}

export function tuningFor(vendor: Vendor): VendorTuning {
  return vendor === 'cuda' ? CUDA_TUNING : ROCM_TUNING;
}
