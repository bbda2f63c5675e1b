// NVIDIA driver API (libcuda) through koffi: prototypes, enum values and aliases as data (checked
// against the CUDA headers and libcuda's symbol table by test/abi/cuda-*.test.ts), declared once
// when the library is first opened, plus the error check every call goes through.
// Symbols are the versioned ones the headers #define the plain names to (cuMemAlloc -> _v2...):
// the plain names still exported by libcuda are the CUDA 3.x ABI with 32-bit sizes.
import koffi from 'koffi';
import { GpuError, OutOfMemoryError } from '../core/errors.ts';
import { cudaDirs, openLibrary, type LibrarySpec, type LoadedLibrary } from './loader.ts';
import { declareTable, fmtArgs, registerAliases, type NativeAlias, type NativeTable } from './native.ts';

export const CUDA_LIB: LibrarySpec = {
  id: 'cuda',
  envVar: 'ROCM_TENSOR_CUDA_LIB',
  // the driver library comes with the kernel driver, never with the toolkit: no bare libcuda.so
  // (on toolkit-only machines that name is the link-time stub, which fails every call)
  sonames: ['libcuda.so.1'],
  dirs: cudaDirs,
  install:
    'install the NVIDIA driver (it ships libcuda.so.1; `nvidia-smi` should list the GPU), ' +
    'or set ROCM_TENSOR_CUDA_LIB to its path',
};

export const CUDA_ALIASES: readonly NativeAlias[] = [
  { name: 'CUresult', c: 'CUresult', cls: 'enum' },
  { name: 'CUdevice', c: 'CUdevice', cls: 'int32', koffi: 'int' },
  { name: 'CUdevice_attribute', c: 'CUdevice_attribute', cls: 'enum' },
  { name: 'CUjit_option', c: 'CUjit_option', cls: 'enum' },
  { name: 'CUfunction_attribute', c: 'CUfunction_attribute', cls: 'enum' },
  // CUdeviceptr is an integer in the driver API: koffi passes it as one, we hand it a bigint
  { name: 'CUdeviceptr', c: 'CUdeviceptr', cls: 'uint64', koffi: 'unsigned long long' },
  { name: 'CUcontext', c: 'CUcontext', cls: 'pointer', handle: true },
  { name: 'CUstream', c: 'CUstream', cls: 'pointer', handle: true },
  { name: 'CUevent', c: 'CUevent', cls: 'pointer', handle: true },
  { name: 'CUmodule', c: 'CUmodule', cls: 'pointer', handle: true },
  { name: 'CUfunction', c: 'CUfunction', cls: 'pointer', handle: true },
  { name: 'CUgraph', c: 'CUgraph', cls: 'pointer', handle: true },
  { name: 'CUgraphExec', c: 'CUgraphExec', cls: 'pointer', handle: true },
  { name: 'CUstreamCaptureMode', c: 'CUstreamCaptureMode', cls: 'enum' },
  { name: 'CUstreamCaptureStatus', c: 'CUstreamCaptureStatus', cls: 'enum' },
  // cuLaunchKernelEx's configuration, filled in native memory (CUDA_STRUCTS gives its layout)
  { name: 'CUlaunchConfig_ptr', c: 'const CUlaunchConfig *', cls: 'pointer', handle: true },
];

