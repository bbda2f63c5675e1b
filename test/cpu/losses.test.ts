// The losses on the CPU: each value against a hand-written f64 reference on random data, for
// every reduction, with ignored targets, class weights and label smoothing, on batched,
// spatial ([N, C, d]), unbatched and non-contiguous inputs; each gradient against finite
// differences in f64; f32 within its tolerance; NaN propagates; bad arguments are named.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { Tensor, nn, liveTensors, TensorError } from '../../src/index.ts';
import { close, f64, gradCheck, nextSeed, values } from './nn-check.ts';

type Red = 'mean' | 'sum' | 'none';
const REDUCTIONS: Red[] = ['mean', 'sum', 'none'];

/** class ids in [0, c) as i64, with the positions in `ignored` set to ignore */
function targets(shape: number[], c: number, ignored: number[] = [], ignore = -100): Tensor {
  const n = shape.reduce((a, b) => a * b, 1);
  const r = Tensor.rand([n], { seed: nextSeed(), dtype: 'f64' });
  const u = values(r);
  r.dispose();
  const ids = u.map((v, i) => (ignored.includes(i) ? ignore : Math.floor(v * c)));
  return Tensor.from(BigInt64Array.from(ids.map(BigInt)), { shape });
}
const ints = (t: Tensor): number[] => Array.from(t.toArraySync() as BigInt64Array, Number);

interface CeRef {
  ignore: number;
  smoothing: number;
  weight: number[] | null;
  reduction: Red;
  logProbs: boolean;
}
/** cross entropy / nll over x [N, C, R...] flattened as n, c, r; targets [N, R] */
function ceRef(x: number[], shape: number[], t: number[], o: CeRef): number[] {
  const unbatched = shape.length === 1;
  const [n, c] = unbatched ? [1, shape[0]!] : [shape[0]!, shape[1]!];
  const r = unbatched ? 1 : shape.slice(2).reduce((a, b) => a * b, 1);
  const per: number[] = [];
  let denom = 0;
  for (let i = 0; i < n; i++) {
    for (let k = 0; k < r; k++) {
      const row = Array.from({ length: c }, (_, j) => x[(i * c + j) * r + k]!);
      const m = Math.max(...row);
      const lse = o.logProbs ? 0 : m + Math.log(row.reduce((a, v) => a + Math.exp(v - m), 0));
      const logp = row.map((v) => v - lse);
      const tk = t[i * r + k]!;
      if (tk === o.ignore) {
        per.push(0);
        continue;
      }
      const w = (j: number): number => (o.weight ? o.weight[j]! : 1);
      const nll = -w(tk) * logp[tk]!;
      const smooth = -logp.reduce((a, v, j) => a + w(j) * v, 0) / c;
      per.push((1 - o.smoothing) * nll + o.smoothing * smooth);
      denom += w(tk);
    }
  }
  if (o.reduction === 'none') return per;
  const s = per.reduce((a, b) => a + b, 0);
  return [o.reduction === 'sum' ? s : s / denom];
}

/** input shapes: batched, spatial, unbatched */
const SHAPES: number[][] = [[5, 4], [3, 4, 2], [4]];
const targetShape = (s: number[]): number[] => (s.length === 1 ? [] : [s[0]!, ...s.slice(2)]);

test('crossEntropy: values against the f64 reference (reductions, ignoreIndex, weights, smoothing)', () => {
  const before = liveTensors().length;
  for (const shape of SHAPES) {
    const c = shape.length === 1 ? shape[0]! : shape[1]!;
    const tshape = targetShape(shape);
    const nT = tshape.reduce((a, b) => a * b, 1);
    const x = f64(shape, -3, 3);
    const xs = values(x);
    const cases: { ignored: number[]; ignore?: number; smoothing: number; weight: boolean }[] = [
      { ignored: [], smoothing: 0, weight: false },
      { ignored: nT > 1 ? [1] : [], smoothing: 0, weight: false },
      { ignored: nT > 1 ? [0, 2] : [], ignore: 2, smoothing: 0.1, weight: false },
      { ignored: nT > 1 ? [1] : [], smoothing: 0.25, weight: true },
    ];
    for (const cs of cases) {
      const ignore = cs.ignore ?? -100;
      const t = targets(tshape, c, cs.ignored, ignore);
      const w = cs.weight ? f64([c], 0.2, 2) : null;
      for (const reduction of REDUCTIONS) {
        const got = nn.crossEntropy(x, t, {
          reduction,
          ignoreIndex: cs.ignore,
          labelSmoothing: cs.smoothing,
          weight: w ?? undefined,
        });
        const want = ceRef(xs, shape, ints(t), {
          ignore,
          smoothing: cs.smoothing,
          weight: w ? values(w) : null,
          reduction,
          logProbs: false,
        });
        assert.equal(got.shape, reduction === 'none' ? tshape : []);
        close(values(got), want, 1e-12, `crossEntropy [${shape}] ${reduction} ${JSON.stringify(cs)}`);
        got.dispose();
      }
      t.dispose();
      w?.dispose();
    }
    x.dispose();
  }
  assert.is(liveTensors().length, before, 'tensors left alive');
});

