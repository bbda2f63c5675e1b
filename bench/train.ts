// npm run bench:train -- [--workload cnn,decoder,resnet] [--steps 20] [--warmup-ms 2000] [--small]
//                        [--torch] [--graph] [--parts] [--profile] [--conv-api graph|legacy]
//                        [--torch-compile] [--python CMD]
//                        [--json PATH]
//
// Training steps (forward, loss, backward, optimizer update) of the workloads in
// bench/train-models.ts on the best GPU: milliseconds a step, items (images or tokens) a second,
// and peak device memory. With --torch, bench/train_torch.py runs the same workloads in PyTorch
// on the same GPU (eager) in the same run, and the table gives ours / PyTorch. --graph adds a row
// per workload whose forward and backward replay from a captureBackward graph. --profile adds each
// eager row's GPU time by kernel (bench/gpu-profile.ts; PyTorch's from torch.profiler). --parts times the
// eager step's forward (with the loss), backward and update apart, with a synchronize after
// each (where a step's time goes; the sum exceeds the step by the overlap lost). --small shrinks
// the decoder and the image batches (a smoke run; on a machine without a GPU everything runs on
// the CPU). Each row first warms up for --warmup-ms (at least 3 steps), PyTorch's too.
// --torch-compile adds PyTorch's rows with each forward through torch.compile (the
// warm-up steps compile). The JSON goes to bench/results/<date>-<device>-train.json unless --json says where.
import { parseArgs } from 'node:util';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import Table from 'cli-table3';
import { Device, tidy, type Tensor } from '../src/index.ts';
import { tableStyle } from '../src/cli/colour.ts';
import { defaultResultsPath, writeResults } from './results-path.ts';
import { profileDevice, type ProfileRow } from './gpu-profile.ts';
import { cudnnTuning } from '../src/runtime/cuda/cudnn.ts';
import {
  cnnWorkload,
  decoderWorkload,
  resnetWorkload,
  DECODER_134M,
  type DecoderShape,
  type Workload,
} from './train-models.ts';

const { values: opt } = parseArgs({
  options: {
    workload: { type: 'string', default: 'cnn,decoder,resnet' },
    steps: { type: 'string', default: '20' },
    'warmup-ms': { type: 'string', default: '2000' },
    small: { type: 'boolean', default: false },
    torch: { type: 'boolean', default: false },
    graph: { type: 'boolean', default: false },
    parts: { type: 'boolean', default: false },
    profile: { type: 'boolean', default: false },
    'conv-api': { type: 'string' },
    'torch-compile': { type: 'boolean', default: false },
    python: { type: 'string', default: 'python3' },
    json: { type: 'string' },
  },
});
const names = opt.workload.split(',').filter(Boolean);
const WORKLOADS = ['cnn', 'decoder', 'resnet'];
const bad = names.filter((n) => !WORKLOADS.includes(n));
const steps = Number(opt.steps);
const warmupMs = Number(opt['warmup-ms']);
if (bad.length || !Number.isInteger(steps) || steps < 1 || !(warmupMs >= 0)) {
  console.error(
    `bench:train: --workload takes ${WORKLOADS.join(', ')} (comma-separated), --steps a positive integer, ` +
      `--warmup-ms a number of milliseconds (got ${opt.workload}, ${opt.steps}, ${opt['warmup-ms']})`,
  );
  process.exit(2);
}
const SMALL: DecoderShape = { layers: 2, dim: 128, heads: 4, ff: 256, vocab: 1000, seq: 128, batch: 4 };
const shape = opt.small ? SMALL : DECODER_134M;
const dev = Device.bestGpu() ?? Device.cpu();
// --conv-api graph|legacy: which of cuDNN's convolution APIs runs (NVIDIA; for comparisons)
if (opt['conv-api'] !== undefined) {
  if (opt['conv-api'] !== 'graph' && opt['conv-api'] !== 'legacy') {
    console.error(`bench:train: --conv-api takes graph or legacy (got ${opt['conv-api']})`);
    process.exit(2);
  }
  cudnnTuning.convApi = opt['conv-api'];
}

interface Row {
  workload: string;
  /** forward and backward replayed from a graph */
  graph: boolean;
  what: string;
  msPerStep: number;
  itemsPerSecond: number;
  itemName: string;
  peakBytes: number | null;
  lastLoss: number;
  /** --parts, eager rows: milliseconds of the forward (with the loss), backward and update */
  parts?: { forwardMs: number; backwardMs: number; updateMs: number };
  /** --profile, eager rows: GPU time a step by kernel or library call (bench/gpu-profile.ts) */
  profile?: ProfileRow[];
}

