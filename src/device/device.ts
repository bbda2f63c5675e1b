// Devices: 'cpu', 'rocm:N', 'cuda:N'. One Device object per physical device (so === compares),
// opening its runtime, kernels and allocator on first use. Device.best() prefers ROCm, then
// CUDA, then the CPU; ROCM_TENSOR_DEVICE overrides the choice.
import type { DnnApi, GpuRuntime, GpuStream, GpuEvent } from '../runtime/gpu.ts';
import { CachingAllocator, type MemoryStats } from '../runtime/allocator.ts';
import { Kernels } from '../runtime/kernels.ts';
import { tuningFor, type VendorTuning } from '../runtime/tuning.ts';
import { StagingPool } from '../runtime/staging.ts';
import { StagedUploader, type DeviceAddress, type FillChunk } from '../runtime/staged-upload.ts';
import { waitForEvent } from '../runtime/event-wait.ts';
import { throwPendingDeviceError } from '../runtime/device-errors.ts';
import { openRocm, rocmDeviceCount } from '../runtime/rocm/runtime.ts';
import { openCuda, cudaDeviceCount } from '../runtime/cuda/runtime.ts';
import { GraphCaptureError, TensorError } from '../core/errors.ts';
import { readEnv } from '../core/config.ts';
import { captureGraph, type Graph } from './graph.ts';
import { SCOPE_LEAF } from '../core/scope.ts';
import type { HostArray } from '../core/dtype.ts';
import type { DevicePtr } from '../runtime/gpu.ts';

export type DeviceKind = 'cpu' | 'rocm' | 'cuda';

/** a user stream: ops issued inside device.withStream(s, fn) run on it */
export class Stream {
  constructor(
    readonly device: Device,
    readonly handle: GpuStream,
    private readonly owned: boolean,
  ) {}
  synchronize(): void {
    this.device.forbidDuringCapture('stream synchronize');
    this.device.runtime.streamSynchronize(this.handle);
    throwPendingDeviceError(this.device);
  }
  /** work queued on `this` after this call waits for work queued on `other` so far */
  waitFor(other: Stream): void {
    const rt = this.device.runtime;
    const e = rt.eventCreate(false);
    rt.eventRecord(e, other.handle);
    rt.streamWaitEvent(this.handle, e);
    rt.eventDestroy(e);
  }
  destroy(): void {
    if (this.owned) this.device.runtime.streamDestroy(this.handle);
  }
}

/** how a capture treats what a replay cannot redo */
export interface CaptureOptions {
  /** refuse random draws (dropout), which every replay would repeat: a training step's capture */
  readonly refuseDraws?: boolean;
}

export class Device {
  private static readonly cache = new Map<string, Device>();
  private rt: GpuRuntime | null = null;
  private kern: Kernels | null = null;
  private alloc_: CachingAllocator | null = null;
  private staging_: StagingPool | null = null;
  private uploader_: StagedUploader | null = null;
  private streamStack: GpuStream[] = [];

  private readonly name: string;
  private constructor(
    readonly kind: DeviceKind,
    readonly index: number,
  ) {
    this.name = kind === 'cpu' ? 'cpu' : `${kind}:${index}`;
  }

  private static get(kind: DeviceKind, index: number): Device {
    const key = kind === 'cpu' ? 'cpu' : `${kind}:${index}`;
    let d = Device.cache.get(key);
    if (!d) {
      d = new Device(kind, index);
      Device.cache.set(key, d);
    }
    return d;
  }
  static cpu(): Device {
    return Device.get('cpu', 0);
  }
  static rocm(index = 0): Device {
    return Device.checked('rocm', index);
  }
  static cuda(index = 0): Device {
    return Device.checked('cuda', index);
  }

  /** 'cpu', 'rocm', 'rocm:1', 'cuda:0', 'gpu' (best GPU) */
  static parse(spec: string): Device {
    const m = /^(cpu|rocm|cuda|gpu)(?::(\d+))?$/.exec(spec.trim());
    if (!m) throw new TensorError(`device: cannot parse '${spec}' (expected cpu, rocm[:N], cuda[:N] or gpu)`);
    const index = m[2] ? Number(m[2]) : 0;
    if (m[1] === 'cpu') return Device.cpu();
    if (m[1] === 'gpu') {
      const g = Device.bestGpu();
      if (!g) throw new TensorError(`device: 'gpu' asked for but no ROCm or CUDA device was found`);
      return g;
    }
    return Device.checked(m[1] as 'rocm' | 'cuda', index);
  }

  static rocmCount(): number {
    return rocmDeviceCount();
  }
  static cudaCount(): number {
    return cudaDeviceCount();
  }

  static bestGpu(): Device | null {
    if (rocmDeviceCount() > 0) return Device.get('rocm', 0);
    if (cudaDeviceCount() > 0) return Device.get('cuda', 0);
    return null;
  }
  /** ROCM_TENSOR_DEVICE if set, else ROCm, then CUDA, then CPU */
  static best(): Device {
    const env = readEnv('ROCM_TENSOR_DEVICE');
    if (env) return Device.parse(env);
    return Device.bestGpu() ?? Device.cpu();
  }

