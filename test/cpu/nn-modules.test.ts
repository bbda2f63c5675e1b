// The nn modules on the CPU: initialisation statistics and bounds per fan-in (PyTorch's
// defaults), seeding, forward against the ops or a hand reference, gradients through modules
// against finite differences in f64, BatchNorm's batch statistics, running statistics and
// evaluation mode, Dropout in training and evaluation, parameters and buffers by dotted name,
// train()/eval(), to(), zeroGrad(), the state dict in memory and through a safetensors file,
// dispose(), and named errors.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Tensor, nn, liveTensors, tidy, ShapeError, TensorError } from '../../src/index.ts';
import { gradRuleOf } from '../../src/ops/registry.ts';
import { close, f64, gradCheck, values } from './nn-check.ts';

const mean = (a: number[]): number => a.reduce((s, v) => s + v, 0) / a.length;
const variance = (a: number[]): number => {
  const m = mean(a);
  return a.reduce((s, v) => s + (v - m) ** 2, 0) / a.length;
};

/** values within [-b, b), spread over it: mean near 0 and variance near b^2 / 3 */
function uniformIn(name: string, v: number[], b: number): void {
  assert.ok(
    v.every((x) => x >= -b && x < b),
    `${name}: every value within +-${b}`,
  );
  assert.ok(Math.max(...v.map(Math.abs)) > 0.9 * b, `${name}: the values reach near the bound ${b}`);
  const sd = b / Math.sqrt(3);
  assert.ok(Math.abs(mean(v)) < (4 * sd) / Math.sqrt(v.length), `${name}: mean ${mean(v)}`);
  assert.ok(Math.abs(variance(v) / ((b * b) / 3) - 1) < 0.1, `${name}: variance ${variance(v)} vs ${(b * b) / 3}`);
}

test('initialisation: kaiming-uniform weights and fan-in biases, as PyTorch', () => {
  const lin = new nn.Linear(200, 64, { seed: 1 });
  uniformIn('Linear weight', values(lin.weight), 1 / Math.sqrt(200));
  const wide = new nn.Linear(64, 3000, { seed: 2 });
  uniformIn('Linear bias', values(wide.bias!), 1 / Math.sqrt(64));
  const conv = new nn.Conv2d(8, 32, 3, { seed: 3 });
  assert.equal(conv.weight.shape, [32, 8, 3, 3]);
  uniformIn('Conv2d weight', values(conv.weight), 1 / Math.sqrt(8 * 9));
  const grouped = new nn.Conv2d(8, 600, [3, 2], { seed: 4, groups: 4 });
  assert.equal(grouped.weight.shape, [600, 2, 3, 2]);
  uniformIn('grouped Conv2d bias', values(grouped.bias!), 1 / Math.sqrt(2 * 6));
  const c1 = new nn.Conv1d(6, 40, 5, { seed: 5 });
  uniformIn('Conv1d weight', values(c1.weight), 1 / Math.sqrt(30));
  // a transposed convolution's fan-in is its weight's dim 1 (cOut / groups) times the kernel
  const ct = new nn.ConvTranspose2d(16, 30, 3, { seed: 6, groups: 2 });
  assert.equal(ct.weight.shape, [16, 15, 3, 3]);
  uniformIn('ConvTranspose2d weight', values(ct.weight), 1 / Math.sqrt(15 * 9));
  const emb = new nn.Embedding(100, 50, { seed: 7 });
  const e = values(emb.weight);
  assert.ok(
    Math.abs(mean(e)) < 0.06 && Math.abs(variance(e) - 1) < 0.06,
    `Embedding normal(0, 1): ${mean(e)}, ${variance(e)}`,
  );
  const bn = new nn.BatchNorm2d(5);
  assert.equal(values(bn.weight!), [1, 1, 1, 1, 1]);
  assert.equal(values(bn.bias!), [0, 0, 0, 0, 0]);
  assert.equal(values(bn.runningMean!), [0, 0, 0, 0, 0]);
  assert.equal(values(bn.runningVar!), [1, 1, 1, 1, 1]);
  const ln = new nn.LayerNorm([2, 3]);
  assert.equal(values(ln.weight!), [1, 1, 1, 1, 1, 1]);
  assert.equal(values(ln.bias!), [0, 0, 0, 0, 0, 0]);
  for (const m of [lin, wide, conv, grouped, c1, ct, emb, bn, ln]) m.dispose();
});

