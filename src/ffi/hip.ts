// HIP runtime (libamdhip64) through koffi: prototypes, enum values and struct offsets as data
// (checked against the ROCm 6.4 headers by test/abi), declared once when the library is first
// opened, plus the error check every call goes through.
import koffi from 'koffi';
import { GpuError, OutOfMemoryError } from '../core/errors.ts';
import { HIP_LIB, openLibrary, type LoadedLibrary } from './loader.ts';
import { declareTable, fmtArgs, registerAliases, type NativeAlias, type NativeTable } from './native.ts';

export const HIP_ALIASES: readonly NativeAlias[] = [
  { name: 'hipError_t', c: 'hipError_t', cls: 'enum' },
  { name: 'hipDeviceAttribute_t', c: 'hipDeviceAttribute_t', cls: 'enum' },
  { name: 'hipDevice_t', c: 'hipDevice_t', cls: 'int32', koffi: 'int' },
  { name: 'hipStream_t', c: 'hipStream_t', cls: 'pointer', handle: true },
  { name: 'hipEvent_t', c: 'hipEvent_t', cls: 'pointer', handle: true },
  { name: 'hipModule_t', c: 'hipModule_t', cls: 'pointer', handle: true },
  { name: 'hipFunction_t', c: 'hipFunction_t', cls: 'pointer', handle: true },
  { name: 'hipGraph_t', c: 'hipGraph_t', cls: 'pointer', handle: true },
  { name: 'hipGraphExec_t', c: 'hipGraphExec_t', cls: 'pointer', handle: true },
  { name: 'hipGraphNode_t', c: 'hipGraphNode_t', cls: 'pointer', handle: true },
  { name: 'hipStreamCaptureMode', c: 'hipStreamCaptureMode', cls: 'enum' },
  { name: 'hipStreamCaptureStatus', c: 'hipStreamCaptureStatus', cls: 'enum' },
  // a writable byte buffer (instantiation log): koffi's `char *` would be an input string
  { name: 'hipCharBuf_p', c: 'char *', cls: 'pointer', koffi: 'uint8_t *' },
  // property structs are read as raw bytes at checked offsets, never marshalled by koffi
  { name: 'hipDevicePropR0600_p', c: 'hipDeviceProp_tR0600 *', cls: 'pointer', koffi: 'void *' },
  { name: 'hipDevicePropR0000_p', c: 'hipDeviceProp_tR0000 *', cls: 'pointer', koffi: 'void *' },
];

