// The ROCm implementation of the GPU runtime interface, the twin of cuda/runtime.ts: HIP for
// memory, copies, streams, events, modules and launches; rocBLAS and MIOpen on first use. The
// device is made current before every call that needs it (the current device is per host
// thread; all our calls come from the JS thread). Handles cross the interface as branded
// bigints; nothing here synchronizes unless the method says so.
import koffi from 'koffi';
import { GpuError, LibraryNotFoundError, OutOfMemoryError, ShapeError } from '../../core/errors.ts';
import { HIP_CONST, loadHip, type Hip, type HipFns } from '../../ffi/hip.ts';
import { fmtArgs, ptrOf } from '../../ffi/native.ts';
import { CaptureLog, invalidatedText } from '../capture-log.ts';
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
import { LaunchBlock, checkLaunchDims } from '../launch-block.ts';
import { readDeviceInfo } from './device-info.ts';
import { createMiopenDnn } from './miopen.ts';
import { createRocblasBlas } from './rocblas.ts';

export { archKey } from './device-info.ts';

export interface RocmProbe {
  readonly count: number;
  /** why there is no device: a missing library or the runtime's own error, empty when count > 0 */
  readonly reason: string;
  /** the HIP status of hipGetDeviceCount when the library loaded */
  readonly code: number | null;
}

/** never throws: a missing library or a runtime without devices is a count of 0 with a reason */
export function rocmProbe(): RocmProbe {
  let h: Hip;
  try {
    h = loadHip();
  } catch (e) {
    if (e instanceof LibraryNotFoundError) return { count: 0, reason: e.message, code: null };
    return { count: 0, reason: `loading HIP failed: ${(e as Error).message}`, code: null };
  }
  const init = h.fn.hipInit(0);
  const out: [number] = [0];
  const code = h.fn.hipGetDeviceCount(out);
  if (code !== HIP_CONST.hipSuccess) {
    const initText = init !== HIP_CONST.hipSuccess ? `hipInit: ${h.errorText(init)}; ` : '';
    return { count: 0, reason: `${initText}hipGetDeviceCount: ${h.errorText(code)} (${h.loaded.path})`, code };
  }
  return { count: out[0], reason: out[0] > 0 ? '' : `no ROCm device (${h.loaded.path})`, code };
}

export function rocmDeviceCount(): number {
  return rocmProbe().count;
}

/** HIP's `extra` markers: the end marker is 0x03, unlike CUDA's 0x00 */
export const HIP_LAUNCH_MARKERS = {
  pointer: HIP_CONST.HIP_LAUNCH_PARAM_BUFFER_POINTER,
  size: HIP_CONST.HIP_LAUNCH_PARAM_BUFFER_SIZE,
  end: HIP_CONST.HIP_LAUNCH_PARAM_END,
} as const;

/** room for hipGraphInstantiate's error log (ROCm 6.4 writes none, CUDA's twin does) */
const GRAPH_LOG_BYTES = 2048;

// the current device is per host thread; all our calls come from the JS thread
let currentDevice = -1;

const asHandle = <T>(p: bigint): T => p as unknown as T;
const raw = (h: GpuStream | GpuEvent | GpuModule | GpuFunction | GpuGraphExec): bigint => h as unknown as bigint;
const bytesOf = (v: ArrayBufferView): Uint8Array => new Uint8Array(v.buffer, v.byteOffset, v.byteLength);

class RocmRuntime implements GpuRuntime {
  readonly vendor = 'rocm' as const;
  readonly info: DeviceInfo;
  readonly defaultStream: GpuStream;
  private readonly capture = new CaptureLog(
    HIP_CONST.hipErrorStreamCaptureUnsupported,
    HIP_CONST.hipErrorStreamCaptureWrongThread,
  );
  /** the native address of each live buffer from hostAlloc */
  private readonly pinned = new WeakMap<PinnedBuffer, bigint>();
  /** each loaded module's code object, by module */
  private readonly images = new Map<bigint, Uint8Array>();
  private readonly launchBlock: LaunchBlock;
  private blasApi: (BlasApi & { dispose(): void }) | null = null;
  private dnnApi: (DnnApi & { dispose(): void }) | null = null;