// Output parameters are passed as typed arrays (Int32Array, BigUint64Array, Float32Array), which
// koffi hands to C as pointers to their memory; 64-bit outputs therefore always read as bigint.
export const CUDA_FUNCTIONS = {
  cuGetErrorName: { proto: 'CUresult cuGetErrorName(CUresult error, const char **pStr)' },
  cuGetErrorString: { proto: 'CUresult cuGetErrorString(CUresult error, const char **pStr)' },
  cuInit: { proto: 'CUresult cuInit(unsigned int Flags)' },
  cuDriverGetVersion: { proto: 'CUresult cuDriverGetVersion(int *driverVersion)' },
  cuDeviceGetCount: { proto: 'CUresult cuDeviceGetCount(int *count)' },
  cuDeviceGet: { proto: 'CUresult cuDeviceGet(CUdevice *device, int ordinal)' },
  cuDeviceGetName: { proto: 'CUresult cuDeviceGetName(char *name, int len, CUdevice dev)' },
  cuDeviceGetAttribute: { proto: 'CUresult cuDeviceGetAttribute(int *pi, CUdevice_attribute attrib, CUdevice dev)' },
  cuDeviceTotalMem_v2: { proto: 'CUresult cuDeviceTotalMem_v2(size_t *bytes, CUdevice dev)' },
  cuDevicePrimaryCtxRetain: { proto: 'CUresult cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev)' },
  cuDevicePrimaryCtxRelease_v2: { proto: 'CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev)' },
  cuCtxSetCurrent: { proto: 'CUresult cuCtxSetCurrent(CUcontext ctx)' },
  cuCtxSynchronize: { proto: 'CUresult cuCtxSynchronize(void)' },
  cuCtxDestroy_v2: { proto: 'CUresult cuCtxDestroy_v2(CUcontext ctx)' },
  cuMemGetInfo_v2: { proto: 'CUresult cuMemGetInfo_v2(size_t *free, size_t *total)' },
  cuMemAlloc_v2: { proto: 'CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize)' },
  cuMemFree_v2: { proto: 'CUresult cuMemFree_v2(CUdeviceptr dptr)' },
  cuMemHostAlloc: { proto: 'CUresult cuMemHostAlloc(void **pp, size_t bytesize, unsigned int Flags)' },
  cuMemFreeHost: { proto: 'CUresult cuMemFreeHost(void *p)' },
  cuMemcpyHtoD_v2: { proto: 'CUresult cuMemcpyHtoD_v2(CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount)' },
  cuMemcpyDtoH_v2: { proto: 'CUresult cuMemcpyDtoH_v2(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount)' },
  cuMemcpyDtoD_v2: {
    proto: 'CUresult cuMemcpyDtoD_v2(CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount)',
  },
  cuMemcpyHtoDAsync_v2: {
    proto:
      'CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount, CUstream hStream)',
  },
  cuMemcpyDtoHAsync_v2: {
    proto: 'CUresult cuMemcpyDtoHAsync_v2(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount, CUstream hStream)',
  },
  cuMemcpyDtoDAsync_v2: {
    proto:
      'CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount, CUstream hStream)',
  },
  cuMemsetD8_v2: { proto: 'CUresult cuMemsetD8_v2(CUdeviceptr dstDevice, unsigned char uc, size_t N)' },
  cuMemsetD32_v2: { proto: 'CUresult cuMemsetD32_v2(CUdeviceptr dstDevice, unsigned int ui, size_t N)' },
  cuMemsetD8Async: {
    proto: 'CUresult cuMemsetD8Async(CUdeviceptr dstDevice, unsigned char uc, size_t N, CUstream hStream)',
  },
  cuMemsetD32Async: {
    proto: 'CUresult cuMemsetD32Async(CUdeviceptr dstDevice, unsigned int ui, size_t N, CUstream hStream)',
  },
  cuStreamCreate: { proto: 'CUresult cuStreamCreate(CUstream *phStream, unsigned int Flags)' },
  cuStreamDestroy_v2: { proto: 'CUresult cuStreamDestroy_v2(CUstream hStream)' },
  cuStreamSynchronize: { proto: 'CUresult cuStreamSynchronize(CUstream hStream)' },
  cuStreamWaitEvent: { proto: 'CUresult cuStreamWaitEvent(CUstream hStream, CUevent hEvent, unsigned int Flags)' },
  cuEventCreate: { proto: 'CUresult cuEventCreate(CUevent *phEvent, unsigned int Flags)' },
  cuEventRecord: { proto: 'CUresult cuEventRecord(CUevent hEvent, CUstream hStream)' },
  cuEventSynchronize: { proto: 'CUresult cuEventSynchronize(CUevent hEvent)' },
  cuEventQuery: { proto: 'CUresult cuEventQuery(CUevent hEvent)' },
  // CUDA 12.8+ headers #define cuEventElapsedTime to _v2; older drivers (550 = CUDA 12.4) only
  // export the plain symbol, which newer drivers keep with the same signature
  cuEventElapsedTime_v2: {
    proto: 'CUresult cuEventElapsedTime_v2(float *pMilliseconds, CUevent hStart, CUevent hEnd)',
    optional: true,
  },
  cuEventElapsedTime: { proto: 'CUresult cuEventElapsedTime(float *pMilliseconds, CUevent hStart, CUevent hEnd)' },
  cuEventDestroy_v2: { proto: 'CUresult cuEventDestroy_v2(CUevent hEvent)' },
  cuModuleLoadData: { proto: 'CUresult cuModuleLoadData(CUmodule *module, const void *image)' },
  cuModuleLoadDataEx: {
    proto:
      'CUresult cuModuleLoadDataEx(CUmodule *module, const void *image, unsigned int numOptions, ' +
      'CUjit_option *options, void **optionValues)',
  },
  cuModuleGetFunction: { proto: 'CUresult cuModuleGetFunction(CUfunction *hfunc, CUmodule hmod, const char *name)' },
  cuModuleUnload: { proto: 'CUresult cuModuleUnload(CUmodule hmod)' },
  // CUDA 12.4+
  cuFuncGetParamInfo: {
    proto: 'CUresult cuFuncGetParamInfo(CUfunction func, size_t paramIndex, size_t *paramOffset, size_t *paramSize)',
    optional: true,
  },
  // a kernel's dynamic shared memory past 48 KiB must be allowed first (flash_fwd takes 68 KiB)
  cuFuncSetAttribute: {
    proto: 'CUresult cuFuncSetAttribute(CUfunction hfunc, CUfunction_attribute attrib, int value)',
  },
  cuLaunchKernel: {
    proto:
      'CUresult cuLaunchKernel(CUfunction f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ, ' +
      'unsigned int blockDimX, unsigned int blockDimY, unsigned int blockDimZ, unsigned int sharedMemBytes, ' +
      'CUstream hStream, void **kernelParams, void **extra)',
  },
  // CUDA 12.0+: a launch with attributes (programmatic stream serialization, runtime/cuda/runtime.ts)
  cuLaunchKernelEx: {
    proto: 'CUresult cuLaunchKernelEx(CUlaunchConfig_ptr config, CUfunction f, void **kernelParams, void **extra)',
    optional: true,
  },
  // stream capture and graph replay. cuda.h #defines cuStreamBeginCapture to _v2 (the plain
  // symbol is the CUDA 10.0 form without a mode) and cuGraphInstantiate to
  // cuGraphInstantiateWithFlags since CUDA 12 (the plain symbol is the 11.x form with an error
  // node and log buffer); WithFlags exists since 11.4
  cuStreamBeginCapture_v2: { proto: 'CUresult cuStreamBeginCapture_v2(CUstream hStream, CUstreamCaptureMode mode)' },
  cuStreamEndCapture: { proto: 'CUresult cuStreamEndCapture(CUstream hStream, CUgraph *phGraph)' },
  cuStreamIsCapturing: {
    proto: 'CUresult cuStreamIsCapturing(CUstream hStream, CUstreamCaptureStatus *captureStatus)',
  },
  cuGraphInstantiateWithFlags: {
    proto: 'CUresult cuGraphInstantiateWithFlags(CUgraphExec *phGraphExec, CUgraph hGraph, unsigned long long flags)',
  },
  cuGraphLaunch: { proto: 'CUresult cuGraphLaunch(CUgraphExec hGraphExec, CUstream hStream)' },
  cuGraphExecDestroy: { proto: 'CUresult cuGraphExecDestroy(CUgraphExec hGraphExec)' },
  cuGraphDestroy: { proto: 'CUresult cuGraphDestroy(CUgraph hGraph)' },
} as const satisfies NativeTable;

