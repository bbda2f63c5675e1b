// Ranks of a tensor-parallel job on the CPU, one worker thread each: a RankSet whose collectives
// meet in shared memory. Each collective writes this rank's values into its own slot, waits at a
// barrier, reads every slot and reduces them in rank order (so every rank computes the same
// bits, as the collectives library's all-reduce gives every rank the same result), and waits at
// a second barrier before the slots may be overwritten. It stands in for RCCL / NCCL, which the
// CPU has not got, so whole models can run split over ranks in the CPU tests.
import { Device, Tensor, type DType } from '../../../src/index.ts';
import type { RankSet } from '../../../src/distributed/rank-set.ts';

export interface ShmShared {
  readonly size: number;
  /** elements per rank's slot: the largest collective */
  readonly slotElems: number;
  readonly data: SharedArrayBuffer;
  /** [ranks arrived at the barrier, barrier generation, a rank failed] */
  readonly control: SharedArrayBuffer;
}

export function shmShared(size: number, slotElems: number): ShmShared {
  return { size, slotElems, data: new SharedArrayBuffer(size * slotElems * 8), control: new SharedArrayBuffer(12) };
}

/** marks the job failed, so the other ranks' barriers throw at once instead of waiting it out */
export function shmFail(shared: ShmShared): void {
  const ctl = new Int32Array(shared.control);
  Atomics.store(ctl, 2, 1);
  Atomics.notify(ctl, 1);
}

const FLOAT: readonly DType[] = ['f32', 'f16', 'bf16', 'f64'];

export function shmRanks(shared: ShmShared, rank: number, timeoutMs = 60_000): RankSet {
  const { size, slotElems } = shared;
  const ctl = new Int32Array(shared.control);
  const slots = new Float64Array(shared.data);
  const cpu = Device.cpu();

  const barrier = (): void => {
    const gen = Atomics.load(ctl, 1);
    if (Atomics.add(ctl, 0, 1) === size - 1) {
      Atomics.store(ctl, 0, 0);
      Atomics.add(ctl, 1, 1);
      Atomics.notify(ctl, 1);
      return;
    }
    const deadline = Date.now() + timeoutMs;
    while (Atomics.load(ctl, 1) === gen) {
      if (Atomics.load(ctl, 2) !== 0) throw new Error(`shm rank ${rank}: another rank failed`);
      if (Date.now() >= deadline)
        throw new Error(`shm rank ${rank}: waited ${timeoutMs} ms at a barrier for the other ranks`);
      Atomics.wait(ctl, 1, gen, 50);
    }
  };
  const one = (ts: readonly Tensor[]): Tensor => {
    if (ts.length !== 1) throw new Error(`shm rank ${rank}: one tensor per call, got ${ts.length}`);
    const t = ts[0]!;
    if (t.numel > slotElems)
      throw new Error(`shm rank ${rank}: ${t.numel} elements exceed the ${slotElems}-element slots`);
    return t;
  };
  /** this rank's values into its slot; every rank's values back, once all have written */
  const exchange = (t: Tensor): Float64Array[] => {
    const mine = Array.from(t.toArraySync() as ArrayLike<number | bigint>, Number);
    slots.set(mine, rank * slotElems);
    barrier();
    const all = Array.from({ length: size }, (_, r) => slots.slice(r * slotElems, r * slotElems + t.numel));
    barrier();
    return all;
  };

  return {
    size,
    ranks: [rank],
    devices: [cpu],
    allReduceSum: (ts) => {
      const t = one(ts),
        all = exchange(t);
      const sum = new Float64Array(t.numel);
      // f32 partial sums round after each add, as the library's f32 reduction does
      const round = t.dtype === 'f32' ? Math.fround : (x: number) => x;
      for (const a of all) for (let i = 0; i < sum.length; i++) sum[i] = round(sum[i]! + a[i]!);
      if (!FLOAT.includes(t.dtype)) throw new Error(`shm rank ${rank}: allReduceSum of ${t.dtype} is not emulated`);
      return [Tensor.from(sum, { dtype: t.dtype, shape: t.shape })];
    },
    allGather: (ts) => {
      const t = one(ts),
        all = exchange(t);
      const flat = new Float64Array(size * t.numel);
      all.forEach((a, r) => flat.set(a, r * t.numel));
      return [Tensor.from(flat, { dtype: t.dtype, shape: [size, ...t.shape] })];
    },
    broadcast: (ts, root) => {
      const t = one(ts),
        all = exchange(t);
      if (rank !== root) {
        const src = Tensor.from(all[root]!, { dtype: t.dtype, shape: t.shape });
        t.sliceSet(src, 0, 0);
        src.dispose();
      }
      return [t];
    },
  };
}
