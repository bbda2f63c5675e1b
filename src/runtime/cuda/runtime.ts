// The CUDA implementation of the GPU runtime interface, the twin of rocm/runtime.ts: the driver
// API for memory, copies, streams, events, modules and launches; cuBLAS and cuDNN on first use.
// Each device's primary context is retained once and made current before every call that needs
// it (the current context is per host thread; all our calls come from the JS thread). Streams,
// events, modules and functions cross the interface as small wrapper objects, so a handle used
// after it was destroyed is a clear error instead of a driver crash.
import { readFileSync } from 'node:fs';
import koffi from 'koffi';
import { LaunchBlock, checkLaunchDims } from '../launch-block.ts';
import { DisposedError, GpuError, OutOfMemoryError, ShapeError, TensorError } from '../../core/errors.ts';
import { readEnv } from '../../core/config.ts';
import { gridDepPtx, hasGridDep } from '../ptx-grid-dep.ts';
import {
  CUDA_CONST,
  CUDA_STRUCTS,
  cudaDeviceCount,
  cudaError,
  cudaProbe,
  fmtCudaVersion,
  loadCudaDriver,
  type CudaDriver,
  type CudaFns,
} from '../../ffi/cuda.ts';
import { CaptureLog, invalidatedText } from '../capture-log.ts';
import { CublasApi } from './cublas.ts';
import { CudnnApi } from './cudnn.ts';
import {
  asDevicePtr,
  type BlasApi,
  type DeviceInfo,
  type DevicePtr,
  type DnnApi,
  type GpuEvent,
  type GpuFunction,
  type GpuGraphExec,
  type GpuModule,
  type GpuRuntime,
  type GpuStream,
  type KernelParam,
  type PinnedBuffer,
} from '../gpu.ts';

export { cudaDeviceCount, cudaProbe };

const ELF_MAGIC = [0x7f, 0x45, 0x4c, 0x46];
const FATBIN_MAGIC = [0x50, 0xed, 0x55, 0xba];

let currentContext: bigint | null = null;

class Wrapped {
  alive = true;
  constructor(
    readonly ptr: bigint,
    readonly owner: CudaRuntime,
    readonly what: string,
  ) {}
}
class CuStream extends Wrapped {
  /** its last queued work is one of our kernels: only a kernel of ours, which never lets its
   *  successor start early, precedes an early launch. A library's kernel (cuBLAS, cuDNN, NCCL, a
   *  replayed graph's) may, and ours would then wait on its multiprocessors; after a wait for
   *  another stream's event, ordinary order keeps that wait plainly whole. */
  ownTail = false;
}
class CuEvent extends Wrapped {
  constructor(
    ptr: bigint,
    owner: CudaRuntime,
    readonly timing: boolean,
  ) {
    super(ptr, owner, 'event');
  }
}
class CuModule extends Wrapped {
  readonly functions: CuFunction[] = [];
  constructor(
    ptr: bigint,
    owner: CudaRuntime,
    readonly gridDep: ReadonlySet<string>,
  ) {
    super(ptr, owner, 'module');
  }
}
class CuFunction extends Wrapped {
  /** dynamic shared memory the function was allowed past the default 48 KiB */
  sharedAllowed = 0;
  /** waits for the grid before it itself (ptx-grid-dep.ts): launched with programmatic serialization */
  readonly gridDep: boolean;
  constructor(
    ptr: bigint,
    owner: CudaRuntime,
    readonly name: string,
    readonly module: CuModule,
  ) {
    super(ptr, owner, `function ${name}`);
    this.gridDep = module.gridDep.has(name);
  }
}

/**
 * cuLaunchKernelEx's CUlaunchConfig with one attribute, programmatic stream serialization (the
 * GPU may set the launch up before the kernel ahead of it on the stream ends; the kernel waits
 * for that one itself), in native memory made once: the driver reads it during the call.
 */