test('seeding: the same seed gives the same layer, manualSeed the same model, on the asked dtype', () => {
  const a = new nn.Linear(5, 4, { seed: 11 }),
    b = new nn.Linear(5, 4, { seed: 11 }),
    c = new nn.Linear(5, 4, { seed: 12 });
  assert.equal(values(a.weight), values(b.weight));
  assert.not.equal(values(a.weight), values(c.weight));
  assert.not.equal(values(a.weight).slice(0, 4), values(a.bias!), 'weight and bias draw apart');
  const build = (): nn.Sequential => new nn.Sequential(new nn.Linear(3, 4), new nn.Linear(4, 2));
  nn.manualSeed(99);
  const m1 = build();
  nn.manualSeed(99);
  const m2 = build();
  assert.equal(m1.parameters().map(values), m2.parameters().map(values));
  assert.not.equal(values(m1.at(0).parameters()[0]!).slice(0, 8), values(m1.at(1).parameters()[0]!));
  const d = new nn.Linear(5, 4, { seed: 11, dtype: 'f64' });
  assert.is(d.weight.dtype, 'f64');
  uniformIn('f64 Linear weight', values(new nn.Linear(400, 300, { seed: 13, dtype: 'f64' }).weight), 1 / 20);
  for (const m of [a, b, c, m1, m2, d]) m.dispose();
});

test('Linear, Conv, pools, activations: forward equals the ops', () => {
  const lin = new nn.Linear(4, 3, { dtype: 'f64' });
  const x = f64([2, 5, 4]);
  close(values(lin.forward(x)), values(x.matmul(lin.weight.transpose(0, 1)).add(lin.bias!)), 1e-14, 'Linear');
  const nb = new nn.Linear(4, 3, { dtype: 'f64', bias: false });
  assert.is(nb.bias, null);
  assert.is(nb.parameters().length, 1);
  const img = f64([2, 3, 7, 6]);
  const conv = new nn.Conv2d(3, 4, 3, { dtype: 'f64', stride: 2, padding: 1 });
  close(
    values(conv.forward(img)),
    values(img.conv2d(conv.weight, { stride: 2, padding: 1, bias: conv.bias })),
    0,
    'Conv2d',
  );
  const sig = f64([2, 4, 9]);
  const c1 = new nn.Conv1d(4, 6, 3, { dtype: 'f64', dilation: 2, groups: 2 });
  close(values(c1.forward(sig)), values(sig.conv1d(c1.weight, { dilation: 2, groups: 2, bias: c1.bias })), 0, 'Conv1d');
  const ct = new nn.ConvTranspose2d(3, 2, 3, { dtype: 'f64', stride: 2, outputPadding: 1 });
  const ctOut = ct.forward(img);
  assert.equal(ctOut.shape, [2, 2, 16, 14]);
  close(
    values(ctOut),
    values(img.convTranspose2d(ct.weight, { stride: 2, outputPadding: 1, bias: ct.bias })),
    0,
    'ConvTranspose2d',
  );
  close(values(new nn.MaxPool2d(2).forward(img)), values(img.maxPool2d({ kernel: 2 })), 0, 'MaxPool2d');
  close(
    values(new nn.AvgPool2d(3, { stride: 1, padding: 1 }).forward(img)),
    values(img.avgPool2d({ kernel: 3, stride: 1, padding: 1 })),
    0,
    'AvgPool2d',
  );
  const pairs: [nn.UnaryModule, (t: Tensor) => Tensor][] = [
    [new nn.ReLU(), (t) => t.relu()],
    [new nn.LeakyReLU(0.2), (t) => t.leakyRelu(0.2)],
    [new nn.GELU(), (t) => t.geluErf()],
    [new nn.GELU({ approximate: 'tanh' }), (t) => t.gelu()],
    [new nn.SiLU(), (t) => t.silu()],
    [new nn.Tanh(), (t) => t.tanh()],
    [new nn.Sigmoid(), (t) => t.sigmoid()],
    [new nn.Softmax(1), (t) => t.softmax(1)],
    [new nn.LogSoftmax(), (t) => t.logSoftmax(-1)],
    [new nn.Identity(), (t) => t],
  ];
  for (const [m, f] of pairs) close(values(m.forward(img)), values(f(img)), 0, m.constructor.name);
  assert.equal(new nn.Flatten().forward(img).shape, [2, 126]);
  assert.equal(new nn.Flatten(0, 1).forward(img).shape, [6, 7, 6]);
  const emb = new nn.Embedding(10, 3);
  const ids = Tensor.from(BigInt64Array.from([1n, 9n, 1n, 0n]), { shape: [2, 2] });
  const picked = emb.forward(ids);
  assert.equal(picked.shape, [2, 2, 3]);
  close(values(picked).slice(0, 3), values(emb.weight).slice(3, 6), 0, 'Embedding row 1');
});

