// What the agreement step (agreement.ts) needs of the rank it runs on: the plan context, the
// queue, and a wait with the rank's deadline. Communicator implements it; keeping the shape here
// lets agreement.ts and communicator.ts depend on this file instead of on each other.
import type { Device } from '../device/device.ts';
import type { RankCtx } from './checks.ts';
import type { LibraryLevel } from './nccl-types.ts';
import type { Plan } from './plans.ts';
import type { PollResult } from './watchdog.ts';

/** a wait in progress: poll() until done; dispose() always */
export interface PendingWait {
  /** the number of the last collective this wait covers (later ones stay pending) */
  readonly upTo: number;
  poll(): PollResult;
  dispose(): void;
}

export interface RankQueue {
  readonly rank: number;
  readonly size: number;
  readonly device: Device;
  readonly lib: LibraryLevel;
  /** the default deadline of a wait */
  readonly timeoutMs: number;
  /** the context every plan of this rank is checked in (throws when the rank's communicator is gone) */
  ctx(op: string): RankCtx;
  /** queues a plan on the device's current stream */
  queue(plan: Plan): void;
  /** events on every stream with collectives since the last wait, polled with the async error */
  beginWait(): PendingWait;
  /** after a wait: done forgets the collectives it covered; anything else aborts and throws */
  settle(op: string, r: PollResult, timeoutMs: number, upTo?: number): void;
}
