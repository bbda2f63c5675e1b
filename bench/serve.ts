// npm run bench:serve -- --model DIR [--device D] [--dtype bf16] [--concurrency 1,16,64,256] [--rates 4,16]
//                        [--duration 30] [--requests N] [--prompt-len 128:2048] [--output-len 64:512] [--seed 1]
//                        [--nproc N] [--url http://host:port] [--no-offline] [--no-decode-graphs] [--smoke] [--json PATH]
//
// The OpenAI server under load. It starts `rocm-tensor serve` on the model folder in a process
// of its own (under `rocm-tensor launch --nproc N` with --nproc; or uses the running server at
// --url), waits for /health, then runs the load generator (bench/serve-load.ts) in another
// process: streamed /v1/completions of random token ids, at each fixed concurrency and each
// Poisson arrival rate in turn. Per load: output tokens/s, requests/s, time to first token and
// inter-token latency (p50, p99, from the arrival of the stream's chunks) and the KV pool's
// peak use (GET /metrics). Then, the server stopped, the offline baseline (bench/serve-offline.ts):
// generateIds over a batch of the same model, so each concurrency's throughput and inter-token
// p99 print beside the batch's tokens/s and step time. JSON to bench/results/<date>-<gpu>-serve-
// <model folder>.json unless --json says where. --smoke: a tiny random model on the CPU, in seconds.
import { parseArgs } from 'node:util';
import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import Table from 'cli-table3';
import { tableStyle } from '../src/cli/colour.ts';
import { defaultResultsPath, writeResults } from './results-path.ts';
import { parseList, parseRange } from './serve-stats.ts';
import { servableFolder } from './serve-tokenizer.ts';
import type { LoadJob, LoadReport, LoadResult, LoadSpec } from './serve-load.ts';
import type { OfflineJob, OfflineResult } from './serve-offline.ts';

const { values: opt } = parseArgs({
  options: {
    model: { type: 'string' },
    url: { type: 'string' },
    device: { type: 'string' },
    dtype: { type: 'string' },
    nproc: { type: 'string' },
    concurrency: { type: 'string' },
    rates: { type: 'string' },
    duration: { type: 'string' },
    requests: { type: 'string' },
    'prompt-len': { type: 'string' },
    'output-len': { type: 'string' },
    seed: { type: 'string', default: '1' },
    'max-batch': { type: 'string' },
    'max-queue': { type: 'string' },
    'max-seq-len': { type: 'string' },
    'kv-memory': { type: 'string' },
    'block-size': { type: 'string' },
    'no-decode-graphs': { type: 'boolean', default: false },
    'prefill-chunk': { type: 'string' },
    'offline-batch': { type: 'string' },
    'offline-new': { type: 'string' },
    'offline-prompt': { type: 'string' },
    'no-offline': { type: 'boolean', default: false },
    warmup: { type: 'string' },
    'load-timeout': { type: 'string', default: '900' },
    smoke: { type: 'boolean', default: false },
    json: { type: 'string' },
  },
});

const ROOT = fileURLToPath(new URL('../', import.meta.url));
const CLI = join(ROOT, 'src/cli/main.ts');
const bun = typeof (process.versions as Record<string, string | undefined>).bun === 'string';
/** a TypeScript entry point run by this runtime */
const tsArgv = (file: string, args: string[]) => (bun ? [file, ...args] : ['--import', 'tsx', file, ...args]);
const wallStart = performance.now();

function int(flag: string, v: string | undefined, dflt: number): number {
  if (v === undefined) return dflt;
  const n = Number(v);
  if (v.trim() === '' || !Number.isInteger(n) || n < 1)
    throw new Error(`bench:serve: --${flag} must be an integer >= 1, got '${v}'`);
  return n;
}