export const HIP_FUNCTIONS = {
  hipInit: { proto: 'hipError_t hipInit(unsigned int flags)' },
  hipGetErrorName: { proto: 'const char *hipGetErrorName(hipError_t hip_error)' },
  hipGetErrorString: { proto: 'const char *hipGetErrorString(hipError_t hipError)' },
  hipRuntimeGetVersion: { proto: 'hipError_t hipRuntimeGetVersion(_Out_ int *runtimeVersion)' },
  hipDriverGetVersion: { proto: 'hipError_t hipDriverGetVersion(_Out_ int *driverVersion)' },
  hipGetDeviceCount: { proto: 'hipError_t hipGetDeviceCount(_Out_ int *count)' },
  hipSetDevice: { proto: 'hipError_t hipSetDevice(int deviceId)' },
  hipGetDevice: { proto: 'hipError_t hipGetDevice(_Out_ int *deviceId)' },
  hipDeviceGetAttribute: {
    proto: 'hipError_t hipDeviceGetAttribute(_Out_ int *pi, hipDeviceAttribute_t attr, int deviceId)',
  },
  hipDeviceTotalMem: { proto: 'hipError_t hipDeviceTotalMem(_Out_ size_t *bytes, hipDevice_t device)' },
  // ROCm 6 headers #define hipGetDeviceProperties to this symbol (the 1472-byte struct)
  hipGetDevicePropertiesR0600: {
    proto: 'hipError_t hipGetDevicePropertiesR0600(hipDevicePropR0600_p prop, int deviceId)',
    optional: true,
  },
  // the plain symbol keeps the ROCm 5 layout (792 bytes), named R0000 in ROCm 6 headers
  hipGetDeviceProperties: {
    proto: 'hipError_t hipGetDeviceProperties(hipDevicePropR0000_p prop, int deviceId)',
    checkAs: 'hipGetDevicePropertiesR0000',
  },
  hipDeviceSynchronize: { proto: 'hipError_t hipDeviceSynchronize(void)' },
  hipMemGetInfo: { proto: 'hipError_t hipMemGetInfo(_Out_ size_t *free, _Out_ size_t *total)' },
  hipMalloc: { proto: 'hipError_t hipMalloc(_Out_ void **ptr, size_t size)' },
  hipFree: { proto: 'hipError_t hipFree(devptr_t ptr)' },
  hipMallocAsync: {
    proto: 'hipError_t hipMallocAsync(_Out_ void **dev_ptr, size_t size, hipStream_t stream)',
    optional: true,
  },
  hipFreeAsync: { proto: 'hipError_t hipFreeAsync(devptr_t dev_ptr, hipStream_t stream)', optional: true },
  hipHostMalloc: { proto: 'hipError_t hipHostMalloc(_Out_ void **ptr, size_t size, unsigned int flags)' },
  hipHostFree: { proto: 'hipError_t hipHostFree(void *ptr)' },
  hipMemcpyHtoD: { proto: 'hipError_t hipMemcpyHtoD(devptr_t dst, void *src, size_t sizeBytes)' },
  hipMemcpyDtoH: { proto: 'hipError_t hipMemcpyDtoH(void *dst, devptr_t src, size_t sizeBytes)' },
  hipMemcpyHtoDAsync: {
    proto: 'hipError_t hipMemcpyHtoDAsync(devptr_t dst, void *src, size_t sizeBytes, hipStream_t stream)',
  },
  hipMemcpyDtoHAsync: {
    proto: 'hipError_t hipMemcpyDtoHAsync(void *dst, devptr_t src, size_t sizeBytes, hipStream_t stream)',
  },
  hipMemcpyDtoDAsync: {
    proto: 'hipError_t hipMemcpyDtoDAsync(devptr_t dst, devptr_t src, size_t sizeBytes, hipStream_t stream)',
  },
  hipMemsetD8Async: {
    proto: 'hipError_t hipMemsetD8Async(devptr_t dest, unsigned char value, size_t count, hipStream_t stream)',
  },
  hipStreamCreate: { proto: 'hipError_t hipStreamCreate(_Out_ hipStream_t *stream)' },
  hipStreamDestroy: { proto: 'hipError_t hipStreamDestroy(hipStream_t stream)' },
  hipStreamSynchronize: { proto: 'hipError_t hipStreamSynchronize(hipStream_t stream)' },
  hipStreamWaitEvent: {
    proto: 'hipError_t hipStreamWaitEvent(hipStream_t stream, hipEvent_t event, unsigned int flags)',
  },
  hipEventCreateWithFlags: { proto: 'hipError_t hipEventCreateWithFlags(_Out_ hipEvent_t *event, unsigned int flags)' },
  hipEventRecord: { proto: 'hipError_t hipEventRecord(hipEvent_t event, hipStream_t stream)' },
  hipEventSynchronize: { proto: 'hipError_t hipEventSynchronize(hipEvent_t event)' },
  hipEventQuery: { proto: 'hipError_t hipEventQuery(hipEvent_t event)' },
  hipEventElapsedTime: { proto: 'hipError_t hipEventElapsedTime(_Out_ float *ms, hipEvent_t start, hipEvent_t stop)' },
  hipEventDestroy: { proto: 'hipError_t hipEventDestroy(hipEvent_t event)' },
  hipModuleLoadData: { proto: 'hipError_t hipModuleLoadData(_Out_ hipModule_t *module, const void *image)' },
  hipModuleGetFunction: {
    proto: 'hipError_t hipModuleGetFunction(_Out_ hipFunction_t *function, hipModule_t module, const char *kname)',
  },
  hipModuleUnload: { proto: 'hipError_t hipModuleUnload(hipModule_t module)' },
  hipModuleLaunchKernel: {
    proto:
      'hipError_t hipModuleLaunchKernel(hipFunction_t f, unsigned int gridDimX, unsigned int gridDimY, ' +
      'unsigned int gridDimZ, unsigned int blockDimX, unsigned int blockDimY, unsigned int blockDimZ, ' +
      'unsigned int sharedMemBytes, hipStream_t stream, void **kernelParams, void **extra)',
  },
  // stream capture and graph replay (runtime/graph capture); marked beta in ROCm 6.4's header
  hipStreamBeginCapture: { proto: 'hipError_t hipStreamBeginCapture(hipStream_t stream, hipStreamCaptureMode mode)' },
  hipStreamEndCapture: { proto: 'hipError_t hipStreamEndCapture(hipStream_t stream, _Out_ hipGraph_t *pGraph)' },
  hipStreamIsCapturing: {
    proto: 'hipError_t hipStreamIsCapturing(hipStream_t stream, _Out_ hipStreamCaptureStatus *pCaptureStatus)',
  },
  hipGraphInstantiate: {
    proto:
      'hipError_t hipGraphInstantiate(_Out_ hipGraphExec_t *pGraphExec, hipGraph_t graph, ' +
      '_Out_ hipGraphNode_t *pErrorNode, hipCharBuf_p pLogBuffer, size_t bufferSize)',
  },
  hipGraphLaunch: { proto: 'hipError_t hipGraphLaunch(hipGraphExec_t graphExec, hipStream_t stream)' },
  hipGraphExecDestroy: { proto: 'hipError_t hipGraphExecDestroy(hipGraphExec_t graphExec)' },
  hipGraphDestroy: { proto: 'hipError_t hipGraphDestroy(hipGraph_t graph)' },
} as const satisfies NativeTable;

