// One process, several GPUs: a communicator per device from ncclCommInitAll, and collectives that
// take one tensor per device (index i on devices[i]). Every rank's part is checked first (shapes
// and dtypes must agree across ranks, which one process can see), then all parts are queued on
// their devices' current streams inside one library group, which a single thread driving several
// GPUs needs so that no rank's part waits for a part not yet queued. Nothing waits for the device.
import { Device } from '../device/device.ts';
import { Tensor } from '../tensor/tensor.ts';
import { DTypeError, ShapeError, TensorError, fmtShape } from '../core/errors.ts';
import { loadNccl, type Nccl } from '../ffi/nccl.ts';
import { Communicator, type CommunicatorOptions, type WaitOptions } from './communicator.ts';
import { inGroup } from './issue.ts';
import {
  planAllGather,
  planAllReduce,
  planBroadcast,
  planRecv,
  planReduce,
  planReduceScatter,
  planSend,
  type Plan,
  type RootOptions,
  type RootReduceOptions,
} from './plans.ts';
import type { RankCtx } from './checks.ts';
import type { LibraryLevel, ReduceOpName } from './nccl-types.ts';
import { CollectiveError, CollectiveTimeoutError } from './errors.ts';
import { PENDING, pollUntil, type PollResult } from './watchdog.ts';

export interface GroupReduceOptions {
  readonly op?: ReduceOpName;
  readonly out?: readonly Tensor[];
}
export interface GroupOutOptions {
  readonly out?: readonly Tensor[];
}
export interface GroupRootOptions {
  readonly root?: number;
  readonly out?: readonly Tensor[];
}
export interface GroupRootReduceOptions extends GroupRootOptions {
  readonly op?: ReduceOpName;
}

/** one point-to-point copy between two ranks of the group: src on devices[from], dst on devices[to] */
export interface Transfer {
  readonly from: number;
  readonly to: number;
  readonly src: Tensor;
  readonly dst: Tensor;
}

export interface DeviceGroupOptions extends CommunicatorOptions {
  /** internal, for tests: the collectives library to use instead of loading RCCL / NCCL */
  readonly nccl?: Nccl;
}

export class DeviceGroup {
  private constructor(readonly comms: readonly Communicator[]) {}

  /** a communicator per device (distinct GPUs of one vendor); `cuda:0`-style strings, Devices, or indices of the best vendor */
  static create(devices: readonly (Device | string | number)[], o: DeviceGroupOptions = {}): DeviceGroup {
    const devs = devices.map(toGpu);
    if (devs.length === 0) throw new TensorError('DeviceGroup.create: no devices given');
    const kind = devs[0]!.kind;
    if (kind === 'cpu')
      throw new TensorError('DeviceGroup.create: the cpu device has no collectives library; give GPU devices');
    const other = devs.find((d) => d.kind !== kind);
    if (other)
      throw new TensorError(
        `DeviceGroup.create: ${devs[0]} and ${other} are of different vendors; one group holds one vendor's GPUs`,
      );
    const seen = new Set<Device>();
    for (const d of devs) {
      if (seen.has(d))
        throw new TensorError(
          `DeviceGroup.create: ${d} is listed twice (the library needs distinct GPUs: [${devs.join(', ')}])`,
        );
      seen.add(d);
    }
    const nccl = o.nccl ?? loadNccl(kind);
    const out: (bigint | null)[] = devs.map(() => null);
    const rt0 = devs[0]!.runtime;
    for (const d of devs) void d.runtime; // opens each device (retains its context) before the library uses it
    rt0.callForeign(() =>
      nccl.check(
        nccl.fn.ncclCommInitAll(
          out,
          devs.length,
          Int32Array.from(devs, (d) => d.index),
        ),
        'ncclCommInitAll',
        [devs.length, `[${devs.map((d) => d.index).join(', ')}]`],
      ),
    );
    return new DeviceGroup(
      out.map((h, i) => {
        if (h === null || h === 0n)
          throw new CollectiveError(`DeviceGroup.create: ncclCommInitAll gave no communicator for ${devs[i]}`);
        return new Communicator(nccl, h, i, devs.length, devs[i]!, o);
      }),
    );
  }

