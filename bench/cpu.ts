// The CPU backend against NumPy on the same machine, in one run:
//   npm run bench:cpu                       ours only
//   npm run bench:cpu -- --numpy            then the same cases in NumPy (python3 bench/cpu_numpy.py)
//   npm run bench:cpu -- --json out.json    the JSON there instead of bench/results/
//   bun bench/cpu.ts --numpy                under Bun
// Cases: f32 matmul 512^3 and 2048^3, the decode-shaped GEMV [1, 896] x [4864, 896]^T, add, mul
// and exp over 2^24 f32 values, and the peak RSS of ones([2^26]).add(1) in a child process.
// Timing, the same on both sides: two warm-up calls, then calls until 1 s has passed (at least
// 5, at most 200), each output freed before the next call; the median and the minimum are
// reported, and the ratio is NumPy's median over ours (1.00 or more: as fast or faster); the
// ratio of the minima beside it is less moved by other work on a shared machine.
import { spawnSync } from 'node:child_process';
import { cpus, totalmem } from 'node:os';
import { fileURLToPath } from 'node:url';
import { Tensor, Device } from '../src/index.ts';
import { describeCpuMatmul } from '../src/backends/cpu/gemm.ts';
import { defaultResultsPath, writeResults } from './results-path.ts';

const RSS_N = 2 ** 26;

/** the peak-RSS child: prints the high-water mark's rise over the op, in bytes, as JSON */
function rssChild(): void {
  const gc = (globalThis as { gc?: () => void }).gc;
  // warm up the library (modules, the JIT, the WebAssembly kernels) on a small tensor first
  Tensor.ones([1024]).add(1).dispose();
  gc?.();
  // the RSS now against the high-water mark after: the rise is the op's (an earlier, higher peak
  // could only make it read larger)
  const before = process.memoryUsage().rss;
  const x = Tensor.ones([RSS_N]);
  const y = x.add(1);
  const after = process.resourceUsage().maxRSS * 1024;
  if (y.dim(0) !== RSS_N) throw new Error('rss child: wrong result');
  console.log(JSON.stringify({ baseline: before, peak: after, rise: after - before, gc: gc !== undefined }));
}

interface Case {
  readonly id: string;
  /** what the ratio should reach (NumPy median / ours) */
  readonly target: number;
  /** builds the inputs, returns the op and a cleanup */
  setup(): { run: () => Tensor; free: () => void };
}

const cpu = Device.cpu();
const rand = (shape: number[], seed: number) => Tensor.rand(shape, { seed, device: cpu });

const CASES: readonly Case[] = [
  ...[512, 2048].map(
    (n): Case => ({
      id: `matmul ${n}^3 f32`,
      target: 0.8,
      setup() {
        const a = rand([n, n], 1),
          b = rand([n, n], 2);
        return { run: () => a.matmul(b), free: () => [a, b].forEach((t) => t.dispose()) };
      },
    }),
  ),
  {
    id: 'gemv [1, 896] x [4864, 896]^T f32',
    target: 0.8,
    setup() {
      const x = rand([1, 896], 3),
        w = rand([4864, 896], 4),
        wt = w.T;
      return { run: () => x.matmul(wt), free: () => [x, w, wt].forEach((t) => t.dispose()) };
    },
  },
  ...(['add', 'mul'] as const).map(
    (op): Case => ({
      id: `${op} 2^24 f32`,
      target: 0.5,
      setup() {
        const x = rand([2 ** 24], 5),
          y = rand([2 ** 24], 6);
        return { run: () => (op === 'add' ? x.add(y) : x.mul(y)), free: () => [x, y].forEach((t) => t.dispose()) };
      },
    }),
  ),
  {
    id: 'exp 2^24 f32',
    target: 0.5,
    setup() {
      const x = rand([2 ** 24], 7);
      return { run: () => x.exp(), free: () => x.dispose() };
    },
  },
];

interface Timing {
  medianMs: number;
  minMs: number;
  iters: number;
}

function time(run: () => Tensor): Timing {
  for (let i = 0; i < 2; i++) run().dispose();
  const ts: number[] = [];
  const start = performance.now();
  while (ts.length < 5 || (ts.length < 200 && performance.now() - start < 1000)) {
    const t0 = performance.now();
    const y = run();
    ts.push(performance.now() - t0);
    y.dispose();
  }
  ts.sort((a, b) => a - b);
  return { medianMs: ts[Math.floor(ts.length / 2)]!, minMs: ts[0]!, iters: ts.length };
}

interface RssResult {
  baseline: number;
  peak: number;
  rise: number;
  error?: string;
}

function runRssChild(): RssResult {
  const self = fileURLToPath(import.meta.url);
  const isBun = typeof (globalThis as { Bun?: unknown }).Bun !== 'undefined';
  const args = isBun ? [self, '--rss-child'] : ['--expose-gc', ...process.execArgv, self, '--rss-child'];
  const r = spawnSync(process.execPath, args, { encoding: 'utf8', maxBuffer: 1 << 20 });
  const line = r.stdout.trim().split('\n').pop() ?? '';
  try {
    return JSON.parse(line) as RssResult;
  } catch {
    return { baseline: 0, peak: 0, rise: 0, error: (r.stderr || r.stdout || `exit ${r.status}`).trim().slice(0, 500) };
  }
}