test('LayerNorm and RMSNorm over several trailing dims against a hand reference', () => {
  const x = f64([3, 2, 4]);
  const ln = new nn.LayerNorm([2, 4], { dtype: 'f64', eps: 1e-5 });
  const rms = new nn.RMSNorm([2, 4], { dtype: 'f64', eps: 1e-6 });
  // non-trivial affine parameters
  ln.loadStateDict({ weight: f64([2, 4], 0.5, 2), bias: f64([2, 4]) });
  rms.loadStateDict({ weight: f64([2, 4], 0.5, 2) });
  const xs = values(x),
    w = values(ln.weight!),
    b = values(ln.bias!),
    rw = values(rms.weight!);
  const wantLn: number[] = [],
    wantRms: number[] = [];
  for (let i = 0; i < 3; i++) {
    const row = xs.slice(i * 8, i * 8 + 8);
    const m = mean(row),
      v = variance(row),
      ms = mean(row.map((t) => t * t));
    row.forEach((t, j) => {
      wantLn.push(((t - m) / Math.sqrt(v + 1e-5)) * w[j]! + b[j]!);
      wantRms.push((t / Math.sqrt(ms + 1e-6)) * rw[j]!);
    });
  }
  close(values(ln.forward(x)), wantLn, 1e-12, 'LayerNorm');
  close(values(rms.forward(x)), wantRms, 1e-12, 'RMSNorm');
  gradCheck('LayerNorm module', ([t]) => ln.forward(t!), [f64([3, 2, 4])], { module: ln });
  gradCheck('RMSNorm module', ([t]) => rms.forward(t!), [f64([3, 2, 4])], { module: rms });
  // without an affine part: nothing to train, the same normalisation
  const plain = new nn.LayerNorm(4, { dtype: 'f64', elementwiseAffine: false });
  assert.is(plain.parameters().length, 0);
  const row = values(x).slice(0, 4);
  close(
    values(plain.forward(x)).slice(0, 4),
    row.map((t) => (t - mean(row)) / Math.sqrt(variance(row) + 1e-5)),
    1e-12,
    'LayerNorm no affine',
  );
  // RMSNorm's default eps is the dtype's machine epsilon
  const r32 = new nn.RMSNorm(4);
  const tiny = Tensor.from([[0, 0, 0, 1e-4]]);
  const want = 1e-4 / Math.sqrt(1e-8 / 4 + 2 ** -23);
  close(values(r32.forward(tiny)).slice(3), [want], 1e-5, 'RMSNorm default eps');
});

test('a Sequential MLP: gradients of every parameter against finite differences', () => {
  const model = new nn.Sequential(
    new nn.Linear(3, 5, { dtype: 'f64' }),
    new nn.Tanh(),
    new nn.Linear(5, 2, { dtype: 'f64' }),
  );
  const x = f64([4, 3]);
  const params = model.parameters();
  const own = params.map((p) => p.detach());
  // the parameters are swapped for f64 inputs of the check, through loadStateDict-free closures
  gradCheck('MLP', ([w0, b0, w1, b1, xin]) => xin!.linear(w0!, { bias: b0 }).tanh().linear(w1!, { bias: b1 }), [
    ...own.map((p) => p.mul(1)),
    x,
  ]);
  // and through the module itself: its parameters receive the same gradients as the functional form
  const y = tidy(() => model.forward(x).sqr().sum());
  y.backward();
  for (const [n, p] of model.namedParameters())
    assert.ok(p.grad !== null && p.grad.shape.join() === p.shape.join(), `${n} has a gradient`);
  model.zeroGrad();
  assert.ok(model.parameters().every((p) => p.grad === null));
});

