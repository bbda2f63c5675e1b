// What `generate` and `serve` share when `rocm-tensor launch` starts them as the ranks of a job.
import { TensorError } from '../core/errors.ts';
import { distEnvFrom } from '../distributed/rendezvous.ts';

/**
 * WORLD_SIZE when this process was started as a rank of a job (RANK set too), else 1. A rank
 * runs on GPU LOCAL_RANK, so an explicit --device is refused, naming `command`.
 */
export function launchedRanks(command: string, device: string | undefined): number {
  if (process.env.WORLD_SIZE === undefined || process.env.RANK === undefined) return 1;
  const job = distEnvFrom().worldSize;
  if (job > 1 && device !== undefined)
    throw new TensorError(
      `${command}: started as one of ${job} ranks (WORLD_SIZE), each on GPU LOCAL_RANK; leave out --device ${device}`,
    );
  return job;
}