/** enum values and macros the TypeScript relies on, under their header names (test/abi compares) */
export const CUDA_CONST = {
  CUDA_SUCCESS: 0,
  CUDA_ERROR_INVALID_VALUE: 1,
  CUDA_ERROR_OUT_OF_MEMORY: 2,
  CUDA_ERROR_NOT_INITIALIZED: 3,
  CUDA_ERROR_NO_DEVICE: 100,
  CUDA_ERROR_INVALID_DEVICE: 101,
  CUDA_ERROR_NOT_READY: 600,
  CUDA_ERROR_NOT_SUPPORTED: 801,
  // 900..908 are the stream-capture errors (907 is CUDA_ERROR_CAPTURED_EVENT)
  CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED: 900,
  CUDA_ERROR_STREAM_CAPTURE_INVALIDATED: 901,
  CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD: 908,
  CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK: 1,
  CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X: 5,
  CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y: 6,
  CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z: 7,
  CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK: 8,
  CU_DEVICE_ATTRIBUTE_WARP_SIZE: 10,
  CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: 16,
  CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: 75,
  CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: 76,
  CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN: 97,
  CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES: 8,
  // blocking with respect to the legacy NULL stream, so the synchronous cuMemcpy calls (which
  // run there) stay ordered after work queued on our streams
  CU_STREAM_DEFAULT: 0,
  CU_EVENT_DEFAULT: 0,
  CU_EVENT_DISABLE_TIMING: 2,
  // portable: a pinned buffer from one device's runtime serves copies on another
  CU_MEMHOSTALLOC_PORTABLE: 1,
  CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION: 6,
  CU_JIT_ERROR_LOG_BUFFER: 5,
  CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES: 6,
  CU_LAUNCH_PARAM_END_AS_INT: 0,
  CU_LAUNCH_PARAM_BUFFER_POINTER_AS_INT: 1,
  CU_LAUNCH_PARAM_BUFFER_SIZE_AS_INT: 2,
  CU_STREAM_CAPTURE_MODE_GLOBAL: 0,
  CU_STREAM_CAPTURE_MODE_THREAD_LOCAL: 1,
  CU_STREAM_CAPTURE_MODE_RELAXED: 2,
  CU_STREAM_CAPTURE_STATUS_NONE: 0,
  CU_STREAM_CAPTURE_STATUS_ACTIVE: 1,
  CU_STREAM_CAPTURE_STATUS_INVALIDATED: 2,
} as const;

