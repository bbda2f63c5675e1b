// npm run bench:attention-grad -- [--torch] [--python CMD] [--json PATH] [--quick]
// Attention's backward alone (the gradient rule at a given output gradient, the forward's output
// computed once beforehand, with its rows' log-sum-exp kept as training keeps it) on the GPU: the dedicated kernels (hip-src/flash-bwd.hip, with the
// matrix cores and with FMAs) and the composed GEMM path, against PyTorch's scaled_dot_product_attention backward (--torch: bench/
// attention_grad_torch.py, same shapes, its own default kernel). TFLOP/s counts 2.5 times the
// forward's 4 b hq tq tk d products (FlashAttention's convention), halved for causal.
// The kernels' dK/dV/dQ are checked against the composed path's before timing.
import { parseArgs } from 'node:util';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { Tensor, Device, noGrad } from '../src/index.ts';
import type { RawTensor } from '../src/device/raw-tensor.ts';
import type { AttentionParams } from '../src/backends/options.ts';
import { gradRuleOf } from '../src/ops/registry.ts';
import { attentionGradTuning, type AttentionGradPath } from '../src/ops/attention-grad.ts';
import { flashAttention } from '../src/backends/gpu/flash.ts';
import { timeGpu } from './timing.ts';
import { timingRules } from './cases.ts';
import { defaultResultsPath, writeResults } from './results-path.ts';

const { values: opt } = parseArgs({
  options: {
    torch: { type: 'boolean', default: false },
    python: { type: 'string', default: 'python3' },
    json: { type: 'string' },
    quick: { type: 'boolean', default: false },
  },
});
const dev = Device.bestGpu();
if (!dev) throw new Error('bench:attention-grad: no GPU (no CUDA or ROCm device found)');
const rules = timingRules(opt.quick);

interface Shape {
  readonly b: number;
  readonly hq: number;
  readonly hkv: number;
  readonly t: number;
  readonly d: number;
  readonly causal: boolean;
  readonly dtype: 'bf16' | 'f16' | 'f32';
}
const SHAPES: readonly Shape[] = [
  { b: 16, hq: 12, hkv: 12, t: 1024, d: 64, causal: true, dtype: 'bf16' },
  { b: 4, hq: 32, hkv: 8, t: 2048, d: 128, causal: true, dtype: 'bf16' },
];
const label = (s: Shape): string =>
  `b${s.b} hq${s.hq} hkv${s.hkv} t${s.t} d${s.d}${s.causal ? ' causal' : ''} ${s.dtype}`;
const flops = (s: Shape): number => (2.5 * 4 * s.b * s.hq * s.t * s.t * s.d) / (s.causal ? 2 : 1);

type Rule = (
  g: RawTensor,
  args: [RawTensor, RawTensor, RawTensor, AttentionParams],
  out: RawTensor,
) => [RawTensor, RawTensor][];
const rule = gradRuleOf('scaledDotProductAttention') as unknown as Rule;

