// Pinned host buffers for copies between JS memory and the device. Pinning costs far more than
// the copy for small sizes, so buffers are kept and reused; a buffer handed to an async copy
// goes back to the pool only once an event after that copy has completed, so the host never
// overwrites memory the device is still reading.
import type { GpuEvent, GpuRuntime, GpuStream, PinnedBuffer } from './gpu.ts';

const KEEP_BYTES = 64 << 20; // pool at most this much pinned memory
const MIN_BUFFER = 64 << 10;

interface Pending {
  buf: PinnedBuffer;
  event: GpuEvent;
}

export class StagingPool {
  private free: PinnedBuffer[] = [];
  private pending: Pending[] = [];
  private kept = 0;

  constructor(private readonly rt: GpuRuntime) {}

  acquire(bytes: number): PinnedBuffer {
    this.reap();
    let best = -1;
    for (let i = 0; i < this.free.length; i++) {
      const b = this.free[i]!;
      if (b.size >= bytes && (best < 0 || b.size < this.free[best]!.size)) best = i;
    }
    if (best >= 0) {
      const b = this.free[best]!;
      this.free.splice(best, 1);
      this.kept -= b.size;
      return b;
    }
    // round up so that slightly larger requests later reuse the buffer
    const size = Math.max(MIN_BUFFER, 2 ** Math.ceil(Math.log2(Math.max(bytes, 1))));
    return this.rt.hostAlloc(bytes > KEEP_BYTES ? bytes : size);
  }

  /** the buffer is free now (its copies have completed) */
  release(buf: PinnedBuffer): void {
    if (buf.size > KEEP_BYTES || this.kept + buf.size > KEEP_BYTES) {
      this.rt.hostFree(buf);
      return;
    }
    this.free.push(buf);
    this.kept += buf.size;
  }

  /** the buffer is free once the work queued on `stream` so far has run */
  releaseAfter(buf: PinnedBuffer, stream: GpuStream): void {
    const event = this.rt.eventCreate(false);
    this.rt.eventRecord(event, stream);
    this.pending.push({ buf, event });
  }

  private reap(): void {
    if (this.pending.length === 0) return;
    const still: Pending[] = [];
    for (const p of this.pending) {
      if (this.rt.eventQuery(p.event)) {
        this.rt.eventDestroy(p.event);
        this.release(p.buf);
      } else still.push(p);
    }
    this.pending = still;
  }
}
