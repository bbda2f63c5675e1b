// What tensor-parallel layers need from "the ranks": how many there are, which of them this process
// holds (one in a multi-process job, all of them in a DeviceGroup) with their devices, and a sum
// all-reduce, an all-gather and a broadcast over one tensor per held rank. simulatedRanks() holds
// every rank on one device and does all three with plain tensor ops: the layers' arithmetic is
// then checkable on the CPU, with no GPU or collectives library.
import { Device } from '../device/device.ts';
import { Tensor } from '../tensor/tensor.ts';
import { TensorError } from '../core/errors.ts';
import type { Communicator } from './communicator.ts';
import type { DeviceGroup } from './group.ts';

export interface RankSet {
  /** ranks in all */
  readonly size: number;
  /** the ranks this process holds, in the order of every tensor list passed to or from the set */
  readonly ranks: readonly number[];
  /** the device of each held rank */
  readonly devices: readonly Device[];
  /** sum over all ranks; may write in place (the returned tensors are the results) */
  allReduceSum(ts: readonly Tensor[]): Tensor[];
  /** every rank's tensor one after another along a new leading dim: [size, ...shape] */
  allGather(ts: readonly Tensor[]): Tensor[];
  /** rank `root`'s tensor into every rank's, in place (returns the same tensors) */
  broadcast(ts: readonly Tensor[], root: number): Tensor[];
}

export function rankSet(x: Communicator | DeviceGroup): RankSet {
  if ('comms' in x) {
    const g = x;
    return {
      size: g.size,
      ranks: g.comms.map((c) => c.rank),
      devices: g.devices,
      allReduceSum: (ts) => g.allReduce(ts, { op: 'sum' }),
      allGather: (ts) =>
        g.allGather(ts, { out: ts.map((t, i) => Tensor.empty([g.size, ...t.layout.shape], t.dtype, g.devices[i]!)) }),
      broadcast: (ts, root) => g.broadcast(ts, { root }),
    };
  }
  const c = x;
  const one = (ts: readonly Tensor[]): Tensor => {
    if (ts.length !== 1) throw new TensorError(`${c}: this process holds one rank, got ${ts.length} tensors`);
    return ts[0]!;
  };
  return {
    size: c.size,
    ranks: [c.rank],
    devices: [c.device],
    allReduceSum: (ts) => [c.allReduce(one(ts), { op: 'sum' })],
    allGather: (ts) => {
      const t = one(ts);
      return [c.allGather(t, { out: Tensor.empty([c.size, ...t.layout.shape], t.dtype, c.device) })];
    },
    broadcast: (ts, root) => [c.broadcast(one(ts), { root })],
  };
}

/** every rank in this process on one device (the CPU unless told), reductions by tensor ops */
export function simulatedRanks(size: number, device: Device = Device.cpu()): RankSet {
  if (!Number.isInteger(size) || size < 1)
    throw new TensorError(`simulatedRanks: size must be a positive integer, got ${size}`);
  const ranks = Array.from({ length: size }, (_, i) => i);
  const all = (ts: readonly Tensor[]): readonly Tensor[] => {
    if (ts.length !== size) throw new TensorError(`simulatedRanks: got ${ts.length} tensors for ${size} ranks`);
    return ts;
  };
  return {
    size,
    ranks,
    devices: ranks.map(() => device),
    allReduceSum: (ts) => {
      const xs = all(ts);
      let sum = xs[0]!.add(0);
      for (const t of xs.slice(1)) {
        const s = sum.add(t);
        sum.dispose();
        sum = s;
      }
      return xs.map((_, i) => (i === 0 ? sum : sum.add(0)));
    },
    allGather: (ts) => {
      const s = Tensor.stack(all(ts), 0);
      return ts.map((_, i) => (i === 0 ? s : s.add(0)));
    },
    broadcast: (ts, root) => {
      const xs = all(ts);
      if (!Number.isInteger(root) || root < 0 || root >= size)
        throw new TensorError(`simulatedRanks: root ${root} is not a rank (0 .. ${size - 1})`);
      for (const [i, t] of xs.entries()) if (i !== root) t.sliceSet(xs[root]!, 0, 0);
      return [...xs];
    },
  };
}
