// Waiting for a GPU event without blocking the event loop: poll with a short setTimeout backoff
// rather than a blocking call on a worker thread. Readbacks and staged uploads are often many
// and small, and a libuv thread blocked per wait would starve the file I/O that feeds them.
import type { GpuEvent, GpuRuntime } from './gpu.ts';

const MAX_WAIT_MS = 4;

export async function waitForEvent(rt: GpuRuntime, ev: GpuEvent): Promise<void> {
  let wait = 0;
  while (!rt.eventQuery(ev)) {
    await new Promise((r) => setTimeout(r, wait));
    wait = Math.min(wait + 1, MAX_WAIT_MS);
  }
}
