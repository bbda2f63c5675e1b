// Attention's gradient through its dedicated kernels (hip-src/flash-bwd.hip) on the GPU: against
// the CPU reference gradient (which test/cpu/autograd-attention.test.ts checks against f64 finite
// differences) in f32, f16 and bf16 over every input layout, outputs poisoned; against the
// composed GEMM path on the same device; the forward's kept log-sum-exp against a recomputed one;
// the matrix-core body against the FMA body; the path choice (f64 and unequal head dims take the
// composed path, and forcing the kernels there is a clear error); NaN reaching the gradients.
import * as assert from 'uvu/assert';
import { gpuSuite, checkOp, compareNorm, LAYOUTS } from './harness.ts';
import { Tensor, TensorError, type Device, type DType } from '../../src/index.ts';
import { attentionGradTuning, type AttentionGradPath } from '../../src/ops/attention-grad.ts';
import { randT } from '../helpers.ts';
import { gradInputs, gradsOf, type GradFn } from './grad-run.ts';
import { savedLse } from '../../src/backends/gpu/flash.ts';

const s = gpuSuite('gpu/flash-grad');
const sdpa = Tensor.scaledDotProductAttention;
const KERNEL_DTYPES: readonly DType[] = ['f32', 'f16', 'bf16'];

type Fn = GradFn;
type Case = readonly [string, number[][], Fn];

const QKV = (b: number, hq: number, hkv: number, tq: number, tk: number, d: number): number[][] => [
  [b, hq, tq, d],
  [b, hkv, tk, d],
  [b, hkv, tk, d],
];

/** a mask of `shape` ([.., tq, tk]) on q's device: u8 with every 5th key of a row hidden and
 *  row 2 hidden whole, or additive in q's dtype with every 7th score -inf */
function maskFor(kind: 'u8' | 'add', q: Tensor, shape: number[]): Tensor {
  const tk = shape[shape.length - 1]!,
    tq = shape[shape.length - 2]!;
  const n = shape.reduce((a, b) => a * b, 1);
  if (kind === 'u8') {
    const v = Array.from({ length: n }, (_, i) => (Math.floor(i / tk) % tq === 2 || i % 5 === 1 ? 0 : 1));
    return Tensor.from(v, { dtype: 'u8', shape, device: q.device });
  }
  const v = Array.from({ length: n }, (_, i) => (i % 7 === 3 ? -Infinity : ((i * 37) % 11) / 5 - 1));
  return Tensor.from(v, { dtype: q.dtype, shape, device: q.device });
}

// lengths off the 16-row tile and over several tiles, and over several of the 64-row blocks the
// 16-bit types take up to head dim 128 (partial last blocks, chunks skipped under the diagonal and
// outside windows), every head-dim bucket (f32 at 256 takes the 8-row tile), both causal
// alignments, windows, masks, GQA, rows that see no key
const CASES: readonly Case[] = [
  ['plain d 64', QKV(2, 2, 2, 37, 45, 64), ([q, k, v]) => sdpa(q!, k!, v!)],
  ['GQA 6 on 2, causal top-left', QKV(1, 6, 2, 40, 40, 64), ([q, k, v]) => sdpa(q!, k!, v!, { causal: true })],
  [
    'causal bottom-right tq < tk, d 80',
    QKV(1, 2, 1, 20, 53, 80),
    ([q, k, v]) => sdpa(q!, k!, v!, { causal: 'bottom-right' }),
  ],
  [
    'causal bottom-right tq > tk (rows see nothing), d 33',
    QKV(1, 2, 2, 50, 21, 33),
    ([q, k, v]) => sdpa(q!, k!, v!, { causal: 'bottom-right' }),
  ],
  ['window 7, d 96', QKV(1, 2, 2, 45, 60, 96), ([q, k, v]) => sdpa(q!, k!, v!, { causal: 'bottom-right', window: 7 })],
  [
    'u8 mask with a hidden row, d 128',
    QKV(1, 4, 2, 33, 41, 128),
    ([q, k, v]) => sdpa(q!, k!, v!, { mask: maskFor('u8', q!, [1, 1, 33, 41]) }),
  ],
  [
    'additive mask with -inf, causal, d 64',
    QKV(2, 2, 2, 30, 38, 64),
    ([q, k, v]) => sdpa(q!, k!, v!, { causal: 'bottom-right', mask: maskFor('add', q!, [1, 1, 30, 38]) }),
  ],
  [
    'u8 mask per batch and head, GQA 6 on 2',
    QKV(2, 6, 2, 21, 29, 64),
    ([q, k, v]) => sdpa(q!, k!, v!, { mask: maskFor('u8', q!, [2, 6, 21, 29]) }),
  ],
  [
    'additive mask per head, d 64',
    QKV(1, 2, 1, 17, 40, 64),
    ([q, k, v]) => sdpa(q!, k!, v!, { causal: 'bottom-right', mask: maskFor('add', q!, [2, 17, 40]) }),
  ],
  [
    'GQA 4 on 2 over 64-row blocks, causal top-left',
    QKV(1, 4, 2, 150, 150, 64),
    ([q, k, v]) => sdpa(q!, k!, v!, { causal: true }),
  ],
  [
    'causal bottom-right tq < tk over 64-row blocks, d 128',
    QKV(1, 2, 1, 70, 200, 128),
    ([q, k, v]) => sdpa(q!, k!, v!, { causal: 'bottom-right' }),
  ],
  [
    'window 40 over 64-row blocks, u8 mask, d 80',
    QKV(1, 2, 2, 130, 190, 80),
    ([q, k, v]) => sdpa(q!, k!, v!, { causal: true, window: 40, mask: maskFor('u8', q!, [1, 1, 130, 190]) }),
  ],
  [
    'd 200 (bucket 256), window top-left',
    QKV(1, 2, 1, 20, 40, 200),
    ([q, k, v]) => sdpa(q!, k!, v!, { causal: true, window: 12, scale: 0.3 }),
  ],
];