/** byte layouts of the structs we fill in native memory (test/abi compares them with cuda.h) */
export const CUDA_STRUCTS = {
  CUlaunchConfig: {
    size: 56,
    fields: {
      gridDimX: 0,
      gridDimY: 4,
      gridDimZ: 8,
      blockDimX: 12,
      blockDimY: 16,
      blockDimZ: 20,
      sharedMemBytes: 24,
      hStream: 32,
      attrs: 40,
      numAttrs: 48,
    },
  },
  // id, then a 64-byte union of values; the value programmatic serialization takes is its first word
  CUlaunchAttribute: { size: 72, fields: { id: 0, value: 8 } },
} as const;

// TypeScript view of the declared functions; handles and pointers are bigint (null for NULL)
type R = number;
type H = bigint;
type Hn = bigint | null;
type Host = ArrayBufferView | bigint;
export interface CudaFns {
  cuGetErrorName(e: number, out: BigUint64Array): R;
  cuGetErrorString(e: number, out: BigUint64Array): R;
  cuInit(flags: number): R;
  cuDriverGetVersion(out: Int32Array): R;
  cuDeviceGetCount(out: Int32Array): R;
  cuDeviceGet(out: Int32Array, ordinal: number): R;
  cuDeviceGetName(name: Uint8Array, len: number, dev: number): R;
  cuDeviceGetAttribute(out: Int32Array, attr: number, dev: number): R;
  cuDeviceTotalMem_v2(out: BigUint64Array, dev: number): R;
  cuDevicePrimaryCtxRetain(out: BigUint64Array, dev: number): R;
  cuDevicePrimaryCtxRelease_v2(dev: number): R;
  cuCtxSetCurrent(ctx: Hn): R;
  cuCtxSynchronize(): R;
  cuCtxDestroy_v2(ctx: H): R;
  cuMemGetInfo_v2(free: BigUint64Array, total: BigUint64Array): R;
  cuMemAlloc_v2(out: BigUint64Array, bytes: number): R;
  cuMemFree_v2(p: bigint): R;
  cuMemHostAlloc(out: BigUint64Array, bytes: number, flags: number): R;
  cuMemFreeHost(p: H): R;
  cuMemcpyHtoD_v2(dst: bigint, src: Host, n: number): R;
  cuMemcpyDtoH_v2(dst: Host, src: bigint, n: number): R;
  cuMemcpyDtoD_v2(dst: bigint, src: bigint, n: number): R;
  cuMemcpyHtoDAsync_v2(dst: bigint, src: H, n: number, s: Hn): R;
  cuMemcpyDtoHAsync_v2(dst: H, src: bigint, n: number, s: Hn): R;
  cuMemcpyDtoDAsync_v2(dst: bigint, src: bigint, n: number, s: Hn): R;
  cuMemsetD8_v2(dst: bigint, v: number, n: number): R;
  cuMemsetD32_v2(dst: bigint, v: number, n: number): R;
  cuMemsetD8Async(dst: bigint, v: number, n: number, s: Hn): R;
  cuMemsetD32Async(dst: bigint, v: number, n: number, s: Hn): R;
  cuStreamCreate(out: BigUint64Array, flags: number): R;
  cuStreamDestroy_v2(s: H): R;
  cuStreamSynchronize(s: Hn): R;
  cuStreamWaitEvent(s: Hn, e: H, flags: number): R;
  cuEventCreate(out: BigUint64Array, flags: number): R;
  cuEventRecord(e: H, s: Hn): R;
  cuEventSynchronize(e: H): R;
  cuEventQuery(e: H): R;
  cuEventElapsedTime_v2(ms: Float32Array, a: H, b: H): R;
  cuEventElapsedTime(ms: Float32Array, a: H, b: H): R;
  cuEventDestroy_v2(e: H): R;
  cuModuleLoadData(out: BigUint64Array, image: Uint8Array): R;
  cuModuleLoadDataEx(out: BigUint64Array, image: Uint8Array, n: number, options: Int32Array, values: BigUint64Array): R;
  cuModuleGetFunction(out: BigUint64Array, m: H, name: string): R;
  cuModuleUnload(m: H): R;
  cuFuncGetParamInfo(f: H, index: number, offset: BigUint64Array, size: BigUint64Array): R;
  cuFuncSetAttribute(f: H, attrib: number, value: number): R;
  cuLaunchKernel(
    f: H,
    gx: number,
    gy: number,
    gz: number,
    bx: number,
    by: number,
    bz: number,
    shared: number,
    s: Hn,
    kernelParams: null,
    extra: bigint,
  ): R;
  cuLaunchKernelEx(config: bigint, f: H, kernelParams: null, extra: bigint): R;
  cuStreamBeginCapture_v2(s: Hn, mode: number): R;
  cuStreamEndCapture(s: Hn, out: BigUint64Array): R;
  cuStreamIsCapturing(s: Hn, out: Int32Array): R;
  cuGraphInstantiateWithFlags(out: BigUint64Array, graph: H, flags: bigint | number): R;
  cuGraphLaunch(exec: H, s: Hn): R;
  cuGraphExecDestroy(exec: H): R;
  cuGraphDestroy(graph: H): R;
}
type CudaKey = keyof typeof CUDA_FUNCTIONS;
// the table and the interface must name the same functions
const _sameKeys: [CudaKey, keyof CudaFns] extends [keyof CudaFns, CudaKey] ? true : never = true;
void _sameKeys;