test('crossEntropy: non-contiguous logits and u32 / u8 targets give the same values', () => {
  const base = f64([3, 2, 5]); // [N, d, C], seen as [N, C, d]
  const x = base.permute([0, 2, 1]);
  assert.ok(!x.isContiguous());
  const t = targets([3, 2], 5);
  const want = values(nn.crossEntropy(x.contiguous(), t, { reduction: 'none' }));
  for (const dt of ['u32', 'u8'] as const) {
    const tu = t.toDtype(dt);
    close(values(nn.crossEntropy(x, tu, { reduction: 'none' })), want, 1e-14, `targets ${dt}`);
    // a negative ignoreIndex cannot occur in an unsigned target: nothing is ignored
    close(values(nn.crossEntropy(x, tu, { reduction: 'none', ignoreIndex: -1 })), want, 1e-14, `${dt} ignore -1`);
  }
});

test('crossEntropy: class probabilities as targets', () => {
  const x = f64([4, 3, 2]);
  const p = f64([4, 3, 2], 0, 1).softmax(1);
  const w = f64([3], 0.5, 1.5);
  const xs = values(x),
    ps = values(p),
    ws = values(w);
  for (const smoothing of [0, 0.2]) {
    const per: number[] = [];
    for (let i = 0; i < 4; i++) {
      for (let k = 0; k < 2; k++) {
        const row = [0, 1, 2].map((j) => xs[(i * 3 + j) * 2 + k]!);
        const lse = Math.log(row.reduce((a, v) => a + Math.exp(v), 0));
        per.push(
          -[0, 1, 2].reduce(
            (a, j) => a + ws[j]! * (ps[(i * 3 + j) * 2 + k]! * (1 - smoothing) + smoothing / 3) * (row[j]! - lse),
            0,
          ),
        );
      }
    }
    const got = nn.crossEntropy(x, p, { weight: w, labelSmoothing: smoothing, reduction: 'none' });
    close(values(got), per, 1e-12, `probabilities, smoothing ${smoothing}`);
    close(
      values(nn.crossEntropy(x, p, { weight: w, labelSmoothing: smoothing })),
      [per.reduce((a, b) => a + b) / 8],
      1e-12,
      'mean',
    );
  }
  gradCheck('crossEntropy probabilities', ([a, b]) => nn.crossEntropy(a!, b!, { reduction: 'none' }), [
    f64([3, 4]),
    f64([3, 4], 0, 1),
  ]);
});

test('crossEntropy: gradients against finite differences', () => {
  for (const shape of SHAPES) {
    const c = shape.length === 1 ? shape[0]! : shape[1]!;
    const tshape = targetShape(shape);
    const nT = tshape.reduce((a, b) => a * b, 1);
    const t = targets(tshape, c, nT > 2 ? [2] : []);
    const w = f64([c], 0.2, 2);
    for (const reduction of REDUCTIONS) {
      gradCheck(`crossEntropy [${shape}] ${reduction}`, ([x]) => nn.crossEntropy(x!, t, { reduction }), [
        f64(shape, -3, 3),
      ]);
      gradCheck(
        `crossEntropy [${shape}] ${reduction} smoothing, weights`,
        ([x]) => nn.crossEntropy(x!, t, { reduction, labelSmoothing: 0.15, weight: w }),
        [f64(shape, -3, 3)],
      );
    }
    t.dispose();
    w.dispose();
  }
});

test('nllLoss: values and gradients on log-probabilities', () => {
  for (const shape of SHAPES) {
    const c = shape.length === 1 ? shape[0]! : shape[1]!;
    const tshape = targetShape(shape);
    const nT = tshape.reduce((a, b) => a * b, 1);
    const t = targets(tshape, c, nT > 1 ? [0] : []);
    const w = f64([c], 0.2, 2);
    const logp = f64(shape, -3, 3).logSoftmax(shape.length === 1 ? 0 : 1);
    for (const reduction of REDUCTIONS) {
      for (const weight of [null, w]) {
        const got = nn.nllLoss(logp, t, { reduction, weight: weight ?? undefined });
        const want = ceRef(values(logp), shape, ints(t), {
          ignore: -100,
          smoothing: 0,
          weight: weight ? values(weight) : null,
          reduction,
          logProbs: true,
        });
        close(values(got), want, 1e-12, `nllLoss [${shape}] ${reduction} weighted ${weight !== null}`);
      }
      gradCheck(`nllLoss [${shape}] ${reduction}`, ([x]) => nn.nllLoss(x!, t, { reduction, weight: w }), [f64(shape)]);
    }
  }
});