class GridDepLaunch {
  private static readonly C = CUDA_STRUCTS.CUlaunchConfig;
  private static readonly A = CUDA_STRUCTS.CUlaunchAttribute;
  readonly config = koffi.alloc('uint8_t', GridDepLaunch.C.size + GridDepLaunch.A.size) as bigint;
  private readonly view = new DataView(koffi.view(this.config, GridDepLaunch.C.size + GridDepLaunch.A.size));
  constructor() {
    const { C, A } = GridDepLaunch,
      v = this.view;
    v.setBigUint64(C.fields.attrs, this.config + BigInt(C.size), true);
    v.setUint32(C.fields.numAttrs, 1, true);
    v.setUint32(C.size + A.fields.id, CUDA_CONST.CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION, true);
    v.setUint32(C.size + A.fields.value, 1, true);
  }
  set(
    grid: readonly [number, number, number],
    block: readonly [number, number, number],
    shared: number,
    stream: bigint,
  ): bigint {
    const f = GridDepLaunch.C.fields,
      v = this.view;
    v.setUint32(f.gridDimX, grid[0], true);
    v.setUint32(f.gridDimY, grid[1], true);
    v.setUint32(f.gridDimZ, grid[2], true);
    v.setUint32(f.blockDimX, block[0], true);
    v.setUint32(f.blockDimY, block[1], true);
    v.setUint32(f.blockDimZ, block[2], true);
    v.setUint32(f.sharedMemBytes, shared, true);
    v.setBigUint64(f.hStream, stream, true);
    return this.config;
  }
  dispose(): void {
    koffi.free(this.config);
  }
}
/** dynamic shared memory a launch may take without cuFuncSetAttribute */
const SHARED_DEFAULT_MAX = 48 * 1024;
class CuGraphExec extends Wrapped {}
class CuPinned implements PinnedBuffer {
  alive = true;
  constructor(
    readonly ptr: bigint,
    readonly size: number,
    readonly bytes: Uint8Array,
  ) {}
}

const handle = <T>(w: Wrapped): T => w as unknown as T;

/** the JIT's error log for PTX that fails to load: one native buffer, written only during the call */
const JIT_LOG_BYTES = 16384;
let jitLog: { ptr: bigint; view: Uint8Array } | null = null;
function jitLogBuffer(): { ptr: bigint; view: Uint8Array } {
  if (!jitLog) {
    const ptr = koffi.alloc('uint8_t', JIT_LOG_BYTES) as bigint;
    jitLog = { ptr, view: new Uint8Array(koffi.view(ptr, JIT_LOG_BYTES)) };
  }
  return jitLog;
}

function kernelDriverVersion(): string | null {
  try {
    const m = /Kernel Module\s+(?:for \S+\s+)?([\d.]+)/.exec(readFileSync('/proc/driver/nvidia/version', 'utf8'));
    return m ? m[1]! : null;
  } catch {
    return null;
  }
}

const startsWith = (a: Uint8Array, magic: readonly number[]): boolean => magic.every((b, i) => a[i] === b);
const bytesOf = (v: ArrayBufferView): Uint8Array => new Uint8Array(v.buffer, v.byteOffset, v.byteLength);

class CudaRuntime implements GpuRuntime {
  readonly vendor = 'cuda' as const;
  readonly info: DeviceInfo;
  readonly defaultStream: GpuStream;
  private readonly d: CudaDriver;
  private readonly f: CudaDriver['fn'];
  private readonly dev: number;
  private readonly ctx: bigint;
  private label: string;
  private readonly launchBlock = new LaunchBlock({
    pointer: CUDA_CONST.CU_LAUNCH_PARAM_BUFFER_POINTER_AS_INT,
    size: CUDA_CONST.CU_LAUNCH_PARAM_BUFFER_SIZE_AS_INT,
    end: CUDA_CONST.CU_LAUNCH_PARAM_END_AS_INT,
  });
  /** programmatic dependent launch (sm_90+, cuLaunchKernelEx, not ROCM_TENSOR_GRID_DEP=0) */
  private readonly gridDep: GridDepLaunch | null;
  private readonly out = new BigUint64Array(2);
  private readonly outInt = new Int32Array(1);
  private readonly capture = new CaptureLog(
    CUDA_CONST.CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED,
    CUDA_CONST.CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD,
  );
  private blasApi: CublasApi | null = null;
  private dnnApi: CudnnApi | null = null;
  private closed = false;

  constructor(readonly index: number) {
    this.label = `cuda:${index}`;
    this.d = loadCudaDriver();
    this.f = this.d.fn;
    this.d.check(this.f.cuInit(0), 'cuInit', [0]);
    this.outInt[0] = 0;
    this.d.check(this.f.cuDeviceGet(this.outInt, index), 'cuDeviceGet', [index]);
    this.dev = this.outInt[0]!;
    this.out[0] = 0n;
    this.d.check(this.f.cuDevicePrimaryCtxRetain(this.out, this.dev), 'cuDevicePrimaryCtxRetain', [this.dev]);
    this.ctx = this.out[0]!;
    this.enter();
    const ver = new Int32Array(1);
    this.d.check(this.f.cuDriverGetVersion(ver), 'cuDriverGetVersion', []);
    this.info = this.readInfo(ver[0]!);
    this.label = `cuda:${index} (${this.info.name})`;
    // from CUDA 12.3 drivers on (programmatic launches came with 12.0; 12.3 is the first whose
    // stream capture takes them too, should one reach a capture); this was measured on 13.0
    this.gridDep =
      hasGridDep(this.info.arch) &&
      ver[0]! >= 12030 &&
      this.f.cuLaunchKernelEx !== undefined &&
      readEnv('ROCM_TENSOR_GRID_DEP') !== false
        ? new GridDepLaunch()
        : null;
    this.defaultStream = this.streamCreate();
  }