  get size(): number {
    return this.comms.length;
  }
  get devices(): Device[] {
    return this.comms.map((c) => c.device);
  }
  get library(): string {
    return this.comms[0]!.library;
  }
  toString(): string {
    return `DeviceGroup(${this.devices.join(', ')}, ${this.library})`;
  }

  // ---- collectives: one tensor per rank, index i on devices[i] ---------------------------------
  allReduce(ts: readonly Tensor[], o: GroupReduceOptions = {}): Tensor[] {
    return this.each('allReduce', ts, o.out, (c, lib, t, out) => planAllReduce(c, lib, t, { op: o.op, out }), true);
  }
  allGather(ts: readonly Tensor[], o: GroupOutOptions = {}): Tensor[] {
    return this.each('allGather', ts, o.out, (c, lib, t, out) => planAllGather(c, lib, t, { out }), true);
  }
  reduceScatter(ts: readonly Tensor[], o: GroupReduceOptions = {}): Tensor[] {
    return this.each(
      'reduceScatter',
      ts,
      o.out,
      (c, lib, t, out) => planReduceScatter(c, lib, t, { op: o.op, out }),
      true,
    );
  }
  /** devices[root]'s tensor into every rank's (in place, or o.out) */
  broadcast(ts: readonly Tensor[], o: GroupRootOptions = {}): Tensor[] {
    return this.each(
      'broadcast',
      ts,
      o.out,
      (c, lib, t, out) => planBroadcast(c, lib, t, { root: o.root, out } satisfies RootOptions),
      true,
    );
  }
  /** the reduction onto devices[root]'s tensor (or o.out[root]) only */
  reduce(ts: readonly Tensor[], o: GroupRootReduceOptions = {}): Tensor[] {
    return this.each(
      'reduce',
      ts,
      o.out,
      (c, lib, t, out) => planReduce(c, lib, t, { op: o.op, root: o.root, out } satisfies RootReduceOptions),
      true,
    );
  }
  /** point-to-point copies, all queued in one group (so exchanges and rings cannot deadlock) */
  sendRecv(transfers: readonly Transfer[]): void {
    const plans: [Communicator, Plan][] = [];
    for (const [i, x] of transfers.entries()) {
      const from = this.comm('sendRecv', x.from, `transfer ${i}: from`),
        to = this.comm('sendRecv', x.to, `transfer ${i}: to`);
      if (x.src.dtype !== x.dst.dtype || x.src.numel !== x.dst.numel) {
        throw new ShapeError(
          `sendRecv: transfer ${i} (rank ${x.from} -> ${x.to}) sends ${x.src.dtype} ${fmtShape(x.src.layout.shape)} ` +
            `into ${x.dst.dtype} ${fmtShape(x.dst.layout.shape)}: dtype and element count must match`,
        );
      }
      plans.push(
        [from, planSend(from.ctx('sendRecv'), from.lib, x.src, x.to)],
        [to, planRecv(to.ctx('sendRecv'), to.lib, x.dst, x.from)],
      );
    }
    this.queueAll(plans);
  }

  /** resolves when every rank has reached it */
  async barrier(o: WaitOptions = {}): Promise<void> {
    const ones = this.comms.map((c) => Tensor.empty([1], 'f32', c.device));
    try {
      this.allReduce(ones);
      await this.synchronize(o);
    } finally {
      for (const t of ones) t.dispose();
    }
  }

