// npm run bench:soak -- [--minutes 10] [--device gpu|cpu|cuda:N|rocm:N|null] [--shape 1b|8b|tiny]
//                       [--model DIR] [--every SECONDS] [--warmup SECONDS] [--max-new N]
//                       [--cache-limit BYTES] [--seed N] [--out FILE]
//
// Memory over long generation. Runs varied rounds of generateIds for --minutes (batches of
// 1-13 prompts of 16-300 tokens; greedy, sampled and penalized; decode graph or eager; ended
// by running out, stop ids, the consumer stopping early, or an error thrown from the streaming
// callback) on a random model of a real model's shape (1b on a GPU, tiny on the CPU) or a
// Hugging Face folder, after one round of the largest batch and prompts per mode (what grows
// to the largest size seen is grown before the first sample). Between rounds, every --every
// seconds, it prints and records live tensors, device memory in use, cached, idle and
// reserved, and RSS; at the end the verdict (bench/soak-verdict.ts) and the JSON, to
// bench/results/<date>-<device>-soak.json (rewritten at each sample, so a run cut short
// leaves its samples) and to --out FILE. Progress lines are written straight to fd 1, so a run
// started in the background (setsid ... > log) shows them as they come. SIGINT or SIGTERM ends
// it after the current round, with the verdict. Exit code 0 when the verdict passes, 1 when not.
import { writeSync } from 'node:fs';
import { cpus } from 'node:os';
import { parseArgs } from 'node:util';
import { Device, liveTensors, type DType } from '../src/index.ts';
import { parseEnv } from '../src/core/config.ts';
import { hostCacheBytes } from '../src/device/host-memory.ts';
import { nullDevice } from './null-runtime.ts';
import { soakModel } from './soak-model.ts';
import { lcg, planRound, primingRounds, runRound, type Ending } from './soak-rounds.ts';
import { soakVerdict, type SoakSample } from './soak-verdict.ts';
import { defaultResultsPath, writeResults } from './results-path.ts';

const { values: opt } = parseArgs({
  options: {
    minutes: { type: 'string', default: '10' },
    device: { type: 'string' },
    shape: { type: 'string' },
    model: { type: 'string' },
    every: { type: 'string' },
    warmup: { type: 'string' },
    'max-new': { type: 'string' },
    'cache-limit': { type: 'string' },
    seed: { type: 'string', default: '1' },
    out: { type: 'string' },
  },
});

const say = (line: string): void => {
  writeSync(1, `${line}\n`);
};
const num = (name: string, v: string | undefined, dflt: number): number => {
  const x = v === undefined ? dflt : Number(v);
  if (!Number.isFinite(x) || x < 0) {
    say(`bench:soak: --${name} must be a number >= 0, got ${v}`);
    process.exit(2);
  }
  return x;
};

// --device null: the GPU path on a runtime that runs nothing (null-runtime.ts): the same tensors
// and allocations as on a GPU, on any machine; only memory means anything there
const onNull = opt.device === 'null';
const dev = onNull ? nullDevice() : opt.device ? Device.parse(opt.device) : (Device.bestGpu() ?? Device.cpu());
const gpu = !dev.isCpu;
const seconds = num('minutes', opt.minutes, 10) * 60;
const every = num('every', opt.every, Math.max(2, Math.min(30, seconds / 20)));
const warmup = num('warmup', opt.warmup, Math.min(60, seconds / 5));
const maxNew = Math.max(1, Math.floor(num('max-new', opt['max-new'], gpu ? 128 : 16)));
const seed = Math.floor(num('seed', opt.seed, 1));
const dtype: DType = gpu ? 'bf16' : 'f32';
const shape = opt.shape ?? (gpu ? '1b' : 'tiny');
const deviceName = onNull ? 'null runtime' : gpu ? dev.runtime.info.name : `${cpus()[0]?.model ?? 'unknown'} cpu`;
const resultsPath = defaultResultsPath(deviceName, 'soak');

if (opt['cache-limit'] !== undefined) {
  if (!gpu) {
    say(`bench:soak: --cache-limit sets a GPU allocator's limit; ${dev} has none`);
    process.exit(2);
  }
  dev.allocator.setCacheLimit(parseEnv('ROCM_TENSOR_MEMORY_CACHE_LIMIT', opt['cache-limit'])!);
}
const cacheLimit = gpu ? dev.allocator.stats().cacheLimit : null;

let stop = false;
for (const sig of ['SIGINT', 'SIGTERM'] as const)
  process.on(sig, () => {
    if (stop) process.exit(130);
    stop = true;
    say(`bench:soak: ${sig}: stopping after this round`);
  });

const t0 = performance.now();
const loaded = await soakModel(dev, { shape, dir: opt.model, dtype, seed });
const model = loaded.model;
// the rotary tables grow with the longest sequence so far: sized once for the longest a round asks
model.rope.reserve(300 + maxNew);
say(
  `bench:soak on ${dev} "${deviceName}": ${loaded.what}, loaded in ${((performance.now() - t0) / 1e3).toFixed(1)} s; ` +
    `${seconds / 60} min, a sample every ${every} s, warm-up ${warmup} s, up to ${maxNew} new tokens` +
    (cacheLimit !== null ? `, cache limit ${(cacheLimit / 2 ** 20).toFixed(0)} MiB` : ''),
);