  // ---- plumbing -------------------------------------------------------------------------------
  /** makes this device's primary context current on the calling thread (a no-op when it is) */
  enter(): void {
    if (this.closed) throw new DisposedError(`cuda:${this.index}: runtime used after close()`);
    if (currentContext === this.ctx) return;
    this.d.check(this.f.cuCtxSetCurrent(this.ctx), 'cuCtxSetCurrent', [this.ctx, `cuda:${this.index}`]);
    currentContext = this.ctx;
  }

  private call<K extends keyof CudaFns>(name: K, ...args: Parameters<CudaFns[K]>): void {
    const fn = this.f[name] as ((...a: Parameters<CudaFns[K]>) => number) | undefined;
    if (!fn) throw new GpuError(`${name} is not exported by ${this.d.loaded.path}`, -1, name);
    const code = fn(...args);
    if (code !== CUDA_CONST.CUDA_SUCCESS) {
      const err = cudaError(code, `${name}(${fmt(args)}) on ${this.label}`, name, this.d.errorText);
      // a call that breaks a capture in progress is named by captureEnd's error
      this.capture.noteFailure(code, err.message);
      throw err;
    }
  }

  private unwrap<T extends Wrapped>(h: unknown, cls: new (...a: never[]) => T, kind: string, call: string): T {
    if (!(h instanceof cls)) throw new TensorError(`${call}: not a ${kind} of the CUDA runtime (got ${describe(h)})`);
    if (h.owner !== this) throw new TensorError(`${call}: ${kind} belongs to ${h.owner.label}, not ${this.label}`);
    if (!h.alive) throw new DisposedError(`${call}: ${h.what} used after it was destroyed`);
    return h;
  }
  /** for the BLAS/DNN layers: the raw stream of a live stream handle of this device */
  streamPtr(s: GpuStream, call = 'stream'): bigint {
    return this.unwrap(s, CuStream, 'stream', call).ptr;
  }
  nativeStream(s: GpuStream): bigint {
    return this.foreignStream(s, 'nativeStream');
  }
  callForeign<T>(fn: () => T): T {
    this.enter();
    try {
      return fn();
    } finally {
      currentContext = null;
    }
  }
  private pinnedPtr(b: PinnedBuffer, call: string, off: number, bytes: number): bigint {
    if (!(b instanceof CuPinned))
      throw new TensorError(`${call}: host buffer is not pinned memory from hostAlloc of the CUDA runtime`);
    if (!b.alive) throw new DisposedError(`${call}: pinned buffer used after hostFree`);
    if (!Number.isInteger(off) || !Number.isInteger(bytes) || off < 0 || bytes < 0 || off + bytes > b.size) {
      throw new ShapeError(`${call}: range [${off}, ${off + bytes}) is outside the pinned buffer of ${b.size} bytes`);
    }
    return b.ptr + BigInt(off);
  }

  private attr(id: number, name: string): number {
    this.outInt[0] = 0;
    this.call('cuDeviceGetAttribute', this.outInt, id, this.dev);
    void name;
    return this.outInt[0]!;
  }

  /** `driver`: cuDriverGetVersion's number (13000 for CUDA 13.0) */
  private readInfo(driver: number): DeviceInfo {
    const nameBuf = new Uint8Array(256);
    this.d.check(this.f.cuDeviceGetName(nameBuf, nameBuf.length, this.dev), 'cuDeviceGetName', [this.dev]);
    const end = nameBuf.indexOf(0);
    const name = new TextDecoder().decode(nameBuf.subarray(0, end < 0 ? nameBuf.length : end));
    const c = CUDA_CONST;
    const major = this.attr(c.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, 'COMPUTE_CAPABILITY_MAJOR');
    const minor = this.attr(c.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, 'COMPUTE_CAPABILITY_MINOR');
    const arch = `sm_${major}${minor}`;
    const total = new BigUint64Array(1);
    this.d.check(this.f.cuDeviceTotalMem_v2(total, this.dev), 'cuDeviceTotalMem_v2', [this.dev]);
    const cudaVersion = fmtCudaVersion(driver);
    return {
      vendor: 'cuda',
      index: this.index,
      name,
      arch,
      archFull: arch,
      totalMemory: Number(total[0]!),
      multiprocessors: this.attr(c.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 'MULTIPROCESSOR_COUNT'),
      warpSize: this.attr(c.CU_DEVICE_ATTRIBUTE_WARP_SIZE, 'WARP_SIZE'),
      maxThreadsPerBlock: this.attr(c.CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, 'MAX_THREADS_PER_BLOCK'),
      maxSharedMemoryPerBlock: this.attr(
        c.CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK,
        'MAX_SHARED_MEMORY_PER_BLOCK',
      ),
      maxSharedMemoryPerBlockOptin: this.attr(
        c.CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
        'MAX_SHARED_MEMORY_PER_BLOCK_OPTIN',
      ),
      maxGridDim: [
        this.attr(c.CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X, 'MAX_GRID_DIM_X'),
        this.attr(c.CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y, 'MAX_GRID_DIM_Y'),
        this.attr(c.CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z, 'MAX_GRID_DIM_Z'),
      ],
      // the driver API is the runtime here: its CUDA version; the kernel module's version when readable
      runtimeVersion: `CUDA ${cudaVersion}`,
      driverVersion: kernelDriverVersion() ?? `CUDA ${cudaVersion}`,
    };
  }