  /** resolves when every rank's queued collectives have finished; past the deadline, or on a
   *  library error on any rank, aborts every communicator and rejects (naming a failed rank
   *  first, else the first that timed out) */
  async synchronize(o: WaitOptions = {}): Promise<void> {
    const timeoutMs = o.timeoutMs ?? this.comms[0]!.timeoutMs;
    const waits = this.comms.map((c) => c.beginWait());
    let results: PollResult[] = [];
    const poll = (): PollResult => {
      results = waits.map((w) => w.poll());
      return (
        results.find((r) => r.state === 'failed') ?? (results.every((r) => r.state === 'done') ? results[0]! : PENDING)
      );
    };
    let r: PollResult;
    try {
      r = await pollUntil(poll, Date.now() + timeoutMs);
    } finally {
      for (const w of waits) w.dispose();
    }
    if (r.state === 'done') {
      for (const [i, c] of this.comms.entries()) c.settle('synchronize', r, timeoutMs, waits[i]!.upTo);
      return;
    }
    const errors: unknown[] = [];
    for (const [i, c] of this.comms.entries()) {
      const mine = results[i] ?? PENDING;
      if (mine.state === 'done') {
        c.abort(`another rank of ${this} failed or timed out`);
        continue;
      }
      try {
        c.settle('synchronize', mine, timeoutMs);
      } catch (e) {
        errors.push(e);
      }
    }
    throw (
      errors.find((e) => !(e instanceof CollectiveTimeoutError)) ??
      errors[0] ??
      new CollectiveTimeoutError(`synchronize on ${this}: did not finish within ${timeoutMs / 1e3} s`)
    );
  }

  abort(reason?: string): void {
    for (const c of this.comms) c.abort(reason);
  }
  destroy(): void {
    for (const c of this.comms) c.destroy();
  }

  // ---- internal ------------------------------------------------------------------------------
  private comm(op: string, i: number, what: string): Communicator {
    const c = Number.isInteger(i) ? this.comms[i] : undefined;
    if (!c) throw new TensorError(`${op}: ${what} ${i} is not a rank of ${this} (0 .. ${this.size - 1})`);
    return c;
  }

  private each(
    op: string,
    ts: readonly Tensor[],
    outs: readonly Tensor[] | undefined,
    make: PlanFn,
    sameShape: boolean,
  ): Tensor[] {
    if (ts.length !== this.size)
      throw new TensorError(
        `${op}: got ${ts.length} tensors for the ${this.size} devices of ${this}; give one per device, in order`,
      );
    if (outs && outs.length !== this.size)
      throw new TensorError(`${op}: got ${outs.length} out tensors for the ${this.size} devices of ${this}`);
    if (sameShape) agreeAcrossRanks(op, ts);
    const plans: [Communicator, Plan][] = [];
    try {
      for (const [i, c] of this.comms.entries()) plans.push([c, make(c.ctx(op), c.lib, ts[i]!, outs?.[i])]);
    } catch (e) {
      for (const [, p] of plans) if (p.created) p.result.dispose();
      throw e;
    }
    this.queueAll(plans);
    return plans.map(([, p]) => p.result);
  }

  private queueAll(plans: readonly [Communicator, Plan][]): void {
    const c0 = this.comms[0]!;
    const { nccl } = c0.native;
    inGroup(nccl, c0.device.runtime, () => {
      for (const [c, p] of plans) c.queue(p);
    });
  }
}

type PlanFn = (c: RankCtx, lib: LibraryLevel, t: Tensor, out: Tensor | undefined) => Plan;

/** in one process every rank's tensor is in sight: different shapes or dtypes are an error here */
function agreeAcrossRanks(op: string, ts: readonly Tensor[]): void {
  const t0 = ts[0]!;
  for (const [i, t] of ts.entries()) {
    if (t.dtype !== t0.dtype) {
      throw new DTypeError(
        `${op}: rank ${i}'s tensor is ${t.dtype} ${fmtShape(t.layout.shape)} but rank 0's is ${t0.dtype} ${fmtShape(t0.layout.shape)}: every rank must pass the same dtype`,
      );
    }
    const a = t.layout.shape,
      b = t0.layout.shape;
    if (a.length !== b.length || a.some((n, k) => n !== b[k])) {
      throw new ShapeError(
        `${op}: rank ${i}'s tensor is ${t.dtype} ${fmtShape(a)} but rank 0's is ${t0.dtype} ${fmtShape(b)}: every rank must pass the same shape`,
      );
    }
  }
}

function toGpu(d: Device | string | number): Device {
  if (typeof d === 'object') return d;
  if (typeof d === 'string') return Device.parse(d);
  const best = Device.bestGpu();
  if (!best) throw new TensorError(`DeviceGroup.create: device index ${d} given but no ROCm or CUDA device was found`);
  return best.kind === 'rocm' ? Device.rocm(d) : Device.cuda(d);
}
