// GPU graphs: the work a function queues, recorded once (HIP / CUDA stream capture) and replayed
// with a single launch, so a step of hundreds of small ops costs the host one call. Memory that
// the captured work allocates comes from a pool private to the graph (the allocator hands those
// addresses to nobody else while the graph lives); the function's returned tensors are the
// outputs each replay rewrites.
import type { Device } from './device.ts';
import type { GpuGraphExec, GpuStream } from '../runtime/gpu.ts';
import { RawTensor } from './raw-tensor.ts';
import { GraphCaptureError } from '../core/errors.ts';
import { keep, tidy } from '../core/scope.ts';
import { deviceErrorsQueued } from '../runtime/device-errors.ts';

/** cuBLAS / rocBLAS must not allocate during a capture: each device gets a fixed workspace first */
const BLAS_WORKSPACE = 32 << 20;
const workspaces = new WeakMap<Device, true>();

function ensureBlasWorkspace(dev: Device): void {
  if (workspaces.has(dev)) return;
  const rt = dev.runtime;
  // raw memory, not the caching allocator's: it lives as long as the library handle
  rt.blas().setWorkspace(rt.malloc(BLAS_WORKSPACE), BLAS_WORKSPACE);
  workspaces.set(dev, true);
}

function tensorsIn(value: unknown, out: RawTensor[], depth = 0): void {
  if (value instanceof RawTensor) {
    out.push(value);
    return;
  }
  if (value === null || typeof value !== 'object' || depth > 4 || ArrayBuffer.isView(value)) return;
  for (const v of Array.isArray(value) ? value : Object.values(value)) tensorsIn(v, out, depth + 1);
}

export class Graph<T> {
  private exec: GpuGraphExec | null;
  private readonly held: RawTensor[];

  /** internal: made by device.captureGraph */
  constructor(
    readonly device: Device,
    exec: GpuGraphExec,
    readonly outputs: T,
    private readonly pool: GpuStream,
    private readonly stream: GpuStream,
    private readonly checksIds: boolean,
  ) {
    this.exec = exec;
    this.held = [];
    tensorsIn(outputs, this.held);
  }

  /** device memory private to this graph (outputs and the captured work's temporaries) */
  get poolBytes(): number {
    return this.device.allocator.poolBytes(this.pool);
  }
  /** of poolBytes, what the graph's outputs still hold: the device's bytes in use count it too */
  get poolInUse(): number {
    return this.device.allocator.poolInUse(this.pool);
  }
  get isDisposed(): boolean {
    return this.exec === null;
  }

  /** queues the recorded work again on the device's current stream */
  replay(): void {
    if (this.exec === null) throw new GraphCaptureError('Graph.replay: the graph was disposed');
    this.device.runtime.graphLaunch(this.exec, this.device.stream);
    // bad ids found by the replayed indexing kernels are reported at the next readback
    if (this.checksIds) deviceErrorsQueued(this.device);
  }

  /** waits for replays in flight, then frees the graph, its outputs and its private memory */
  dispose(): void {
    if (this.exec === null) return;
    const rt = this.device.runtime;
    rt.synchronize();
    for (const t of this.held) t.dispose();
    rt.graphExecDestroy(this.exec);
    this.exec = null;
    this.device.allocator.releasePool(this.pool, this.stream);
  }
  [Symbol.dispose](): void {
    this.dispose();
  }
}

/** the capture itself; device.captureGraph checks the device and keeps its capture state */
export function captureGraph<T>(
  dev: Device,
  fn: () => T,
  state: { begin(s: GpuStream): void; end(): void; checksIds(): boolean },
): Graph<T> {
  const rt = dev.runtime,
    stream = dev.stream;
  ensureBlasWorkspace(dev);
  const pool = dev.allocator.beginCapture(stream);
  state.begin(stream);
  rt.captureBegin(stream);
  let out: T;
  try {
    out = tidy(fn);
    if (out instanceof Promise)
      throw new GraphCaptureError(
        'captureGraph: fn must be synchronous (work queued after an await would escape the capture)',
      );
  } catch (e) {
    // leave the capture cleanly: end it, drop what was recorded, give the memory back
    try {
      rt.graphExecDestroy(rt.captureEnd(stream));
    } catch {
      /* the capture was already invalid */
    }
    state.end();
    dev.allocator.endCapture();
    rt.synchronize();
    dev.allocator.releasePool(pool, stream);
    throw e;
  }
  let exec: GpuGraphExec;
  try {
    exec = rt.captureEnd(stream);
  } finally {
    state.end();
    dev.allocator.endCapture();
  }
  const held: RawTensor[] = [];
  tensorsIn(out, held);
  for (const t of held) keep(t);
  return new Graph(dev, exec, out, pool, stream, state.checksIds());
}