  // ---- memory ---------------------------------------------------------------------------------
  memGetInfo(): { free: number; total: number } {
    this.enter();
    const free = new BigUint64Array(1);
    const total = new BigUint64Array(1);
    this.call('cuMemGetInfo_v2', free, total);
    return { free: Number(free[0]!), total: Number(total[0]!) };
  }

  malloc(bytes: number): DevicePtr {
    if (!Number.isInteger(bytes) || bytes < 0)
      throw new ShapeError(`malloc(${bytes}): size must be a non-negative integer`);
    this.enter();
    // 0 bytes still gets a distinct, freeable allocation, as on ROCm
    this.out[0] = 0n;
    const code = this.f.cuMemAlloc_v2(this.out, Math.max(bytes, 1));
    if (code === CUDA_CONST.CUDA_ERROR_OUT_OF_MEMORY) {
      let have = '';
      try {
        const m = this.memGetInfo();
        have = `; ${m.free} of ${m.total} bytes free`;
      } catch {
        /* keep the OOM */
      }
      throw new OutOfMemoryError(
        `cuMemAlloc_v2(${bytes} bytes) on ${this.label} failed: ${this.d.errorText(code)}${have}`,
        code,
        'cuMemAlloc_v2',
      );
    }
    if (code !== CUDA_CONST.CUDA_SUCCESS)
      throw cudaError(code, `cuMemAlloc_v2(${bytes} bytes) on ${this.label}`, 'cuMemAlloc_v2', this.d.errorText);
    return asDevicePtr(this.out[0]!);
  }

  free(ptr: DevicePtr): void {
    this.enter();
    this.call('cuMemFree_v2', ptr);
  }

  hostAlloc(bytes: number): PinnedBuffer {
    if (!Number.isInteger(bytes) || bytes < 0)
      throw new ShapeError(`hostAlloc(${bytes}): size must be a non-negative integer`);
    this.enter();
    this.out[0] = 0n;
    const code = this.f.cuMemHostAlloc(this.out, Math.max(bytes, 1), CUDA_CONST.CU_MEMHOSTALLOC_PORTABLE);
    if (code !== CUDA_CONST.CUDA_SUCCESS) {
      throw cudaError(
        code,
        `cuMemHostAlloc(${bytes} bytes, PORTABLE) on ${this.label}`,
        'cuMemHostAlloc',
        this.d.errorText,
      );
    }
    const p = this.out[0]!;
    return new CuPinned(p, bytes, new Uint8Array(koffi.view(p, Math.max(bytes, 1)), 0, bytes));
  }

  hostFree(buf: PinnedBuffer): void {
    if (!(buf instanceof CuPinned))
      throw new TensorError('hostFree: buffer is not pinned memory from hostAlloc of the CUDA runtime');
    if (!buf.alive) throw new DisposedError('hostFree: pinned buffer freed twice');
    buf.alive = false;
    this.enter();
    this.call('cuMemFreeHost', buf.ptr);
  }

  // ---- copies ---------------------------------------------------------------------------------
  // The synchronous forms run on the legacy NULL stream, which waits for our (blocking) streams:
  // they see all work queued before them, as the interface promises.
  copyHtoD(dst: DevicePtr, src: ArrayBufferView): void {
    if (src.byteLength === 0) return;
    this.enter();
    this.call('cuMemcpyHtoD_v2', dst, bytesOf(src), src.byteLength);
  }

  copyDtoH(dst: ArrayBufferView, src: DevicePtr): void {
    if (dst.byteLength === 0) return;
    this.enter();
    this.call('cuMemcpyDtoH_v2', bytesOf(dst), src, dst.byteLength);
  }

  copyHtoDAsync(dst: DevicePtr, src: PinnedBuffer, srcOffset: number, bytes: number, stream: GpuStream): void {
    const p = this.pinnedPtr(src, 'copyHtoDAsync', srcOffset, bytes);
    const s = this.foreignStream(stream, 'copyHtoDAsync');
    if (bytes === 0) return;
    this.enter();
    this.call('cuMemcpyHtoDAsync_v2', dst, p, bytes, s);
  }

