// The samples bench/soak.ts records between rounds, and its verdict on them: after the warm-up,
// live tensors and the bytes tensors hold on the device stay exactly where they were (every
// sample is taken between rounds, when only the model is alive), and the allocator's idle
// cache never passes its limit. Reserved memory and RSS are reported, not judged: they move
// with the largest round so far.
export interface SoakSample {
  readonly seconds: number;
  readonly round: number;
  readonly tokens: number;
  readonly liveTensors: number;
  /** device memory (null on the CPU): held by tensors, held from the device, free in it, and the free part in segments no block uses */
  readonly inUse: number | null;
  readonly reserved: number | null;
  readonly cached: number | null;
  readonly idle: number | null;
  readonly peakReserved: number | null;
  readonly deviceAllocations: number | null;
  readonly deviceFrees: number | null;
  readonly cacheReleases: number | null;
  readonly rss: number;
  readonly heapUsed: number;
  /** bytes of ArrayBuffers (CPU tensors' memory among them), and of those the freed CPU memory kept for reuse */
  readonly arrayBuffers: number;
  readonly hostCache: number;
}

export interface Verdict {
  readonly pass: boolean;
  /** one line per check, each starting with PASS, FAIL or INFO */
  readonly lines: readonly string[];
}

const mib = (n: number) => `${(n / 2 ** 20).toFixed(1)} MiB`;

export function soakVerdict(samples: readonly SoakSample[], warmupSeconds: number, cacheLimit: number | null): Verdict {
  const after = samples.filter((s) => s.seconds >= warmupSeconds);
  const lines: string[] = [];
  let pass = true;
  const check = (ok: boolean, text: string) => {
    lines.push(`${ok ? 'PASS' : 'FAIL'} ${text}`);
    if (!ok) pass = false;
  };
  if (after.length < 3) {
    check(false, `only ${after.length} samples after the ${warmupSeconds} s warm-up: run longer or sample more often`);
    return { pass, lines };
  }
  const first = after[0]!,
    last = after[after.length - 1]!;
  const flat = (key: 'liveTensors' | 'inUse', show: (n: number) => string, what: string) => {
    const v = after.map((s) => s[key]!);
    const off = after.filter((s) => s[key] !== first[key]);
    check(
      off.length === 0,
      `${what} flat: ${show(first[key]!)} at ${first.seconds.toFixed(0)} s (round ${first.round}), ${show(last[key]!)} at ${last.seconds.toFixed(0)} s (round ${last.round}); ` +
        `range ${show(Math.min(...v))} to ${show(Math.max(...v))} over ${after.length} samples`,
    );
  };
  flat('liveTensors', String, 'live tensors');
  if (first.inUse !== null) flat('inUse', mib, 'device bytes held by tensors');
  if (first.idle !== null && cacheLimit !== null) {
    const worst = Math.max(...samples.map((s) => s.idle!));
    check(worst <= cacheLimit, `idle cache under the limit: at most ${mib(worst)} of ${mib(cacheLimit)}`);
    const cached = after.map((s) => s.cached!),
      reserved = after.map((s) => s.reserved!);
    lines.push(
      `INFO cached ${mib(Math.min(...cached))} to ${mib(Math.max(...cached))}, reserved ${mib(Math.min(...reserved))} to ${mib(Math.max(...reserved))} (peak ${mib(last.peakReserved!)}); ` +
        `${last.deviceAllocations} device mallocs, ${last.deviceFrees} segments given back (${last.cacheReleases} by the limit)`,
    );
  }
  lines.push(
    `INFO after the warm-up: RSS ${mib(first.rss)} -> ${mib(last.rss)}, JS heap ${mib(first.heapUsed)} -> ${mib(last.heapUsed)}, ` +
      `array buffers ${mib(first.arrayBuffers)} -> ${mib(last.arrayBuffers)} (of which the CPU memory cache ${mib(first.hostCache)} -> ${mib(last.hostCache)})`,
  );
  return { pass, lines };
}
