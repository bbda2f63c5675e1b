// npm run bench -- [--quick] [--filter REGEX] [--list] [--json PATH] [--torch] [--python CMD]
//
// Times every case of bench/cases.ts on the best GPU with device events (warm-up, median of
// many runs, inputs rotated through more memory than the last-level cache holds), measures the
// device's own ceilings in the same run (device-to-device copy bandwidth, a large library
// GEMM), prints a table and writes JSON (bench/results/<date>-<gpu>.json unless --json says
// where). With --torch it then runs bench/compare-torch.py on the same cases and GPU and prints
// PyTorch's times beside ours.
import { parseArgs } from 'node:util';
import { Device, NotOnDeviceError } from '../src/index.ts';
import { benchCases, timingRules, type BenchCase } from './cases.ts';
import { prepare } from './ours.ts';
import { callPeakBytes, timeGpu, timeHost } from './timing.ts';
import { runTorch, type TorchReport } from './torch.ts';
import { printTable, type Row, type Ceilings } from './table.ts';
import { printDecodeLoop, runDecodeLoop, type DecodeLoopResult } from './decode-loop-run.ts';
import { defaultResultsPath, writeResults } from './results-path.ts';

const { values: opt } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    filter: { type: 'string' },
    json: { type: 'string' },
    torch: { type: 'boolean', default: false },
    python: { type: 'string', default: 'python3' },
    list: { type: 'boolean', default: false },
    help: { type: 'boolean', short: 'h', default: false },
  },
});
if (opt.help) {
  console.log(
    'usage: npm run bench -- [--quick] [--filter REGEX] [--list] [--json PATH (default bench/results/<date>-<gpu>.json)] [--torch] [--python CMD]',
  );
  console.log(
    '  --list   print the ids of the cases that would run (after --filter and --quick) and exit; needs no GPU',
  );
  process.exit(0);
}

const rules = timingRules(opt.quick!);
const filter = opt.filter ? new RegExp(opt.filter, 'i') : null;
// the ceilings are always measured: every row's percentage needs them
const cases = benchCases(opt.quick!).filter((c) => c.kind.startsWith('ceiling') || !filter || filter.test(c.id));
if (opt.list) {
  for (const c of cases) console.log(c.id);
  process.exit(0);
}

const dev = Device.bestGpu();
if (!dev) {
  console.log('bench: no ROCm or CUDA device found; nothing to measure');
  process.exit(0);
}
const info = dev.runtime.info;
console.log(
  `bench: ${dev} "${info.name}" (${info.archFull}), runtime ${info.runtimeVersion}, driver ${info.driverVersion}; ${cases.length} cases${opt.quick ? ', --quick' : ''}`,
);

function measure(c: BenchCase): Row {
  const base = {
    id: c.id,
    op: c.op,
    label: c.label ?? null,
    kind: c.kind,
    shape: [...c.shape],
    shapeB: c.shapeB ? [...c.shapeB] : null,
    dtype: c.dtype,
    to: c.to ?? null,
    bytes: c.bytes,
    flops: c.flops,
    sets: c.sets,
  };
  let prepared: ReturnType<typeof prepare> | null = null;
  try {
    prepared = prepare(dev!, c);
    const p = prepared;
    if (c.kind === 'host') {
      const h = timeHost(dev!, rules, () => p.run(0));
      return {
        ...base,
        status: 'ok',
        medianMs: h.hostUs / 1e3,
        hostUs: h.hostUs,
        withSyncUs: h.withSyncUs,
        iters: h.ops * rules.tinyReps,
      };
    }
    const t = timeGpu(dev!, rules, (i) => p.run(i));
    return {
      ...base,
      status: 'ok',
      medianMs: t.medianMs,
      minMs: t.minMs,
      maxMs: t.maxMs,
      iters: t.iters,
      peakBytes: callPeakBytes(dev!, () => p.run(0)),
    };
  } catch (e) {
    if (e instanceof NotOnDeviceError) return { ...base, status: 'not on this device yet', error: e.message };
    return { ...base, status: 'failed', error: e instanceof Error ? `${e.constructor.name}: ${e.message}` : String(e) };
  } finally {
    try {
      prepared?.dispose();
      dev!.emptyCache();
    } catch (e) {
      console.error(`bench: cleanup after ${c.id} failed: ${(e as Error).message}`);
    }
  }
}

const rows: Row[] = [];
for (const c of cases) {
  const r = measure(c);
  rows.push(r);
  const what =
    r.status === 'ok'
      ? `${(r.medianMs! * 1e3).toFixed(1)} us (${r.iters} runs)`
      : `${r.status}${r.error ? `: ${r.error}` : ''}`;
  console.log(`  ${c.id}: ${what}`);
}

const ceilings: Ceilings = { copyGBs: null, writeGBs: null, gemmTFs: {} };
for (const r of rows) {
  if (r.status !== 'ok' || !r.medianMs) continue;
  if (r.kind === 'ceiling-memory') ceilings.copyGBs = r.bytes / (r.medianMs / 1e3) / 1e9;
  if (r.kind === 'ceiling-write') ceilings.writeGBs = r.bytes / (r.medianMs / 1e3) / 1e9;
  if (r.kind === 'ceiling-compute') ceilings.gemmTFs[r.dtype] = r.flops / (r.medianMs / 1e3) / 1e12;
}

let torch: TorchReport | null = null;
if (opt.torch) torch = runTorch(opt.python!, cases, rules, opt.quick!);

printTable(rows, ceilings, torch);

// the decode loop: a whole batch-1 step of small ops, eager and replayed
let decodeLoop: DecodeLoopResult | null = null;
if ((!filter || filter.test('decode loop')) && ceilings.copyGBs) {
  decodeLoop = runDecodeLoop(dev, ceilings.copyGBs, opt.quick ? 20 : 50, opt.torch ? opt.python! : null);
  printDecodeLoop(dev, decodeLoop, ceilings.copyGBs);
}

const out = {
  date: new Date().toISOString(),
  device: { id: String(dev), ...info },
  options: { quick: opt.quick, filter: opt.filter ?? null, torch: opt.torch },
  rules,
  ceilings,
  rows: rows.map((r) => ({ ...r, torch: torch?.rows[r.id] ?? null })),
  torch: torch ? { version: torch.version, device: torch.device, error: torch.error } : null,
  decodeLoop,
};
console.log(`bench: wrote ${writeResults(opt.json ?? defaultResultsPath(info.name), out)}`);