  copyDtoHAsync(dst: PinnedBuffer, dstOffset: number, src: DevicePtr, bytes: number, stream: GpuStream): void {
    const p = this.pinnedPtr(dst, 'copyDtoHAsync', dstOffset, bytes);
    const s = this.foreignStream(stream, 'copyDtoHAsync');
    if (bytes === 0) return;
    this.enter();
    this.call('cuMemcpyDtoHAsync_v2', p, src, bytes, s);
  }

  copyDtoDAsync(dst: DevicePtr, src: DevicePtr, bytes: number, stream: GpuStream): void {
    const s = this.foreignStream(stream, 'copyDtoDAsync');
    if (bytes === 0) return;
    this.enter();
    this.call('cuMemcpyDtoDAsync_v2', dst, src, bytes, s);
  }

  memsetAsync(dst: DevicePtr, byte: number, bytes: number, stream: GpuStream): void {
    const s = this.foreignStream(stream, 'memsetAsync');
    if (bytes === 0) return;
    this.enter();
    const b = byte & 0xff;
    // 4-byte stores when the range allows them (the common case: whole tensors)
    if ((dst & 3n) === 0n && bytes % 4 === 0) this.call('cuMemsetD32Async', dst, (b * 0x01010101) >>> 0, bytes / 4, s);
    else this.call('cuMemsetD8Async', dst, b, bytes, s);
  }

  // ---- streams and events ---------------------------------------------------------------------
  streamCreate(): GpuStream {
    this.enter();
    this.out[0] = 0n;
    this.call('cuStreamCreate', this.out, CUDA_CONST.CU_STREAM_DEFAULT);
    return handle<GpuStream>(new CuStream(this.out[0]!, this, 'stream'));
  }

  streamDestroy(s: GpuStream): void {
    if (s === this.defaultStream)
      throw new TensorError(`streamDestroy: ${this.label}'s default stream is owned by the runtime`);
    const w = this.unwrap(s, CuStream, 'stream', 'streamDestroy');
    this.enter();
    w.alive = false;
    this.call('cuStreamDestroy_v2', w.ptr);
  }

  streamSynchronize(s: GpuStream): void {
    const p = this.streamPtr(s, 'streamSynchronize');
    this.enter();
    this.call('cuStreamSynchronize', p);
  }

  streamWaitEvent(s: GpuStream, e: GpuEvent): void {
    const p = this.foreignStream(s, 'streamWaitEvent');
    const ev = this.unwrap(e, CuEvent, 'event', 'streamWaitEvent');
    this.enter();
    this.call('cuStreamWaitEvent', p, ev.ptr, 0);
  }

  eventCreate(timing = false): GpuEvent {
    this.enter();
    this.out[0] = 0n;
    this.call('cuEventCreate', this.out, timing ? CUDA_CONST.CU_EVENT_DEFAULT : CUDA_CONST.CU_EVENT_DISABLE_TIMING);
    return handle<GpuEvent>(new CuEvent(this.out[0]!, this, timing));
  }

  eventRecord(e: GpuEvent, s: GpuStream): void {
    const ev = this.unwrap(e, CuEvent, 'event', 'eventRecord');
    const p = this.streamPtr(s, 'eventRecord');
    this.enter();
    this.call('cuEventRecord', ev.ptr, p);
  }

  eventSynchronize(e: GpuEvent): void {
    const ev = this.unwrap(e, CuEvent, 'event', 'eventSynchronize');
    this.enter();
    this.call('cuEventSynchronize', ev.ptr);
  }

  eventQuery(e: GpuEvent): boolean {
    const ev = this.unwrap(e, CuEvent, 'event', 'eventQuery');
    this.enter();
    const code = this.f.cuEventQuery(ev.ptr);
    if (code === CUDA_CONST.CUDA_ERROR_NOT_READY) return false;
    if (code !== CUDA_CONST.CUDA_SUCCESS)
      throw cudaError(
        code,
        `cuEventQuery(0x${ev.ptr.toString(16)}) on ${this.label}`,
        'cuEventQuery',
        this.d.errorText,
      );
    return true;
  }

  eventElapsedMs(start: GpuEvent, end: GpuEvent): number {
    const a = this.unwrap(start, CuEvent, 'event', 'eventElapsedMs');
    const b = this.unwrap(end, CuEvent, 'event', 'eventElapsedMs');
    if (!a.timing || !b.timing)
      throw new TensorError('eventElapsedMs: both events must be created with eventCreate(true)');
    this.enter();
    const ms = new Float32Array(1);
    if (this.f.cuEventElapsedTime_v2) this.call('cuEventElapsedTime_v2', ms, a.ptr, b.ptr);
    else this.call('cuEventElapsedTime', ms, a.ptr, b.ptr);
    return ms[0]!;
  }

  eventDestroy(e: GpuEvent): void {
    const ev = this.unwrap(e, CuEvent, 'event', 'eventDestroy');
    this.enter();
    ev.alive = false;
    this.call('cuEventDestroy_v2', ev.ptr);
  }