test('BatchNorm: batch statistics in training, running statistics updated and used in evaluation', () => {
  for (const [make, shape] of [
    [() => new nn.BatchNorm1d(3, { dtype: 'f64', momentum: 0.2 }), [6, 3]],
    [() => new nn.BatchNorm1d(3, { dtype: 'f64', momentum: 0.2 }), [4, 3, 5]],
    [() => new nn.BatchNorm2d(3, { dtype: 'f64', momentum: 0.2 }), [2, 3, 4, 3]],
  ] as [() => nn.BatchNorm1d | nn.BatchNorm2d, number[]][]) {
    const bn = make();
    bn.loadStateDict({ ...bn.stateDict(), weight: f64([3], 0.5, 2), bias: f64([3]) });
    // a non-contiguous input: the channel dim moved last and back
    const base = f64([shape[0]!, ...shape.slice(2), 3], -2, 3);
    const perm = [0, shape.length - 1, ...shape.slice(2).map((_, i) => i + 1)];
    const x = base.permute(perm);
    assert.equal(x.shape, shape);
    const xs = values(x.contiguous());
    const inner = shape.slice(2).reduce((a, b) => a * b, 1);
    const perChannel = (c: number): number[] => xs.filter((_, i) => Math.floor(i / inner) % 3 === c);
    const w = values(bn.weight!),
      b = values(bn.bias!);
    const y = values(bn.forward(x));
    for (let c = 0; c < 3; c++) {
      const v = perChannel(c);
      const m = mean(v),
        va = variance(v),
        n = v.length;
      const got = y.filter((_, i) => Math.floor(i / inner) % 3 === c);
      close(
        got,
        v.map((t) => ((t - m) / Math.sqrt(va + 1e-5)) * w[c]! + b[c]!),
        1e-12,
        `BatchNorm [${shape}] channel ${c}`,
      );
      close([values(bn.runningMean!)[c]!], [0.2 * m], 1e-14, 'running mean');
      close([values(bn.runningVar!)[c]!], [0.8 + (0.2 * va * n) / (n - 1)], 1e-14, 'running variance (unbiased)');
    }
    bn.eval();
    const rm = values(bn.runningMean!),
      rv = values(bn.runningVar!);
    const ye = values(bn.forward(x));
    close(
      ye,
      xs.map((t, i) => {
        const c = Math.floor(i / inner) % 3;
        return ((t - rm[c]!) / Math.sqrt(rv[c]! + 1e-5)) * w[c]! + b[c]!;
      }),
      1e-12,
      `BatchNorm [${shape}] evaluation`,
    );
    close(values(bn.runningMean!), rm, 0, 'evaluation leaves the statistics alone');
    bn.train();
    gradCheck(`BatchNorm [${shape}] training (input)`, ([t]) => bn.forward(t!), [f64(shape)], { module: bn });
    bn.dispose();
  }
  const bn = new nn.BatchNorm1d(2);
  assert.throws(() => bn.forward(Tensor.zeros([1, 2])), /BatchNorm1d: more than one value per channel/);
  assert.throws(
    () => bn.forward(Tensor.zeros([4, 3])),
    (e: Error) => e instanceof ShapeError && /BatchNorm1d\(2\)/.test(e.message),
  );
  const noStats = new nn.BatchNorm1d(2, { trackRunningStats: false, affine: false });
  assert.equal(noStats.stateDict(), {});
  noStats.eval();
  const xs = Tensor.from([
    [1, 2],
    [3, 6],
  ]);
  close(values(noStats.forward(xs)), [-1, -1, 1, 1], 1e-4, 'no running statistics: batch statistics in evaluation');
});