  private static checked(kind: 'rocm' | 'cuda', index: number): Device {
    const n = kind === 'rocm' ? rocmDeviceCount() : cudaDeviceCount();
    if (!Number.isInteger(index) || index < 0 || index >= n) {
      throw new TensorError(`device: ${kind}:${index} does not exist (${n} ${kind} device${n === 1 ? '' : 's'} found)`);
    }
    return Device.get(kind, index);
  }

  get isCpu(): boolean {
    return this.kind === 'cpu';
  }
  toString(): string {
    return this.name;
  }

  get runtime(): GpuRuntime {
    if (this.kind === 'cpu') throw new TensorError('the cpu device has no GPU runtime');
    this.rt ??= this.kind === 'rocm' ? openRocm(this.index) : openCuda(this.index);
    return this.rt;
  }
  get kernels(): Kernels {
    this.kern ??= new Kernels(this.runtime);
    return this.kern;
  }
  /** the vendor's launch shapes and tunings (runtime/tuning.ts): GPU devices only */
  get tuning(): VendorTuning {
    return tuningFor(this.runtime.vendor);
  }
  get allocator(): CachingAllocator {
    this.alloc_ ??= new CachingAllocator(this.runtime);
    return this.alloc_;
  }

  /** the stream ops are queued on now */
  get stream(): GpuStream {
    return this.streamStack.at(-1) ?? this.runtime.defaultStream;
  }
  /** a new user stream */
  createStream(): Stream {
    return new Stream(this, this.runtime.streamCreate(), true);
  }
  get defaultStream(): Stream {
    return new Stream(this, this.runtime.defaultStream, false);
  }
  /** the stream ops are queued on now, as a Stream: async work that resumes after an await
   *  (outside any withStream scope) passes it to withStream to stay in order */
  get currentStream(): Stream {
    return new Stream(this, this.stream, false);
  }
  /** runs fn with ops queued on `s` (synchronous fn: the stream is a dynamic scope) */
  withStream<T>(s: Stream, fn: () => T): T {
    this.streamStack.push(s.handle);
    try {
      return fn();
    } finally {
      this.streamStack.pop();
    }
  }

  /** the stream a graph is being captured on, if any */
  private capturing: GpuStream | null = null;
  /** a kernel that records bad ids was captured: each replay arms the readback's check */
  private capturedIdChecks = false;
  /** the capture in progress refuses random draws (CaptureOptions.refuseDraws) */
  private captureRefusesDraws = false;
  get isCapturing(): boolean {
    return this.capturing !== null;
  }
  /** internal (device-errors.ts) */
  noteCapturedIdChecks(): void {
    this.capturedIdChecks = true;
  }

  /**
   * Throws when `what` cannot be recorded into the graph being captured on the current stream:
   * host memory read or written now (uploads, readbacks), waits, and library calls that
   * allocate. Replaying would not redo the host's part, so these fail here instead.
   */
  forbidDuringCapture(what: string): void {
    if (this.capturing !== null) {
      throw new GraphCaptureError(
        `${what} cannot run during a graph capture on ${this.name}: ` +
          'a replay would not repeat its host side (keep uploads, readbacks, synchronization and MIOpen/cuDNN calls outside captureGraph)',
      );
    }
  }

  /** throws when a draw of `op` is about to be recorded where each replay needs fresh numbers */
  checkDrawInCapture(op: string): void {
    if (this.capturing !== null && this.captureRefusesDraws)
      throw new GraphCaptureError(
        `${op} inside captureBackward on ${this.name}: every replay would repeat the same random numbers ` +
          `(the same mask each step); train this model without captureBackward, or without ${op}`,
      );
  }

  /** MIOpen / cuDNN: recorded into a capture only where the runtime says its calls replay */
  dnn(op: string): DnnApi {
    if (this.capturing !== null && !this.runtime.dnnCapturable)
      throw new GraphCaptureError(
        `${op} cannot run during a graph capture on ${this.name}: ${this.runtime.dnn().name} calls are not recorded into graphs on this platform`,
      );
    return this.runtime.dnn();
  }

  /**
   * Records the GPU work that fn queues on the current stream into a graph, once, and returns
   * it: replay() queues all of it again with one launch. fn runs synchronously; tensors made in
   * it come from memory private to the graph (valid until dispose()); those it returns are the
   * graph's outputs, rewritten by every replay. Inputs are tensors made before the capture
   * (change their contents between replays, never their storage).
   */
  captureGraph<T>(fn: () => T, opts: CaptureOptions = {}): Graph<T> {
    if (this.kind === 'cpu')
      throw new GraphCaptureError('captureGraph: the cpu device has no graphs; capture on a GPU device');
    if (this.capturing !== null)
      throw new GraphCaptureError(`captureGraph: a capture is already in progress on ${this.name}`);
    let checks = false;
    return captureGraph(this, fn, {
      begin: (s) => {
        this.capturing = s;
        this.captureRefusesDraws = opts.refuseDraws ?? false;
        this.capturedIdChecks = false;
      },
      end: () => {
        this.capturing = null;
        this.captureRefusesDraws = false;
        checks = this.capturedIdChecks;
        this.capturedIdChecks = false;
      },
      checksIds: () => checks,
    });
  }