  /** the pointer of a stream that work other than our kernels is queued on, or whose order
   *  changes (a wait for an event, a capture's start and end): CuStream.ownTail */
  private foreignStream(s: GpuStream, call: string): bigint {
    const w = this.unwrap(s, CuStream, 'stream', call);
    w.ownTail = false;
    return w.ptr;
  }

  synchronize(): void {
    this.enter();
    this.call('cuCtxSynchronize');
  }

  // ---- modules and launches -------------------------------------------------------------------
  moduleLoad(image: Uint8Array): GpuModule {
    this.enter();
    const binary = startsWith(image, ELF_MAGIC) || startsWith(image, FATBIN_MAGIC);
    let data = image;
    // on sm_90+ the kernels' markers become grid waits (ptx-grid-dep.ts)
    const dep =
      !binary && this.gridDep ? gridDepPtx(new TextDecoder().decode(image).replace(/\0+$/, ''), this.info.arch) : null;
    if (dep) data = new TextEncoder().encode(dep.text + '\0');
    else if (!binary && image[image.length - 1] !== 0) {
      // PTX is read as a NUL-terminated string
      data = new Uint8Array(image.length + 1);
      data.set(image);
    }
    const log = jitLogBuffer();
    log.view[0] = 0;
    const options = new Int32Array([CUDA_CONST.CU_JIT_ERROR_LOG_BUFFER, CUDA_CONST.CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES]);
    // option values are pointer-sized slots; the size is passed by value in its slot
    const values = new BigUint64Array([log.ptr, BigInt(JIT_LOG_BYTES)]);
    this.out[0] = 0n;
    const code = this.f.cuModuleLoadDataEx(this.out, data, options.length, options, values);
    if (code !== CUDA_CONST.CUDA_SUCCESS) {
      const end = log.view.indexOf(0);
      const text = new TextDecoder().decode(log.view.subarray(0, end < 0 ? JIT_LOG_BYTES : end)).trim();
      const kind = binary ? `cubin/fatbin ${image.length} bytes` : `PTX ${image.length} bytes`;
      throw cudaError(
        code,
        `cuModuleLoadDataEx(<${kind}>) for ${this.info.arch} on ${this.label}` + (text ? ` [JIT log: ${text}]` : ''),
        'cuModuleLoadDataEx',
        this.d.errorText,
      );
    }
    return handle<GpuModule>(new CuModule(this.out[0]!, this, dep?.entries ?? new Set()));
  }

  moduleGetFunction(m: GpuModule, name: string): GpuFunction {
    const mod = this.unwrap(m, CuModule, 'module', 'moduleGetFunction');
    this.enter();
    this.out[0] = 0n;
    const code = this.f.cuModuleGetFunction(this.out, mod.ptr, name);
    if (code !== CUDA_CONST.CUDA_SUCCESS) {
      throw cudaError(code, `cuModuleGetFunction('${name}') on ${this.label}`, 'cuModuleGetFunction', this.d.errorText);
    }
    const fn = new CuFunction(this.out[0]!, this, name, mod);
    mod.functions.push(fn);
    return handle<GpuFunction>(fn);
  }

  moduleUnload(m: GpuModule): void {
    const mod = this.unwrap(m, CuModule, 'module', 'moduleUnload');
    this.enter();
    mod.alive = false;
    for (const fn of mod.functions) fn.alive = false;
    this.call('cuModuleUnload', mod.ptr);
  }

  startsEarly(f: GpuFunction): boolean {
    return this.unwrap(f, CuFunction, 'function', 'startsEarly').gridDep;
  }

  /** offsets and sizes from cuFuncGetParamInfo (CUDA 12.4+); the driver cannot tell a pointer
   *  from an 8-byte value, so every parameter is reported as 'value' (kernels.ts takes kinds
   *  from the PTX) */
  functionParams(f: GpuFunction): KernelParam[] | null {
    const fn = this.unwrap(f, CuFunction, 'function', 'functionParams');
    const query = this.f.cuFuncGetParamInfo;
    if (!query) return null;
    this.enter();
    const off = new BigUint64Array(1);
    const size = new BigUint64Array(1);
    const params: KernelParam[] = [];
    for (let i = 0; ; i++) {
      const code = query(fn.ptr, i, off, size);
      // an index past the last parameter is the end of the list
      if (code === CUDA_CONST.CUDA_ERROR_INVALID_VALUE) break;
      if (code === CUDA_CONST.CUDA_ERROR_NOT_SUPPORTED) return null;
      if (code !== CUDA_CONST.CUDA_SUCCESS) {
        throw cudaError(
          code,
          `cuFuncGetParamInfo(${fn.name}, ${i}) on ${this.label}`,
          'cuFuncGetParamInfo',
          this.d.errorText,
        );
      }
      params.push({ offset: Number(off[0]!), size: Number(size[0]!), kind: 'value' });
    }
    return params;
  }

