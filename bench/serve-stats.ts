// The small pieces of arithmetic `npm run bench:serve` shares between its processes: a seeded
// generator (prompt and output lengths, token ids, arrival gaps) and latency quantiles.
import { uniformStream } from '../src/models/sampling.ts';

/** a seeded uniform generator in [0, 1) (the samplers' mulberry32) */
export const mulberry32 = uniformStream;

export interface Quantiles {
  /** samples; the quantiles are null without any */
  readonly n: number;
  readonly p50: number | null;
  readonly p99: number | null;
  readonly mean: number | null;
}

/** nearest-rank quantiles of the samples */
export function quantiles(xs: readonly number[]): Quantiles {
  if (xs.length === 0) return { n: 0, p50: null, p99: null, mean: null };
  const s = [...xs].sort((a, b) => a - b);
  const at = (q: number) => s[Math.min(s.length - 1, Math.max(0, Math.ceil(q * s.length) - 1))]!;
  return { n: s.length, p50: at(0.5), p99: at(0.99), mean: s.reduce((a, b) => a + b, 0) / s.length };
}

/** "128:2048" or "512" -> [lo, hi] */
export function parseRange(flag: string, v: string): [number, number] {
  const parts = v.split(':').map(Number);
  const [lo, hi] = parts.length === 1 ? [parts[0]!, parts[0]!] : parts;
  if (parts.length > 2 || !Number.isInteger(lo) || !Number.isInteger(hi) || lo! < 1 || hi! < lo!)
    throw new Error(`bench:serve: ${flag} must be LO:HI (integers, 1 <= LO <= HI) or one integer, got '${v}'`);
  return [lo!, hi!];
}

/** "1,16,64" -> numbers > 0 ('' -> none) */
export function parseList(flag: string, v: string, int: boolean): number[] {
  if (v.trim() === '') return [];
  return v.split(',').map((x) => {
    const n = Number(x);
    if (x.trim() === '' || !Number.isFinite(n) || n <= 0 || (int && !Number.isInteger(n)))
      throw new Error(
        `bench:serve: ${flag} must be a comma-separated list of ${int ? 'integers' : 'numbers'} > 0, got '${v}'`,
      );
    return n;
  });
}