  /** `h`: HIP, initialized, with `index` among its devices (openRocm checks both) */
  constructor(
    private readonly h: Hip,
    readonly index: number,
  ) {
    this.activate();
    this.info = readDeviceInfo(h, index);
    const out: [bigint | null] = [null];
    this.call('hipStreamCreate', out);
    this.defaultStream = asHandle<GpuStream>(ptrOf(out[0]));
    this.launchBlock = new LaunchBlock(HIP_LAUNCH_MARKERS);
  }

  // ---- plumbing -------------------------------------------------------------------------------
  /** every HIP call of this runtime checks its status here, so a failure that breaks a capture in
   *  progress is remembered for captureEnd's error */
  private check(code: number, name: string, args: readonly unknown[]): void {
    if (code === HIP_CONST.hipSuccess) return;
    try {
      this.h.check(code, name, args);
    } catch (e) {
      if (this.capture.capturing && e instanceof GpuError) this.capture.noteFailure(code, e.message);
      throw e;
    }
  }

  private call<K extends keyof HipFns>(name: K, ...args: Parameters<HipFns[K]>): void {
    const f = this.h.fn[name] as ((...a: Parameters<HipFns[K]>) => number) | undefined;
    if (!f) throw new GpuError(`${name} is not exported by ${this.h.loaded.path}`, -1, name);
    this.check(f(...args), name, args);
  }

  /** makes this device current on the calling thread (a no-op when it is) */
  private activate(): void {
    if (currentDevice === this.index) return;
    this.call('hipSetDevice', this.index);
    currentDevice = this.index;
  }

  private pinnedPtr(b: PinnedBuffer, call: string, off: number, bytes: number): bigint {
    const p = this.pinned.get(b);
    if (p === undefined)
      throw new GpuError(`${call}: host buffer is not pinned memory from hostAlloc on rocm:${this.index}`, -1, call);
    if (!Number.isInteger(off) || !Number.isInteger(bytes) || off < 0 || bytes < 0 || off + bytes > b.size) {
      throw new ShapeError(`${call}: range [${off}, ${off + bytes}) is outside the pinned buffer of ${b.size} bytes`);
    }
    return p + BigInt(off);
  }

  nativeStream(s: GpuStream): bigint {
    return raw(s);
  }

  callForeign<T>(fn: () => T): T {
    this.activate();
    try {
      return fn();
    } finally {
      currentDevice = -1;
    }
  }

  // ---- memory ---------------------------------------------------------------------------------
  memGetInfo(): { free: number; total: number } {
    this.activate();
    const free: [number] = [0],
      total: [number] = [0];
    this.call('hipMemGetInfo', free, total);
    return { free: free[0], total: total[0] };
  }

  malloc(bytes: number): DevicePtr {
    if (!Number.isInteger(bytes) || bytes < 0)
      throw new ShapeError(`malloc(${bytes}): size must be a non-negative integer`);
    this.activate();
    const out: [bigint | null] = [null];
    const code = this.h.fn.hipMalloc(out, Math.max(bytes, 1));
    if (code === HIP_CONST.hipErrorOutOfMemory) {
      const m = this.memGetInfo();
      throw new OutOfMemoryError(
        `hipMalloc(${bytes}) on rocm:${this.index} (${this.info.name}) failed: ${this.h.errorText(code)}; ` +
          `${m.free} of ${m.total} bytes free`,
        code,
        'hipMalloc',
      );
    }
    this.check(code, 'hipMalloc', [bytes]);
    return asDevicePtr(ptrOf(out[0]));
  }

  free(ptr: DevicePtr): void {
    this.activate();
    this.call('hipFree', ptr);
  }