// reduced precision: the CPU reference rounds its GEMM outputs to the dtype
const TOL = { f32: 1e-4, f16: 2e-2, bf16: 3e-2 };

function withPath<R>(path: AttentionGradPath, fn: () => R): R {
  const was = attentionGradTuning.path;
  attentionGradTuning.path = path;
  try {
    return fn();
  } finally {
    attentionGradTuning.path = was;
  }
}

s.test('attention gradient kernels against the CPU reference (f32, f16, bf16, every layout)', async () => {
  const was = attentionGradTuning.path;
  attentionGradTuning.path = 'kernel';
  try {
    for (const [variant, shapes, f] of CASES) {
      await checkOp('scaledDotProductAttention', KERNEL_DTYPES, LAYOUTS, gradInputs(shapes, f), gradsOf(f), {
        variant: `gradient kernels, ${variant}`,
        tol: TOL,
        fixed: [shapes.length],
      });
    }
  } finally {
    attentionGradTuning.path = was;
  }
});

s.test('the kernels agree with the composed GEMM path on the GPU', async (dev) => {
  for (const dt of KERNEL_DTYPES) {
    for (const [variant, shapes, f] of CASES) {
      const ins = gradInputs(shapes, f)(dt).map((t) => t.to(dev));
      const run = gradsOf(f);
      const fresh = (): Tensor[] => ins.map((t) => t.detach());
      const a = await withPath('kernel', () => run(fresh(), dt)).toArray();
      const b = await withPath('composed', () => run(fresh(), dt)).toArray();
      const cmp = compareNorm(a as ArrayLike<number>, b as ArrayLike<number>, TOL[dt as keyof typeof TOL]);
      assert.ok(cmp.ok, `${variant} ${dt}: kernels vs composed: ${cmp.note}`);
    }
  }
});

/** over CASES in f16 and bf16: the kernels' gradients with attentionGradTuning[flag] on (the
 *  default) and off agree within the dtype's tolerance */
async function agreesWithout(dev: Device, flag: 'matrixCores' | 'forwardLse', what: string): Promise<void> {
  for (const dt of ['f16', 'bf16'] as const) {
    for (const [variant, shapes, f] of CASES) {
      const ins = gradInputs(shapes, f)(dt).map((t) => t.to(dev));
      const run = gradsOf(f);
      const fresh = (): Tensor[] => ins.map((t) => t.detach());
      const a = await withPath('kernel', () => run(fresh(), dt)).toArray();
      attentionGradTuning[flag] = false;
      let b: ArrayLike<number | bigint>;
      try {
        b = await withPath('kernel', () => run(fresh(), dt)).toArray();
      } finally {
        attentionGradTuning[flag] = true;
      }
      const cmp = compareNorm(a as ArrayLike<number>, b as ArrayLike<number>, TOL[dt]);
      assert.ok(cmp.ok, `${variant} ${dt}: ${what}: ${cmp.note}`);
    }
  }
}