/** steps profiled for --profile */
const PROFILE_STEPS = 3;

/** the eager step's GPU time by kernel, averaged over PROFILE_STEPS steps */
function profileSteps(w: Workload): ProfileRow[] {
  const prof = profileDevice(dev);
  try {
    prof.start();
    for (let i = 0; i < PROFILE_STEPS; i++) tidy(() => w.step().dispose());
    return prof.stop().map((r) => ({ name: r.name, calls: r.calls / PROFILE_STEPS, ms: r.ms / PROFILE_STEPS }));
  } finally {
    prof.dispose();
  }
}

/** the eager step's parts, each between synchronizes, averaged over the steps */
function measureParts(w: Workload): NonNullable<Row['parts']> {
  const sum = { forwardMs: 0, backwardMs: 0, updateMs: 0 };
  const lap = (): number => {
    dev.synchronize();
    return performance.now();
  };
  for (let i = 0; i < steps; i++) {
    tidy(() => {
      const t0 = lap();
      const l = w.loss();
      const t1 = lap();
      l.backward();
      const t2 = lap();
      w.update();
      const t3 = lap();
      sum.forwardMs += t1 - t0;
      sum.backwardMs += t2 - t1;
      sum.updateMs += t3 - t2;
    });
  }
  return { forwardMs: sum.forwardMs / steps, backwardMs: sum.backwardMs / steps, updateMs: sum.updateMs / steps };
}

/** warm-up steps at most, whatever --warmup-ms says */
const WARMUP_STEPS_MAX = 1000;

function measure(w: Workload, graph: boolean): Row {
  // warm-up: first calls pick library algorithms and allocate, and the JavaScript engine compiles
  // the host path only after many calls (ResNet-18's step took 33 ms after 3 warm-up steps, 19 ms
  // after 40 on an H200), so steps run for warmupMs, at least 3
  const w0 = performance.now();
  for (let i = 0; i < 3 || (performance.now() - w0 < warmupMs && i < WARMUP_STEPS_MAX); i++)
    tidy(() => w.step().dispose());
  dev.synchronize();
  dev.resetPeakMemory();
  let last: Tensor | null = null;
  const t0 = performance.now();
  for (let i = 0; i < steps; i++) {
    last?.dispose();
    last = tidy(() => w.step());
  }
  dev.synchronize();
  const ms = (performance.now() - t0) / steps;
  const lastLoss = last!.itemSync();
  last!.dispose();
  const stats = dev.memoryStats();
  return {
    workload: w.name,
    graph,
    what: w.what,
    msPerStep: ms,
    itemsPerSecond: (w.items * 1e3) / ms,
    itemName: w.itemName,
    // a graph's memory was taken at its capture, before the peak was reset: counted whole (its
    // gradients once: they are in use, and in its pool)
    peakBytes: stats ? stats.peakInUse + w.graphBytes() : null,
    lastLoss,
  };
}

if (opt.graph && dev.isCpu) {
  console.error('bench:train: --graph needs a GPU (the CPU has no graphs)');
  process.exit(2);
}
const ours: Row[] = [];
for (const n of names) {
  for (const graph of opt.graph ? [false, true] : [false]) {
    const so = { graph };
    const w =
      n === 'cnn'
        ? cnnWorkload(dev, opt.small ? 64 : 256, so)
        : n === 'resnet'
          ? resnetWorkload(dev, opt.small ? 4 : 256, so)
          : decoderWorkload(dev, shape, so);
    try {
      const row = measure(w, graph);
      if (opt.parts && !graph) row.parts = measureParts(w);
      if (opt.profile && !graph && !dev.isCpu) row.profile = profileSteps(w);
      ours.push(row);
    } finally {
      w.dispose();
    }
    dev.emptyCache();
  }
}

