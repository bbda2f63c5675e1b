// A batch-1 decode loop of small ops, measured eagerly and replayed from a graph: 8 layers of
// rmsNorm -> x Wgate^T, x Wup^T -> silu * mul -> x Wdown^T -> add, hidden 4096, ff 14336, bf16,
// weights made on the device (a sine pattern: values do not change GEMV speed). Measures ms per
// step, the host time to queue a step (and per op), and the HBM bound for the weight bytes over
// a copy bandwidth measured in the same run; with a Python command, the same loop in PyTorch
// (eager and CUDA graph) from scripts/llm/decode_loop_torch.py. Used by bench/run.ts (rows after
// the op table) and bench/decode-loop.ts (alone).
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { Tensor, tidy, type Device } from '../src/index.ts';
import { warmUp } from './timing.ts';

export const DECODE_LOOP = { H: 4096, FF: 14336, LAYERS: 8, OPS_PER_LAYER: 7 } as const;

export interface DecodeLoopResult {
  readonly steps: number;
  readonly boundMs: number;
  readonly eager: { msPerStep: number; hostMsPerStep: number };
  readonly replay: { msPerStep: number; hostMsPerStep: number };
  /** the same layers with Tensor.linear's fusions: norm + gate/up + silu * mul, then down + add */
  readonly fusedEager: { msPerStep: number; hostMsPerStep: number };
  readonly fusedReplay: { msPerStep: number; hostMsPerStep: number };
  readonly torch: { eager: number; graph: number; eagerHost: number } | null;
  readonly torchError: string | null;
}

/** one layer's weights: the norm, gate, up and down projections */
export interface DecodeLayer {
  readonly norm: Tensor;
  readonly gate: Tensor;
  readonly up: Tensor;
  readonly down: Tensor;
}

/** the loop's step op by op (7 ops a layer), and fused with Tensor.linear (gate and up stacked
 *  in gateUps[l]: norm + gate/up + silu * mul, then down + add; 2 ops a layer), each one tidy */
export function decodeSteps(
  layers: readonly DecodeLayer[],
  gateUps: readonly Tensor[],
): { step: (x: Tensor) => Tensor; fusedStep: (x: Tensor) => Tensor } {
  const step = (input: Tensor): Tensor =>
    tidy(() => {
      let h = input;
      for (const L of layers) {
        const n = h.rmsNorm(L.norm, 1e-5);
        const a = n.matmul(L.gate.T).silu().mul(n.matmul(L.up.T));
        h = h.add(a.matmul(L.down.T));
      }
      return h;
    });
  const fusedStep = (input: Tensor): Tensor =>
    tidy(() => {
      let h = input;
      for (const [l, L] of layers.entries()) {
        const a = h.linear(gateUps[l]!, { norm: { weight: L.norm, eps: 1e-5 }, act: 'swiglu' });
        h = a.linear(L.down, { residual: h });
      }
      return h;
    });
  return { step, fusedStep };
}

/**
 * Steps run before a loop is timed, here and in the PyTorch script: a generation loop runs
 * hundreds of steps, and the first few dozen of ours run before V8 has optimised the host path.
 * Measured on an H200 host: after 5 warm-up steps the next 50 eager steps took
 * 0.93-1.71 ms each (the host queueing 15-30 us an op), every later window 0.853-0.859 ms.
 */
export const DECODE_WARMUP = { steps: 100, ms: 200 } as const;