type OptionalCuda = 'cuEventElapsedTime_v2' | 'cuFuncGetParamInfo' | 'cuLaunchKernelEx';
export type CudaFnTable = { readonly [K in Exclude<CudaKey, OptionalCuda>]: CudaFns[K] } & {
  readonly [K in OptionalCuda]: CudaFns[K] | undefined;
};

export interface CudaDriver {
  readonly loaded: LoadedLibrary;
  readonly fn: CudaFnTable;
  /** 'CUDA_ERROR_OUT_OF_MEMORY (2): out of memory' */
  errorText(code: number): string;
  /** throws GpuError (OutOfMemoryError for CUDA_ERROR_OUT_OF_MEMORY) naming the call and arguments */
  check(code: number, call: string, args: readonly unknown[]): void;
}

let driver: CudaDriver | null = null;

/** opens libcuda.so.1 and declares every function once (throws LibraryNotFoundError) */
export function loadCudaDriver(): CudaDriver {
  if (driver) return driver;
  const loaded = openLibrary(CUDA_LIB);
  registerAliases(CUDA_ALIASES);
  const table = declareTable(loaded.lib, CUDA_FUNCTIONS, loaded.path);
  const fn = Object.fromEntries([...table].map(([k, v]) => [k, v ?? undefined])) as unknown as CudaFnTable;
  const strCell = new BigUint64Array(1);
  const cString = (get: (e: number, out: BigUint64Array) => number, code: number): string | null => {
    strCell[0] = 0n;
    if (get(code, strCell) !== 0 || strCell[0] === 0n) return null;
    return readCStr(strCell[0]);
  };
  const errorText = (code: number): string => {
    const name = cString(fn.cuGetErrorName, code) ?? `CUresult ${code}`;
    const text = cString(fn.cuGetErrorString, code) ?? 'unknown error';
    return `${name} (${code}): ${text}`;
  };
  const check = (code: number, call: string, args: readonly unknown[]): void => {
    if (code === CUDA_CONST.CUDA_SUCCESS) return;
    throw cudaError(code, `${call}(${fmtArgs(args)})`, call, errorText);
  };
  driver = { loaded, fn, errorText, check };
  return driver;
}

