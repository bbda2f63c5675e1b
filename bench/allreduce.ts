// npm run bench:allreduce -- [--quick] [--torch] [--python CMD] [--gpus N] [--max-bytes N] [--json PATH]
//
// All-reduce bus bandwidth, 8 B .. 1 GiB (bench/allreduce-plan.ts says how it is timed), over the
// GPUs of this machine: in one process (a DeviceGroup) by default, or one process per GPU when
// started by `rocm-tensor launch --nproc N -- npx tsx bench/allreduce.ts` (rank 0 prints). With
// --torch, PyTorch's torch.distributed.all_reduce (one process per GPU, NCCL backend) runs the
// same plan on the same GPUs and the table shows both. Skips, saying why, with fewer than 2 GPUs
// or no RCCL / NCCL. The JSON goes to bench/results/<date>-<gpu>-allreduce.json unless --json
// says where.
import { parseArgs } from 'node:util';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Device, DeviceGroup, Tensor, initProcessGroup, type Communicator } from '../src/index.ts';
import { loadNccl } from '../src/ffi/nccl.ts';
import { sweepPlan, algBW, busBW, fmtBytes, SMALL_BYTES, LARGE_BYTES, type SweepPoint } from './allreduce-plan.ts';
import { defaultResultsPath, writeResults } from './results-path.ts';

const { values: opt } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    torch: { type: 'boolean', default: false },
    python: { type: 'string', default: 'python3' },
    gpus: { type: 'string' },
    'max-bytes': { type: 'string' },
    json: { type: 'string' },
    help: { type: 'boolean', short: 'h', default: false },
  },
});
if (opt.help) {
  console.log(
    'usage: npm run bench:allreduce -- [--quick] [--torch] [--python CMD] [--gpus N] [--max-bytes N] [--json PATH]',
  );
  process.exit(0);
}

const plan = sweepPlan(opt.quick!, opt['max-bytes'] ? Number(opt['max-bytes']) : undefined);

/** the ranks' queued calls and a blocking wait for them (a bench may block: no deadline wanted here) */
interface Target {
  readonly ranks: number;
  readonly label: string;
  readonly gpu: string;
  run(p: SweepPoint): Promise<number>;
  close(): void;
}

function groupTarget(devs: Device[]): Target {
  const g = DeviceGroup.create(devs);
  const wait = () => {
    for (const d of devs) d.currentStream.synchronize();
  };
  return {
    ranks: devs.length,
    label: `${g}`,
    gpu: devs[0]!.runtime.info.name,
    async run(p) {
      const ts = devs.map((d) => Tensor.zeros([Math.max(1, p.bytes / 4)], { device: d }));
      for (let i = 0; i < p.warmup; i++) g.allReduce(ts);
      wait();
      const t0 = performance.now();
      for (let i = 0; i < p.iters; i++) g.allReduce(ts);
      wait();
      const s = (performance.now() - t0) / 1e3 / p.iters;
      await g.synchronize({ timeoutMs: 60_000 }); // surfaces a library error, if any
      for (const t of ts) t.dispose();
      return s;
    },
    close: () => g.destroy(),
  };
}

function commTarget(c: Communicator): Target {
  const wait = () => c.device.currentStream.synchronize();
  return {
    ranks: c.size,
    label: `${c}`,
    gpu: c.device.runtime.info.name,
    async run(p) {
      const t = Tensor.zeros([Math.max(1, p.bytes / 4)], { device: c.device });
      for (let i = 0; i < p.warmup; i++) c.allReduce(t);
      await c.barrier({ timeoutMs: 60_000 });
      wait();
      const t0 = performance.now();
      for (let i = 0; i < p.iters; i++) c.allReduce(t);
      wait();
      const s = (performance.now() - t0) / 1e3 / p.iters;
      await c.synchronize({ timeoutMs: 60_000 });
      t.dispose();
      return s;
    },
    close: () => c.destroy(),
  };
}

interface TorchResult {
  version: string | null;
  device: string | null;
  error: string | null;
  rows: { bytes: number; seconds: number }[];
}

