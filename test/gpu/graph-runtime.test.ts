// Stream capture and graph replay at the runtime interface (src/runtime/gpu.ts), below tensors
// and the allocator: captured async copies and memsets replay with the memory's contents at
// launch time, a forbidden call during a capture fails clearly and leaves the runtime usable,
// and a BLAS GEMM captured after setWorkspace replays to the right result.
import { gpuSuite } from './harness.ts';
import * as assert from 'uvu/assert';
import { GpuError } from '../../src/index.ts';
import {
  asDevicePtr,
  type DevicePtr,
  type GemmParams,
  type GpuRuntime,
  type GpuStream,
} from '../../src/runtime/gpu.ts';

const s = gpuSuite('gpu/graph-runtime', { needsRuntime: true });
const N = 4096;

const at = (p: DevicePtr, off: number): DevicePtr => asDevicePtr(p + BigInt(off));

function bytesFrom(seed: number, n: number): Uint8Array {
  const out = new Uint8Array(n);
  let x = (seed * 2654435761) >>> 0 || 1;
  for (let i = 0; i < n; i++) {
    x ^= x << 13;
    x >>>= 0;
    x ^= x >>> 17;
    x ^= x << 5;
    x >>>= 0;
    out[i] = x & 0xff;
  }
  return out;
}

function sameBytes(got: Uint8Array, want: Uint8Array, what: string): void {
  assert.is(got.length, want.length, `${what}: length`);
  const i = got.findIndex((v, k) => v !== want[k]);
  if (i >= 0)
    assert.unreachable(`${what}: first difference at byte ${i} of ${got.length}: got ${got[i]}, expected ${want[i]}`);
}

function readBack(rt: GpuRuntime, p: DevicePtr, n: number): Uint8Array {
  const out = new Uint8Array(n);
  rt.copyDtoH(out, p);
  return out;
}

/** frees what `fn` allocated and destroys its stream, also when it throws */
function withResources<T>(rt: GpuRuntime, sizes: number[], fn: (stream: GpuStream, ...ptrs: DevicePtr[]) => T): T {
  const ptrs: DevicePtr[] = [];
  const stream = rt.streamCreate();
  try {
    for (const n of sizes) ptrs.push(rt.malloc(n));
    return fn(stream, ...ptrs);
  } finally {
    // a failed test may leave the stream capturing: end it so the stream can go
    try {
      if (rt.isCapturing(stream)) rt.graphExecDestroy(rt.captureEnd(stream));
    } catch {
      /* the test's error wins */
    }
    rt.synchronize();
    for (const p of ptrs) rt.free(p);
    rt.streamDestroy(stream);
  }
}

/** captures: a <- 0x5a; b[0, N/2) <- c[0, N/2); b[N/2, N) <- a[0, N/2) */
function captureCopies(rt: GpuRuntime, stream: GpuStream, a: DevicePtr, b: DevicePtr, c: DevicePtr) {
  rt.captureBegin(stream);
  assert.ok(rt.isCapturing(stream), 'isCapturing after captureBegin');
  rt.memsetAsync(a, 0x5a, N, stream);
  rt.copyDtoDAsync(b, c, N / 2, stream);
  rt.copyDtoDAsync(at(b, N / 2), a, N / 2, stream);
  const exec = rt.captureEnd(stream);
  assert.not.ok(rt.isCapturing(stream), 'isCapturing after captureEnd');
  return exec;
}

s.test('captured memset and copies replay 3 times with the memory as it is at launch', (dev) => {
  const rt = dev.runtime;
  withResources(rt, [N, N, N], (stream, a, b, c) => {
    assert.not.ok(rt.isCapturing(stream), 'isCapturing before any capture');
    const zeros = new Uint8Array(N);
    rt.copyHtoD(a, zeros);
    rt.copyHtoD(b, zeros);
    rt.copyHtoD(c, zeros);
    const exec = captureCopies(rt, stream, a, b, c);
    try {
      // capturing records the work; none of it ran
      sameBytes(readBack(rt, a, N), zeros, 'a after capture, before any launch');
      sameBytes(readBack(rt, b, N), zeros, 'b after capture, before any launch');
      for (let i = 0; i < 3; i++) {
        const src = bytesFrom(i + 1, N);
        rt.copyHtoD(c, src);
        // the exec is not tied to the stream it was captured on
        const on = i === 2 ? rt.defaultStream : stream;
        rt.memsetAsync(a, 0, N, on);
        rt.memsetAsync(b, 0, N, on);
        rt.graphLaunch(exec, on);
        rt.streamSynchronize(on);
        const want = new Uint8Array(N).fill(0x5a, N / 2);
        want.set(src.subarray(0, N / 2), 0);
        sameBytes(readBack(rt, b, N), want, `b after launch ${i + 1}`);
        sameBytes(readBack(rt, a, N), new Uint8Array(N).fill(0x5a), `a after launch ${i + 1}`);
      }
    } finally {
      rt.graphExecDestroy(exec);
    }
  });
});