/** enum values and macros the TypeScript relies on; test/abi compares each with the header */
export const HIP_CONST = {
  hipSuccess: 0,
  hipErrorInvalidValue: 1,
  hipErrorOutOfMemory: 2,
  hipErrorNotInitialized: 3,
  hipErrorNoDevice: 100,
  hipErrorInvalidDevice: 101,
  hipErrorNotReady: 600,
  // 900..908 are the stream-capture errors (907 is hipErrorCapturedEvent)
  hipErrorStreamCaptureUnsupported: 900,
  hipErrorStreamCaptureInvalidated: 901,
  hipErrorStreamCaptureWrongThread: 908,
  hipDeviceAttributeMaxThreadsPerBlock: 56,
  hipDeviceAttributeMaxGridDimX: 29,
  hipDeviceAttributeMaxGridDimY: 30,
  hipDeviceAttributeMaxGridDimZ: 31,
  hipDeviceAttributeMultiprocessorCount: 63,
  hipDeviceAttributeMaxSharedMemoryPerBlock: 74,
  hipDeviceAttributeWarpSize: 87,
  hipDeviceAttributeMemoryPoolsSupported: 88,
  hipEventDefault: 0,
  hipEventDisableTiming: 2,
  hipHostMallocDefault: 0,
  HIP_LAUNCH_PARAM_BUFFER_POINTER: 1,
  HIP_LAUNCH_PARAM_BUFFER_SIZE: 2,
  HIP_LAUNCH_PARAM_END: 3,
  hipStreamCaptureModeGlobal: 0,
  hipStreamCaptureModeThreadLocal: 1,
  hipStreamCaptureModeRelaxed: 2,
  hipStreamCaptureStatusNone: 0,
  hipStreamCaptureStatusActive: 1,
  hipStreamCaptureStatusInvalidated: 2,
} as const;

/** byte layout of the two device-property structs; only the two strings are read from them */
export const HIP_STRUCTS = {
  hipDeviceProp_tR0600: { size: 1472, fields: { name: 0, gcnArchName: 1160 } },
  hipDeviceProp_tR0000: { size: 792, fields: { name: 0, gcnArchName: 396 } },
} as const;
export const HIP_NAME_LEN = 256;

