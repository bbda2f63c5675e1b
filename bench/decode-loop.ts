// npm run bench:decode-loop -- [--torch] [--python CMD] [--steps 50]
//
// The batch-1 decode loop of issue 10, measured eagerly and replayed from a graph: 8 layers of
// rmsNorm -> x Wgate^T, x Wup^T -> silu * mul -> x Wdown^T -> add, hidden 4096, ff 14336, bf16,
// weights made on the device (a sine pattern: values do not change GEMV speed). Reports ms per
// step, the host time to queue a step (and per op), the HBM bound for the weight bytes over the
// copy bandwidth measured in the same run, and with --torch the same loop in PyTorch (eager and
// CUDA graph) from scripts/llm/decode_loop_torch.py.
import { parseArgs } from 'node:util';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { Device, Tensor, tidy } from '../src/index.ts';
import { benchCases, timingRules } from './cases.ts';
import { prepare } from './ours.ts';
import { timeGpu } from './timing.ts';

const { values: opt } = parseArgs({ options: { torch: { type: 'boolean', default: false }, python: { type: 'string', default: 'python3' }, steps: { type: 'string', default: '50' } } });
const dev = Device.bestGpu();
if (!dev) { console.log('bench:decode-loop: no ROCm or CUDA device found'); process.exit(0); }
const H = 4096, FF = 14336, LAYERS = 8, steps = Number(opt.steps);

const copyCase = benchCases(false).find((c) => c.kind === 'ceiling-memory')!;
const cp = prepare(dev, copyCase);
const copyGBs = copyCase.bytes / (timeGpu(dev, timingRules(false), (i) => cp.run(i)).medianMs / 1e3) / 1e9;
cp.dispose();

/** [rows, cols] bf16 with a pattern made on the device */
function weight(rows: number, cols: number, seed: number): Tensor {
  return tidy(() => Tensor.arange(0, rows, 1, { device: dev! }).unsqueeze(1).mul(0.37 + seed)
    .add(Tensor.arange(0, cols, 1, { device: dev! }).mul(0.11)).sin().affine(0.02, 0).toDtype('bf16'));
}
const layers = Array.from({ length: LAYERS }, (_, l) => ({
  norm: Tensor.ones([H], { dtype: 'bf16', device: dev }),
  gate: weight(FF, H, 3 * l), up: weight(FF, H, 3 * l + 1), down: weight(H, FF, 3 * l + 2),
}));
const x = Tensor.ones([1, H], { dtype: 'bf16', device: dev }).mul(0.5);
const OPS_PER_LAYER = 7; // rmsNorm, 2 GEMMs, silu, mul, GEMM, add

function step(input: Tensor): Tensor {
  return tidy(() => {
    let h = input;
    for (const L of layers) {
      const n = h.rmsNorm(L.norm, 1e-5);
      const a = n.matmul(L.gate.T).silu().mul(n.matmul(L.up.T));
      h = h.add(a.matmul(L.down.T));
    }
    return h;
  });
}

function timeLoop(run: () => void): { msPerStep: number; hostMsPerStep: number } {
  for (let i = 0; i < 5; i++) run();
  dev!.synchronize();
  const rt = dev!.runtime, a = rt.eventCreate(true), b = rt.eventCreate(true);
  rt.eventRecord(a, dev!.stream);
  const t0 = performance.now();
  for (let i = 0; i < steps; i++) run();
  const host = performance.now() - t0;
  rt.eventRecord(b, dev!.stream);
  rt.eventSynchronize(b);
  const ms = rt.eventElapsedMs(a, b);
  rt.eventDestroy(a); rt.eventDestroy(b);
  return { msPerStep: ms / steps, hostMsPerStep: host / steps };
}

const eager = timeLoop(() => step(x).dispose());
const g = dev.captureGraph(() => step(x));
const replay = timeLoop(() => g.replay());
g.dispose();
const weightBytes = LAYERS * (3 * H * FF) * 2;
const boundMs = weightBytes / (copyGBs * 1e9) * 1e3;

interface TorchOut { eager: number; graph: number; eagerHost: number }
let torch: TorchOut | null = null;
if (opt.torch) {
  const script = fileURLToPath(new URL('../scripts/llm/decode_loop_torch.py', import.meta.url));
  const r = spawnSync(opt.python!, [script, '--steps', String(steps)], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
  try { torch = JSON.parse(r.stdout.trim().split('\n').at(-1)!) as TorchOut; } catch { console.log(`torch: exit ${r.status}: ${r.stdout.slice(0, 300)}`); }
}
const ops = LAYERS * OPS_PER_LAYER;
console.log(`bench:decode-loop on ${dev} "${dev.runtime.info.name}": ${LAYERS} layers, H ${H}, FF ${FF}, bf16, batch 1; ${steps} steps`);
console.log(`  copy ceiling ${copyGBs.toFixed(0)} GB/s; weights ${(weightBytes / 1e9).toFixed(2)} GB per step; HBM bound ${boundMs.toFixed(3)} ms/step`);
const line = (name: string, ms: number, extra: string) => console.log(`  ${name.padEnd(30)} ${ms.toFixed(3)} ms/step  ${(ms / boundMs).toFixed(2)}x bound${torch ? `  ${(ms / torch.eager).toFixed(2)}x PyTorch eager` : ''}  ${extra}`);
line('rocm-tensor eager', eager.msPerStep, `host ${eager.hostMsPerStep.toFixed(3)} ms to queue a step (${(eager.hostMsPerStep * 1e3 / ops).toFixed(1)} us per op)`);
line('rocm-tensor graph replay', replay.msPerStep, `host ${(replay.hostMsPerStep * 1e3).toFixed(1)} us per replay`);
if (torch) {
  line('PyTorch eager', torch.eager, `host ${torch.eagerHost.toFixed(3)} ms to queue a step`);
  line('PyTorch CUDA graph', torch.graph, '');
}