// --smoke: the tiny random model folder of the CPU tests, lengths to fit its 256 positions
let smokeRoot: string | null = null;
let modelDir = opt.model;
if (opt.smoke) {
  const { FOLDERS, writeModelFolder } = await import('../test/fixtures/model-folders.ts');
  smokeRoot = mkdtempSync(join(tmpdir(), 'bench-serve-smoke-'));
  modelDir = (await writeModelFolder(smokeRoot, FOLDERS[0]!)).dir;
}
const S = opt.smoke;
const concurrency = parseList('--concurrency', opt.concurrency ?? (S ? '1,4' : '1,16,64,256'), true);
const rates = parseList('--rates', opt.rates ?? (S ? '40' : '4,16'), false);
const promptLen = parseRange('--prompt-len', opt['prompt-len'] ?? (S ? '8:24' : '128:2048'));
const outputLen = parseRange('--output-len', opt['output-len'] ?? (S ? '4:12' : '64:512'));
const duration = int('duration', opt.duration, 30);
const requests = opt.requests !== undefined ? int('requests', opt.requests, 1) : S ? 6 : null;
const seed = int('seed', opt.seed, 1);
const device = opt.device ?? (S ? 'cpu' : undefined);
const nproc = opt.nproc !== undefined ? int('nproc', opt.nproc, 1) : 1;
const maxConc = Math.max(1, ...concurrency);
const offlineBatch = int('offline-batch', opt['offline-batch'], S ? 4 : 64);
const offlineNew = int('offline-new', opt['offline-new'], S ? 8 : 128);
const offlinePrompt = int('offline-prompt', opt['offline-prompt'], Math.round((promptLen[0] + promptLen[1]) / 2));
const warmup = opt.warmup !== undefined ? Number(opt.warmup) : Math.min(4, maxConc);
if (!modelDir) {
  // with --url too: the prompts' random ids need the model's vocabulary size
  console.error('usage: npm run bench:serve -- --model DIR [--url http://host:port] [options] | --smoke');
  process.exit(2);
}
if (nproc > 1 && device !== undefined)
  throw new Error(`bench:serve: --nproc ${nproc} puts rank r on GPU r; leave out --device ${device}`);

function modelConfig(dir: string): { vocab: number; maxPositions: number } {
  const c = JSON.parse(readFileSync(join(dir, 'config.json'), 'utf8')) as Record<string, unknown>;
  const tc = (c.text_config ?? {}) as Record<string, unknown>;
  return {
    vocab: Number(c.vocab_size ?? tc.vocab_size),
    maxPositions: Number(c.max_position_embeddings ?? tc.max_position_embeddings),
  };
}

/** the server's flags: the engine sized for the sweep's largest concurrency and longest request */
function serveFlags(): string[] {
  const f: string[] = [];
  const put = (flag: string, v: string | undefined) => {
    if (v !== undefined) f.push(flag, v);
  };
  put('--device', device);
  put('--dtype', opt.dtype);
  put('--max-batch', opt['max-batch'] ?? String(maxConc));
  put('--max-queue', opt['max-queue'] ?? String(Math.max(64, 2 * maxConc)));
  put('--max-seq-len', opt['max-seq-len'] ?? String(promptLen[1] + outputLen[1]));
  put('--kv-memory', opt['kv-memory'] ?? (S ? undefined : '0.85'));
  put('--block-size', opt['block-size']);
  put('--prefill-chunk', opt['prefill-chunk']);
  if (opt['no-decode-graphs']) f.push('--no-decode-graphs');
  return f;
}

interface Served {
  readonly url: string;
  readonly log: string | null;
  stop(): Promise<void>;
}

const logDir = mkdtempSync(join(tmpdir(), 'bench-serve-log-'));
/** stops the server started, from the moment its process exists */
let stopStarting: (() => Promise<void>) | null = null;

