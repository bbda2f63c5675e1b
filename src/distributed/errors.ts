// Errors of the communicators. A collective that fails on the device, or does not finish within
// its deadline, leaves the communicator aborted: every later call on it throws at once instead of
// queueing work that could never complete.
import { TensorError } from '../core/errors.ts';

/** a collective failed, or its communicator was aborted; names the rank, device and op */
export class CollectiveError extends TensorError {}
/** the queued collectives did not finish within the deadline; the communicator was aborted */
export class CollectiveTimeoutError extends CollectiveError {}