// TypeScript view of the declared functions; koffi returns pointers and handles as bigint
type Err = number;
type Ptr = bigint;
type HostPtr = Ptr | ArrayBufferView;
export interface HipFns {
  hipInit(flags: number): Err;
  hipGetErrorName(e: number): string | null;
  hipGetErrorString(e: number): string | null;
  hipRuntimeGetVersion(out: [number]): Err;
  hipDriverGetVersion(out: [number]): Err;
  hipGetDeviceCount(out: [number]): Err;
  hipSetDevice(d: number): Err;
  hipGetDevice(out: [number]): Err;
  hipDeviceGetAttribute(out: [number], attr: number, d: number): Err;
  hipDeviceTotalMem(out: [number], d: number): Err;
  hipGetDevicePropertiesR0600(prop: Ptr, d: number): Err;
  hipGetDeviceProperties(prop: Ptr, d: number): Err;
  hipDeviceSynchronize(): Err;
  hipMemGetInfo(free: [number], total: [number]): Err;
  hipMalloc(out: [Ptr | null], size: number): Err;
  hipFree(p: Ptr): Err;
  hipMallocAsync(out: [Ptr | null], size: number, s: Ptr | null): Err;
  hipFreeAsync(p: Ptr, s: Ptr | null): Err;
  hipHostMalloc(out: [Ptr | null], size: number, flags: number): Err;
  hipHostFree(p: Ptr): Err;
  hipMemcpyHtoD(dst: Ptr, src: HostPtr, n: number): Err;
  hipMemcpyDtoH(dst: HostPtr, src: Ptr, n: number): Err;
  hipMemcpyHtoDAsync(dst: Ptr, src: Ptr, n: number, s: Ptr | null): Err;
  hipMemcpyDtoHAsync(dst: Ptr, src: Ptr, n: number, s: Ptr | null): Err;
  hipMemcpyDtoDAsync(dst: Ptr, src: Ptr, n: number, s: Ptr | null): Err;
  hipMemsetD8Async(dst: Ptr, value: number, n: number, s: Ptr | null): Err;
  hipStreamCreate(out: [Ptr | null]): Err;
  hipStreamDestroy(s: Ptr): Err;
  hipStreamSynchronize(s: Ptr | null): Err;
  hipStreamWaitEvent(s: Ptr | null, e: Ptr, flags: number): Err;
  hipEventCreateWithFlags(out: [Ptr | null], flags: number): Err;
  hipEventRecord(e: Ptr, s: Ptr | null): Err;
  hipEventSynchronize(e: Ptr): Err;
  hipEventQuery(e: Ptr): Err;
  hipEventElapsedTime(ms: [number], a: Ptr, b: Ptr): Err;
  hipEventDestroy(e: Ptr): Err;
  hipModuleLoadData(out: [Ptr | null], image: Uint8Array): Err;
  hipModuleGetFunction(out: [Ptr | null], m: Ptr, name: string): Err;
  hipModuleUnload(m: Ptr): Err;
  hipModuleLaunchKernel(
    f: Ptr,
    gx: number,
    gy: number,
    gz: number,
    bx: number,
    by: number,
    bz: number,
    shared: number,
    s: Ptr | null,
    kernelParams: null,
    extra: Ptr,
  ): Err;
  hipStreamBeginCapture(s: Ptr | null, mode: number): Err;
  hipStreamEndCapture(s: Ptr | null, out: [Ptr | null]): Err;
  hipStreamIsCapturing(s: Ptr | null, out: [number]): Err;
  hipGraphInstantiate(out: [Ptr | null], graph: Ptr, errNode: [Ptr | null], log: Uint8Array, logBytes: number): Err;
  hipGraphLaunch(exec: Ptr, s: Ptr | null): Err;
  hipGraphExecDestroy(exec: Ptr): Err;
  hipGraphDestroy(graph: Ptr): Err;
}
type HipKey = keyof typeof HIP_FUNCTIONS;
// the table and the interface must name the same functions
const _sameKeys: [HipKey, keyof HipFns] extends [keyof HipFns, HipKey] ? true : never = true;
void _sameKeys;

export interface Hip {
  readonly loaded: LoadedLibrary;
  /** optional functions absent from this library are undefined */
  readonly fn: { readonly [K in keyof HipFns]: HipFns[K] | undefined } & Required<Pick<HipFns, RequiredHip>>;
  /** throws GpuError / OutOfMemoryError naming the call and its arguments when `code` != 0 */
  check(code: number, call: string, args: readonly unknown[]): void;
  errorText(code: number): string;
}
type RequiredHip = Exclude<HipKey, 'hipGetDevicePropertiesR0600' | 'hipMallocAsync' | 'hipFreeAsync'>;

let hip: Hip | null = null;

/** opens libamdhip64 and declares every function once */
export function loadHip(): Hip {
  if (hip) return hip;
  const loaded = openLibrary(HIP_LIB);
  registerAliases(HIP_ALIASES);
  const table = declareTable(loaded.lib, HIP_FUNCTIONS, loaded.path);
  const fn = Object.fromEntries([...table].map(([k, v]) => [k, v ?? undefined])) as unknown as Hip['fn'];
  const errorText = (code: number): string => {
    const name = fn.hipGetErrorName(code) ?? `hipError ${code}`;
    const text = fn.hipGetErrorString(code) ?? '';
    return `${name} (${code}): ${text}`;
  };
  const check = (code: number, call: string, args: readonly unknown[]): void => {
    if (code === HIP_CONST.hipSuccess) return;
    const msg = `${call}(${fmtArgs(args)}) failed: ${errorText(code)}`;
    if (code === HIP_CONST.hipErrorOutOfMemory) throw new OutOfMemoryError(msg, code, call);
    throw new GpuError(msg, code, call);
  };
  hip = { loaded, fn, check, errorText };
  return hip;
}

/** calls `name` with `args`, then checks its status; the usual path for every HIP call */
export function hipCall<K extends keyof HipFns>(h: Hip, name: K, ...args: Parameters<HipFns[K]>): void {
  const f = h.fn[name] as ((...a: Parameters<HipFns[K]>) => number) | undefined;
  if (!f) throw new GpuError(`${name} is not exported by ${h.loaded.path}`, -1, name);
  h.check(f(...args), name, args);
}

/** koffi-allocated scratch: a stable host address that outlives the call */
export function hostScratch(bytes: number): { ptr: bigint; view: Uint8Array } {
  const ptr = koffi.alloc('uint8_t', bytes) as bigint;
  return { ptr, view: new Uint8Array(koffi.view(ptr, bytes)) };
}