/** starts the server (in its own process group, so a launched job stops as one) and waits for /health */
async function startServer(dir: string): Promise<Served> {
  const serve = [process.execPath, ...tsArgv(CLI, ['serve', dir, '--port', '0', ...serveFlags()])];
  const argv =
    nproc > 1 ? [process.execPath, ...tsArgv(CLI, ['launch', '--nproc', String(nproc), '--', ...serve])] : serve;
  const logPath = join(logDir, 'server.log');
  const log = createWriteStream(logPath);
  const child: ChildProcess = spawn(argv[0]!, argv.slice(1), {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
    env: S ? { ...process.env, ROCM_TENSOR_DEVICE: 'cpu' } : process.env,
  });
  let err = '';
  child.stdout!.pipe(log);
  child.stderr!.on('data', (d: Buffer) => {
    if (err.length < 1 << 16) err += d.toString();
    log.write(d);
  });
  const exited = new Promise<number | null>((r) => child.on('exit', (code) => r(code)));
  let gone = false;
  void exited.then(() => {
    gone = true;
  });
  const stop = async () => {
    if (!gone) process.kill(-child.pid!, 'SIGTERM');
    const t = setTimeout(() => {
      if (!gone) process.kill(-child.pid!, 'SIGKILL');
    }, 60_000);
    await exited;
    clearTimeout(t);
    log.end();
  };
  stopStarting = stop;
  try {
    const deadline = performance.now() + Number(opt['load-timeout']) * 1e3;
    let url: string | null = null;
    for (;;) {
      if (gone) throw new Error(`the server exited before it was ready:\n${err.slice(-4000)}`);
      if (performance.now() > deadline) throw new Error(`the server was not ready in ${opt['load-timeout']} s`);
      url ??= /listening on (http:\/\/[^\s/]+)\/v1/.exec(err)?.[1] ?? null;
      if (url) {
        const r = await fetch(`${url}/health`).catch(() => null);
        if (r?.status === 200) return { url, log: logPath, stop };
      }
      await new Promise((r) => setTimeout(r, 200));
    }
  } catch (e) {
    await stop();
    throw e;
  }
}

/** runs a bench process that prints one JSON line on stdout */
function runJson<T>(file: string, job: unknown): Promise<T> {
  return new Promise((resolveRun, reject) => {
    const child = spawn(process.execPath, tsArgv(join(ROOT, file), [JSON.stringify(job)]), {
      cwd: ROOT,
      stdio: ['ignore', 'pipe', 'inherit'],
      env: S ? { ...process.env, ROCM_TENSOR_DEVICE: 'cpu' } : process.env,
    });
    let out = '';
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
    });
    child.on('error', reject);
    child.on('exit', (code) => {
      const line = out.trim().split('\n').pop() ?? '';
      if (code !== 0 || !line.startsWith('{')) reject(new Error(`${file} exited with ${code}`));
      else resolveRun(JSON.parse(line) as T);
    });
  });
}

const cfg = modelDir ? modelConfig(modelDir) : null;
let served: Served | null = null;
let serverUrl = opt.url?.replace(/\/(v1\/?)?$/, '') ?? null;
let synthetic = false;
let report: LoadReport;
// the server runs in a process group of its own: a signal to this bench stops it too
for (const sig of ['SIGINT', 'SIGTERM'] as const)
  process.once(sig, () => {
    void (stopStarting?.() ?? Promise.resolve()).finally(() => process.exit(130));
  });
let serverInfo: { maxBatch: number; maxSeqLen: number; kvBlocks: number; blockSize: number } | null = null;
try {
  if (!serverUrl) {
    const f = servableFolder(modelDir!, cfg!.vocab);
    synthetic = f.synthetic;
    if (synthetic) console.error(`bench:serve: ${modelDir} has no tokenizer.json; serving it with one naming every id`);
    console.error(`bench:serve: starting the server on ${modelDir}${nproc > 1 ? ` over ${nproc} ranks` : ''}`);
    served = await startServer(f.dir);
    serverUrl = served.url;
    console.error(`bench:serve: server ready at ${serverUrl} (log: ${served.log})`);
  }
  const m = (await (await fetch(`${serverUrl}/metrics`)).json()) as {
    kv: { blocks: number; blockSize: number };
    maxBatch: number;
    maxSeqLen: number;
  };
  serverInfo = { maxBatch: m.maxBatch, maxSeqLen: m.maxSeqLen, kvBlocks: m.kv.blocks, blockSize: m.kv.blockSize };
  const vocab = cfg!.vocab;
  const loads: LoadSpec[] = [
    ...concurrency.map((value) => ({ kind: 'concurrency' as const, value })),
    ...rates.map((value) => ({ kind: 'rate' as const, value })),
  ];
  const job: LoadJob = {
    url: serverUrl,
    vocab,
    seed,
    promptLen,
    outputLen,
    loads,
    duration,
    requests,
    warmup,
    idleTimeout: 300,
  };
  console.error(`bench:serve: ${loads.length} loads of ${duration} s at most each`);
  report = await runJson<LoadReport>('bench/serve-load.ts', job);
} finally {
  await served?.stop();
}

