// One rank of a tensor-parallel model, one rank per process (torchrun's style, started by
// `rocm-tensor launch`): what a model takes as its `tp` option (the Communicator that
// initProcessGroup() returns, or a RankSet holding one rank) reduced to what its layers use.
import type { Device } from '../device/device.ts';
import { TensorError } from '../core/errors.ts';
import { Communicator } from './communicator.ts';
import { rankSet, type RankSet } from './rank-set.ts';

/** the `tp` option of a model: this process's rank of the job */
export type TensorParallelOption = Communicator | RankSet;

export interface TensorParallelRank {
  readonly rank: number;
  readonly size: number;
  readonly device: Device;
  /** the collectives the layers call, over this one rank */
  readonly ranks: RankSet;
}

export function tensorParallelRank(what: string, tp: TensorParallelOption): TensorParallelRank {
  if ('comms' in tp) {
    throw new TensorError(
      `${what}: a DeviceGroup holds every rank in one process; tensor parallelism takes one rank per process ` +
        '(the Communicator of initProcessGroup(), started with rocm-tensor launch --nproc N)',
    );
  }
  const set = tp instanceof Communicator ? rankSet(tp) : tp;
  if (set.ranks.length !== 1) {
    throw new TensorError(
      `${what}: tensor parallelism takes one rank per process; this RankSet holds ${set.ranks.length} ` +
        `(ranks ${set.ranks.join(', ')} of ${set.size}): pass the Communicator of initProcessGroup()`,
    );
  }
  return { rank: set.ranks[0]!, size: set.size, device: set.devices[0]!, ranks: set };
}
