// NVIDIA's side of VendorTuning (runtime/tuning.ts). The figures are from H200 runs; the
// alternatives measured and not kept are in docs/internals/tried-not-kept.md.
import type { FlashFwdShape, VendorTuning } from '../tuning.ts';

/**
 * Four warps, 32 rows each up to head dim 128 (Q, a K block of 64 keys and a V block in LDS, rows
 * padded by 8 elements: 68 KiB at head dim 128), 16 each past it (Q in registers, 32 keys a block).
 * On an H200 (b8 h16 s4096 d128 bf16) 8 warps of 16 rows took 4.81 ms against 5.53 for 4 of 16.
 */
function flashFwd(bucket: number): FlashFwdShape {
  const wide = bucket <= 128,
    rows = wide ? 128 : 64,
    keys = wide ? 64 : 32,
    ld = bucket + 8;
  const elems = Math.max(((wide ? rows : 0) + 2 * keys) * ld, rows * ld);
  return { rows, threads: 128, shared: 2 * elems };
}

export const CUDA_TUNING: VendorTuning = {
  mapUnroll: 2,
  // smaller blocks retire sooner, so the last blocks of a launch leave less of the device idle;
  // an SM holds 32 such blocks, so occupancy is full
  contigBlock: 64,
  laneMaskBytes: 4,
  flashFwd,
  flashDecodeKeyBlock: (_wave, bucket) => (bucket > 128 ? 32 : 64),
  flashDecodeGroups: true,
  flashDecodeSplitThreads: 32,
  // a paired unit keeps twice a plain row's loads of W in flight, so four 256-thread blocks a
  // multiprocessor hold as many bytes in flight as eight plain ones, with no partial last wave
  gemvPairBlocksPerMp: 4,
  // two halves of k: a wave has half the round trips to memory
  gemvPlainLeastSplit: 2,
};
