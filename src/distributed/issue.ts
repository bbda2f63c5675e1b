// Queues one plan with the collectives library on a stream: the only place that calls the
// collective functions, so argument order lives in one spot. The call runs through the runtime's
// callForeign, which makes the device current and afterwards forgets that it did (the library may
// switch devices itself).
import type { Nccl } from '../ffi/nccl.ts';
import type { GpuRuntime, GpuStream } from '../runtime/gpu.ts';
import type { Plan } from './plans.ts';

export function issuePlan(nccl: Nccl, comm: bigint, plan: Plan, rt: GpuRuntime, stream: GpuStream): void {
  const f = nccl.fn,
    s = rt.nativeStream(stream);
  const { send, recv, count, dtype, redOp, rank } = plan;
  const need = (p: bigint | null, what: string): bigint => {
    if (p === null) throw new Error(`internal: ${plan.kind} plan without a ${what} buffer`);
    return p;
  };
  rt.callForeign(() => {
    switch (plan.kind) {
      case 'allReduce':
        return nccl.check(
          f.ncclAllReduce(need(send, 'send'), need(recv, 'recv'), count, dtype, redOp, comm, s),
          'ncclAllReduce',
          [send, recv, count, dtype, redOp, comm, s],
        );
      case 'allGather':
        return nccl.check(
          f.ncclAllGather(need(send, 'send'), need(recv, 'recv'), count, dtype, comm, s),
          'ncclAllGather',
          [send, recv, count, dtype, comm, s],
        );
      case 'reduceScatter':
        return nccl.check(
          f.ncclReduceScatter(need(send, 'send'), need(recv, 'recv'), count, dtype, redOp, comm, s),
          'ncclReduceScatter',
          [send, recv, count, dtype, redOp, comm, s],
        );
      case 'broadcast':
        return nccl.check(
          f.ncclBroadcast(need(send, 'send'), need(recv, 'recv'), count, dtype, rank, comm, s),
          'ncclBroadcast',
          [send, recv, count, dtype, rank, comm, s],
        );
      case 'reduce':
        return nccl.check(
          f.ncclReduce(need(send, 'send'), need(recv, 'recv'), count, dtype, redOp, rank, comm, s),
          'ncclReduce',
          [send, recv, count, dtype, redOp, rank, comm, s],
        );
      case 'send':
        return nccl.check(f.ncclSend(need(send, 'send'), count, dtype, rank, comm, s), 'ncclSend', [
          send,
          count,
          dtype,
          rank,
          comm,
          s,
        ]);
      case 'recv':
        return nccl.check(f.ncclRecv(need(recv, 'recv'), count, dtype, rank, comm, s), 'ncclRecv', [
          recv,
          count,
          dtype,
          rank,
          comm,
          s,
        ]);
    }
  });
}

/** ncclGroupStart / ncclGroupEnd around fn; End launches the grouped work and may switch devices */
export function inGroup<T>(nccl: Nccl, rt: GpuRuntime, fn: () => T): T {
  nccl.check(nccl.fn.ncclGroupStart(), 'ncclGroupStart', []);
  let out: T;
  try {
    out = fn();
  } catch (e) {
    // close the group so the library is not left inside one; what was queued is launched and
    // the caller's error names the rank that could not queue its part
    try {
      rt.callForeign(() => nccl.fn.ncclGroupEnd());
    } catch {
      /* the first error is the one to report */
    }
    throw e;
  }
  rt.callForeign(() => nccl.check(nccl.fn.ncclGroupEnd(), 'ncclGroupEnd', []));
  return out;
}