export function runDecodeLoop(dev: Device, copyGBs: number, steps: number, python: string | null): DecodeLoopResult {
  const { H, FF, LAYERS } = DECODE_LOOP;
  const weight = (rows: number, cols: number, seed: number): Tensor =>
    tidy(() =>
      Tensor.arange(0, rows, 1, { device: dev })
        .unsqueeze(1)
        .mul(0.37 + seed)
        .add(Tensor.arange(0, cols, 1, { device: dev }).mul(0.11))
        .sin()
        .affine(0.02, 0)
        .toDtype('bf16'),
    );
  const layers = Array.from({ length: LAYERS }, (_, l) => ({
    norm: Tensor.ones([H], { dtype: 'bf16', device: dev }),
    gate: weight(FF, H, 3 * l),
    up: weight(FF, H, 3 * l + 1),
    down: weight(H, FF, 3 * l + 2),
  }));
  // the fused form reads gate and up stacked [2 FF, H] (what a model loader keeps): the same bytes
  const gateUps = layers.map((L) => Tensor.cat([L.gate, L.up], 0));
  const x = tidy(() => Tensor.ones([1, H], { dtype: 'bf16', device: dev }).mul(0.5));
  const { step, fusedStep } = decodeSteps(layers, gateUps);
  const timeLoop = (run: () => void): { msPerStep: number; hostMsPerStep: number } => {
    warmUp(DECODE_WARMUP.steps, DECODE_WARMUP.ms, run);
    dev.synchronize();
    const rt = dev.runtime,
      a = rt.eventCreate(true),
      b = rt.eventCreate(true);
    rt.eventRecord(a, dev.stream);
    const t0 = performance.now();
    for (let i = 0; i < steps; i++) run();
    const host = performance.now() - t0;
    rt.eventRecord(b, dev.stream);
    rt.eventSynchronize(b);
    const ms = rt.eventElapsedMs(a, b);
    rt.eventDestroy(a);
    rt.eventDestroy(b);
    return { msPerStep: ms / steps, hostMsPerStep: host / steps };
  };
  try {
    const eager = timeLoop(() => step(x).dispose());
    const g = dev.captureGraph(() => step(x));
    const replay = timeLoop(() => g.replay());
    g.dispose();
    const fusedEager = timeLoop(() => fusedStep(x).dispose());
    const fg = dev.captureGraph(() => fusedStep(x));
    const fusedReplay = timeLoop(() => fg.replay());
    fg.dispose();
    const boundMs = ((LAYERS * 3 * H * FF * 2) / (copyGBs * 1e9)) * 1e3;
    let torch: DecodeLoopResult['torch'] = null,
      torchError: string | null = null;
    if (python) {
      const script = fileURLToPath(new URL('../scripts/llm/decode_loop_torch.py', import.meta.url));
      const r = spawnSync(
        python,
        [
          script,
          '--steps',
          String(steps),
          '--warmup',
          String(DECODE_WARMUP.steps),
          '--warmup-ms',
          String(DECODE_WARMUP.ms),
        ],
        { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] },
      );
      try {
        torch = JSON.parse(r.stdout.trim().split('\n').at(-1)!) as NonNullable<DecodeLoopResult['torch']>;
      } catch {
        torchError = `exit ${r.status}: ${(r.stderr || r.stdout).slice(-300)}`;
      }
    }
    return { steps, boundMs, eager, replay, fusedEager, fusedReplay, torch, torchError };
  } finally {
    x.dispose();
    for (const L of layers) {
      L.norm.dispose();
      L.gate.dispose();
      L.up.dispose();
      L.down.dispose();
    }
    for (const t of gateUps) t.dispose();
  }
}

export function printDecodeLoop(dev: Device, r: DecodeLoopResult, copyGBs: number): void {
  const { H, FF, LAYERS, OPS_PER_LAYER } = DECODE_LOOP;
  const ops = LAYERS * OPS_PER_LAYER;
  console.log(
    `decode loop on ${dev}: ${LAYERS} Llama-style MLP layers of rmsNorm, gate and up GEMVs, silu * mul, down GEMV, add; H ${H}, FF ${FF}, bf16, batch 1; ${r.steps} steps`,
  );
  console.log(
    `  weights ${((LAYERS * 3 * H * FF * 2) / 1e9).toFixed(2)} GB per step over the copy ceiling ${copyGBs.toFixed(0)} GB/s: HBM bound ${r.boundMs.toFixed(3)} ms/step`,
  );
  const t = r.torch;
  const line = (name: string, ms: number, extra: string): void =>
    console.log(
      `  ${name.padEnd(26)} ${ms.toFixed(3)} ms/step  ${(ms / r.boundMs).toFixed(2)}x bound${t ? `  ${(t.eager / ms).toFixed(2)}x PyTorch eager's speed` : ''}  ${extra}`,
    );
  line(
    'rocm-tensor eager',
    r.eager.msPerStep,
    `host ${r.eager.hostMsPerStep.toFixed(3)} ms to queue a step (${((r.eager.hostMsPerStep * 1e3) / ops).toFixed(1)} us per op)`,
  );
  line(
    'rocm-tensor graph replay',
    r.replay.msPerStep,
    `host ${(r.replay.hostMsPerStep * 1e3).toFixed(1)} us per replay`,
  );
  const fusedOps = LAYERS * 2;
  line(
    'rocm-tensor fused, eager',
    r.fusedEager.msPerStep,
    `host ${r.fusedEager.hostMsPerStep.toFixed(3)} ms to queue a step (${((r.fusedEager.hostMsPerStep * 1e3) / fusedOps).toFixed(1)} us per op, ${fusedOps} ops)`,
  );
  line(
    'rocm-tensor fused, replay',
    r.fusedReplay.msPerStep,
    `host ${(r.fusedReplay.hostMsPerStep * 1e3).toFixed(1)} us per replay`,
  );
  if (t) {
    line(
      'PyTorch eager',
      t.eager,
      `host ${t.eagerHost.toFixed(3)} ms to queue a step (${((t.eagerHost * 1e3) / ops).toFixed(1)} us per op)`,
    );
    line('PyTorch CUDA graph', t.graph, '');
  }
  if (r.torchError) console.log(`  PyTorch: ${r.torchError}`);
}
