// A GPU runtime that runs nothing: allocations are address ranges from a bump pointer, launches,
// copies and library calls return at once, kernels' layouts come from the committed PTX. With it
// any machine, GPU or not, times the host path of the GPU ops alone (bench/host-cost.ts): what
// our TypeScript costs per op before the driver's own launch cost.
import { Device } from '../src/index.ts';
import {
  asDevicePtr,
  type BlasApi,
  type DeviceInfo,
  type DevicePtr,
  type DnnApi,
  type GpuRuntime,
} from '../src/runtime/gpu.ts';

/** an opaque handle: the runtime never looks inside */
const handle = <T>(tag: string): T => ({ tag }) as unknown as T;

/** shaped like an H200 (132 multiprocessors, sm_90), so ops plan their launches as they would there */
export function nullRuntime(): GpuRuntime {
  let next = 1n << 40n;
  const info: DeviceInfo = {
    vendor: 'cuda',
    index: 0,
    name: 'null runtime (sm_90, 132 SMs)',
    arch: 'sm_90',
    archFull: 'sm_90',
    totalMemory: 140e9,
    multiprocessors: 132,
    warpSize: 32,
    maxThreadsPerBlock: 1024,
    maxSharedMemoryPerBlock: 49152,
    maxSharedMemoryPerBlockOptin: 232448,
    maxGridDim: [2147483647, 65535, 65535],
    runtimeVersion: 'none',
    driverVersion: 'none',
  };
  const blas: BlasApi = { name: 'none', version: 'none', gemmStridedBatched() {}, setWorkspace() {} };
  const dnn: DnnApi = {
    name: 'none',
    version: 'none',
    convForward() {},
    convTransposeForward() {},
    convBackwardWeights() {},
    poolForward() {},
    poolBackward() {},
    batchNormForwardTraining() {},
    batchNormBackward() {},
    softmaxForward() {},
    rnnSizes: () => ({ weightBytes: 0, workspaceBytes: 0, reserveBytes: 0 }),
    rnnWeightOffsets: () => ({ wIh: [], wHh: [], bIh: [], bHh: [] }),
    rnnForward() {},
    rnnBackwardData() {},
    rnnBackwardWeights() {},
    lrnForward() {},
    lrnBackward() {},
  };
  const none = (): void => {};
  return {
    vendor: 'cuda',
    index: 0,
    dnnCapturable: false,
    info,
    defaultStream: handle('stream'),
    memGetInfo: () => ({ free: info.totalMemory, total: info.totalMemory }),
    malloc(bytes: number): DevicePtr {
      const p = next;
      next += BigInt(Math.ceil(bytes / 512) * 512 + 512);
      return asDevicePtr(p);
    },
    free: none,
    hostAlloc: (bytes: number) => ({ size: bytes, bytes: new Uint8Array(bytes) }),
    hostFree: none,
    copyHtoD: none,
    copyDtoH: none,
    copyHtoDAsync: none,
    copyDtoHAsync: none,
    copyDtoDAsync: none,
    memsetAsync: none,
    streamCreate: () => handle('stream'),
    streamDestroy: none,
    streamSynchronize: none,
    streamWaitEvent: none,
    eventCreate: () => handle('event'),
    eventRecord: none,
    eventSynchronize: none,
    eventQuery: () => true,
    eventElapsedMs: () => 0,
    eventDestroy: none,
    synchronize: none,
    moduleLoad: () => handle('module'),
    moduleGetFunction: () => handle('function'),
    moduleUnload: none,
    functionParams: () => null,
    startsEarly: () => false,
    launch: none,
    captureBegin: none,
    captureEnd: () => handle('graph'),
    isCapturing: () => false,
    graphLaunch: none,
    graphExecDestroy: none,
    nativeStream: () => 0n,
    callForeign: <T>(fn: () => T): T => fn(),
    blas: () => blas,
    dnn: () => dnn,
  };
}

/** the 'cuda:0' Device with the null runtime in place of the driver (nothing else may use cuda:0
 *  in this process) */
export function nullDevice(): Device {
  // Device keeps its constructor and runtime private: a benchmark reaches in, the library never does
  const dev = (Device as unknown as { get(kind: string, index: number): Device }).get('cuda', 0);
  (dev as unknown as { rt: GpuRuntime }).rt = nullRuntime();
  return dev;
}
