// GPU timing with device events: warm-up, a calibration pass that picks the iteration count,
// then one event pair around each iteration and the median of those. The host is never
// synchronized inside the timed loop, so launch overhead shows only where the GPU would wait.
import type { Device } from '../src/index.ts';
import type { GpuEvent } from '../src/runtime/gpu.ts';
import type { TimingRules } from './cases.ts';

export interface Timing {
  readonly medianMs: number;
  readonly minMs: number;
  readonly maxMs: number;
  readonly iters: number;
}

export function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

/** per-iteration GPU times of `run(i)`, each between two events on the device's current stream */
function eventTimes(dev: Device, iters: number, first: number, run: (i: number) => void): number[] {
  const rt = dev.runtime;
  const stream = dev.stream;
  const evs: [GpuEvent, GpuEvent][] = [];
  try {
    for (let i = 0; i < iters; i++) evs.push([rt.eventCreate(true), rt.eventCreate(true)]);
    for (let i = 0; i < iters; i++) {
      rt.eventRecord(evs[i]![0], stream);
      run(first + i);
      rt.eventRecord(evs[i]![1], stream);
    }
    rt.eventSynchronize(evs[iters - 1]![1]);
    return evs.map(([a, b]) => rt.eventElapsedMs(a, b));
  } finally {
    for (const [a, b] of evs) {
      rt.eventDestroy(a);
      rt.eventDestroy(b);
    }
  }
}

/** runs `run(i)` for i = 0, 1, ... until at least `calls` calls and `ms` milliseconds have
 *  passed (the host path is then optimised by V8 too); returns the calls made */
export function warmUp(calls: number, ms: number, run: (i: number) => void): number {
  const t0 = performance.now();
  let i = 0;
  for (; i < calls || performance.now() - t0 < ms; i++) run(i);
  return i;
}

/** `run(i)` queues one op on dev.stream; i counts up so the caller can rotate inputs */
export function timeGpu(dev: Device, rules: TimingRules, run: (i: number) => void): Timing {
  let i = warmUp(rules.warmup, rules.warmupMs, run);
  dev.synchronize();
  const probe = median(eventTimes(dev, 3, i, run));
  i += 3;
  const iters = Math.max(rules.minIters, Math.min(rules.maxIters, Math.ceil(rules.targetMs / Math.max(probe, 1e-3))));
  const ts = eventTimes(dev, iters, i, run);
  return { medianMs: median(ts), minMs: Math.min(...ts), maxMs: Math.max(...ts), iters };
}

/** host time per op of `run` (queued without synchronizing), and with the final synchronize */
export function timeHost(
  dev: Device,
  rules: TimingRules,
  run: () => void,
): { hostUs: number; withSyncUs: number; ops: number } {
  for (let w = 0; w < Math.min(1000, rules.tinyOps); w++) run();
  dev.synchronize();
  const host: number[] = [],
    total: number[] = [];
  for (let r = 0; r < rules.tinyReps; r++) {
    const t0 = performance.now();
    for (let k = 0; k < rules.tinyOps; k++) run();
    const t1 = performance.now();
    dev.synchronize();
    const t2 = performance.now();
    host.push(((t1 - t0) * 1e3) / rules.tinyOps);
    total.push(((t2 - t0) * 1e3) / rules.tinyOps);
  }
  return { hostUs: median(host), withSyncUs: median(total), ops: rules.tinyOps };
}

/** device bytes one call of `run` holds at its peak beyond what was in use before it (its
 *  output and any workspace it allocates; inputs excluded), from the allocator's peak */
export function callPeakBytes(dev: Device, run: () => void): number {
  dev.synchronize();
  dev.resetPeakMemory();
  const before = dev.memoryStats()!.inUse;
  run();
  dev.synchronize();
  return dev.memoryStats()!.peakInUse - before;
}
