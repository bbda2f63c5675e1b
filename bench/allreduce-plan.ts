// The all-reduce sweep's plan and arithmetic, shared by our side and handed to PyTorch's side as
// JSON so both time the same sizes with the same iteration counts. Method (nccl-tests'): f32 sum,
// in place; per size a few warm-up calls, then `iters` calls queued back to back and one wait for
// all of them, timed on the host clock; time = elapsed / iters. algBW = bytes / time and
// busBW = algBW * 2 (n - 1) / n, the link bandwidth a ring all-reduce needs for that time.

export interface SweepPoint {
  readonly bytes: number;
  readonly iters: number;
  readonly warmup: number;
}

const KiB = 1024,
  GiB = 1024 ** 3;

/** 8 B .. 1 GiB by doubling (f32: 2 .. 2^28 elements) */
export function sweepPlan(quick: boolean, maxBytes = GiB): SweepPoint[] {
  const out: SweepPoint[] = [];
  for (let bytes = 8; bytes <= maxBytes; bytes *= 2) {
    // about 8 GiB of traffic per size, 10 .. 200 calls (quick: a quarter, at least 5)
    const iters = Math.min(200, Math.max(10, Math.floor((8 * GiB) / bytes)));
    out.push({ bytes, iters: quick ? Math.max(5, Math.floor(iters / 4)) : iters, warmup: quick ? 2 : 5 });
  }
  return out;
}

export const algBW = (bytes: number, seconds: number): number => bytes / seconds / 1e9;
export const busBW = (bytes: number, seconds: number, ranks: number): number =>
  (algBW(bytes, seconds) * 2 * (ranks - 1)) / ranks;

/** "8 B", "64 KiB", "1 GiB" */
export function fmtBytes(n: number): string {
  if (n >= GiB) return `${n / GiB} GiB`;
  if (n >= 1024 * KiB) return `${n / (1024 * KiB)} MiB`;
  if (n >= KiB) return `${n / KiB} KiB`;
  return `${n} B`;
}

/** the sizes whose time is latency rather than bandwidth */
export const SMALL_BYTES = 1024;
export const LARGE_BYTES = 64 * 1024 * 1024;