test('BatchNorm: gradients of the weight and bias in training, against finite differences', () => {
  const x = f64([5, 3]);
  gradCheck(
    'batch-norm composition',
    ([t, w, b]) => {
      const m = t!.mean(0, true);
      const c = t!.sub(m);
      const v = c.sqr().mean(0, true);
      return c.mul(v.add(1e-5).sqrt().recip()).mul(w!).add(b!);
    },
    [x.mul(1), f64([3], 0.5, 2), f64([3])],
  );
  // the module's weight and bias gradients equal the composition's
  const bn = new nn.BatchNorm1d(3, { dtype: 'f64' });
  const r = f64([5, 3]);
  const loss = tidy(() => bn.forward(x).mul(r).sum());
  loss.backward();
  const xn = values(
    tidy(() => {
      const m = x.mean(0, true);
      return x.sub(m).div(x.sub(m).sqr().mean(0, true).add(1e-5).sqrt());
    }),
  );
  const rs = values(r);
  close(
    values(bn.bias!.grad!),
    [0, 1, 2].map((c) => rs.filter((_, i) => i % 3 === c).reduce((a, v) => a + v, 0)),
    1e-12,
    'bias gradient',
  );
  close(
    values(bn.weight!.grad!),
    [0, 1, 2].map((c) => rs.reduce((a, v, i) => a + (i % 3 === c ? v * xn[i]! : 0), 0)),
    1e-12,
    'weight gradient',
  );
});

test('Dropout: zeros with probability p and scales the rest in training; the identity in evaluation', () => {
  const x = Tensor.ones([200, 100]);
  const d = new nn.Dropout(0.3, { seed: 5 });
  const y = values(d.forward(x));
  const zeros = y.filter((v) => v === 0).length / y.length;
  assert.ok(Math.abs(zeros - 0.3) < 0.01, `fraction dropped ${zeros}`);
  assert.ok(
    y.every((v) => v === 0 || Math.abs(v - 1 / 0.7) < 1e-6),
    'survivors scaled by 1 / (1 - p)',
  );
  assert.not.equal(values(d.forward(x)).slice(0, 200), y.slice(0, 200), 'a fresh mask each call');
  const again = new nn.Dropout(0.3, { seed: 5 });
  assert.equal(values(again.forward(x)), y, 'seeded: reproducible');
  d.eval();
  assert.equal(values(d.forward(x)), values(x), 'evaluation: the identity');
  assert.throws(() => new nn.Dropout(1.5), /Dropout: p must be in \[0, 1\]/);
  // its gradient: the mask scaled, once the dropout op has a gradient rule
  if (gradRuleOf('dropout') === 'missing') {
    console.log('  (Dropout gradient in training not checked: the dropout op has no gradient rule yet)');
    return;
  }
  const t = f64([4, 5], -1, 1, true);
  const dr = new nn.Dropout(0.5, { seed: 8 });
  const out = dr.forward(t);
  out.sum().backward();
  close(
    values(t.grad!),
    values(out).map((v, i) => (v === 0 ? 0 : v / values(t)[i]!)),
    1e-12,
    'dropout gradient',
  );
});

test('convolution and pooling modules: gradients, where the ops have their rules', () => {
  const checks: [string, string[], () => void][] = [
    [
      'Conv2d',
      ['conv2d'],
      () => {
        const c = new nn.Conv2d(2, 3, 3, { dtype: 'f64', padding: 1, stride: 2 });
        gradCheck('Conv2d module (input)', ([x]) => c.forward(x!), [f64([2, 2, 5, 4])], { module: c });
      },
    ],
    [
      'Conv1d',
      ['conv1d'],
      () => {
        const c = new nn.Conv1d(2, 4, 3, { dtype: 'f64', groups: 2 });
        gradCheck('Conv1d module (input)', ([x]) => c.forward(x!), [f64([2, 2, 7])], { module: c });
      },
    ],
    [
      'ConvTranspose2d',
      ['convTranspose2d'],
      () => {
        const c = new nn.ConvTranspose2d(2, 3, 3, { dtype: 'f64', stride: 2 });
        gradCheck('ConvTranspose2d module (input)', ([x]) => c.forward(x!), [f64([1, 2, 3, 3])], { module: c });
      },
    ],
    [
      'MaxPool2d',
      ['maxPool2d'],
      () => gradCheck('MaxPool2d module', ([x]) => new nn.MaxPool2d(2).forward(x!), [f64([1, 2, 4, 6])]),
    ],
    [
      'AvgPool2d',
      ['avgPool2d'],
      () =>
        gradCheck('AvgPool2d module', ([x]) => new nn.AvgPool2d(3, { stride: 2, padding: 1 }).forward(x!), [
          f64([1, 2, 5, 5]),
        ]),
    ],
  ];
  for (const [name, ops, run] of checks) {
    const missing = ops.filter((o) => gradRuleOf(o) === 'missing');
    if (missing.length > 0)
      console.log(`  (${name} gradient not checked: ${missing.join(', ')} has no gradient rule yet)`);
    else run();
  }
});

