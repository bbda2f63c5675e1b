// One rank's communicator: a handle of the collectives library bound to one device. Collectives
// take tensors on that device and are queued on its current stream (device.withStream picks
// another); nothing waits for them. synchronize() and barrier() are the waits, and they have a
// deadline: past it, or when the library reports an asynchronous error, the communicator is
// aborted (which stops its kernels) and an error says which collectives were in flight.
import type { Device } from '../device/device.ts';
import type { Nccl } from '../ffi/nccl.ts';
import type { GpuEvent, GpuStream } from '../runtime/gpu.ts';
import { GpuError, GraphCaptureError, TensorError } from '../core/errors.ts';
import { Tensor } from '../tensor/tensor.ts';
import { CollectiveError, CollectiveTimeoutError } from './errors.ts';
import { issuePlan, inGroup } from './issue.ts';
import {
  planAllGather,
  planAllReduce,
  planBroadcast,
  planRecv,
  planReduce,
  planReduceScatter,
  planSend,
  type OutOptions,
  type Plan,
  type ReduceOptions,
  type RootOptions,
  type RootReduceOptions,
} from './plans.ts';
import type { RankCtx } from './checks.ts';
import { DONE, PENDING, defaultTimeoutMs, pollUntil, type PollResult } from './watchdog.ts';
import { ncclVersionText, type LibraryLevel } from './nccl-types.ts';
import { agreeOnPlan } from './agreement.ts';
import type { PendingWait, RankQueue } from './rank-queue.ts';

export interface WaitOptions {
  /** give up (and abort the communicator) after this long; default ROCM_TENSOR_DIST_TIMEOUT_MS or 5 minutes */
  readonly timeoutMs?: number;
}

export interface CommunicatorOptions {
  /** default deadline of synchronize() and barrier() */
  readonly timeoutMs?: number;
  /**
   * before each collective, the ranks exchange what they are about to do (op, dtype, count, root)
   * and every rank throws the same ShapeError when they disagree, instead of hanging or reading
   * past a buffer. Costs a tiny all-gather and a wait per collective: a debugging aid. Not done
   * for send/recv or inside group().
   */
  readonly checkShapes?: boolean;
}

/** ncclCommGetAsyncError's "still initializing" (non-blocking communicators): not a failure */
const NCCL_IN_PROGRESS = 7;
/** how many recent collectives an error names */
const RECENT = 4;

// A process that ends with a communicator neither destroyed nor aborted leaves the library's
// proxy thread running while the driver tears the context down at exit, which can end the
// process with a signal instead of its exit code. So communicators still open at exit are
// aborted (not destroyed: destroy waits for queued work, which a dead peer never finishes).
const open = new Set<Communicator>();
let exitHooked = false;
/** aborts every communicator of this process that is still open (the exit hook; also for tests) */
export function abortOpenCommunicators(reason = 'the process is exiting'): number {
  const n = open.size;
  for (const c of [...open]) c.abort(reason);
  return n;
}
function track(c: Communicator): void {
  open.add(c);
  if (exitHooked) return;
  exitHooked = true;
  process.once('exit', () => abortOpenCommunicators());
}

export class Communicator implements RankQueue {
  private abortedBecause: string | null = null;
  private destroyed = false;
  /** streams with collectives not yet waited for, with the number of the last one queued there */
  private readonly pending = new Map<GpuStream, number>();
  /** the last few collectives queued (for error messages), numbered like `pending` */
  private readonly recent: { readonly seq: number; readonly text: string }[] = [];
  private seq = 0;
  private groupDepth = 0;
  private barrierBuf: Tensor | null = null;
  readonly timeoutMs: number;
  readonly checkShapes: boolean;
  readonly lib: LibraryLevel;

  /** internal: made by DeviceGroup.create and initProcessGroup */
  constructor(
    private readonly nccl: Nccl,
    private readonly handle: bigint,
    readonly rank: number,
    readonly size: number,
    readonly device: Device,
    o: CommunicatorOptions = {},
  ) {
    this.timeoutMs = o.timeoutMs ?? defaultTimeoutMs();
    this.checkShapes = o.checkShapes ?? false;
    this.lib = { vendor: device.kind === 'rocm' ? 'rocm' : 'cuda', version: nccl.version };
    track(this);
  }

  /** "NCCL 2.28.3" / "RCCL 2.18.3" */
  get library(): string {
    return `${this.lib.vendor === 'rocm' ? 'RCCL' : 'NCCL'} ${ncclVersionText(this.lib.version)}`;
  }
  get isAborted(): boolean {
    return this.abortedBecause !== null;
  }
  toString(): string {
    return `Communicator(rank ${this.rank} of ${this.size}, ${this.device}, ${this.library})`;
  }