/** the error for a failed call; `what` is the call with its arguments, or more context */
export function cudaError(code: number, what: string, call: string, errorText: (c: number) => string): GpuError {
  const msg = `${what} failed: ${errorText(code)}`;
  return code === CUDA_CONST.CUDA_ERROR_OUT_OF_MEMORY
    ? new OutOfMemoryError(msg, code, call)
    : new GpuError(msg, code, call);
}

/** a NUL-terminated C string owned by the library (error names, static strings) */
export function readCStr(ptr: bigint): string {
  return koffi.decode(ptr, 'char', -1) as string;
}

export interface CudaProbe {
  readonly count: number;
  /** why there is no device (missing library, cuInit's error), empty when count > 0 */
  readonly reason: string;
}

/** never throws: a missing libcuda, a driver that does not initialise (no kernel module, no
 *  device, driver too old for the library) or a failed count is 0 devices with the reason */
export function cudaProbe(): CudaProbe {
  let d: CudaDriver;
  try {
    d = loadCudaDriver();
  } catch (e) {
    return { count: 0, reason: (e as Error).message };
  }
  const init = d.fn.cuInit(0);
  if (init !== CUDA_CONST.CUDA_SUCCESS)
    return { count: 0, reason: `cuInit(0): ${d.errorText(init)} (${d.loaded.path})` };
  const n = new Int32Array(1);
  const code = d.fn.cuDeviceGetCount(n);
  if (code !== CUDA_CONST.CUDA_SUCCESS)
    return { count: 0, reason: `cuDeviceGetCount: ${d.errorText(code)} (${d.loaded.path})` };
  return { count: n[0]!, reason: n[0]! > 0 ? '' : `no CUDA device (${d.loaded.path})` };
}

/** number of CUDA devices; 0, never an exception, where there is none (cudaProbe says why) */
export function cudaDeviceCount(): number {
  return cudaProbe().count;
}

/** 12040 -> '12.4' */
export function fmtCudaVersion(v: number): string {
  return `${Math.floor(v / 1000)}.${Math.floor((v % 1000) / 10)}`;
}