  hostAlloc(bytes: number): PinnedBuffer {
    if (!Number.isInteger(bytes) || bytes < 0)
      throw new ShapeError(`hostAlloc(${bytes}): size must be a non-negative integer`);
    this.activate();
    const out: [bigint | null] = [null];
    const code = this.h.fn.hipHostMalloc(out, Math.max(bytes, 1), HIP_CONST.hipHostMallocDefault);
    if (code === HIP_CONST.hipErrorOutOfMemory) {
      throw new OutOfMemoryError(`hipHostMalloc(${bytes}) failed: ${this.h.errorText(code)}`, code, 'hipHostMalloc');
    }
    this.check(code, 'hipHostMalloc', [bytes, HIP_CONST.hipHostMallocDefault]);
    const p = ptrOf(out[0]);
    const buf: PinnedBuffer = { size: bytes, bytes: new Uint8Array(koffi.view(p, Math.max(bytes, 1)), 0, bytes) };
    this.pinned.set(buf, p);
    return buf;
  }

  hostFree(buf: PinnedBuffer): void {
    const p = this.pinned.get(buf);
    if (p === undefined)
      throw new GpuError('hostFree: buffer is not live pinned memory from hostAlloc', -1, 'hostFree');
    this.pinned.delete(buf);
    this.call('hipHostFree', p);
  }

  // ---- copies ---------------------------------------------------------------------------------
  copyHtoD(dst: DevicePtr, src: ArrayBufferView): void {
    if (src.byteLength === 0) return;
    this.activate();
    this.call('hipMemcpyHtoD', dst, bytesOf(src), src.byteLength);
  }

  copyDtoH(dst: ArrayBufferView, src: DevicePtr): void {
    if (dst.byteLength === 0) return;
    this.activate();
    this.call('hipMemcpyDtoH', bytesOf(dst), src, dst.byteLength);
  }

  copyHtoDAsync(dst: DevicePtr, src: PinnedBuffer, srcOffset: number, bytes: number, stream: GpuStream): void {
    const p = this.pinnedPtr(src, 'copyHtoDAsync', srcOffset, bytes);
    if (bytes === 0) return;
    this.activate();
    this.call('hipMemcpyHtoDAsync', dst, p, bytes, raw(stream));
  }

  copyDtoHAsync(dst: PinnedBuffer, dstOffset: number, src: DevicePtr, bytes: number, stream: GpuStream): void {
    const p = this.pinnedPtr(dst, 'copyDtoHAsync', dstOffset, bytes);
    if (bytes === 0) return;
    this.activate();
    this.call('hipMemcpyDtoHAsync', p, src, bytes, raw(stream));
  }

  copyDtoDAsync(dst: DevicePtr, src: DevicePtr, bytes: number, stream: GpuStream): void {
    if (bytes === 0) return;
    this.activate();
    this.call('hipMemcpyDtoDAsync', dst, src, bytes, raw(stream));
  }

  memsetAsync(dst: DevicePtr, byte: number, bytes: number, stream: GpuStream): void {
    if (bytes === 0) return;
    this.activate();
    this.call('hipMemsetD8Async', dst, byte & 0xff, bytes, raw(stream));
  }

  // ---- streams and events ---------------------------------------------------------------------
  streamCreate(): GpuStream {
    this.activate();
    const out: [bigint | null] = [null];
    this.call('hipStreamCreate', out);
    return asHandle<GpuStream>(ptrOf(out[0]));
  }

  streamDestroy(s: GpuStream): void {
    if (s === this.defaultStream)
      throw new GpuError(
        `streamDestroy: rocm:${this.index}'s default stream is owned by the runtime`,
        -1,
        'hipStreamDestroy',
      );
    this.activate();
    this.call('hipStreamDestroy', raw(s));
  }

  streamSynchronize(s: GpuStream): void {
    this.activate();
    this.call('hipStreamSynchronize', raw(s));
  }

  streamWaitEvent(s: GpuStream, e: GpuEvent): void {
    this.activate();
    this.call('hipStreamWaitEvent', raw(s), raw(e), 0);
  }

  eventCreate(timing = false): GpuEvent {
    this.activate();
    const out: [bigint | null] = [null];
    this.call('hipEventCreateWithFlags', out, timing ? HIP_CONST.hipEventDefault : HIP_CONST.hipEventDisableTiming);
    return asHandle<GpuEvent>(ptrOf(out[0]));
  }