  // ---- collectives ---------------------------------------------------------------------------
  /** every rank's t reduced (sum unless told), into t (in place) or o.out; returns the tensor written */
  allReduce(t: Tensor, o: ReduceOptions = {}): Tensor {
    return this.run(planAllReduce(this.ctx('allReduce'), this.lib, t, o));
  }
  /** every rank's t one after another in rank order, into o.out or a new [size * d0, ...] tensor.
   *  In place when t is this rank's part of o.out (o.out.narrow(0, rank * d0, d0)) */
  allGather(t: Tensor, o: OutOptions = {}): Tensor {
    return this.run(planAllGather(this.ctx('allGather'), this.lib, t, o));
  }
  /** t is size equal parts; this rank gets the reduction of part `rank`, into o.out or a new
   *  [d0 / size, ...] tensor. In place when o.out is this rank's part of t */
  reduceScatter(t: Tensor, o: ReduceOptions = {}): Tensor {
    return this.run(planReduceScatter(this.ctx('reduceScatter'), this.lib, t, o));
  }
  /** root's t (root 0 unless told) into every rank's t (in place) or o.out */
  broadcast(t: Tensor, o: RootOptions = {}): Tensor {
    return this.run(planBroadcast(this.ctx('broadcast'), this.lib, t, o));
  }
  /** every rank's t reduced onto root only, into root's t (in place) or o.out */
  reduce(t: Tensor, o: RootReduceOptions = {}): Tensor {
    return this.run(planReduce(this.ctx('reduce'), this.lib, t, o));
  }
  /** t to rank `peer`, which must recv a tensor of the same dtype and element count. A send and
   *  a recv that depend on each other (an exchange) go inside one group() */
  send(t: Tensor, peer: number): void {
    this.run(planSend(this.ctx('send'), this.lib, t, peer));
  }
  /** into t (in place) from rank `peer` */
  recv(t: Tensor, peer: number): Tensor {
    return this.run(planRecv(this.ctx('recv'), this.lib, t, peer));
  }

  /** runs fn with the library's group calls around it: the sends, recvs and collectives it queues
   *  are launched together (what an exchange between two ranks needs to not deadlock) */
  group<R>(fn: () => R): R {
    this.usable('group');
    this.groupDepth++;
    try {
      return inGroup(this.nccl, this.device.runtime, fn);
    } finally {
      this.groupDepth--;
    }
  }

  /** resolves when every rank has reached it: a one-element all-reduce, then synchronize() */
  async barrier(o: WaitOptions = {}): Promise<void> {
    this.usable('barrier');
    // the contents do not matter: only that every rank's all-reduce completes
    this.barrierBuf ??= Tensor.empty([1], 'f32', this.device);
    this.allReduce(this.barrierBuf);
    await this.synchronize(o);
  }

  /** resolves when the collectives queued so far have finished; past the deadline, or on an
   *  error the library reports, aborts the communicator and rejects with a CollectiveError */
  async synchronize(o: WaitOptions = {}): Promise<void> {
    this.usable('synchronize');
    const timeoutMs = o.timeoutMs ?? this.timeoutMs;
    const w = this.beginWait();
    let r: PollResult;
    try {
      r = await pollUntil(() => w.poll(), Date.now() + timeoutMs);
    } finally {
      w.dispose();
    }
    this.settle('synchronize', r, timeoutMs, w.upTo);
  }

  /** stops the collectives in flight and frees the communicator; every later call throws */
  abort(reason = 'abort() was called'): void {
    if (this.abortedBecause !== null || this.destroyed) return;
    this.abortedBecause = reason;
    open.delete(this);
    this.pending.clear();
    this.device.runtime.callForeign(() => this.nccl.fn.ncclCommAbort(this.handle));
  }

  /** frees the communicator after its queued work (call synchronize() first to see errors) */
  destroy(): void {
    if (this.destroyed) return;
    this.destroyed = true;
    open.delete(this);
    this.barrierBuf?.dispose();
    this.barrierBuf = null;
    if (this.abortedBecause !== null) return;
    this.device.runtime.callForeign(() =>
      this.nccl.check(this.nccl.fn.ncclCommDestroy(this.handle), 'ncclCommDestroy', [this.handle]),
    );
  }

  // ---- internal: shared with DeviceGroup -----------------------------------------------------
  /** the context every plan of this rank is checked in (throws when the communicator is gone) */
  ctx(op: string): RankCtx {
    this.usable(op);
    return { op, rank: this.rank, size: this.size, device: this.device };
  }