let offline: OfflineResult | null = null;
if (!opt['no-offline'] && modelDir) {
  console.error(
    `bench:serve: offline baseline, generateIds at batch ${offlineBatch}, prompt ${offlinePrompt}, ${offlineNew} new tokens`,
  );
  const oj: OfflineJob = {
    model: modelDir,
    device: device ?? null,
    dtype: opt.dtype ?? null,
    batch: offlineBatch,
    promptLen: offlinePrompt,
    newTokens: offlineNew,
    seed,
  };
  offline = await runJson<OfflineResult>('bench/serve-offline.ts', oj);
}

const ratio = (a: number | null | undefined, b: number | null | undefined) => (a != null && b ? a / b : null);
const rows = report.loads.map((l: LoadResult) => ({
  ...l,
  vsOffline: ratio(l.outputTokensPerS, offline?.decodeTokensPerS),
  itlP99VsStep: ratio(l.itlMs.p99, offline?.stepMs),
}));
const at = (c: number) => rows.find((r) => r.kind === 'concurrency' && r.value === c) ?? null;
const gpu = offline?.gpu ?? (device === 'cpu' ? 'cpu' : 'unknown');
const result = {
  bench: 'serve',
  date: new Date().toISOString(),
  gpu,
  device: offline?.device ?? device ?? null,
  dtype: offline?.dtype ?? opt.dtype ?? null,
  model: modelDir ? basename(resolve(modelDir)) : null,
  modelShape: offline?.config ?? null,
  syntheticTokenizer: synthetic,
  ranks: nproc,
  server: { url: opt.url ?? null, ...serverInfo, flags: opt.url ? null : serveFlags() },
  settings: { seed, promptLen, outputLen, duration, requests, warmup },
  loads: rows,
  offline,
  ratios: {
    c64OverOffline: at(64)?.vsOffline ?? null,
    c64ItlP99OverStep: at(64)?.itlP99VsStep ?? null,
    c256OverOffline: at(256)?.vsOffline ?? null,
  },
  wallSeconds: (performance.now() - wallStart) / 1e3,
};

const f1 = (x: number | null | undefined, d = 1) => (x == null ? '-' : x.toFixed(d));
const t = new Table({
  head: [
    'load',
    'done/sent',
    'out tok/s',
    'req/s',
    'TTFT p50/p99 ms',
    'ITL p50/p99 ms',
    'KV peak/blocks',
    'vs offline',
    'ITL p99 / step',
  ],
  style: tableStyle(),
});
for (const r of rows)
  t.push([
    r.kind === 'concurrency' ? `concurrency ${r.value}` : `${r.value} req/s`,
    `${r.completed}/${r.sent}`,
    f1(r.outputTokensPerS),
    f1(r.requestsPerS, 2),
    `${f1(r.ttftMs.p50)} / ${f1(r.ttftMs.p99)}`,
    `${f1(r.itlMs.p50, 2)} / ${f1(r.itlMs.p99, 2)}`,
    r.kv ? `${r.kv.peakUsed} / ${r.kv.blocks}` : '-',
    f1(r.vsOffline, 2),
    f1(r.itlP99VsStep, 2),
  ]);
console.log(
  `\nbench:serve ${result.model ?? serverUrl} on ${result.device ?? '?'} (${gpu}), ${result.dtype ?? '?'}${nproc > 1 ? `, ${nproc} ranks` : ''}; ` +
    `prompts ${promptLen.join('..')} tokens, outputs ${outputLen.join('..')}, seed ${seed}`,
);
console.log(t.toString());
if (offline)
  console.log(
    `offline generateIds, batch ${offline.batch}, prompt ${offline.promptLen}, ${offline.newTokens} new: ` +
      `${f1(offline.decodeTokensPerS)} decode tok/s, step ${f1(offline.stepMs, 2)} ms (${f1(offline.tokensPerS)} tok/s with prefill)`,
  );
const path = opt.json ?? (S ? join(logDir, 'smoke.json') : defaultResultsPath(gpu, `serve-${result.model ?? 'url'}`));
console.log(`wrote ${writeResults(path, result)} (${f1(result.wallSeconds)} s)`);
if (smokeRoot) rmSync(smokeRoot, { recursive: true, force: true });