  eventRecord(e: GpuEvent, s: GpuStream): void {
    this.activate();
    this.call('hipEventRecord', raw(e), raw(s));
  }

  eventSynchronize(e: GpuEvent): void {
    this.call('hipEventSynchronize', raw(e));
  }

  eventQuery(e: GpuEvent): boolean {
    const code = this.h.fn.hipEventQuery(raw(e));
    if (code === HIP_CONST.hipErrorNotReady) return false;
    this.check(code, 'hipEventQuery', [raw(e)]);
    return true;
  }

  eventElapsedMs(start: GpuEvent, end: GpuEvent): number {
    const ms: [number] = [0];
    this.call('hipEventElapsedTime', ms, raw(start), raw(end));
    return ms[0];
  }

  eventDestroy(e: GpuEvent): void {
    this.call('hipEventDestroy', raw(e));
  }

  synchronize(): void {
    this.activate();
    this.call('hipDeviceSynchronize');
  }

  // ---- modules and launches -------------------------------------------------------------------
  moduleLoad(image: Uint8Array): GpuModule {
    this.activate();
    const out: [bigint | null] = [null];
    const code = this.h.fn.hipModuleLoadData(out, image);
    this.check(code, 'hipModuleLoadData', [`<code object ${image.length} bytes>`, `arch ${this.info.archFull}`]);
    const m = ptrOf(out[0]);
    // keep the image alive as long as the module, whatever the runtime does with the pointer
    this.images.set(m, image);
    return asHandle<GpuModule>(m);
  }

  moduleGetFunction(m: GpuModule, name: string): GpuFunction {
    this.activate();
    const out: [bigint | null] = [null];
    this.call('hipModuleGetFunction', out, raw(m), name);
    return asHandle<GpuFunction>(ptrOf(out[0]));
  }

  moduleUnload(m: GpuModule): void {
    this.activate();
    this.call('hipModuleUnload', raw(m));
    this.images.delete(raw(m));
  }

  /** always null: the code object's metadata says the parameter layout (kernels.ts) */
  functionParams(): KernelParam[] | null {
    return null;
  }

  startsEarly(): boolean {
    return false;
  }

  launch(
    f: GpuFunction,
    grid: readonly [number, number, number],
    block: readonly [number, number, number],
    sharedBytes: number,
    stream: GpuStream,
    args: Uint8Array,
  ): void {
    checkLaunchDims('hipModuleLaunchKernel', grid, block, sharedBytes);
    this.activate();
    this.launchBlock.pack(args);
    const code = this.h.fn.hipModuleLaunchKernel(
      raw(f),
      grid[0],
      grid[1],
      grid[2],
      block[0],
      block[1],
      block[2],
      sharedBytes,
      raw(stream),
      null,
      this.launchBlock.extra,
    );
    this.check(code, 'hipModuleLaunchKernel', [
      raw(f),
      `grid [${grid.join(', ')}]`,
      `block [${block.join(', ')}]`,
      `shared ${sharedBytes}`,
      raw(stream),
      `args ${args.length} bytes`,
    ]);
  }

  // ---- capture and replay ---------------------------------------------------------------------
  captureBegin(s: GpuStream): void {
    this.activate();
    // relaxed mode: an unsafe call made while we capture (a hipMalloc when the caching allocator
    // grows, another thread's work) is not an error; global and thread-local mode would fail
    // it and so break the capture. Calls that would wait on the capturing stream still fail.
    this.call('hipStreamBeginCapture', raw(s), HIP_CONST.hipStreamCaptureModeRelaxed);
    this.capture.begin(raw(s));
  }

  captureEnd(s: GpuStream): GpuGraphExec {
    this.activate();
    const out: [bigint | null] = [null];
    const code = this.h.fn.hipStreamEndCapture(raw(s), out);
    const cause = this.capture.end(raw(s));
    const graph = ptrOf(out[0]);
    if (code !== HIP_CONST.hipSuccess) {
      if (graph !== 0n) this.h.fn.hipGraphDestroy(graph);
      const what = `hipStreamEndCapture(${fmtArgs([raw(s)])}) failed: ${this.h.errorText(code)}`;
      const msg =
        code === HIP_CONST.hipErrorStreamCaptureInvalidated || cause !== null
          ? invalidatedText(`rocm:${this.index}`, cause, what)
          : `captureEnd on rocm:${this.index}: ${what}`;
      throw new GpuError(msg, code, 'hipStreamEndCapture');
    }
    return this.instantiate(graph);
  }