  /** lets `fn` launch with `bytes` of dynamic shared memory (once a function and size; not a
   *  stream operation, so allowed while a stream captures) */
  private allowShared(fn: CuFunction, bytes: number): void {
    const c = CUDA_CONST;
    const code = this.f.cuFuncSetAttribute(fn.ptr, c.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, bytes);
    if (code !== c.CUDA_SUCCESS) {
      throw cudaError(
        code,
        `cuFuncSetAttribute(${fn.name}, MAX_DYNAMIC_SHARED_SIZE_BYTES, ${bytes}) on ${this.label}: ` +
          `a block of this device may take at most ${this.info.maxSharedMemoryPerBlockOptin} bytes of shared memory`,
        'cuFuncSetAttribute',
        this.d.errorText,
      );
    }
    fn.sharedAllowed = bytes;
  }

  launch(
    f: GpuFunction,
    grid: readonly [number, number, number],
    block: readonly [number, number, number],
    sharedBytes: number,
    stream: GpuStream,
    args: Uint8Array,
  ): void {
    const fn = this.unwrap(f, CuFunction, 'function', 'launch');
    const w = this.unwrap(stream, CuStream, 'stream', 'launch'),
      s = w.ptr;
    checkLaunchDims(fn.name, grid, block, sharedBytes);
    this.enter();
    if (sharedBytes > SHARED_DEFAULT_MAX && sharedBytes > fn.sharedAllowed) this.allowShared(fn, sharedBytes);
    this.launchBlock.pack(args);
    // eager work after a kernel of ours only: a captured graph keeps ordinary edges (the replayed
    // 1B decode step measured 3-4% slower with programmatic ones, H200)
    // (a function's gridDep is only ever set where this.gridDep exists: moduleLoad)
    const early = fn.gridDep && w.ownTail && !this.capture.has(s);
    if (this.gridDep) w.ownTail = true;
    const code = early
      ? this.f.cuLaunchKernelEx!(this.gridDep!.set(grid, block, sharedBytes, s), fn.ptr, null, this.launchBlock.extra)
      : this.f.cuLaunchKernel(
          fn.ptr,
          grid[0],
          grid[1],
          grid[2],
          block[0],
          block[1],
          block[2],
          sharedBytes,
          s,
          null,
          this.launchBlock.extra,
        );
    if (code !== CUDA_CONST.CUDA_SUCCESS) {
      const call = early ? 'cuLaunchKernelEx' : 'cuLaunchKernel';
      throw cudaError(
        code,
        `${call}(${fn.name}, grid [${grid.join(', ')}], block [${block.join(', ')}], ` +
          `shared ${sharedBytes}, stream 0x${s.toString(16)}, args ${args.length} bytes) on ${this.label}`,
        call,
        this.d.errorText,
      );
    }
  }

  // ---- capture and replay ---------------------------------------------------------------------
  captureBegin(s: GpuStream): void {
    const p = this.foreignStream(s, 'captureBegin');
    this.enter();
    // relaxed mode: an unsafe call made while we capture (a cuMemAlloc when the caching allocator
    // grows, another thread's work) is not an error; global and thread-local mode would fail it
    // and so break the capture. Calls that would wait on the capturing stream (synchronizing it,
    // synchronous copies on the legacy NULL stream, which our blocking streams order against)
    // still fail and invalidate it, in every mode.
    this.call('cuStreamBeginCapture_v2', p, CUDA_CONST.CU_STREAM_CAPTURE_MODE_RELAXED);
    this.capture.begin(p);
  }

  captureEnd(s: GpuStream): GpuGraphExec {
    const p = this.foreignStream(s, 'captureEnd');
    this.enter();
    this.out[0] = 0n;
    const code = this.f.cuStreamEndCapture(p, this.out);
    const graph = this.out[0]!;
    const cause = this.capture.end(p);
    if (code !== CUDA_CONST.CUDA_SUCCESS) {
      if (graph !== 0n) this.f.cuGraphDestroy(graph);
      const what = `cuStreamEndCapture(0x${p.toString(16)}) failed: ${this.d.errorText(code)}`;
      const msg =
        code === CUDA_CONST.CUDA_ERROR_STREAM_CAPTURE_INVALIDATED || cause !== null
          ? invalidatedText(this.label, cause, what)
          : `captureEnd on ${this.label}: ${what}`;
      throw new GpuError(msg, code, 'cuStreamEndCapture');
    }
    // the exec holds its own copy of the nodes: the graph goes at once, whatever instantiation did
    this.out[0] = 0n;
    const inst = this.f.cuGraphInstantiateWithFlags(this.out, graph, 0);
    const exec = this.out[0]!;
    const destroyed = this.f.cuGraphDestroy(graph);
    if (inst !== CUDA_CONST.CUDA_SUCCESS) {
      throw cudaError(
        inst,
        `captureEnd: cuGraphInstantiateWithFlags(0x${graph.toString(16)}, 0) on ${this.label}`,
        'cuGraphInstantiateWithFlags',
        this.d.errorText,
      );
    }
    if (destroyed !== CUDA_CONST.CUDA_SUCCESS) {
      this.f.cuGraphExecDestroy(exec);
      throw cudaError(
        destroyed,
        `captureEnd: cuGraphDestroy(0x${graph.toString(16)}) on ${this.label}`,
        'cuGraphDestroy',
        this.d.errorText,
      );
    }
    return handle<GpuGraphExec>(new CuGraphExec(exec, this, 'graph exec'));
  }