  /** queues a plan on the device's current stream (no agreement step; DeviceGroup calls this inside its group) */
  queue(plan: Plan): void {
    const stream = this.device.stream;
    try {
      issuePlan(this.nccl, this.handle, plan, this.device.runtime, stream);
    } catch (e) {
      if (e instanceof GpuError)
        throw new CollectiveError(`${plan.text} on rank ${this.rank} of ${this.size} (${this.device}): ${e.message}`);
      throw e;
    }
    this.pending.set(stream, ++this.seq);
    this.recent.push({ seq: this.seq, text: plan.text });
    if (this.recent.length > RECENT) this.recent.shift();
  }

  /** events on every stream with collectives since the last wait, polled with the async error */
  beginWait(): PendingWait {
    const rt = this.device.runtime;
    const events: GpuEvent[] = [];
    for (const s of this.pending.keys()) {
      const e = rt.eventCreate(false);
      events.push(e);
      rt.eventRecord(e, s);
    }
    const status: [number] = [0];
    return {
      upTo: this.seq,
      poll: (): PollResult => {
        if (this.abortedBecause !== null)
          return { state: 'failed', error: `the communicator was aborted (${this.abortedBecause})` };
        const code = this.nccl.fn.ncclCommGetAsyncError(this.handle, status);
        if (code !== 0)
          return {
            state: 'failed',
            error: `ncclCommGetAsyncError failed: ${this.nccl.fn.ncclGetErrorString(code) ?? code}`,
          };
        if (status[0] !== 0 && status[0] !== NCCL_IN_PROGRESS) {
          return {
            state: 'failed',
            error: `the collectives library reported: ${this.nccl.fn.ncclGetErrorString(status[0]) ?? 'error'} (${status[0]})`,
          };
        }
        return events.every((e) => rt.eventQuery(e)) ? DONE : PENDING;
      },
      dispose: (): void => {
        for (const e of events) rt.eventDestroy(e);
      },
    };
  }

  /** after a wait: done forgets the collectives it covered (those queued during the wait stay
   *  pending); anything else aborts and throws */
  settle(op: string, r: PollResult, timeoutMs: number, upTo = this.seq): void {
    if (r.state === 'done') {
      for (const [s, last] of this.pending) if (last <= upTo) this.pending.delete(s);
      while (this.recent.length && this.recent[0]!.seq <= upTo) this.recent.shift();
      return;
    }
    const inFlight = this.recent.length ? this.recent.map((x) => x.text).join(', ') : 'nothing queued';
    const head = `${op} on rank ${this.rank} of ${this.size} (${this.device})`;
    if (r.state === 'pending') {
      this.abort(`a wait timed out after ${timeoutMs / 1e3} s`);
      throw new CollectiveTimeoutError(
        `${head}: the collectives in flight (${inFlight}) did not finish within ${timeoutMs / 1e3} s; ` +
          'the communicator was aborted (a rank may have died, thrown, or called a different collective)',
      );
    }
    this.abort(r.error);
    throw new CollectiveError(`${head}: ${r.error} while waiting for ${inFlight}; the communicator was aborted`);
  }

  private run(plan: Plan): Tensor {
    if (this.checkShapes && this.groupDepth === 0 && plan.kind !== 'send' && plan.kind !== 'recv') {
      // the agreement reads back and waits: nothing a graph could replay
      if (this.device.isCapturing) {
        if (plan.created) plan.result.dispose();
        throw new GraphCaptureError(
          `${plan.text} on rank ${this.rank} of ${this.size} (${this.device}): checkShapes waits for the device before ` +
            'each collective, which cannot be captured into a graph; make the communicator without checkShapes (or run this work outside captureGraph)',
        );
      }
      try {
        agreeOnPlan(this, plan);
      } catch (e) {
        if (plan.created) plan.result.dispose();
        throw e;
      }
    }
    this.queue(plan);
    return plan.result;
  }

  private usable(op: string): void {
    const head = `${op} on rank ${this.rank} of ${this.size} (${this.device})`;
    if (this.destroyed) throw new TensorError(`${head}: the communicator was destroyed`);
    if (this.abortedBecause !== null)
      throw new CollectiveError(`${head}: the communicator was aborted (${this.abortedBecause}); make a new one`);
  }

  /** internal (DeviceGroup, tests): the wrapped library */
  get native(): { readonly nccl: Nccl; readonly handle: bigint } {
    return { nccl: this.nccl, handle: this.handle };
  }
}