function runTorch(ranks: number): TorchResult {
  const dir = mkdtempSync(join(tmpdir(), 'rocm-tensor-allreduce-'));
  try {
    const planFile = join(dir, 'plan.json'),
      out = join(dir, 'torch.json');
    writeFileSync(planFile, JSON.stringify(plan));
    const script = fileURLToPath(new URL('./allreduce_torch.py', import.meta.url));
    console.log(`bench:allreduce: running ${opt.python} ${script} (PyTorch, ${ranks} processes, same plan)`);
    const r = spawnSync(opt.python!, [script, '--plan', planFile, '--ranks', String(ranks), '--out', out], {
      stdio: ['ignore', 'inherit', 'inherit'],
    });
    if (r.error) return { version: null, device: null, error: `${opt.python}: ${r.error.message}`, rows: [] };
    try {
      return JSON.parse(readFileSync(out, 'utf8')) as TorchResult;
    } catch {
      return { version: null, device: null, error: `${script} exited ${r.status} without a result`, rows: [] };
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

function skip(why: string): never {
  console.log(`bench:allreduce: skipped, ${why}`);
  process.exit(0);
}

async function main(): Promise<void> {
  let target: Target,
    report = true;
  if (process.env.RANK !== undefined && process.env.WORLD_SIZE !== undefined) {
    const c = await initProcessGroup();
    if (c.size < 2) skip('needs 2 ranks or more (WORLD_SIZE is 1)');
    target = commTarget(c);
    report = c.rank === 0;
  } else {
    const best = Device.bestGpu();
    if (!best) skip('no ROCm or CUDA device found (needs 2 GPUs)');
    const count = best.kind === 'rocm' ? Device.rocmCount() : Device.cudaCount();
    const n = opt.gpus ? Number(opt.gpus) : count;
    if (count < 2 || n < 2) skip(`needs 2 GPUs, this machine has ${count}${opt.gpus ? ` (--gpus ${opt.gpus})` : ''}`);
    if (n > count) skip(`--gpus ${n} but this machine has ${count}`);
    try {
      loadNccl(best.kind as 'rocm' | 'cuda');
    } catch (e) {
      skip(`no collectives library: ${(e as Error).message.split('\n')[0]}`);
    }
    target = groupTarget(Array.from({ length: n }, (_, i) => (best.kind === 'rocm' ? Device.rocm(i) : Device.cuda(i))));
  }
  if (report)
    console.log(
      `bench:allreduce: ${target.label}, f32 sum in place, ${plan.length} sizes ${fmtBytes(plan[0]!.bytes)} .. ${fmtBytes(plan.at(-1)!.bytes)}${opt.quick ? ', --quick' : ''}`,
    );
  const ours: { bytes: number; seconds: number }[] = [];
  for (const p of plan) {
    const s = await target.run(p);
    ours.push({ bytes: p.bytes, seconds: s });
    if (report)
      console.log(
        `  ${fmtBytes(p.bytes)}: ${(s * 1e6).toFixed(1)} us, busBW ${busBW(p.bytes, s, target.ranks).toFixed(2)} GB/s (${p.iters} calls)`,
      );
  }
  target.close();
  if (!report) return;
  const torch = opt.torch ? runTorch(target.ranks) : null;
  printTable(target.ranks, ours, torch);
  const written = writeResults(opt.json ?? defaultResultsPath(target.gpu, 'allreduce'), {
    date: new Date().toISOString(),
    ranks: target.ranks,
    label: target.label,
    gpu: target.gpu,
    plan,
    ours,
    torch,
  });
  console.log(`bench:allreduce: wrote ${written}`);
}

function printTable(n: number, ours: { bytes: number; seconds: number }[], torch: TorchResult | null): void {
  const theirs = new Map((torch?.rows ?? []).map((r) => [r.bytes, r.seconds]));
  const head = [
    'size',
    'time',
    'algBW GB/s',
    'busBW GB/s',
    ...(torch ? ['torch time', 'torch busBW', 'ours / torch busBW'] : []),
  ];
  const rows = ours.map((r) => {
    const t = theirs.get(r.bytes);
    const cells = [
      fmtBytes(r.bytes),
      `${(r.seconds * 1e6).toFixed(1)} us`,
      algBW(r.bytes, r.seconds).toFixed(2),
      busBW(r.bytes, r.seconds, n).toFixed(2),
    ];
    if (torch)
      cells.push(
        t ? `${(t * 1e6).toFixed(1)} us` : '-',
        t ? busBW(r.bytes, t, n).toFixed(2) : '-',
        t ? (t / r.seconds).toFixed(2) : '-',
      );
    return cells;
  });
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: string[]) => cells.map((c, i) => c.padStart(widths[i]!)).join('  ');
  console.log(
    `\nall-reduce over ${n} ranks: busBW = algBW * 2(n-1)/n${torch?.version ? `; PyTorch: ${torch.version}` : ''}`,
  );
  console.log(line(head));
  for (const r of rows) console.log(line(r));
  const small = (xs: { bytes: number; seconds: number }[]) => {
    const s = xs.filter((x) => x.bytes <= SMALL_BYTES).map((x) => x.seconds * 1e6);
    return s.length ? `${Math.min(...s).toFixed(1)} .. ${Math.max(...s).toFixed(1)} us` : '-';
  };
  console.log(
    `small-message latency (8 B .. ${fmtBytes(SMALL_BYTES)}): ours ${small(ours)}${torch ? `, torch ${small(torch.rows)}` : ''}`,
  );
  if (torch) {
    const big = ours
      .filter((r) => r.bytes >= LARGE_BYTES && theirs.has(r.bytes))
      .map((r) => theirs.get(r.bytes)! / r.seconds);
    if (big.length)
      console.log(
        `at >= ${fmtBytes(LARGE_BYTES)}: ours / torch busBW ${Math.min(...big).toFixed(2)} .. ${Math.max(...big).toFixed(2)}`,
      );
  }
  if (torch?.error) console.log(`PyTorch side: ${torch.error}`);
}

await main();