test('a mean over only ignored targets is NaN, as 0/0 (PyTorch gives NaN too)', () => {
  const x = f64([2, 3]);
  const t = Tensor.from(BigInt64Array.from([-100n, -100n]), { shape: [2] });
  assert.ok(Number.isNaN(nn.crossEntropy(x, t).itemSync()));
  assert.is(nn.crossEntropy(x, t, { reduction: 'sum' }).itemSync(), 0);
});

/** elementwise references */
const softplus = (v: number): number => Math.log1p(Math.exp(-Math.abs(v))) + Math.max(-v, 0);
const REGRESSION: {
  name: string;
  f: (x: Tensor, y: Tensor, reduction: Red) => Tensor;
  ref: (d: number, x: number, y: number) => number;
  lo?: number;
}[] = [
  { name: 'mseLoss', f: (x, y, reduction) => nn.mseLoss(x, y, { reduction }), ref: (d) => d * d },
  { name: 'l1Loss', f: (x, y, reduction) => nn.l1Loss(x, y, { reduction }), ref: (d) => Math.abs(d) },
  {
    name: 'smoothL1Loss beta 0.7',
    f: (x, y, reduction) => nn.smoothL1Loss(x, y, { reduction, beta: 0.7 }),
    ref: (d) => (Math.abs(d) < 0.7 ? (0.5 * d * d) / 0.7 : Math.abs(d) - 0.35),
  },
  {
    name: 'smoothL1Loss beta 0',
    f: (x, y, reduction) => nn.smoothL1Loss(x, y, { reduction, beta: 0 }),
    ref: (d) => Math.abs(d),
  },
  {
    name: 'huberLoss delta 0.6',
    f: (x, y, reduction) => nn.huberLoss(x, y, { reduction, delta: 0.6 }),
    ref: (d) => (Math.abs(d) < 0.6 ? 0.5 * d * d : 0.6 * (Math.abs(d) - 0.3)),
  },
  {
    name: 'binaryCrossEntropyWithLogits',
    f: (x, y, reduction) => nn.binaryCrossEntropyWithLogits(x, y, { reduction }),
    ref: (_d, x, y) => (1 - y) * x + softplus(x),
  },
];

test('elementwise losses: values against the f64 reference, every reduction, non-contiguous inputs', () => {
  for (const l of REGRESSION) {
    const x = f64([4, 6], -3, 3).transpose(0, 1);
    const y = f64([6, 4], 0, 1);
    const xs = values(x.contiguous()),
      ys = values(y);
    const per = xs.map((v, i) => l.ref(v - ys[i]!, v, ys[i]!));
    for (const reduction of REDUCTIONS) {
      const got = l.f(x, y, reduction);
      const sum = per.reduce((a, b) => a + b, 0);
      const want = reduction === 'none' ? per : [reduction === 'sum' ? sum : sum / per.length];
      assert.equal(got.shape, reduction === 'none' ? [6, 4] : []);
      close(values(got), want, 1e-12, `${l.name} ${reduction}`);
    }
  }
});

test('elementwise losses: gradients (input and target) against finite differences', () => {
  for (const l of REGRESSION) {
    for (const reduction of REDUCTIONS) {
      gradCheck(`${l.name} ${reduction}`, ([x, y]) => l.f(x!, y!, reduction), [f64([3, 5], -3, 3), f64([3, 5], 0, 1)]);
    }
  }
});

test('binaryCrossEntropyWithLogits: posWeight and weight; stable at large logits', () => {
  const x = f64([5, 3], -4, 4),
    y = f64([5, 3], 0, 1),
    pw = f64([3], 0.5, 3),
    w = f64([5, 1], 0.1, 1);
  const xs = values(x),
    ys = values(y),
    pws = values(pw),
    ws = values(w);
  const per = xs.map((v, i) => {
    const lw = 1 + (pws[i % 3]! - 1) * ys[i]!;
    return ws[Math.floor(i / 3)]! * ((1 - ys[i]!) * v + lw * softplus(v));
  });
  close(
    values(nn.binaryCrossEntropyWithLogits(x, y, { posWeight: pw, weight: w, reduction: 'none' })),
    per,
    1e-12,
    'bce weighted',
  );
  gradCheck('bce posWeight', ([a, b]) => nn.binaryCrossEntropyWithLogits(a!, b!, { posWeight: pw, weight: w }), [
    f64([5, 3], -4, 4),
    f64([5, 3], 0, 1),
  ]);
  // logits of +-200 in f32: no overflow, the exact limits (0 for the right side, |x| for the wrong)
  const big = Tensor.from([200, -200, 200, -200]);
  const lab = Tensor.from([1, 0, 0, 1]);
  const got = values(nn.binaryCrossEntropyWithLogits(big, lab, { reduction: 'none' }));
  close(got, [0, 0, 200, 200], 1e-6, 'bce at +-200');
  big.requiresGrad = true;
  nn.binaryCrossEntropyWithLogits(big, lab, { reduction: 'sum' }).backward();
  close(values(big.grad!), [0, 0, 1, -1], 1e-6, 'bce gradient at +-200');
});

