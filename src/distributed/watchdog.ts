// Waiting for queued collectives with a deadline. A collective whose peer died or never called it
// does not fail on its own: it spins on the device forever, and a blocking stream synchronize
// would hang the process with it. So waits here poll instead (an event query plus the library's
// asynchronous error, a few microseconds each) and give up at the deadline, after which the
// caller aborts the communicator, which makes the spinning kernels exit.
import { readEnv, type EnvSource } from '../core/config.ts';

/** what a poll finds: all done, still running, or a failure reported by the library */
export type PollResult =
  | { readonly state: 'done' }
  | { readonly state: 'pending' }
  | { readonly state: 'failed'; readonly error: string };

export const DONE: PollResult = { state: 'done' };
export const PENDING: PollResult = { state: 'pending' };

/** the longest sleep between polls: short enough for small collectives, long enough to stay idle */
const MAX_SLEEP_MS = 4;

/** polls until done or failed (resolves with that) or until the deadline (resolves with 'pending') */
export async function pollUntil(poll: () => PollResult, deadline: number): Promise<PollResult> {
  let sleep = 0;
  for (;;) {
    const r = poll();
    if (r.state !== 'pending' || Date.now() >= deadline) return r;
    await new Promise((res) => setTimeout(res, sleep));
    sleep = Math.min(sleep + 1, MAX_SLEEP_MS);
  }
}

// Atomics.wait on a private buffer is a sleep that blocks only this thread (Node and Bun allow it
// on the main thread): the synchronous wait must not spin a core while a peer is late.
const sleeper = new Int32Array(new SharedArrayBuffer(4));

/** pollUntil for callers that cannot await (the optional shape agreement inside a collective) */
export function pollUntilSync(poll: () => PollResult, deadline: number): PollResult {
  let sleep = 0;
  for (;;) {
    const r = poll();
    if (r.state !== 'pending' || Date.now() >= deadline) return r;
    if (sleep > 0) Atomics.wait(sleeper, 0, 0, sleep);
    sleep = Math.min(sleep + 1, MAX_SLEEP_MS);
  }
}

/** ROCM_TENSOR_DIST_TIMEOUT_MS, else 5 minutes: the default deadline of synchronize and barrier */
export function defaultTimeoutMs(env?: EnvSource): number {
  return readEnv('ROCM_TENSOR_DIST_TIMEOUT_MS', env) ?? 300_000;
}