  isCapturing(s: GpuStream): boolean {
    const p = this.streamPtr(s, 'isCapturing');
    this.enter();
    this.outInt[0] = CUDA_CONST.CU_STREAM_CAPTURE_STATUS_NONE;
    this.call('cuStreamIsCapturing', p, this.outInt);
    // an invalidated capture is still in progress: only captureEnd ends it
    return this.outInt[0] !== CUDA_CONST.CU_STREAM_CAPTURE_STATUS_NONE;
  }

  graphLaunch(g: GpuGraphExec, s: GpuStream): void {
    const exec = this.unwrap(g, CuGraphExec, 'graph exec', 'graphLaunch');
    const p = this.foreignStream(s, 'graphLaunch');
    this.enter();
    this.call('cuGraphLaunch', exec.ptr, p);
  }

  graphExecDestroy(g: GpuGraphExec): void {
    const exec = this.unwrap(g, CuGraphExec, 'graph exec', 'graphExecDestroy');
    this.enter();
    exec.alive = false;
    this.call('cuGraphExecDestroy', exec.ptr);
  }

  // ---- libraries ------------------------------------------------------------------------------
  blas(): BlasApi {
    this.blasApi ??= new CublasApi({ label: this.label, enter: () => this.enter() }, (s) =>
      this.foreignStream(s as GpuStream, 'gemmStridedBatched'),
    );
    return this.blasApi;
  }

  // cuDNN's convolution, pooling and batch-norm calls launch on the given stream and take our
  // workspace: recorded and replayed they match eager calls (test/gpu/graph-train.test.ts)
  readonly dnnCapturable = true;
  dnn(): DnnApi {
    this.dnnApi ??= new CudnnApi({
      label: this.label,
      enter: () => this.enter(),
      streamPtr: (s) => this.foreignStream(s, 'dnn'),
      malloc: (b) => this.malloc(b),
      free: (p) => this.free(p),
      streamSynchronize: (s) => this.streamSynchronize(s),
      // the runtime's own record, not a driver query: asked on every convolution call
      capturing: () => this.capture.capturing,
    });
    return this.dnnApi;
  }

  /** releases everything this runtime made and its hold on the primary context (tests, shutdown) */
  close(): void {
    if (this.closed) return;
    this.synchronize();
    this.dnnApi?.destroy();
    this.blasApi?.destroy();
    const s = this.defaultStream as unknown as CuStream;
    s.alive = false;
    this.call('cuStreamDestroy_v2', s.ptr);
    this.launchBlock.dispose();
    this.gridDep?.dispose();
    this.call('cuDevicePrimaryCtxRelease_v2', this.dev);
    if (currentContext === this.ctx) currentContext = null;
    this.closed = true;
    runtimes.delete(this.index);
  }
}

function describe(h: unknown): string {
  if (h === null || h === undefined) return String(h);
  if (typeof h === 'object') return (h as object).constructor?.name ?? 'object';
  return typeof h;
}

function fmt(args: readonly unknown[]): string {
  return args
    .map((a) => {
      if (typeof a === 'bigint') return `0x${a.toString(16)}`;
      if (a === null) return 'NULL';
      if (ArrayBuffer.isView(a)) return `<${a.byteLength}-byte host buffer>`;
      return String(a);
    })
    .join(', ');
}

const runtimes = new Map<number, CudaRuntime>();

/** the runtime of CUDA device `index` (one per device per process) */
export function openCuda(index: number): GpuRuntime {
  const have = runtimes.get(index);
  if (have) return have;
  const { count, reason } = cudaProbe();
  if (!Number.isInteger(index) || index < 0 || index >= count) {
    throw new GpuError(
      `openCuda(${index}): device index out of range, ${count} CUDA device(s) visible` + (reason ? ` (${reason})` : ''),
      CUDA_CONST.CUDA_ERROR_INVALID_DEVICE,
      'openCuda',
    );
  }
  const rt = new CudaRuntime(index);
  runtimes.set(index, rt);
  return rt;
}

/** closes the runtime of device `index` if it is open (its handles become invalid) */
export function closeCuda(index: number): void {
  runtimes.get(index)?.close();
}