test('f32: every loss within f32 tolerance of the f64 value', () => {
  const x = f64([6, 5], -3, 3),
    y = f64([6, 5], 0, 1),
    t = targets([6], 5, [3]);
  const x32 = x.toDtype('f32'),
    y32 = y.toDtype('f32');
  const pairs: [string, (a: Tensor, b: Tensor) => Tensor][] = [
    ['crossEntropy', (a) => nn.crossEntropy(a, t, { labelSmoothing: 0.1 })],
    ['nllLoss', (a) => nn.nllLoss(a.logSoftmax(1), t)],
    ['mseLoss', (a, b) => nn.mseLoss(a, b)],
    ['l1Loss', (a, b) => nn.l1Loss(a, b)],
    ['smoothL1Loss', (a, b) => nn.smoothL1Loss(a, b)],
    ['binaryCrossEntropyWithLogits', (a, b) => nn.binaryCrossEntropyWithLogits(a, b)],
  ];
  for (const [name, f] of pairs) {
    const got = f(x32, y32);
    assert.is(got.dtype, 'f32', name);
    close(values(got), values(f(x, y)), 2e-6, `${name} f32`);
  }
});

test('NaN in the input gives a NaN loss', () => {
  const x = Tensor.from(
    [
      [0.5, Number.NaN, 1],
      [0, 1, 2],
    ],
    { dtype: 'f64' },
  );
  const t = Tensor.from(BigInt64Array.from([0n, 2n]), { shape: [2] });
  assert.ok(Number.isNaN(nn.crossEntropy(x, t).itemSync()), 'crossEntropy');
  assert.ok(Number.isNaN(nn.mseLoss(x, x.mul(0)).itemSync()), 'mseLoss');
  assert.ok(Number.isNaN(nn.binaryCrossEntropyWithLogits(x, x.mul(0)).itemSync()), 'bce');
});

test('bad arguments are named', () => {
  const x = f64([4, 3]);
  const t = targets([4], 3);
  assert.throws(
    () => nn.crossEntropy(x, targets([3], 3)),
    (e: Error) => e instanceof TensorError && /crossEntropy: target .*\[3\].* must be \[4\]/.test(e.message),
  );
  assert.throws(
    () => nn.crossEntropy(x, t.toDtype('f64')),
    /crossEntropy: probability target .* must be shaped like input/,
  );
  assert.throws(
    () => nn.crossEntropy(x, x.toDtype('f32')),
    /crossEntropy: probability target .* must have the dtype of input/,
  );
  assert.throws(
    () => nn.crossEntropy(x, Tensor.zeros([4], { dtype: 'u32' }).toDtype('i64').reshape([2, 2])),
    /crossEntropy: target .* must be \[4\]/,
  );
  assert.throws(() => nn.crossEntropy(t, t), /crossEntropy: input must have a float dtype/);
  assert.throws(() => nn.crossEntropy(x, t, { reduction: 'avg' as 'mean' }), /crossEntropy: reduction must be/);
  assert.throws(
    () => nn.crossEntropy(x, t, { labelSmoothing: 1.5 }),
    /crossEntropy: labelSmoothing must be in \[0, 1\]/,
  );
  assert.throws(() => nn.crossEntropy(x, t, { weight: f64([4]) }), /crossEntropy: weight .* must be \[3\]/);
  assert.throws(() => nn.mseLoss(x, f64([3, 4])), /mseLoss: input .* and target .* must have the same shape/);
  assert.throws(() => nn.mseLoss(x, x.toDtype('f32')), /mseLoss: .* must have the same dtype/);
  assert.throws(() => nn.smoothL1Loss(x, x, { beta: -1 }), /smoothL1Loss: beta must be/);
  assert.throws(() => nn.nllLoss(x, t, { ignoreIndex: 0.5 }), /nllLoss: ignoreIndex must be an integer/);
});

test.run();
