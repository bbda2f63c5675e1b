// AMD's side of VendorTuning (runtime/tuning.ts): the shapes the code objects were compiled for.
// None of the tunings here has been measured on AMD hardware; they follow the kernels' configs.
import type { VendorTuning } from '../tuning.ts';

export const ROCM_TUNING: VendorTuning = {
  mapUnroll: 4,
  // a 64-thread block is a single wave64, and the per-CU workgroup limit could cap occupancy
  contigBlock: 128,
  // __ballot gives 64 bits whatever the wave size
  laneMaskBytes: 8,
  // 256 threads over 64 rows in static LDS (wave64: 4 waves; wave32: 8, two per 16 rows)
  flashFwd: () => ({ rows: 64, threads: 256, shared: 0 }),
  // wave64 64 keys (16 past head dim 128), wave32 16
  flashDecodeKeyBlock: (wave, bucket) => (wave === 32 || bucket > 128 ? 16 : 64),
  // a block a split: one row-wave (wave32 splits the output columns over two, FlCfg::CS)
  flashDecodeGroups: false,
  flashDecodeSplitThreads: 64,
  // the products' grids cover every unit at once
  gemvPairBlocksPerMp: 0,
  gemvPlainLeastSplit: 1,
};
