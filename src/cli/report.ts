// The device report of `rocm-tensor info` and `npm start`: which devices and libraries are
// there, found where, at which versions. Every probe is allowed to fail; its error is reported.
import { Device } from '../device/device.ts';
import { rocmProbe } from '../runtime/rocm/runtime.ts';
import { cudaProbe } from '../runtime/cuda/runtime.ts';
import { describeCpuMatmul } from '../backends/cpu/gemm.ts';

export interface DeviceReport {
  /** the JavaScript runtime running this: 'Node.js v20.20.2', 'Bun 1.4.5' */
  runtime: string;
  rocm: { count: number; error?: string };
  cuda: { count: number; error?: string };
  devices: {
    id: string;
    name: string;
    arch: string;
    memoryGiB: number;
    multiprocessors: number;
    warpSize: number;
    runtime: string;
    driver: string;
  }[];
  libraries: { name: string; status: string }[];
  chosen: string;
}

function probe<T>(f: () => T): { value?: T; error?: string } {
  try {
    return { value: f() };
  } catch (e) {
    return { error: (e as Error).message.split('\n')[0] };
  }
}

export function deviceReport(): DeviceReport {
  // the probes say why there is no device (library missing, runtime's own error)
  const r = probe(() => rocmProbe()),
    c = probe(() => cudaProbe());
  const why = (p: { value?: { count: number; reason: string }; error?: string }) =>
    p.error ?? (p.value && p.value.count === 0 && p.value.reason ? p.value.reason.split('\n')[0] : undefined);
  const rocmWhy = why(r),
    cudaWhy = why(c);
  const report: DeviceReport = {
    rocm: { count: r.value?.count ?? 0, ...(rocmWhy ? { error: rocmWhy } : {}) },
    cuda: { count: c.value?.count ?? 0, ...(cudaWhy ? { error: cudaWhy } : {}) },
    // Bun also fills process.versions.node (the Node version it mimics): look for bun first
    runtime: process.versions.bun ? `Bun ${process.versions.bun}` : `Node.js ${process.version}`,
    devices: [],
    libraries: [],
    chosen: 'cpu',
  };
  const gpus: Device[] = [];
  for (let i = 0; i < report.rocm.count; i++) gpus.push(Device.rocm(i));
  for (let i = 0; i < report.cuda.count; i++) gpus.push(Device.cuda(i));
  for (const d of gpus) {
    const info = probe(() => d.runtime.info);
    if (!info.value) {
      report.devices.push({
        id: String(d),
        name: `error: ${info.error}`,
        arch: '?',
        memoryGiB: 0,
        multiprocessors: 0,
        warpSize: 0,
        runtime: '',
        driver: '',
      });
      continue;
    }
    const i = info.value;
    report.devices.push({
      id: String(d),
      name: i.name,
      arch: i.archFull,
      memoryGiB: +(i.totalMemory / 2 ** 30).toFixed(1),
      multiprocessors: i.multiprocessors,
      warpSize: i.warpSize,
      runtime: i.runtimeVersion,
      driver: i.driverVersion,
    });
  }
  const first = gpus[0];
  if (first) {
    const blas = probe(() => first.runtime.blas());
    report.libraries.push({
      name: first.kind === 'rocm' ? 'rocBLAS' : 'cuBLAS',
      status: blas.value ? `${blas.value.name} ${blas.value.version}` : `not loaded: ${blas.error}`,
    });
    const dnn = probe(() => first.runtime.dnn());
    report.libraries.push({
      name: first.kind === 'rocm' ? 'MIOpen' : 'cuDNN',
      status: dnn.value ? `${dnn.value.name} ${dnn.value.version}` : `not loaded: ${dnn.error}`,
    });
  }
  // the CPU: which code computes matmul and linear there (BLAS, the built-in kernel, the exact reference)
  const cpuGemm = probe(() => describeCpuMatmul());
  report.libraries.push({ name: 'CPU matmul', status: cpuGemm.value ?? `error: ${cpuGemm.error}` });
  report.chosen = String(probe(() => Device.best()).value ?? 'cpu');
  return report;
}