const samples: SoakSample[] = [];
const endings: Record<Ending, number> = { complete: 0, 'stop-ids': 0, abort: 0, 'stream-error': 0 };
const modes = { greedy: 0, sampled: 0, penalized: 0, graph: 0, eager: 0 };
let round = 0,
  tokens = 0;
const start = performance.now();
const elapsed = () => (performance.now() - start) / 1e3;
const gib = (n: number | null) => (n === null ? '-' : `${(n / 2 ** 30).toFixed(3)} GiB`);

function results(verdict: { pass: boolean; lines: readonly string[] } | null) {
  return {
    date: new Date().toISOString(),
    device: String(dev),
    name: deviceName,
    model: loaded.what,
    minutes: seconds / 60,
    everySeconds: every,
    warmupSeconds: warmup,
    maxNew,
    seed,
    cacheLimit,
    rounds: round,
    tokens,
    endings,
    modes,
    verdict,
    samples,
  };
}

/** the live tensors of the first sample after the warm-up: later ones that differ are named */
let baseline: Map<string, number> | null = null;
function countLive(list: readonly string[]): Map<string, number> {
  const m = new Map<string, number>();
  for (const t of list) m.set(t, (m.get(t) ?? 0) + 1);
  return m;
}
function liveChange(now: Map<string, number>): string {
  const parts: string[] = [];
  for (const k of new Set([...baseline!.keys(), ...now.keys()])) {
    const d = (now.get(k) ?? 0) - (baseline!.get(k) ?? 0);
    if (d !== 0) parts.push(`${d > 0 ? '+' : ''}${d} ${k}`);
  }
  return parts.slice(0, 12).join('; ') + (parts.length > 12 ? `; and ${parts.length - 12} more` : '');
}

function sample(): void {
  const st = dev.memoryStats();
  const mem = process.memoryUsage();
  const live = liveTensors();
  const s: SoakSample = {
    seconds: elapsed(),
    round,
    tokens,
    liveTensors: live.length,
    inUse: st?.inUse ?? null,
    reserved: st?.reserved ?? null,
    cached: st?.cached ?? null,
    idle: st?.idle ?? null,
    peakReserved: st?.peakReserved ?? null,
    deviceAllocations: st?.deviceAllocations ?? null,
    deviceFrees: st?.deviceFrees ?? null,
    cacheReleases: st?.cacheReleases ?? null,
    rss: mem.rss,
    heapUsed: mem.heapUsed,
    arrayBuffers: mem.arrayBuffers,
    hostCache: hostCacheBytes(),
  };
  samples.push(s);
  say(
    `soak ${s.seconds.toFixed(0).padStart(5)} s  round ${String(round).padStart(5)}  tokens ${String(tokens).padStart(8)}  ` +
      `live ${s.liveTensors}  in use ${gib(s.inUse)}  cached ${gib(s.cached)} (idle ${gib(s.idle)})  ` +
      `reserved ${gib(s.reserved)}  rss ${gib(s.rss)}  cpu cache ${gib(s.hostCache)}`,
  );
  if (s.seconds >= warmup) {
    const now = countLive(live);
    if (!baseline) baseline = now;
    else {
      const change = liveChange(now);
      if (change) say(`  live tensors since the first sample after the warm-up: ${change}`);
    }
  }
  writeResults(resultsPath, results(null));
  if (opt.out) writeResults(opt.out, results(null));
}

const r = lcg(seed);
for (const plan of primingRounds(gpu, maxNew)) await runRound(model, plan, r);
sample();
let nextSample = every;
while (!stop && elapsed() < seconds) {
  const plan = planRound(r, maxNew, gpu);
  const got = await runRound(model, plan, r);
  round++;
  tokens += got.tokens;
  endings[plan.ending]++;
  modes[plan.mode]++;
  modes[plan.graph ? 'graph' : 'eager']++;
  if (elapsed() >= nextSample) {
    sample();
    nextSample = Math.max(nextSample + every, elapsed());
  }
}
if (samples.at(-1)!.round !== round) sample();
const verdict = soakVerdict(samples, warmup, cacheLimit);
say(
  `bench:soak: ${round} rounds, ${tokens} tokens in ${elapsed().toFixed(0)} s; endings ${JSON.stringify(endings)}; ${JSON.stringify(modes)}`,
);
for (const line of verdict.lines) say(`  ${line}`);
say(`bench:soak: ${verdict.pass ? 'PASS' : 'FAIL'}`);
const written = writeResults(resultsPath, results(verdict));
if (opt.out) writeResults(opt.out, results(verdict));
say(`bench:soak: wrote ${written}${opt.out ? ` and ${opt.out}` : ''}`);
loaded.dispose();
process.exit(verdict.pass ? 0 : 1);