  /** instantiates a captured graph and destroys it: the exec holds its own copy of the nodes */
  private instantiate(graph: bigint): GpuGraphExec {
    const out: [bigint | null] = [null],
      errNode: [bigint | null] = [null];
    const log = new Uint8Array(GRAPH_LOG_BYTES);
    const code = this.h.fn.hipGraphInstantiate(out, graph, errNode, log, log.length);
    const destroyed = this.h.fn.hipGraphDestroy(graph);
    if (code !== HIP_CONST.hipSuccess) {
      const end = log.indexOf(0);
      const text = new TextDecoder().decode(log.subarray(0, end < 0 ? log.length : end)).trim();
      throw new GpuError(
        `captureEnd on rocm:${this.index}: hipGraphInstantiate(${fmtArgs([graph])}) failed: ${this.h.errorText(code)}` +
          (text ? ` [log: ${text}]` : ''),
        code,
        'hipGraphInstantiate',
      );
    }
    const exec = ptrOf(out[0]);
    if (destroyed !== HIP_CONST.hipSuccess) {
      this.h.fn.hipGraphExecDestroy(exec);
      this.check(destroyed, 'hipGraphDestroy', [graph]);
    }
    return asHandle<GpuGraphExec>(exec);
  }

  isCapturing(s: GpuStream): boolean {
    this.activate();
    const status: [number] = [HIP_CONST.hipStreamCaptureStatusNone];
    this.call('hipStreamIsCapturing', raw(s), status);
    // an invalidated capture is still in progress: only captureEnd ends it
    return status[0] !== HIP_CONST.hipStreamCaptureStatusNone;
  }

  graphLaunch(g: GpuGraphExec, s: GpuStream): void {
    this.activate();
    this.call('hipGraphLaunch', raw(g), raw(s));
  }

  graphExecDestroy(g: GpuGraphExec): void {
    this.activate();
    this.call('hipGraphExecDestroy', raw(g));
  }

  // ---- libraries ------------------------------------------------------------------------------
  blas(): BlasApi {
    this.blasApi ??= createRocblasBlas({ device: this.index, activate: () => this.activate(), streamPtr: raw });
    return this.blasApi;
  }

  // MIOpen inside a HIP stream capture has never run here (no AMD GPU): refused, not guessed
  readonly dnnCapturable = false;
  dnn(): DnnApi {
    this.dnnApi ??= createMiopenDnn({
      device: this.index,
      activate: () => this.activate(),
      malloc: (bytes) => this.malloc(bytes),
      free: (p) => this.free(p),
      streamPtr: raw,
    });
    return this.dnnApi;
  }
}

/** a runtime of ROCm device `index`: each call opens another, with its own default stream */
export function openRocm(index: number): GpuRuntime {
  const h = loadHip();
  const init = h.fn.hipInit(0);
  const count: [number] = [0];
  const countCode = h.fn.hipGetDeviceCount(count);
  if (countCode !== HIP_CONST.hipSuccess) {
    const initText = init !== HIP_CONST.hipSuccess ? `hipInit: ${h.errorText(init)}; ` : '';
    throw new GpuError(
      `openRocm(${index}): ${initText}hipGetDeviceCount: ${h.errorText(countCode)} (${h.loaded.path})`,
      countCode,
      'hipGetDeviceCount',
    );
  }
  if (!Number.isInteger(index) || index < 0 || index >= count[0]) {
    throw new GpuError(
      `openRocm(${index}): device index out of range, ${count[0]} ROCm device(s) visible`,
      HIP_CONST.hipErrorInvalidDevice,
      'openRocm',
    );
  }
  return new RocmRuntime(h, index);
}
