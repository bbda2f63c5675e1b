// Runs inside the ROCm root (sid glibc), bundled by scripts/abi/nodevice.ts: loads the real
// libamdhip64 through our own loader and declarations, asks it for devices, and prints JSON.
import { loadHip } from '../../src/ffi/hip.ts';
import { openRocm, rocmDeviceCount, rocmProbe } from '../../src/runtime/rocm/runtime.ts';

const h = loadHip();
const init = h.fn.hipInit(0);
const out: [number] = [-1];
const code = h.fn.hipGetDeviceCount(out);
const probe = rocmProbe();
let openError = '';
try {
  openRocm(0);
} catch (e) {
  openError = `${(e as Error).name}: ${(e as Error).message}`;
}
console.log(
  JSON.stringify({
    runtime: process.versions.bun ? `bun ${process.versions.bun}` : `node ${process.versions.node}`,
    path: h.loaded.path,
    init,
    initName: h.fn.hipGetErrorName(init),
    code,
    name: h.fn.hipGetErrorName(code),
    text: h.fn.hipGetErrorString(code),
    count: out[0],
    probe,
    deviceCount: rocmDeviceCount(),
    openError,
  }),
);
