// The device report of `rocm-tensor info` and `npm start`: which devices and libraries are
// there, found where, at which versions. Every probe is allowed to fail; its error is reported.
import { Device } from './device.ts';

export interface DeviceReport {
  rocm: { count: number; error?: string };
  cuda: { count: number; error?: string };
  devices: { id: string; name: string; arch: string; memoryGiB: number; multiprocessors: number; warpSize: number; runtime: string; driver: string }[];
  libraries: { name: string; status: string }[];
  chosen: string;
}

function probe<T>(f: () => T): { value?: T; error?: string } {
  try { return { value: f() }; } catch (e) { return { error: (e as Error).message.split('\n')[0] }; }
}

export function deviceReport(): DeviceReport {
  const r = probe(() => Device.rocmCount()), c = probe(() => Device.cudaCount());
  const report: DeviceReport = {
    rocm: { count: r.value ?? 0, ...(r.error ? { error: r.error } : {}) },
    cuda: { count: c.value ?? 0, ...(c.error ? { error: c.error } : {}) },
    devices: [], libraries: [], chosen: 'cpu',
  };
  const gpus: Device[] = [];
  for (let i = 0; i < report.rocm.count; i++) gpus.push(Device.rocm(i));
  for (let i = 0; i < report.cuda.count; i++) gpus.push(Device.cuda(i));
  for (const d of gpus) {
    const info = probe(() => d.runtime.info);
    if (!info.value) { report.devices.push({ id: String(d), name: `error: ${info.error}`, arch: '?', memoryGiB: 0, multiprocessors: 0, warpSize: 0, runtime: '', driver: '' }); continue; }
    const i = info.value;
    report.devices.push({
      id: String(d), name: i.name, arch: i.archFull, memoryGiB: +(i.totalMemory / 2 ** 30).toFixed(1),
      multiprocessors: i.multiprocessors, warpSize: i.warpSize, runtime: i.runtimeVersion, driver: i.driverVersion,
    });
  }
  const first = gpus[0];
  if (first) {
    const blas = probe(() => first.runtime.blas());
    report.libraries.push({ name: first.kind === 'rocm' ? 'rocBLAS' : 'cuBLAS', status: blas.value ? `${blas.value.name} ${blas.value.version}` : `not loaded: ${blas.error}` });
    const dnn = probe(() => first.runtime.dnn());
    report.libraries.push({ name: first.kind === 'rocm' ? 'MIOpen' : 'cuDNN', status: dnn.value ? `${dnn.value.name} ${dnn.value.version}` : `not loaded: ${dnn.error}` });
  }
  report.chosen = String(probe(() => Device.best()).value ?? 'cpu');
  return report;
}
