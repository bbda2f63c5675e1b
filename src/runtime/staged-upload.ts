// Streams bytes produced on the host (read from a file, widened from a narrower integer type)
// into device memory through one pinned buffer split in two halves: the host fills one half
// while the device copies from the other. Host memory stays bounded by that buffer whatever the
// size of the upload. The buffer is kept per device and reused, because pinning tens of MiB
// costs milliseconds; uploads therefore take turns. An upload returns as soon as its last copy
// is queued (nothing hidden synchronizes): whoever fills a half next first waits for the event
// recorded after that half's last copy, so the host never overwrites bytes the device still reads.
import type { DevicePtr, GpuEvent, GpuRuntime, GpuStream, PinnedBuffer } from './gpu.ts';
import { waitForEvent } from './event-wait.ts';
import { ShapeError } from '../core/errors.ts';
import { readEnv } from '../core/config.ts';

/** writes the upload's bytes [byteOffset, byteOffset + into.length) into `into` */
export type FillChunk = (into: Uint8Array, byteOffset: number) => Promise<void>;
/** the device address `byteOffset` bytes into the destination (the storage does the arithmetic) */
export type DeviceAddress = (byteOffset: number) => DevicePtr;

export const DEFAULT_UPLOAD_CHUNK = 32 << 20;
/** chunk offsets stay multiples of this, so every chunk starts on an element of any dtype */
const CHUNK_ALIGN = 8;

/** the chunk size ROCM_TENSOR_UPLOAD_CHUNK asks for (bytes, or with a k/m/g suffix), else the default */
export function uploadChunkFromEnv(): number {
  const n = readEnv('ROCM_TENSOR_UPLOAD_CHUNK');
  return n === undefined ? DEFAULT_UPLOAD_CHUNK : checkChunk(n, 'ROCM_TENSOR_UPLOAD_CHUNK');
}

function checkChunk(n: number, what: string): number {
  if (!Number.isSafeInteger(n) || n < CHUNK_ALIGN || n > 2 ** 30) {
    throw new ShapeError(`${what}: upload chunk of ${n} bytes must be an integer from ${CHUNK_ALIGN} to 1 GiB`);
  }
  return n - (n % CHUNK_ALIGN);
}

export class StagedUploader {
  private buf: PinnedBuffer | null = null;
  private events: GpuEvent[] = [];
  /** a copy from that half may still be running (its event is recorded after it) */
  private readonly inFlight = [false, false];
  private turn: Promise<void> = Promise.resolve();
  private users = 0;
  private trimWhenIdle = false;
  private chunk: number;

  constructor(
    private readonly rt: GpuRuntime,
    chunkBytes: number = uploadChunkFromEnv(),
  ) {
    this.chunk = checkChunk(chunkBytes, 'upload chunk');
  }

  /** bytes per half of the pinned buffer; a new size takes effect at the next upload */
  get chunkBytes(): number {
    return this.chunk;
  }
  set chunkBytes(n: number) {
    this.chunk = checkChunk(n, 'upload chunk');
  }

  /** pinned bytes held now (two halves, or 0 before the first upload and after trim) */
  get pinnedBytes(): number {
    return this.buf?.size ?? 0;
  }

  async upload(stream: GpuStream, dstAt: DeviceAddress, bytes: number, fill: FillChunk): Promise<void> {
    if (!Number.isSafeInteger(bytes) || bytes < 0)
      throw new ShapeError(`staged upload: byte count ${bytes} must be a non-negative integer`);
    if (bytes === 0) return;
    const done = await this.takeTurn();
    try {
      const buf = await this.buffer();
      const half = buf.size / 2;
      for (let off = 0, i = 0; off < bytes; off += half, i++) {
        const h = i & 1,
          len = Math.min(half, bytes - off);
        await this.settle(h);
        await fill(buf.bytes.subarray(h * half, h * half + len), off);
        this.rt.copyHtoDAsync(dstAt(off), buf, h * half, len, stream);
        this.rt.eventRecord(this.events[h]!, stream);
        this.inFlight[h] = true;
      }
    } finally {
      await done();
    }
  }

  /** frees the pinned buffer now if no upload is running, else when the running ones end */
  trim(): void {
    if (this.users > 0) {
      this.trimWhenIdle = true;
      return;
    }
    this.freeBuffer();
  }

  private async takeTurn(): Promise<() => Promise<void>> {
    this.users++;
    const before = this.turn;
    let open!: () => void;
    this.turn = new Promise<void>((r) => {
      open = r;
    });
    await before;
    return async () => {
      try {
        if (--this.users === 0 && this.trimWhenIdle) {
          await this.settle(0);
          await this.settle(1);
          if (this.users === 0) this.freeBuffer();
        }
      } finally {
        open();
      }
    };
  }

  /** the pinned buffer at the current chunk size, waiting for the old one's copies to resize */
  private async buffer(): Promise<PinnedBuffer> {
    if (this.buf && this.buf.size !== 2 * this.chunk) {
      await this.settle(0);
      await this.settle(1);
      this.freeBuffer();
    }
    if (this.events.length === 0) this.events = [this.rt.eventCreate(false), this.rt.eventCreate(false)];
    this.buf ??= this.rt.hostAlloc(2 * this.chunk);
    return this.buf;
  }

  /** waits until no copy reads half h */
  private async settle(h: number): Promise<void> {
    if (!this.inFlight[h]) return;
    await waitForEvent(this.rt, this.events[h]!);
    this.inFlight[h] = false;
  }

  private freeBuffer(): void {
    this.trimWhenIdle = false;
    for (let h = 0; h < 2; h++) {
      if (this.inFlight[h]) {
        this.rt.eventSynchronize(this.events[h]!);
        this.inFlight[h] = false;
      }
    }
    if (this.buf) {
      this.rt.hostFree(this.buf);
      this.buf = null;
    }
  }
}
