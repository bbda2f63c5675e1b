// Waiting for a GPU event without blocking the event loop: poll, rather than a blocking call on
// a worker thread. Readbacks and staged uploads are often many and small, and a libuv thread
// blocked per wait would starve the file I/O that feeds them.
//
// For SPIN_MS the polls go through setImmediate, which yields to I/O but does not sleep: a timer
// cannot wait less than about 1 ms, as long as a replayed decode step of a 1B model, so a loop
// that reads one token a step would otherwise wake a timer tick late every step and the GPU
// would idle behind it. Longer waits back off to timers up to MAX_WAIT_MS so that they do not
// hold a core.
import type { GpuEvent, GpuRuntime } from './gpu.ts';

const SPIN_MS = 2;
const MAX_WAIT_MS = 4;

export async function waitForEvent(rt: GpuRuntime, ev: GpuEvent): Promise<void> {
  if (rt.eventQuery(ev)) return;
  const t0 = performance.now();
  while (performance.now() - t0 < SPIN_MS) {
    await new Promise((r) => setImmediate(r));
    if (rt.eventQuery(ev)) return;
  }
  let wait = 1;
  while (!rt.eventQuery(ev)) {
    await new Promise((r) => setTimeout(r, wait));
    wait = Math.min(wait + 1, MAX_WAIT_MS);
  }
}
