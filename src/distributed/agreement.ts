// The optional agreement step (checkShapes): before a collective, the ranks all-gather a few words
// saying what each is about to do (op, dtype, reduce op, root, element count, shape) and compare.
// A mismatch that the library would turn into a hang or an out-of-bounds read becomes the same
// ShapeError on every rank, since every rank compares the same gathered words. It waits for the
// device (with the communicator's deadline), so it is a debugging aid, off by default.
import type { Plan, PlanKind } from './plans.ts';
import { Tensor } from '../tensor/tensor.ts';
import { ShapeError, fmtShape } from '../core/errors.ts';
import { planAllGather } from './plans.ts';
import { pollUntilSync, type PollResult } from './watchdog.ts';
import { dtypeOfCode, opOfCode } from './nccl-types.ts';
import type { RankQueue } from './rank-queue.ts';

const KINDS: readonly PlanKind[] = ['allReduce', 'allGather', 'reduceScatter', 'broadcast', 'reduce', 'send', 'recv'];
const WORDS = 16;
/** words compared: kind, dtype, reduce op, root, count (low, high); the rest is the shape, shown only */
const COMPARED = 6;
const MAX_DIMS = WORDS - COMPARED - 1;

export function encodePlan(plan: Plan): Uint32Array {
  const w = new Uint32Array(WORDS);
  w[0] = KINDS.indexOf(plan.kind);
  w[1] = plan.dtype;
  w[2] = plan.redOp + 1;
  w[3] = plan.rank + 1;
  w[4] = plan.count % 2 ** 32;
  w[5] = Math.floor(plan.count / 2 ** 32);
  w[6] = plan.shape.length;
  plan.shape.slice(0, MAX_DIMS).forEach((n, i) => {
    w[7 + i] = n;
  });
  return w;
}

export function describeWords(w: Uint32Array): string {
  const kind = KINDS[w[0]!] ?? `op ${w[0]}`;
  const ndim = w[6]!;
  const dims = Array.from(w.subarray(7, 7 + Math.min(ndim, MAX_DIMS)));
  const shape = ndim > MAX_DIMS ? `${fmtShape(dims).slice(0, -1)}, ...]` : fmtShape(dims);
  const parts = [
    w[2]! > 0 ? opOfCode(w[2]! - 1) : '',
    w[3]! > 0 ? `${kind === 'send' || kind === 'recv' ? 'peer' : 'root'} ${w[3]! - 1}` : '',
  ]
    .filter(Boolean)
    .join(', ');
  return `${kind}${parts ? `(${parts})` : ''} ${dtypeOfCode(w[1]!)} ${shape}`;
}

/** the ranks' words side by side: null when they agree, else the message every rank throws */
export function disagreement(all: Uint32Array, size: number): string | null {
  const row = (r: number) => all.subarray(r * WORDS, (r + 1) * WORDS);
  const same = (r: number) =>
    row(r)
      .subarray(0, COMPARED)
      .every((x, i) => x === all[i]);
  if (Array.from({ length: size }, (_, r) => r).every(same)) return null;
  return Array.from({ length: size }, (_, r) => `rank ${r}: ${describeWords(row(r))}`).join('; ');
}

export function agreeOnPlan(comm: RankQueue, plan: Plan): void {
  const dev = comm.device,
    rt = dev.runtime;
  const own = Tensor.from(encodePlan(plan), { device: dev });
  const ctx = comm.ctx('checkShapes');
  const gather = planAllGather(ctx, { vendor: comm.lib.vendor, version: comm.lib.version }, own);
  const bytes = WORDS * 4 * comm.size;
  const host = rt.hostAlloc(bytes);
  let settled = false;
  try {
    comm.queue(gather);
    rt.copyDtoHAsync(host, 0, gather.result.storage.ptrAt(gather.result.layout.offset), bytes, dev.stream);
    const w = comm.beginWait();
    let r: PollResult;
    try {
      r = pollUntilSync(() => w.poll(), Date.now() + comm.timeoutMs);
    } finally {
      w.dispose();
    }
    comm.settle(`checkShapes before ${plan.text}`, r, comm.timeoutMs);
    settled = true;
    const all = new Uint32Array(host.bytes.slice(0, bytes).buffer);
    const bad = disagreement(all, comm.size);
    if (bad)
      throw new ShapeError(
        `${plan.kind} on rank ${comm.rank} of ${comm.size} (${dev}): the ranks disagree (checkShapes): ${bad}`,
      );
  } finally {
    own.dispose();
    gather.result.dispose();
    // after a failed wait the copy into `host` may still be queued behind the aborted
    // collective: freeing pinned memory could wait on it, so it is left to the process
    if (settled) rt.hostFree(host);
  }
}
