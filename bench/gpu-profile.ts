// Where a GPU's time goes, by name: while a profile is on, every kernel launch, BLAS and DNN call,
// device copy and memset a device queues is bracketed by two timing events on its stream, and
// stop() sums the time between each pair per kernel (or library call) name. The events cost host
// time and keep programmatic dependent launches from overlapping, so a profiled step's wall time
// is not the bench's figure; each kernel's own GPU time is what it measures. Eager work only:
// calls queued while a graph is captured are not bracketed (and a replayed graph counts as one
// entry, "graph replay").
import type { Device } from '../src/index.ts';
import type { GpuEvent, GpuFunction, GpuRuntime, GpuStream } from '../src/runtime/gpu.ts';

export interface ProfileRow {
  readonly name: string;
  readonly calls: number;
  readonly ms: number;
}

export interface GpuProfile {
  start(): void;
  /** synchronizes, then the rows since start(), most time first */
  stop(): ProfileRow[];
  /** puts the runtime's methods back and frees the events */
  dispose(): void;
}

type Fn = (...a: unknown[]) => unknown;

/** names of the kernels a device has loaded, by function handle (read from its kernel cache) */
function kernelNames(dev: Device): Map<GpuFunction, string> {
  const out = new Map<GpuFunction, string>();
  // the cache is private to the library: a benchmark reaches in, the library never does
  const files = (dev.kernels as unknown as { files: Map<string, { kernels: Map<string, { fn: GpuFunction }> }> }).files;
  for (const file of files.values()) for (const [name, k] of file.kernels) out.set(k.fn, name);
  return out;
}

export function profileDevice(dev: Device): GpuProfile {
  const rt = dev.runtime as unknown as GpuRuntime & Record<string, unknown>;
  const free: GpuEvent[] = [];
  const marks: { name: string | GpuFunction; a: GpuEvent; b: GpuEvent }[] = [];
  const restore: (() => void)[] = [];
  let on = false;
  const take = (): GpuEvent => free.pop() ?? rt.eventCreate(true);

  /** replaces obj[key] by a version that brackets the call on the stream in argument `at` */
  const wrap = (
    obj: Record<string, unknown>,
    key: string,
    at: number,
    name: (a: unknown[]) => string | GpuFunction,
  ) => {
    const orig = obj[key] as Fn;
    if (typeof orig !== 'function') return;
    const had = Object.hasOwn(obj, key);
    obj[key] = (...args: unknown[]): unknown => {
      const s = args[at] as GpuStream;
      if (!on || rt.isCapturing(s)) return orig.apply(obj, args);
      const a = take();
      rt.eventRecord(a, s);
      const r = orig.apply(obj, args);
      const b = take();
      rt.eventRecord(b, s);
      marks.push({ name: name(args), a, b });
      return r;
    };
    restore.push(() => {
      if (had) obj[key] = orig;
      else delete obj[key];
    });
  };

  wrap(rt, 'launch', 4, (a) => a[0] as GpuFunction);
  wrap(rt, 'copyDtoDAsync', 3, () => 'copy device to device');
  wrap(rt, 'memsetAsync', 3, () => 'memset');
  wrap(rt, 'graphLaunch', 1, () => 'graph replay');
  const blas = rt.blas() as unknown as Record<string, unknown>;
  wrap(blas, 'gemmStridedBatched', 1, (a) => {
    const p = a[0] as { dtype: string; m: number; n: number; k: number; batch: number };
    return `${String(blas.name)} gemm ${p.dtype} m${p.m} n${p.n} k${p.k}${p.batch > 1 ? ` x${p.batch}` : ''}`;
  });
  // the DNN library loads on first use: a device that never used it is left alone
  let dnn: Record<string, unknown> | null = null;
  try {
    dnn = rt.dnn() as unknown as Record<string, unknown>;
  } catch {
    dnn = null;
  }
  if (dnn) {
    for (const k of [
      'convForward',
      'convTransposeForward',
      'convBackwardWeights',
      'poolForward',
      'poolBackward',
      'batchNormForwardTraining',
      'batchNormBackward',
      'softmaxForward',
      'lrnForward',
      'lrnBackward',
    ])
      wrap(dnn, k, 1, () => `${String(dnn!.name)} ${k}`);
  }

  return {
    start() {
      marks.length = 0;
      on = true;
    },
    stop() {
      on = false;
      rt.synchronize();
      const names = kernelNames(dev);
      const sum = new Map<string, { calls: number; ms: number }>();
      for (const m of marks) {
        const name = typeof m.name === 'string' ? m.name : (names.get(m.name) ?? 'kernel (unnamed)');
        const row = sum.get(name) ?? { calls: 0, ms: 0 };
        row.calls++;
        row.ms += rt.eventElapsedMs(m.a, m.b);
        sum.set(name, row);
        free.push(m.a, m.b);
      }
      marks.length = 0;
      return [...sum].map(([name, r]) => ({ name, ...r })).sort((x, y) => y.ms - x.ms);
    },
    dispose() {
      on = false;
      for (const r of restore.splice(0).reverse()) r();
      for (const m of marks) free.push(m.a, m.b);
      marks.length = 0;
      for (const e of free.splice(0)) rt.eventDestroy(e);
    },
  };
}
