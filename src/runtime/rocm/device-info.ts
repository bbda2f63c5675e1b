// What a HIP device is, read once when its runtime opens: name, processor, memory, limits and
// the runtime and driver versions, as the vendor-neutral DeviceInfo.
import koffi from 'koffi';
import { HIP_CONST, HIP_NAME_LEN, HIP_STRUCTS, hipCall, type Hip } from '../../ffi/hip.ts';
import { readCString } from '../../ffi/native.ts';
import type { DeviceInfo } from '../gpu.ts';

/** HIP_VERSION-style integer (major * 1e7 + minor * 1e5 + patch) as text */
function fmtHipVersion(v: number): string {
  return `${Math.floor(v / 1e7)}.${Math.floor(v / 1e5) % 100}.${v % 1e5}`;
}

/** 'gfx942:sramecc+:xnack-' -> 'gfx942': code objects are keyed by the processor alone */
export function archKey(archFull: string): string {
  return archFull.split(':')[0]!.trim();
}

/** the DeviceInfo of HIP device `index` */
export function readDeviceInfo(h: Hip, index: number): DeviceInfo {
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
