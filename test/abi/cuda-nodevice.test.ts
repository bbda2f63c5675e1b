// CUDA without a GPU: the device count is 0 with a reason and never an exception, whether
// libcuda is absent or present; opening a device is a GpuError carrying that reason. With the
// real driver library cached by scripts/abi-cuda/fetch.sh (and no NVIDIA kernel module), every
// declaration binds against it and cuInit reports the driver's own "no device" error.
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { FIXTURES } from '../../scripts/abi-cuda/check.ts';

// a GPU shows up as /dev/nvidiaN; containers may expose /dev/nvidiactl without any device
const hasGpu = readdirSync('/dev').some((n) => /^nvidia\d+$/.test(n));
const fixture = join(FIXTURES, 'lib', 'libcuda.so.1');
const useFixture = !hasGpu && !process.env.ROCM_TENSOR_CUDA_LIB && existsSync(fixture);
// before the first import of the driver module: the loader reads the override once
if (useFixture) process.env.ROCM_TENSOR_CUDA_LIB = fixture;

const { cudaDeviceCount, cudaProbe, openCuda } = await import('../../src/runtime/cuda/runtime.ts');
const { GpuError } = await import('../../src/core/errors.ts');

test('cudaDeviceCount() is a non-negative integer and never throws', () => {
  const n = cudaDeviceCount();
  const p = cudaProbe();
  console.log(`cudaDeviceCount() = ${n}; reason: ${p.reason || '(devices present)'}`);
  assert.ok(Number.isInteger(n) && n >= 0);
  assert.is(p.count, n);
});

if (hasGpu) {
  console.log('SKIP no-device checks: this machine has an NVIDIA GPU device node (/dev/nvidiaN)');
  test.skip('without an NVIDIA GPU the count is 0 and openCuda fails clearly', () => {});
} else {
  test('without an NVIDIA GPU the count is 0 and openCuda fails clearly', () => {
    assert.is(cudaDeviceCount(), 0);
    const reason = cudaProbe().reason;
    assert.ok(reason.length > 0, 'a count of 0 must say why');
    try {
      openCuda(0);
      assert.unreachable('openCuda(0) should throw without a device');
    } catch (e) {
      assert.instance(e, GpuError);
      assert.match((e as Error).message, /openCuda\(0\): device index out of range, 0 CUDA device\(s\) visible/);
      assert.ok((e as Error).message.includes(reason), 'the error carries the probe reason');
    }
  });
}

if (!useFixture) {
  console.log(
    hasGpu
      ? 'SKIP real-libcuda no-device check: a GPU is present'
      : `SKIP real-libcuda no-device check: ${process.env.ROCM_TENSOR_CUDA_LIB ? 'ROCM_TENSOR_CUDA_LIB is set' : `no cached driver at ${fixture} (scripts/abi-cuda/fetch.sh)`}`,
  );
  test.skip('the real libcuda binds every declaration and reports CUDA_ERROR_NO_DEVICE', () => {});
} else {
  test('the real libcuda binds every declaration and reports CUDA_ERROR_NO_DEVICE', async () => {
    const { loadCudaDriver } = await import('../../src/ffi/cuda.ts');
    const d = loadCudaDriver();
    assert.is(d.loaded.path, fixture);
    const init = d.fn.cuInit(0);
    console.log(
      `${d.loaded.path}: cuInit(0) -> ${d.errorText(init)}; cuFuncGetParamInfo ${d.fn.cuFuncGetParamInfo ? 'bound' : 'absent'}, ` +
        `cuEventElapsedTime_v2 ${d.fn.cuEventElapsedTime_v2 ? 'bound' : 'absent'}`,
    );
    assert.is(init, 100, `expected CUDA_ERROR_NO_DEVICE (100), got ${d.errorText(init)}`);
    assert.match(d.errorText(2), /^CUDA_ERROR_OUT_OF_MEMORY \(2\): out of memory$/);
    assert.match(cudaProbe().reason, /CUDA_ERROR_NO_DEVICE/);
    assert.ok(d.fn.cuFuncGetParamInfo, 'driver 550 (CUDA 12.4) exports cuFuncGetParamInfo');
  });
}

test.run();