interface Row {
  shape: string;
  path: string;
  ms: number;
  tflops: number;
}
const rows: Row[] = [];
for (const s of SHAPES) {
  const q = Tensor.rand([s.b, s.hq, s.t, s.d], { dtype: s.dtype, device: dev });
  const k = Tensor.rand([s.b, s.hkv, s.t, s.d], { dtype: s.dtype, device: dev });
  const v = Tensor.rand([s.b, s.hkv, s.t, s.d], { dtype: s.dtype, device: dev });
  const g = Tensor.rand([s.b, s.hq, s.t, s.d], { dtype: s.dtype, device: dev });
  const p: AttentionParams = {
    scale: 1 / Math.sqrt(s.d),
    diag: s.causal ? 0 : null,
    window: null,
    mask: null,
    outShape: [s.b, s.hq, s.t, s.d],
    saveLse: true,
  };
  // the forward's output as training makes it: with its rows' log-sum-exp kept beside it
  const o = noGrad(() => flashAttention(q, k, v, p));
  const run = (path: AttentionGradPath, matrixCores = true, forwardLse = true): [RawTensor, RawTensor][] => {
    attentionGradTuning.path = path;
    attentionGradTuning.matrixCores = matrixCores;
    attentionGradTuning.forwardLse = forwardLse;
    try {
      return rule(g, [q, k, v, p], o);
    } finally {
      attentionGradTuning.path = 'auto';
      attentionGradTuning.matrixCores = true;
      attentionGradTuning.forwardLse = true;
    }
  };
  const paths: [string, AttentionGradPath, boolean, boolean][] = [
    ['kernels', 'kernel', true, true],
    ['kernels, lse recomputed', 'kernel', true, false],
    ['kernels, FMA body', 'kernel', false, true],
    ['composed', 'composed', true, true],
  ];
  const values = async (r: [RawTensor, RawTensor][]): Promise<number[][]> => {
    const out: number[][] = [];
    for (const [, x] of r) {
      const t = Tensor.wrap(x);
      out.push(Array.from(await t.toArray(), Number));
      t.dispose();
    }
    return out;
  };
  // each kernel path against the composed one, once
  const c = await values(run('composed'));
  for (const [name, path, mc, fl] of paths.slice(0, 2)) {
    const a = await values(run(path, mc, fl));
    let worst = 0;
    for (let i = 0; i < 3; i++) {
      const x = a[i]!,
        y = c[i]!;
      let num = 0,
        den = 0;
      for (let j = 0; j < y.length; j++) {
        num += (x[j]! - y[j]!) ** 2;
        den += y[j]! ** 2;
      }
      worst = Math.max(worst, Number.isNaN(num) ? Infinity : Math.sqrt(num / Math.max(den, 1e-30)));
    }
    console.log(`${label(s)}: ${name} vs composed path, relative error by norm ${worst.toExponential(2)} (dQ, dK, dV)`);
  }
  for (const [name, path, mc, fl] of paths) {
    const t = timeGpu(dev, rules, () => {
      for (const [, x] of run(path, mc, fl)) x.dispose();
    });
    const row = { shape: label(s), path: name, ms: t.medianMs, tflops: flops(s) / (t.medianMs / 1e3) / 1e12 };
    rows.push(row);
    console.log(
      `${row.shape}  ${name.padEnd(23)} ${row.ms.toFixed(3).padStart(9)} ms  ${row.tflops.toFixed(1).padStart(6)} TFLOP/s`,
    );
  }
  for (const t of [q, k, v, g, o]) t.dispose();
  dev.emptyCache();
}

if (opt.torch) {
  const script = fileURLToPath(new URL('./attention_grad_torch.py', import.meta.url));
  const r = spawnSync(opt.python, [script, '--shapes', JSON.stringify(SHAPES), ...(opt.quick ? ['--quick'] : [])], {
    encoding: 'utf8',
    maxBuffer: 1 << 24,
  });
  if (r.status !== 0) {
    console.error(`bench:attention-grad: ${opt.python} ${script} failed (${r.status ?? r.signal}):\n${r.stderr}`);
    process.exit(1);
  }
  const torch = JSON.parse(r.stdout.trim().split('\n').pop()!) as { index: number; ms: number; version: string }[];
  for (const t of torch) {
    const s = SHAPES[t.index]!;
    const row = { shape: label(s), path: `torch ${t.version}`, ms: t.ms, tflops: flops(s) / (t.ms / 1e3) / 1e12 };
    rows.push(row);
    console.log(
      `${row.shape}  ${row.path}  ${row.ms.toFixed(3).padStart(9)} ms  ${row.tflops.toFixed(1).padStart(6)} TFLOP/s`,
    );
  }
}
const path = opt.json ?? defaultResultsPath(dev.runtime.info.name, 'attention-grad');
console.log(
  `wrote ${writeResults(path, { date: new Date().toISOString().slice(0, 10), gpu: dev.runtime.info.name, rows })}`,
);