s.test(
  "the forward's kept log-sum-exp gives the gradient the recomputed one gives; inference keeps none",
  async (dev) => {
    // the tiled kernels (f16, bf16) read the rows flash_fwd kept while autograd recorded
    await agreesWithout(dev, 'forwardLse', "forward's lse vs recomputed");
    // the CPU (the suite's self-check) keeps none: nothing there reads one
    if (dev.kind === 'cpu') return;
    const [q, k, v] = QKV(1, 2, 2, 40, 40, 64).map((sh) => randT(sh, 'bf16', -1, 1).to(dev));
    const inference = sdpa(q!, k!, v!, { causal: true });
    assert.is(savedLse(inference), null, 'an output made with no gradient recorded keeps no log-sum-exp');
    const qg = q!.detach();
    qg.requiresGrad = true;
    const training = sdpa(qg, k!, v!, { causal: true });
    assert.ok(savedLse(training) !== null, 'an output made while autograd records keeps its log-sum-exp');
    for (const t of [q, k, v, inference, qg, training]) t!.dispose();
  },
);

s.test(
  'the FMA body agrees with the matrix-core body (f16, bf16; the same body where there are no matrix cores)',
  (dev) => agreesWithout(dev, 'matrixCores', 'matrix cores vs FMAs'),
);

s.test('path choice: f64 and d != dv take the composed path; forcing the kernels there names why', async (dev) => {
  const f: Fn = ([q, k, v]) => sdpa(q!, k!, v!, { causal: true });
  const run = gradsOf(f);
  // f64: the composed path (f64 sums), under 'auto'
  const ins64 = gradInputs(QKV(1, 2, 1, 9, 9, 8), f)('f64');
  const want = run(
    ins64.map((t) => t.detach()),
    'f64',
  ).toArraySync();
  const got = await run(
    ins64.map((t) => t.to(dev)),
    'f64',
  ).toArray();
  assert.ok(compareNorm(got as ArrayLike<number>, want as ArrayLike<number>, 1e-10).ok, 'f64 under auto');
  // the CPU device (the harness's self-check mode) has only the composed rule
  if (dev.isCpu) return;
  const forced = (): unknown =>
    withPath('kernel', () =>
      run(
        gradInputs(QKV(1, 2, 1, 9, 9, 8), f)('f64').map((t) => t.to(dev)),
        'f64',
      ),
    );
  assert.throws(
    forced,
    (e: unknown) => e instanceof TensorError && /scaledDotProductAttention.*kernel path.*f64/.test(e.message),
  );
  // v narrower than q/k
  const shapes = [
    [1, 2, 9, 16],
    [1, 2, 9, 16],
    [1, 2, 9, 8],
  ];
  const g = (): unknown =>
    withPath('kernel', () =>
      run(
        gradInputs(shapes, ([q, k, v]) => sdpa(q!, k!, v!))('f32').map((t) => t.to(dev)),
        'f32',
      ),
    );
  assert.throws(g, (e: unknown) => e instanceof TensorError && /head dim 16 differs from v's 8/.test(e.message));
});

s.test('a NaN in k reaches the gradients through the kernels', async (dev) => {
  const q = randT([1, 1, 20, 64], 'f32', -1, 1, dev),
    v = randT([1, 1, 20, 64], 'f32', -1, 1, dev);
  const kv = Array.from(await randT([1, 1, 20, 64], 'f32', -1, 1).toArray(), Number);
  kv[3 * 64 + 5] = Number.NaN;
  const k = Tensor.from(kv, { dtype: 'f32', shape: [1, 1, 20, 64], device: dev });
  for (const t of [q, k, v]) t.requiresGrad = true;
  withPath('kernel', () => sdpa(q, k, v, { causal: true }).sum().backward());
  const dq = Array.from(await q.grad!.toArray(), Number);
  const dv = Array.from(await v.grad!.toArray(), Number);
  // query 3 and later see key 3's NaN score: their probabilities, hence every gradient they feed
  assert.ok(dq.slice(3 * 64, 4 * 64).every(Number.isNaN), 'a row that sees the NaN key is NaN');
  assert.ok(dv.slice(0, 64).every(Number.isNaN), "key 0's dV sums over the NaN rows");
});

s.run();