interface NumpyReport {
  numpy?: string;
  blas?: string;
  threads?: number | null;
  rows?: Record<string, Timing & { error?: string }>;
  rss?: RssResult;
  error?: string;
}

function runNumpy(): NumpyReport {
  const script = fileURLToPath(new URL('./cpu_numpy.py', import.meta.url));
  console.log(`bench:cpu: running python3 ${script} (NumPy, the same cases and timing rules)`);
  const r = spawnSync('python3', [script, '--cases', JSON.stringify(CASES.map((c) => c.id))], {
    encoding: 'utf8',
    maxBuffer: 16 << 20,
  });
  if (r.error) return { error: `python3: ${r.error.message}` };
  const line = r.stdout.trim().split('\n').pop() ?? '';
  try {
    return JSON.parse(line) as NumpyReport;
  } catch {
    return { error: (r.stderr || r.stdout || `exit ${r.status}`).trim().slice(0, 1000) };
  }
}

function main(): void {
  const argv = process.argv.slice(2);
  if (argv.includes('--rss-child')) {
    rssChild();
    return;
  }
  const withNumpy = argv.includes('--numpy');
  const ji = argv.indexOf('--json');
  const jsonPath = ji >= 0 ? argv[ji + 1] : undefined;
  if (ji >= 0 && !jsonPath) throw new Error('bench:cpu: --json takes a path');
  const runtime = process.versions.bun ? `Bun ${process.versions.bun}` : `Node.js ${process.version}`;
  const cpuName = cpus()[0]?.model ?? 'cpu';
  console.log(`bench:cpu: ${cpuName}, ${cpus().length} cores, ${runtime}`);
  console.log(`  CPU matmul: ${describeCpuMatmul()}`);

  const ours: Record<string, Timing> = {};
  for (const c of CASES) {
    const { run, free } = c.setup();
    try {
      ours[c.id] = time(run);
    } finally {
      free();
    }
  }
  const rss = runRssChild();
  const np = withNumpy ? runNumpy() : null;

  const ioBytes = 2 * RSS_N * 4;
  const fmt = (x: number | undefined, d = 2) => (x === undefined ? '-' : x.toFixed(d));
  const rows: string[][] = [['case', 'ours ms', 'numpy ms', 'numpy / ours', 'of the minima', 'target']];
  for (const c of CASES) {
    const o = ours[c.id]!,
      n = np?.rows?.[c.id];
    const ok = n && !n.error;
    rows.push([
      c.id,
      fmt(o.medianMs),
      n?.error ? 'failed' : fmt(n?.medianMs),
      fmt(ok ? n.medianMs / o.medianMs : undefined),
      fmt(ok ? n.minMs / o.minMs : undefined),
      `>= ${c.target}`,
    ]);
  }
  const rssRatio = rss.error ? undefined : rss.rise / ioBytes;
  const npRss = np?.rss && !np.rss.error ? np.rss.rise / ioBytes : undefined;
  rows.push([
    'peak RSS rise, ones([2^26]).add(1) / (in + out bytes)',
    rss.error ? 'failed' : fmt(rssRatio),
    fmt(npRss),
    '',
    '',
    '<= 1.1',
  ]);
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
  for (const r of rows)
    console.log(r.map((cell, i) => (i === 0 ? cell.padEnd(widths[i]!) : cell.padStart(widths[i]!))).join('  '));
  if (rss.error) console.log(`  the RSS child failed: ${rss.error}`);
  if (np?.error) console.log(`  NumPy: ${np.error}`);
  else if (np) console.log(`  NumPy ${np.numpy}, ${np.blas}${np.threads ? `, ${np.threads} threads` : ''}`);

  const path = jsonPath ?? defaultResultsPath(cpuName, 'cpu');
  const out = writeResults(path, {
    date: new Date().toISOString(),
    machine: { cpu: cpuName, cores: cpus().length, memoryBytes: totalmem(), runtime },
    cpuMatmul: describeCpuMatmul(),
    rules:
      'two warm-up calls; then calls until 1 s (5 to 200); median and min; ratio = NumPy median / ours, ratioOfMinima = NumPy min / ours',
    rows: CASES.map((c) => ({
      id: c.id,
      target: c.target,
      ours: ours[c.id],
      numpy: np?.rows?.[c.id] ?? null,
      ratio: np?.rows?.[c.id]?.medianMs ? np.rows[c.id]!.medianMs / ours[c.id]!.medianMs : null,
      ratioOfMinima: np?.rows?.[c.id]?.minMs ? np.rows[c.id]!.minMs / ours[c.id]!.minMs : null,
    })),
    rss: {
      inOutBytes: ioBytes,
      ours: rss,
      oursRatio: rssRatio ?? null,
      numpy: np?.rss ?? null,
      numpyRatio: npRss ?? null,
    },
    numpy: np
      ? { version: np.numpy ?? null, blas: np.blas ?? null, threads: np.threads ?? null, error: np.error ?? null }
      : null,
  });
  console.log(`  results: ${out}`);
}

main();