test('parameters, buffers and children by dotted name; train() and eval() reach every module', () => {
  const model = new nn.Sequential(
    new nn.Conv2d(1, 2, 3),
    new nn.BatchNorm2d(2),
    new nn.ReLU(),
    new nn.Flatten(),
    new nn.Sequential(new nn.Dropout(0.1), new nn.Linear(8, 3, { bias: false })),
  );
  assert.equal(
    model.namedParameters().map(([n]) => n),
    ['0.weight', '0.bias', '1.weight', '1.bias', '4.1.weight'],
  );
  assert.equal(
    model.namedBuffers().map(([n]) => n),
    ['1.running_mean', '1.running_var'],
  );
  assert.equal(Object.keys(model.stateDict()), [
    '0.weight',
    '0.bias',
    '1.weight',
    '1.bias',
    '4.1.weight',
    '1.running_mean',
    '1.running_var',
  ]);
  assert.equal(
    model.namedModules().map(([n]) => n),
    ['', '0', '1', '2', '3', '4', '4.0', '4.1'],
  );
  assert.ok(model.parameters().every((p) => p.requiresGrad && p.isLeaf));
  model.eval();
  assert.ok(model.namedModules().every(([, m]) => !m.training));
  model.train();
  assert.ok(model.namedModules().every(([, m]) => m.training));
  assert.is(model.length, 5);
  assert.ok(model.at(-1) instanceof nn.Sequential);
  model.dispose();
});

test('to(): parameters and buffers move to the dtype, still leaves that require a gradient', () => {
  const model = new nn.Sequential(new nn.Linear(3, 4), new nn.BatchNorm1d(4));
  const before = model.parameters().map(values);
  const old = model.parameters();
  model.to(null, 'f64');
  assert.ok(model.parameters().every((p) => p.dtype === 'f64' && p.requiresGrad && p.isLeaf));
  assert.ok(model.buffers().every((b) => b.dtype === 'f64'));
  assert.ok(
    old.every((p) => p.isDisposed),
    'the old tensors are disposed',
  );
  close(model.parameters().flatMap(values), before.flat(), 1e-7, 'the same values');
  assert.throws(() => model.to(null, 'i64'), /to: dtype must be a float dtype/);
  model.dispose();
});

