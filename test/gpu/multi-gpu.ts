// The GPUs a multi-process test spreads over: every device of the best GPU kind, or the reason
// the test is skipped (no GPU, fewer than 2, or no collectives library).
import { Device } from '../../src/index.ts';
import { loadNccl } from '../../src/ffi/nccl.ts';

export function findGpus(): Device[] | string {
  let best: Device | null;
  try {
    best = Device.bestGpu();
  } catch (e) {
    return `looking for a GPU failed: ${(e as Error).message}`;
  }
  if (!best) return 'no ROCm or CUDA device found';
  const kind = best.kind as 'rocm' | 'cuda';
  try {
    loadNccl(kind);
  } catch (e) {
    return `no collectives library: ${(e as Error).message}`;
  }
  const n = kind === 'rocm' ? Device.rocmCount() : Device.cudaCount();
  if (n < 2) return `needs 2 GPUs, this machine has ${n}`;
  return Array.from({ length: n }, (_, i) => (kind === 'rocm' ? Device.rocm(i) : Device.cuda(i)));
}
