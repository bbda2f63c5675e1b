// The ROCm implementation of the GPU runtime interface: HIP for memory, copies, streams, events,
// modules and launches; rocBLAS and MIOpen on first use. Handles cross the interface as
// branded bigints; nothing here synchronizes unless the method says so.
import koffi from 'koffi';
import { LaunchBlock, checkLaunchDims } from '../launch-block.ts';
import { GpuError, LibraryNotFoundError, OutOfMemoryError, ShapeError } from '../../core/errors.ts';
import { HIP_CONST, HIP_NAME_LEN, HIP_STRUCTS, hipCall, loadHip, type Hip, type HipFns } from '../../ffi/hip.ts';
import { CaptureLog, invalidatedText } from '../capture-log.ts';
import { createMiopenDnn } from '../../ffi/miopen.ts';
import { fmtArgs, ptrOf, readCString } from '../../ffi/native.ts';
import { createRocblasBlas } from '../../ffi/rocblas.ts';
import {
  asDevicePtr,
  type BlasApi,
  type DevicePtr,
  type DeviceInfo,
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

/** HIP_VERSION-style integer (major * 1e7 + minor * 1e5 + patch) as text */
function fmtHipVersion(v: number): string {
  return `${Math.floor(v / 1e7)}.${Math.floor(v / 1e5) % 100}.${v % 1e5}`;
}

/** 'gfx942:sramecc+:xnack-' -> 'gfx942': code objects are keyed by the processor alone */
export function archKey(archFull: string): string {
  return archFull.split(':')[0]!.trim();
}

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

// the current device is per host thread; all our calls come from the JS thread
let currentDevice = -1;

const asHandle = <T>(p: bigint): T => p as unknown as T;
const raw = (h: GpuStream | GpuEvent | GpuModule | GpuFunction | GpuGraphExec): bigint => h as unknown as bigint;

function readDeviceInfo(h: Hip, index: number): DeviceInfo {
  const rt: [number] = [0],
    drv: [number] = [0];
  hipCall(h, 'hipRuntimeGetVersion', rt);
  hipCall(h, 'hipDriverGetVersion', drv);
  const attr = (id: number, name: string): number => {
    const out: [number] = [0];
    h.check(h.fn.hipDeviceGetAttribute(out, id, index), 'hipDeviceGetAttribute', [name, index]);
    return out[0];
  };
  // ROCm 6 changed hipDeviceProp_t; the runtime's major version says which symbol fills which layout
  const r0600 = rt[0] >= 60000000 && h.fn.hipGetDevicePropertiesR0600 !== undefined;
  const layout = r0600 ? HIP_STRUCTS.hipDeviceProp_tR0600 : HIP_STRUCTS.hipDeviceProp_tR0000;
  const prop = koffi.alloc('uint8_t', layout.size + 256) as bigint;
  let name: string, archFull: string;
  try {
    if (r0600) hipCall(h, 'hipGetDevicePropertiesR0600', prop, index);
    else hipCall(h, 'hipGetDeviceProperties', prop, index);
    name = readCString(prop, layout.fields.name, HIP_NAME_LEN);
    archFull = readCString(prop, layout.fields.gcnArchName, HIP_NAME_LEN);
  } finally {
    koffi.free(prop);
  }
  const total: [number] = [0];
  hipCall(h, 'hipDeviceTotalMem', total, index);
  const lds = attr(HIP_CONST.hipDeviceAttributeMaxSharedMemoryPerBlock, 'hipDeviceAttributeMaxSharedMemoryPerBlock');
  return {
    vendor: 'rocm',
    index,
    name,
    arch: archKey(archFull),
    archFull,
    totalMemory: total[0],
    multiprocessors: attr(HIP_CONST.hipDeviceAttributeMultiprocessorCount, 'hipDeviceAttributeMultiprocessorCount'),
    warpSize: attr(HIP_CONST.hipDeviceAttributeWarpSize, 'hipDeviceAttributeWarpSize'),
    maxThreadsPerBlock: attr(HIP_CONST.hipDeviceAttributeMaxThreadsPerBlock, 'hipDeviceAttributeMaxThreadsPerBlock'),
    maxSharedMemoryPerBlock: lds,
    maxSharedMemoryPerBlockOptin: lds,
    maxGridDim: [
      attr(HIP_CONST.hipDeviceAttributeMaxGridDimX, 'hipDeviceAttributeMaxGridDimX'),
      attr(HIP_CONST.hipDeviceAttributeMaxGridDimY, 'hipDeviceAttributeMaxGridDimY'),
      attr(HIP_CONST.hipDeviceAttributeMaxGridDimZ, 'hipDeviceAttributeMaxGridDimZ'),
    ],
    runtimeVersion: fmtHipVersion(rt[0]),
    driverVersion: fmtHipVersion(drv[0]),
  };
}

/** room for hipGraphInstantiate's error log (ROCm 6.4 writes none, CUDA's twin does) */
const GRAPH_LOG_BYTES = 2048;

/** HIP's `extra` markers: the end marker is 0x03, unlike CUDA's 0x00 */
export const HIP_LAUNCH_MARKERS = {
  pointer: HIP_CONST.HIP_LAUNCH_PARAM_BUFFER_POINTER,
  size: HIP_CONST.HIP_LAUNCH_PARAM_BUFFER_SIZE,
  end: HIP_CONST.HIP_LAUNCH_PARAM_END,
} as const;

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
  const capture = new CaptureLog(
    HIP_CONST.hipErrorStreamCaptureUnsupported,
    HIP_CONST.hipErrorStreamCaptureWrongThread,
  );
  // every HIP call of this runtime checks its status here, so a failure that breaks a capture in
  // progress is remembered for captureEnd's error
  const check = (code: number, name: string, args: readonly unknown[]): void => {
    if (code === HIP_CONST.hipSuccess) return;
    try {
      h.check(code, name, args);
    } catch (e) {
      if (capture.capturing && e instanceof GpuError) capture.noteFailure(code, e.message);
      throw e;
    }
  };
  const call = <K extends keyof HipFns>(name: K, ...args: Parameters<HipFns[K]>): void => {
    const f = h.fn[name] as ((...a: Parameters<HipFns[K]>) => number) | undefined;
    if (!f) throw new GpuError(`${name} is not exported by ${h.loaded.path}`, -1, name);
    check(f(...args), name, args);
  };
  const activate = (): void => {
    if (currentDevice === index) return;
    call('hipSetDevice', index);
    currentDevice = index;
  };
  activate();
  const info = readDeviceInfo(h, index);
  const sOut: [bigint | null] = [null];
  call('hipStreamCreate', sOut);
  const defaultStream = asHandle<GpuStream>(ptrOf(sOut[0]));
  const pinned = new WeakMap<PinnedBuffer, bigint>();
  const images = new Map<bigint, Uint8Array>();
  const launchBlock = new LaunchBlock(HIP_LAUNCH_MARKERS);
  let blas: (BlasApi & { dispose(): void }) | null = null;
  let dnn: (DnnApi & { dispose(): void }) | null = null;

  const memGetInfo = (): { free: number; total: number } => {
    activate();
    const free: [number] = [0],
      total: [number] = [0];
    call('hipMemGetInfo', free, total);
    return { free: free[0], total: total[0] };
  };

  const malloc = (bytes: number): DevicePtr => {
    if (!Number.isInteger(bytes) || bytes < 0)
      throw new ShapeError(`malloc(${bytes}): size must be a non-negative integer`);
    activate();
    const out: [bigint | null] = [null];
    const code = h.fn.hipMalloc(out, Math.max(bytes, 1));
    if (code === HIP_CONST.hipErrorOutOfMemory) {
      const m = memGetInfo();
      throw new OutOfMemoryError(
        `hipMalloc(${bytes}) on rocm:${index} (${info.name}) failed: ${h.errorText(code)}; ` +
          `${m.free} of ${m.total} bytes free`,
        code,
        'hipMalloc',
      );
    }
    check(code, 'hipMalloc', [bytes]);
    return asDevicePtr(ptrOf(out[0]));
  };

  const pinnedPtr = (b: PinnedBuffer, call: string, off: number, bytes: number): bigint => {
    const p = pinned.get(b);
    if (p === undefined)
      throw new GpuError(`${call}: host buffer is not pinned memory from hostAlloc on rocm:${index}`, -1, call);
    if (!Number.isInteger(off) || !Number.isInteger(bytes) || off < 0 || bytes < 0 || off + bytes > b.size) {
      throw new ShapeError(`${call}: range [${off}, ${off + bytes}) is outside the pinned buffer of ${b.size} bytes`);
    }
    return p + BigInt(off);
  };

  const bytesOf = (v: ArrayBufferView): Uint8Array => new Uint8Array(v.buffer, v.byteOffset, v.byteLength);

  /** instantiates a captured graph and destroys it: the exec holds its own copy of the nodes */
  const instantiate = (graph: bigint): GpuGraphExec => {
    const out: [bigint | null] = [null],
      errNode: [bigint | null] = [null];
    const log = new Uint8Array(GRAPH_LOG_BYTES);
    const code = h.fn.hipGraphInstantiate(out, graph, errNode, log, log.length);
    const destroyed = h.fn.hipGraphDestroy(graph);
    if (code !== HIP_CONST.hipSuccess) {
      const end = log.indexOf(0);
      const text = new TextDecoder().decode(log.subarray(0, end < 0 ? log.length : end)).trim();
      throw new GpuError(
        `captureEnd on rocm:${index}: hipGraphInstantiate(${fmtArgs([graph])}) failed: ${h.errorText(code)}` +
          (text ? ` [log: ${text}]` : ''),
        code,
        'hipGraphInstantiate',
      );
    }
    const exec = ptrOf(out[0]);
    if (destroyed !== HIP_CONST.hipSuccess) {
      h.fn.hipGraphExecDestroy(exec);
      check(destroyed, 'hipGraphDestroy', [graph]);
    }
    return asHandle<GpuGraphExec>(exec);
  };

  const rt: GpuRuntime = {
    vendor: 'rocm',
    index,
    info,
    defaultStream,
    memGetInfo,
    malloc,
    free(ptr: DevicePtr): void {
      activate();
      call('hipFree', ptr);
    },
    hostAlloc(bytes: number): PinnedBuffer {
      if (!Number.isInteger(bytes) || bytes < 0)
        throw new ShapeError(`hostAlloc(${bytes}): size must be a non-negative integer`);
      activate();
      const out: [bigint | null] = [null];
      const code = h.fn.hipHostMalloc(out, Math.max(bytes, 1), HIP_CONST.hipHostMallocDefault);
      if (code === HIP_CONST.hipErrorOutOfMemory) {
        throw new OutOfMemoryError(`hipHostMalloc(${bytes}) failed: ${h.errorText(code)}`, code, 'hipHostMalloc');
      }
      check(code, 'hipHostMalloc', [bytes, HIP_CONST.hipHostMallocDefault]);
      const p = ptrOf(out[0]);
      const buf: PinnedBuffer = { size: bytes, bytes: new Uint8Array(koffi.view(p, Math.max(bytes, 1)), 0, bytes) };
      pinned.set(buf, p);
      return buf;
    },
    hostFree(buf: PinnedBuffer): void {
      const p = pinned.get(buf);
      if (p === undefined)
        throw new GpuError('hostFree: buffer is not live pinned memory from hostAlloc', -1, 'hostFree');
      pinned.delete(buf);
      call('hipHostFree', p);
    },
    copyHtoD(dst: DevicePtr, src: ArrayBufferView): void {
      if (src.byteLength === 0) return;
      activate();
      call('hipMemcpyHtoD', dst, bytesOf(src), src.byteLength);
    },
    copyDtoH(dst: ArrayBufferView, src: DevicePtr): void {
      if (dst.byteLength === 0) return;
      activate();
      call('hipMemcpyDtoH', bytesOf(dst), src, dst.byteLength);
    },
    copyHtoDAsync(dst, src, srcOffset, bytes, stream): void {
      const p = pinnedPtr(src, 'copyHtoDAsync', srcOffset, bytes);
      if (bytes === 0) return;
      activate();
      call('hipMemcpyHtoDAsync', dst, p, bytes, raw(stream));
    },
    copyDtoHAsync(dst, dstOffset, src, bytes, stream): void {
      const p = pinnedPtr(dst, 'copyDtoHAsync', dstOffset, bytes);
      if (bytes === 0) return;
      activate();
      call('hipMemcpyDtoHAsync', p, src, bytes, raw(stream));
    },
    copyDtoDAsync(dst, src, bytes, stream): void {
      if (bytes === 0) return;
      activate();
      call('hipMemcpyDtoDAsync', dst, src, bytes, raw(stream));
    },
    memsetAsync(dst, byte, bytes, stream): void {
      if (bytes === 0) return;
      activate();
      call('hipMemsetD8Async', dst, byte & 0xff, bytes, raw(stream));
    },

    streamCreate(): GpuStream {
      activate();
      const out: [bigint | null] = [null];
      call('hipStreamCreate', out);
      return asHandle<GpuStream>(ptrOf(out[0]));
    },
    streamDestroy(s: GpuStream): void {
      if (s === defaultStream)
        throw new GpuError(
          `streamDestroy: rocm:${index}'s default stream is owned by the runtime`,
          -1,
          'hipStreamDestroy',
        );
      activate();
      call('hipStreamDestroy', raw(s));
    },
    streamSynchronize(s: GpuStream): void {
      activate();
      call('hipStreamSynchronize', raw(s));
    },
    streamWaitEvent(s: GpuStream, e: GpuEvent): void {
      activate();
      call('hipStreamWaitEvent', raw(s), raw(e), 0);
    },
    eventCreate(timing = false): GpuEvent {
      activate();
      const out: [bigint | null] = [null];
      call('hipEventCreateWithFlags', out, timing ? HIP_CONST.hipEventDefault : HIP_CONST.hipEventDisableTiming);
      return asHandle<GpuEvent>(ptrOf(out[0]));
    },
    eventRecord(e: GpuEvent, s: GpuStream): void {
      activate();
      call('hipEventRecord', raw(e), raw(s));
    },
    eventSynchronize(e: GpuEvent): void {
      call('hipEventSynchronize', raw(e));
    },
    eventQuery(e: GpuEvent): boolean {
      const code = h.fn.hipEventQuery(raw(e));
      if (code === HIP_CONST.hipErrorNotReady) return false;
      check(code, 'hipEventQuery', [raw(e)]);
      return true;
    },
    eventElapsedMs(start: GpuEvent, end: GpuEvent): number {
      const ms: [number] = [0];
      call('hipEventElapsedTime', ms, raw(start), raw(end));
      return ms[0];
    },
    eventDestroy(e: GpuEvent): void {
      call('hipEventDestroy', raw(e));
    },
    synchronize(): void {
      activate();
      call('hipDeviceSynchronize');
    },

    moduleLoad(image: Uint8Array): GpuModule {
      activate();
      const out: [bigint | null] = [null];
      const code = h.fn.hipModuleLoadData(out, image);
      check(code, 'hipModuleLoadData', [`<code object ${image.length} bytes>`, `arch ${info.archFull}`]);
      const m = ptrOf(out[0]);
      // keep the image alive as long as the module, whatever the runtime does with the pointer
      images.set(m, image);
      return asHandle<GpuModule>(m);
    },
    moduleGetFunction(m: GpuModule, name: string): GpuFunction {
      activate();
      const out: [bigint | null] = [null];
      call('hipModuleGetFunction', out, raw(m), name);
      return asHandle<GpuFunction>(ptrOf(out[0]));
    },
    moduleUnload(m: GpuModule): void {
      activate();
      call('hipModuleUnload', raw(m));
      images.delete(raw(m));
    },
    functionParams(): KernelParam[] | null {
      return null;
    },
    startsEarly(): boolean {
      return false;
    },
    launch(f, grid, block, sharedBytes, stream, args): void {
      checkLaunchDims('hipModuleLaunchKernel', grid, block, sharedBytes);
      activate();
      launchBlock.pack(args);
      const code = h.fn.hipModuleLaunchKernel(
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
        launchBlock.extra,
      );
      check(code, 'hipModuleLaunchKernel', [
        raw(f),
        `grid [${grid.join(', ')}]`,
        `block [${block.join(', ')}]`,
        `shared ${sharedBytes}`,
        raw(stream),
        `args ${args.length} bytes`,
      ]);
    },

    captureBegin(s: GpuStream): void {
      activate();
      // relaxed mode: an unsafe call made while we capture (a hipMalloc when the caching allocator
      // grows, another thread's work) is not an error; global and thread-local mode would fail
      // it and so break the capture. Calls that would wait on the capturing stream still fail.
      call('hipStreamBeginCapture', raw(s), HIP_CONST.hipStreamCaptureModeRelaxed);
      capture.begin(raw(s));
    },
    captureEnd(s: GpuStream): GpuGraphExec {
      activate();
      const out: [bigint | null] = [null];
      const code = h.fn.hipStreamEndCapture(raw(s), out);
      const cause = capture.end(raw(s));
      const graph = ptrOf(out[0]);
      if (code !== HIP_CONST.hipSuccess) {
        if (graph !== 0n) h.fn.hipGraphDestroy(graph);
        const what = `hipStreamEndCapture(${fmtArgs([raw(s)])}) failed: ${h.errorText(code)}`;
        const msg =
          code === HIP_CONST.hipErrorStreamCaptureInvalidated || cause !== null
            ? invalidatedText(`rocm:${index}`, cause, what)
            : `captureEnd on rocm:${index}: ${what}`;
        throw new GpuError(msg, code, 'hipStreamEndCapture');
      }
      return instantiate(graph);
    },
    isCapturing(s: GpuStream): boolean {
      activate();
      const status: [number] = [HIP_CONST.hipStreamCaptureStatusNone];
      call('hipStreamIsCapturing', raw(s), status);
      // an invalidated capture is still in progress: only captureEnd ends it
      return status[0] !== HIP_CONST.hipStreamCaptureStatusNone;
    },
    graphLaunch(g: GpuGraphExec, s: GpuStream): void {
      activate();
      call('hipGraphLaunch', raw(g), raw(s));
    },
    graphExecDestroy(g: GpuGraphExec): void {
      activate();
      call('hipGraphExecDestroy', raw(g));
    },

    nativeStream(s: GpuStream): bigint {
      return raw(s);
    },
    callForeign<T>(fn: () => T): T {
      activate();
      try {
        return fn();
      } finally {
        currentDevice = -1;
      }
    },

    blas(): BlasApi {
      blas ??= createRocblasBlas({ device: index, activate, streamPtr: raw });
      return blas;
    },
    dnn(): DnnApi {
      dnn ??= createMiopenDnn({ device: index, activate, malloc, free: (p) => rt.free(p), streamPtr: raw });
      return dnn;
    },
  };
  return rt;
}
