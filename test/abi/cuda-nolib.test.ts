// CUDA with the driver library missing: an explicit ROCM_TENSOR_CUDA_LIB that cannot be loaded
// must not fall back to another copy, and the count is 0 with the loader's reason.
import { test } from 'uvu';
import * as assert from 'uvu/assert';

// before the first import of the driver module: the loader reads the override once
process.env.ROCM_TENSOR_CUDA_LIB = '/nonexistent/rocm-tensor/libcuda.so.1';
const { cudaDeviceCount, cudaProbe, openCuda } = await import('../../src/runtime/cuda/runtime.ts');

test('a missing libcuda is 0 devices with the reason, and openCuda names it', () => {
  assert.is(cudaDeviceCount(), 0);
  const { reason } = cudaProbe();
  assert.match(reason, /ROCM_TENSOR_CUDA_LIB=\/nonexistent\/rocm-tensor\/libcuda\.so\.1 could not be loaded/);
  assert.throws(
    () => openCuda(0),
    /openCuda\(0\): device index out of range, 0 CUDA device\(s\) visible.*could not be loaded/,
  );
});

test.run();