  /** waits for all queued work on this device */
  synchronize(): void {
    if (this.kind === 'cpu') return;
    this.forbidDuringCapture('synchronize');
    this.runtime.synchronize();
    throwPendingDeviceError(this);
  }

  memoryStats(): MemoryStats | null {
    return this.kind === 'cpu' ? null : this.allocator.stats();
  }
  /** sets memoryStats().peakInUse to what is in use now, so the next peak is that of the work
   *  after this call (as torch.cuda.reset_peak_memory_stats) */
  resetPeakMemory(): void {
    if (this.kind !== 'cpu') this.allocator.resetPeak();
  }
  /** returns cached device blocks to the device, and the streamed-upload pinned buffer to the host */
  emptyCache(): void {
    if (this.kind === 'cpu') return;
    this.synchronize();
    this.allocator.emptyCache();
    this.uploader_?.trim();
  }

  /** host array -> device memory, queued on the current stream (staged through pinned memory,
   *  so the caller may reuse `data` at once and the host does not wait for the device) */
  upload(dst: DevicePtr, data: HostArray): void {
    const rt = this.runtime,
      n = data.byteLength;
    if (n === 0) return;
    this.forbidDuringCapture('a host-to-device upload');
    const buf = this.staging.acquire(n);
    buf.bytes.set(new Uint8Array(data.buffer, data.byteOffset, n));
    rt.copyHtoDAsync(dst, buf, 0, n, this.stream);
    this.staging.releaseAfter(buf, this.stream);
  }

  /** device memory -> host, without blocking the event loop while the GPU works */
  async download(src: DevicePtr, bytes: number): Promise<Uint8Array> {
    this.forbidDuringCapture('a readback');
    const rt = this.runtime;
    const out = new Uint8Array(bytes);
    if (bytes === 0) return out;
    const buf = this.staging.acquire(bytes);
    const ev: GpuEvent = rt.eventCreate(false);
    try {
      rt.copyDtoHAsync(buf, 0, src, bytes, this.stream);
      rt.eventRecord(ev, this.stream);
      await waitForEvent(rt, ev);
      out.set(buf.bytes.subarray(0, bytes));
    } finally {
      rt.eventDestroy(ev);
      this.staging.release(buf);
    }
    return out;
  }

  /** like download(), blocking the thread until the copy is done */
  downloadSync(src: DevicePtr, bytes: number): Uint8Array {
    this.forbidDuringCapture('a readback');
    const out = new Uint8Array(bytes);
    if (bytes === 0) return out;
    const rt = this.runtime,
      buf = this.staging.acquire(bytes);
    try {
      rt.copyDtoHAsync(buf, 0, src, bytes, this.stream);
      rt.streamSynchronize(this.stream);
      out.set(buf.bytes.subarray(0, bytes));
    } finally {
      this.staging.release(buf);
    }
    return out;
  }

  /**
   * Streams `bytes` bytes into device memory, queued on the current stream, through a pinned
   * double buffer of 2 x uploadChunkBytes that the device keeps: `fill` writes each chunk
   * (at most uploadChunkBytes, starting at a multiple of 8) straight into pinned memory, e.g.
   * from a file, so host memory stays bounded by the buffer. Resolves once the last copy is
   * queued; concurrent calls take turns.
   */
  async uploadStreamed(dstAt: DeviceAddress, bytes: number, fill: FillChunk): Promise<void> {
    this.forbidDuringCapture('a streamed upload');
    const stream = this.stream;
    await this.uploader.upload(stream, dstAt, bytes, fill);
  }
  /** bytes per half of the streamed-upload buffer (default 32 MiB, or ROCM_TENSOR_UPLOAD_CHUNK);
   *  rounded down to a multiple of 8; a new size takes effect at the next streamed upload */
  get uploadChunkBytes(): number {
    return this.uploader.chunkBytes;
  }
  set uploadChunkBytes(n: number) {
    this.uploader.chunkBytes = n;
  }

  private get uploader(): StagedUploader {
    if (this.kind === 'cpu') throw new TensorError('streamed uploads need a GPU device, not the cpu');
    this.uploader_ ??= new StagedUploader(this.runtime);
    return this.uploader_;
  }

  private get staging(): StagingPool {
    this.staging_ ??= new StagingPool(this.runtime);
    return this.staging_;
  }
}

// a device inside a tidy() result (a plain object naming its device) is kept without a walk
Object.defineProperty(Device.prototype, SCOPE_LEAF, { value: true });