interface TorchRow {
  workload: string;
  msPerStep: number;
  peakBytes: number;
  lastLoss: number;
  /** resnet: whose ResNet-18 PyTorch ran (torchvision's, or the same network written out) */
  model?: string;
  /** the forward went through torch.compile */
  compiled?: boolean;
  /** --profile: GPU time a step by kernel (torch.profiler) */
  profile?: ProfileRow[];
}
/** the PyTorch twin's rows: eager, or with --compile each workload's forward through torch.compile */
function runTwin(compile: boolean): TorchRow[] {
  const script = fileURLToPath(new URL('./train_torch.py', import.meta.url));
  const r = spawnSync(
    opt.python,
    [
      script,
      '--workload',
      names.join(','),
      '--steps',
      String(steps),
      '--warmup-ms',
      String(warmupMs),
      '--shape',
      JSON.stringify(shape),
      ...(opt.small ? ['--small'] : []),
      ...(compile ? ['--compile'] : []),
      ...(opt.profile ? ['--profile'] : []),
    ],
    { encoding: 'utf8', maxBuffer: 1 << 24 },
  );
  if (r.status !== 0) {
    console.error(`bench:train: ${opt.python} ${script} failed (${r.status ?? r.signal}):\n${r.stderr}`);
    process.exit(1);
  }
  return JSON.parse(r.stdout.trim().split('\n').pop()!) as TorchRow[];
}
const torch: TorchRow[] = opt.torch ? runTwin(false) : [];
const compiled: TorchRow[] = opt['torch-compile'] ? runTwin(true) : [];

const mib = (b: number | null) => (b === null ? '-' : `${(b / 2 ** 20).toFixed(0)} MiB`);
const compileCells = (c: TorchRow | undefined, r: Row): string[] =>
  c ? [c.msPerStep.toFixed(2), `${(c.msPerStep / r.msPerStep).toFixed(2)}x`] : ['-', '-'];
const t = new Table({
  head: [
    'workload',
    'ours ms/step',
    'ours items/s',
    'ours peak',
    ...(opt.torch ? ['torch ms/step', 'torch peak', 'speed vs torch', 'memory vs torch'] : []),
    ...(opt['torch-compile'] ? ['torch.compile ms/step', 'speed vs torch.compile'] : []),
  ],
  style: tableStyle(),
});
for (const r of ours) {
  const p = torch.find((x) => x.workload === r.workload);
  t.push([
    r.graph ? `${r.workload} (graph)` : r.workload,
    r.msPerStep.toFixed(2),
    `${r.itemsPerSecond.toFixed(0)} ${r.itemName}`,
    mib(r.peakBytes),
    ...(opt.torch && p
      ? [
          p.msPerStep.toFixed(2),
          mib(p.peakBytes),
          `${(p.msPerStep / r.msPerStep).toFixed(2)}x`,
          r.peakBytes === null ? '-' : `${(r.peakBytes / p.peakBytes).toFixed(2)}x`,
        ]
      : opt.torch
        ? ['-', '-', '-', '-']
        : []),
    ...(opt['torch-compile']
      ? compileCells(
          compiled.find((x) => x.workload === r.workload),
          r,
        )
      : []),
  ]);
}
console.log(`bench:train on ${dev} (${steps} steps after 3 warm-up steps)`);
for (const r of ours)
  console.log(`  ${r.workload}${r.graph ? ' (graph)' : ''}: ${r.what}; last loss ${r.lastLoss.toFixed(4)}`);
for (const p of torch) if (p.model) console.log(`  torch ${p.workload}: ${p.model}`);
console.log(t.toString());
for (const r of ours)
  if (r.parts)
    console.log(
      `  ${r.workload} eager, parts between synchronizes: forward ${r.parts.forwardMs.toFixed(2)} ms, ` +
        `backward ${r.parts.backwardMs.toFixed(2)} ms, update ${r.parts.updateMs.toFixed(2)} ms`,
    );
/** the top rows of a profile: GPU ms a step and share of the step's profiled GPU time */
function printProfile(title: string, rows: readonly ProfileRow[] | undefined): void {
  if (!rows?.length) return;
  const total = rows.reduce((a, r) => a + r.ms, 0);
  console.log(`  ${title}: ${total.toFixed(2)} ms of GPU time a step, by kernel (top ${PROFILE_TOP})`);
  for (const r of rows.slice(0, PROFILE_TOP))
    console.log(
      `    ${r.ms.toFixed(3).padStart(8)} ms ${((100 * r.ms) / total).toFixed(1).padStart(5)}%  ` +
        `${String(r.calls).padStart(5)} x  ${r.name.length > 110 ? `${r.name.slice(0, 107)}...` : r.name}`,
    );
}
const PROFILE_TOP = 25;
for (const r of ours) printProfile(`${r.workload} eager, ours`, r.profile);
for (const r of [...torch, ...compiled])
  printProfile(`${r.workload}, PyTorch${r.compiled ? ' (torch.compile)' : ''}`, r.profile);
const gpuName = dev.isCpu ? 'cpu' : dev.runtime.info.name;
const path = opt.json ?? defaultResultsPath(gpuName, 'train');
writeResults(path, { device: String(dev), gpu: gpuName, steps, small: opt.small, ours, torch, torchCompile: compiled });
console.log(`results: ${path}`);