s.test('a synchronize during a capture fails clearly; the stream and the runtime stay usable', (dev) => {
  const rt = dev.runtime;
  withResources(rt, [N, N, N], (stream, a, b, c) => {
    rt.captureBegin(stream);
    rt.memsetAsync(a, 1, N, stream);
    let syncErr: unknown = null;
    try {
      rt.streamSynchronize(stream);
    } catch (e) {
      syncErr = e;
    }
    let endErr: unknown = null;
    try {
      rt.graphExecDestroy(rt.captureEnd(stream));
    } catch (e) {
      endErr = e;
    }
    const say = (e: unknown) => (e ? `${(e as Error).constructor.name}: ${(e as Error).message}` : 'no error');
    console.log(`  ${dev}: streamSynchronize while capturing -> ${say(syncErr)}\n  captureEnd -> ${say(endErr)}`);

    // what the drivers do (CUDA 12/13, ROCm 6.4): the synchronize fails with a stream-capture
    // error and invalidates the capture, and captureEnd names the failed call
    assert.ok(
      syncErr !== null || endErr !== null,
      'a synchronize of the capturing stream was accepted and the capture survived it',
    );
    if (syncErr !== null) {
      assert.instance(syncErr, GpuError);
      assert.match((syncErr as GpuError).message, /synchronize/i);
      assert.match((syncErr as GpuError).message, /capture/i, 'the error names the capture');
    }
    if (endErr !== null) {
      assert.instance(endErr, GpuError);
      const msg = (endErr as GpuError).message;
      assert.match(msg, /the capture was invalidated by/);
      if (syncErr instanceof GpuError && syncErr.code >= 900 && syncErr.code <= 908) {
        assert.ok(msg.includes(syncErr.call), `captureEnd's error names the failed ${syncErr.call}: ${msg}`);
      }
    }
    assert.not.ok(rt.isCapturing(stream), 'the stream still captures after captureEnd');

    // the stream runs work again, and captures again
    rt.memsetAsync(a, 7, N, stream);
    rt.streamSynchronize(stream);
    sameBytes(readBack(rt, a, N), new Uint8Array(N).fill(7), 'a after the failed capture');
    const src = bytesFrom(9, N);
    rt.copyHtoD(c, src);
    const exec = captureCopies(rt, stream, a, b, c);
    try {
      rt.graphLaunch(exec, stream);
      rt.streamSynchronize(stream);
      const want = new Uint8Array(N).fill(0x5a, N / 2);
      want.set(src.subarray(0, N / 2), 0);
      sameBytes(readBack(rt, b, N), want, 'b after a capture that followed the failed one');
    } finally {
      rt.graphExecDestroy(exec);
    }
    rt.synchronize();
  });
});

/** column-major m x n product of small integers: exact in f32 */
function gemmRef(m: number, n: number, k: number, a: Float32Array, b: Float32Array): Float32Array {
  const c = new Float32Array(m * n);
  for (let j = 0; j < n; j++)
    for (let i = 0; i < m; i++) {
      let acc = 0;
      for (let l = 0; l < k; l++) acc += a[i + l * m]! * b[l + j * k]!;
      c[i + j * m] = acc;
    }
  return c;
}

const smallInts = (seed: number, n: number): Float32Array => Float32Array.from(bytesFrom(seed, n), (v) => (v % 5) - 2);

s.test('a GEMM captured after setWorkspace replays to the right result', (dev) => {
  const rt = dev.runtime;
  const m = 24,
    n = 16,
    k = 40;
  const WS = 32 << 20;
  const blas = rt.blas();
  // the handle keeps pointing at its workspace: it stays allocated for the rest of the process
  const ws = rt.malloc(WS);
  blas.setWorkspace(ws, WS);
  withResources(rt, [m * k * 4, k * n * 4, m * n * 4], (stream, a, b, c) => {
    const p: GemmParams = {
      dtype: 'f32',
      transA: false,
      transB: false,
      m,
      n,
      k,
      alpha: 1,
      beta: 0,
      a,
      lda: m,
      strideA: m * k,
      b,
      ldb: k,
      strideB: k * n,
      c,
      ldc: m,
      strideC: m * n,
      batch: 1,
    };
    const B = smallInts(100, k * n);
    rt.copyHtoD(b, B);
    const result = (): Float32Array => {
      const out = new Float32Array(m * n);
      rt.copyDtoH(out, c);
      return out;
    };
    const exact = (got: Float32Array, want: Float32Array, what: string): void => {
      const i = got.findIndex((v, j) => v !== want[j]);
      if (i >= 0)
        assert.unreachable(
          `${what}: element ${i} (row ${i % m}, col ${Math.floor(i / m)}): got ${got[i]}, expected ${want[i]}`,
        );
    };

    // once outside a capture: loads the library's kernels, which a capture should not have to do
    const A0 = smallInts(1, m * k);
    rt.copyHtoD(a, A0);
    blas.gemmStridedBatched(p, stream);
    rt.streamSynchronize(stream);
    exact(result(), gemmRef(m, n, k, A0, B), `${blas.name} GEMM before capture`);

    rt.memsetAsync(c, 0, m * n * 4, stream);
    rt.streamSynchronize(stream);
    rt.captureBegin(stream);
    blas.gemmStridedBatched(p, stream);
    const exec = rt.captureEnd(stream);
    try {
      exact(result(), new Float32Array(m * n), 'C after capture, before any launch');
      for (let i = 0; i < 3; i++) {
        const A = smallInts(i + 2, m * k);
        rt.copyHtoD(a, A);
        rt.memsetAsync(c, 0xff, m * n * 4, stream);
        rt.graphLaunch(exec, stream);
        rt.streamSynchronize(stream);
        exact(result(), gemmRef(m, n, k, A, B), `${blas.name} GEMM replay ${i + 1}`);
      }
    } finally {
      rt.graphExecDestroy(exec);
    }
  });
});

s.run();