test('state dict: round trip in memory and through a safetensors file; mismatches are named', async () => {
  const make = (seed: number): nn.Sequential =>
    new nn.Sequential(
      new nn.Linear(4, 6, { seed }),
      new nn.BatchNorm1d(6),
      new nn.ReLU(),
      new nn.Linear(6, 2, { seed: seed + 1 }),
    );
  const a = make(1),
    b = make(50);
  // move a's running statistics off their initial values
  a.forward(f64([8, 4]).toDtype('f32'));
  a.eval();
  b.eval();
  const x = f64([3, 4]).toDtype('f32');
  b.loadStateDict(a.stateDict());
  assert.equal(values(b.forward(x)), values(a.forward(x)));
  const dir = mkdtempSync(join(tmpdir(), 'rocm-tensor-nn-'));
  try {
    const file = join(dir, 'model.safetensors');
    await nn.saveModule(a, file);
    const c = make(77).eval();
    assert.not.equal(values(c.forward(x)), values(a.forward(x)));
    await nn.loadModule(c, file);
    assert.equal(values(c.forward(x)), values(a.forward(x)));
    const other = new nn.Sequential(new nn.Linear(4, 6));
    const refused = await nn.loadModule(other, file).then(
      () => null,
      (e: Error) => e,
    );
    assert.match(String(refused), /loadModule: .*names do not match.*unexpected: .*1.weight/);
    const partial = await nn.loadModule(other, file, { strict: false });
    assert.ok(partial.unexpected.includes('3.weight'));
    close(values(other.at(0).parameters()[0]!), values(a.at(0).parameters()[0]!), 0, 'non-strict load');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  assert.throws(
    () => b.loadStateDict({}),
    (e: Error) => e instanceof TensorError && /missing: 0.weight/.test(e.message),
  );
  const sd = { ...a.stateDict(), extra: Tensor.zeros([1]) };
  assert.throws(() => b.loadStateDict(sd), /unexpected: extra/);
  assert.throws(() => b.loadStateDict({ ...a.stateDict(), '0.bias': Tensor.zeros([5]) }), /'0.bias' is Tensor\(\[5\]/);
  a.dispose();
  b.dispose();
});

test('dispose() frees every parameter, gradient and buffer', () => {
  const before = liveTensors().length;
  const model = new nn.Sequential(new nn.Linear(3, 4), new nn.BatchNorm1d(4), new nn.Linear(4, 1));
  const loss = tidy(() => model.forward(Tensor.randn([5, 3], { seed: 1 })).sum());
  loss.backward();
  loss.dispose();
  model.dispose();
  assert.is(liveTensors().length, before);
});

test('a module of your own: registered parameters, buffers and children, and their errors', () => {
  class Scaled extends nn.UnaryModule {
    constructor() {
      super();
      this.registerParameter('scale', Tensor.full([3], 2));
      this.registerBuffer('count', Tensor.zeros([1], { dtype: 'i64' }));
      this.registerModule('inner', new nn.Linear(3, 3, { seed: 1 }));
    }
    forward(x: Tensor): Tensor {
      return (this.child('inner') as nn.Linear).forward(x).mul(this.param('scale'));
    }
    tryRegister(name: string, t: Tensor): void {
      this.registerParameter(name, t);
    }
  }
  const m = new Scaled();
  assert.equal(
    m.namedParameters().map(([n]) => n),
    ['scale', 'inner.weight', 'inner.bias'],
  );
  assert.equal(
    m.namedBuffers().map(([n]) => n),
    ['count'],
  );
  // an integer buffer keeps its dtype when the module moves to another float dtype
  m.to(null, 'f64');
  assert.is(m.buffers()[0]!.dtype, 'i64');
  assert.is(m.parameters()[0]!.dtype, 'f64');
  const y = tidy(() => m.forward(Tensor.ones([2, 3], { dtype: 'f64' })).sum());
  y.backward();
  assert.ok(m.parameters().every((p) => p.grad !== null));
  assert.throws(() => m.tryRegister('scale', Tensor.zeros([1])), /Scaled: 'scale' is registered already/);
  assert.throws(() => m.tryRegister('a.b', Tensor.zeros([1])), /Scaled: parameter name 'a.b' must be an identifier/);
  assert.throws(
    () => m.tryRegister('ids', Tensor.zeros([1], { dtype: 'u32' })),
    /Scaled: parameter 'ids' must have a float dtype/,
  );
  const made = tidy(() => {
    const leaf = Tensor.zeros([1], { requiresGrad: true });
    return leaf.mul(2);
  });
  assert.throws(() => m.tryRegister('made', made), /Scaled: parameter 'made' must be a leaf/);
  m.dispose();
});

test('bad arguments are named', () => {
  assert.throws(() => new nn.Linear(0, 3), /Linear: inFeatures must be an integer >= 1/);
  assert.throws(
    () => new nn.Conv2d(3, 4, 3, { groups: 2 }),
    /Conv2d: inChannels 3 and outChannels 4 must both be divisible by groups 2/,
  );
  assert.throws(() => new nn.Conv2d(2, 4, [3, 0]), /Conv2d: kernelSize must be an integer >= 1 or a pair/);
  assert.throws(() => new nn.Linear(3, 2, { seed: 0.5 }), /Linear: seed must be an integer/);
  const lin = new nn.Linear(3, 2);
  assert.throws(() => lin.forward(Tensor.zeros([2, 4])), /Linear\(3, 2\): input .*\[2, 4\].* must end in 3/);
  assert.throws(
    () => new nn.LayerNorm(4).forward(Tensor.zeros([2, 3])),
    /LayerNorm\(\[4\]\): input .* must end in \[4\]/,
  );
  assert.throws(() => new nn.Sequential(lin, {} as nn.Linear), /Sequential: layer 1 must be a Module/);
  assert.throws(() => new nn.GELU({ approximate: 'fast' as 'tanh' }), /GELU: approximate must be/);
});

test.run();
