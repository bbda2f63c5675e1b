// The optimizers on the CPU: several steps of SGD (momentum, dampening, nesterov, weight decay),
// Adam (L2 weight decay, amsgrad) and AdamW against a hand-written f64 implementation of
// PyTorch's update equations, with a known gradient per step; parameter groups; the state dict
// round trip (a resumed optimizer takes the same next steps); zeroGrad; gradient clipping;
// the learning-rate schedules against their closed forms; no readback inside step(); and a
// backward after a step.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Tensor, optim, liveTensors, noGrad, saveSafetensors, TensorError } from '../../src/index.ts';
import { close, f64, values } from './nn-check.ts';

/** sets p.grad to g (a copy), as backward() would leave it */
function setGrad(p: Tensor, g: Tensor): void {
  p.grad?.dispose();
  p.grad = noGrad(() => g.mul(1));
}

type Vec = number[];
interface RefState {
  [k: string]: Vec | number | undefined;
}

/** PyTorch's SGD for one parameter, in f64 */
function sgdRef(
  p: Vec,
  g: Vec,
  s: RefState,
  o: { lr: number; momentum: number; dampening: number; weightDecay: number; nesterov: boolean },
): Vec {
  let d = g.map((v, i) => v + o.weightDecay * p[i]!);
  if (o.momentum !== 0) {
    const prev = s.buf as Vec | undefined;
    const buf = prev === undefined ? d.slice() : prev.map((b, i) => o.momentum * b + (1 - o.dampening) * d[i]!);
    s.buf = buf;
    d = o.nesterov ? d.map((v, i) => v + o.momentum * buf[i]!) : buf;
  }
  return p.map((v, i) => v - o.lr * d[i]!);
}

/** PyTorch's Adam / AdamW for one parameter, in f64 */
function adamRef(
  p: Vec,
  g0: Vec,
  s: RefState,
  o: {
    lr: number;
    beta1: number;
    beta2: number;
    eps: number;
    weightDecay: number;
    amsgrad: boolean;
    decoupled: boolean;
  },
): Vec {
  const t = ((s.step as number | undefined) ?? 0) + 1;
  s.step = t;
  let q = p;
  let g = g0;
  if (o.decoupled) q = p.map((v) => v * (1 - o.lr * o.weightDecay));
  else g = g0.map((v, i) => v + o.weightDecay * p[i]!);
  const m = ((s.m as Vec | undefined) ?? g.map(() => 0)).map((v, i) => o.beta1 * v + (1 - o.beta1) * g[i]!);
  const v = ((s.v as Vec | undefined) ?? g.map(() => 0)).map((x, i) => o.beta2 * x + (1 - o.beta2) * g[i]! * g[i]!);
  s.m = m;
  s.v = v;
  let vu = v;
  if (o.amsgrad) {
    vu = ((s.vmax as Vec | undefined) ?? v.map(() => 0)).map((x, i) => Math.max(x, v[i]!));
    s.vmax = vu;
  }
  const bc1 = 1 - o.beta1 ** t,
    bc2 = 1 - o.beta2 ** t;
  return q.map((x, i) => x - (o.lr / bc1) * (m[i]! / (Math.sqrt(vu[i]!) / Math.sqrt(bc2) + o.eps)));
}

const STEPS = 6;

/** runs opt and ref side by side on two parameters (one non-square) over STEPS known gradients */
function against(
  name: string,
  make: (ps: Tensor[]) => { step(): void; zeroGrad(): void; dispose(): void },
  ref: (p: Vec, g: Vec, s: RefState) => Vec,
): void {
  const before = liveTensors().length;
  const ps = [f64([3, 4]), f64([5])];
  for (const p of ps) p.requiresGrad = true;
  const opt = make(ps);
  const refs = ps.map(values);
  const states: RefState[] = ps.map(() => ({}));
  for (let step = 0; step < STEPS; step++) {
    ps.forEach((p, i) => {
      const g = f64(p.shape, -2, 2);
      const gv = values(g);
      setGrad(p, g);
      g.dispose();
      refs[i] = ref(refs[i]!, gv, states[i]!);
    });
    opt.step();
    ps.forEach((p, i) => close(values(p), refs[i]!, 1e-12, `${name} step ${step} parameter ${i}`));
  }
  opt.zeroGrad();
  opt.dispose();
  for (const p of ps) p.dispose();
  assert.is(liveTensors().length, before, `${name}: tensors left alive`);
}

test('SGD: plain, momentum, dampening, nesterov and weight decay against the reference', () => {
  const configs = [
    { lr: 0.1, momentum: 0, dampening: 0, weightDecay: 0, nesterov: false },
    { lr: 0.05, momentum: 0.9, dampening: 0, weightDecay: 0, nesterov: false },
    { lr: 0.05, momentum: 0.8, dampening: 0.3, weightDecay: 0.01, nesterov: false },
    { lr: 0.02, momentum: 0.9, dampening: 0, weightDecay: 0.1, nesterov: true },
  ];
  for (const o of configs)
    against(
      `SGD ${JSON.stringify(o)}`,
      (ps) => new optim.SGD(ps, o),
      (p, g, s) => sgdRef(p, g, s, o),
    );
});

test('Adam and AdamW: defaults, weight decay, amsgrad against the reference', () => {
  const base = { lr: 1e-3, beta1: 0.9, beta2: 0.999, eps: 1e-8, weightDecay: 0, amsgrad: false };
  const configs = [
    { ...base },
    { ...base, lr: 0.01, weightDecay: 0.05 },
    { ...base, lr: 0.02, beta1: 0.8, beta2: 0.9, amsgrad: true },
    { ...base, lr: 0.01, weightDecay: 0.1, amsgrad: true, eps: 1e-6 },
  ];
  for (const o of configs) {
    against(
      `Adam ${JSON.stringify(o)}`,
      (ps) => new optim.Adam(ps, o),
      (p, g, s) => adamRef(p, g, s, { ...o, decoupled: false }),
    );
    against(
      `AdamW ${JSON.stringify(o)}`,
      (ps) => new optim.AdamW(ps, o),
      (p, g, s) => adamRef(p, g, s, { ...o, decoupled: true }),
    );
  }
  // AdamW's default weight decay is 0.01
  against(
    'AdamW defaults',
    (ps) => new optim.AdamW(ps),
    (p, g, s) => adamRef(p, g, s, { ...base, weightDecay: 0.01, decoupled: true }),
  );
});

test('f32, f16 and bf16 parameters: the same steps within each dtype tolerance', () => {
  const o = { lr: 0.01, weightDecay: 0.01, amsgrad: true };
  for (const [dtype, tol] of [
    ['f32', 1e-6],
    ['f16', 5e-3],
    ['bf16', 3e-2],
  ] as const) {
    const p64 = f64([4, 3]);
    const p = noGrad(() => p64.toDtype(dtype));
    p.requiresGrad = true;
    const opt = new optim.AdamW([p], o);
    let ref = values(p);
    const st: RefState = {};
    for (let step = 0; step < 4; step++) {
      const g = f64([4, 3]);
      const gd = g.toDtype(dtype);
      setGrad(p, gd);
      // the reference starts from what the dtype holds
      ref = adamRef(ref, values(gd), st, { ...o, beta1: 0.9, beta2: 0.999, eps: 1e-8, decoupled: true });
      optim.clipGradNorm([p], 100).dispose();
      opt.step();
      assert.is(p.dtype, dtype);
      close(values(p), ref, tol, `AdamW ${dtype} step ${step}`);
    }
  }
});

test('parameter groups take their own hyperparameters', () => {
  const a = f64([4]),
    b = f64([4]);
  a.requiresGrad = b.requiresGrad = true;
  const opt = new optim.SGD([{ params: [a] }, { params: [b], lr: 0.5 }], { lr: 0.1 });
  const [av, bv] = [values(a), values(b)];
  const g = Tensor.ones([4], { dtype: 'f64' });
  setGrad(a, g);
  setGrad(b, g);
  opt.step();
  close(
    values(a),
    av.map((v) => v - 0.1),
    1e-15,
    'group 0',
  );
  close(
    values(b),
    bv.map((v) => v - 0.5),
    1e-15,
    'group 1',
  );
  // a parameter without a gradient is left alone
  b.grad!.dispose();
  b.grad = null;
  const b1 = values(b);
  opt.step();
  close(values(b), b1, 0, 'no gradient: unchanged');
});

/** three steps, a state dict into a fresh optimizer on copies of the parameters, two more steps on both */
function roundTrip<H extends optim.Hyper & { lr: number }>(make: (ps: Tensor[]) => optim.Optimizer<H>): void {
  const ps = [f64([3, 2]), f64([4])];
  for (const p of ps) p.requiresGrad = true;
  const opt = make(ps);
  const grads = Array.from({ length: 5 }, () => ps.map((p) => f64(p.shape)));
  for (let s = 0; s < 3; s++) {
    ps.forEach((p, i) => setGrad(p, grads[s]![i]!));
    opt.step();
  }
  const sd = opt.stateDict();
  const qs = ps.map((p) => noGrad(() => p.mul(1)));
  for (const q of qs) q.requiresGrad = true;
  const resumed = make(qs);
  resumed.loadStateDict(sd);
  for (const st of Object.values(sd.state)) for (const v of Object.values(st)) if (v instanceof Tensor) v.dispose();
  for (let s = 3; s < 5; s++) {
    ps.forEach((p, i) => setGrad(p, grads[s]![i]!));
    qs.forEach((q, i) => setGrad(q, grads[s]![i]!));
    opt.step();
    resumed.step();
    ps.forEach((p, i) => close(values(qs[i]!), values(p), 0, `${opt.constructor.name} resumed step ${s}`));
  }
  // the hyperparameters travel too
  opt.paramGroups[0]!.lr = 0.123;
  resumed.loadStateDict(opt.stateDict());
  assert.is(resumed.paramGroups[0]!.lr, 0.123);
  const one = make([f64([1], 0, 1, true)]);
  assert.throws(() => one.loadStateDict(opt.stateDict()), /loadStateDict: group 0 has 2 parameters/);
}

test('state dict round trip: a resumed optimizer takes the same next steps', () => {
  roundTrip((ps) => new optim.Adam(ps, { lr: 0.01, amsgrad: true, weightDecay: 0.01 }));
  roundTrip((ps) => new optim.AdamW(ps, { lr: 0.01 }));
  roundTrip((ps) => new optim.SGD(ps, { lr: 0.05, momentum: 0.9, nesterov: true }));
});

test('saveOptimizer / loadOptimizer: a file round trip resumes with the same next steps', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'rocm-tensor-optim-'));
  try {
    const ps = [f64([3, 2], -1, 1, true), f64([4], -1, 1, true)];
    const opt = new optim.Adam(ps, { lr: 0.01, amsgrad: true });
    const file = join(dir, 'optimizer.safetensors');
    // before any step: no state, the groups only
    await optim.saveOptimizer(opt, file);
    const grads = Array.from({ length: 5 }, () => ps.map((p) => f64(p.shape)));
    for (let s = 0; s < 3; s++) {
      ps.forEach((p, i) => setGrad(p, grads[s]![i]!));
      opt.step();
    }
    opt.paramGroups[0]!.lr = 0.02;
    await optim.saveOptimizer(opt, file);
    const qs = ps.map((p) => noGrad(() => p.mul(1)));
    for (const q of qs) q.requiresGrad = true;
    const resumed = new optim.Adam(qs);
    await optim.loadOptimizer(resumed, file);
    assert.is(resumed.paramGroups[0]!.lr, 0.02);
    assert.is(resumed.paramGroups[0]!.amsgrad, true);
    for (let s = 3; s < 5; s++) {
      ps.forEach((p, i) => setGrad(p, grads[s]![i]!));
      qs.forEach((q, i) => setGrad(q, grads[s]![i]!));
      opt.step();
      resumed.step();
      ps.forEach((p, i) => close(values(qs[i]!), values(p), 0, `file-resumed step ${s}`));
    }
    const other = join(dir, 'other.safetensors');
    await saveSafetensors(other, { w: Tensor.zeros([2]) });
    const err = await optim.loadOptimizer(resumed, other).then(
      () => null,
      (e: Error) => e,
    );
    assert.match(String(err), /loadOptimizer: .* is not an optimizer state file/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('zeroGrad: null (disposed) by default, zeros when asked', () => {
  const p = f64([3], -1, 1, true);
  const opt = new optim.SGD([p], { lr: 0.1 });
  setGrad(p, Tensor.ones([3], { dtype: 'f64' }));
  opt.zeroGrad(false);
  assert.equal(values(p.grad!), [0, 0, 0]);
  const g = p.grad!;
  opt.zeroGrad();
  assert.is(p.grad, null);
  assert.ok(g.isDisposed);
});

test('step() reads nothing back from the device, and a backward after a step works', () => {
  const p = f64([4, 3], -1, 1, true);
  const x = f64([2, 4]);
  const opt = new optim.Adam([p], { lr: 0.01, amsgrad: true });
  const proto = Tensor.prototype as unknown as Record<string, unknown>;
  const names = ['toArray', 'toArraySync', 'toRawArray', 'item', 'itemSync', 'toNested', 'toNestedSync'];
  const saved = names.map((n) => proto[n]);
  const guard = (): void => {
    for (const n of names)
      proto[n] = () => {
        throw new Error(`${n} inside step()`);
      };
  };
  const unguard = (): void => names.forEach((n, i) => (proto[n] = saved[i]));
  for (let s = 0; s < 3; s++) {
    const loss = x.matmul(p).sqr().sum();
    loss.backward();
    guard();
    try {
      opt.step();
      optim.clipGradNorm([p], 0.5);
    } finally {
      unguard();
    }
    opt.zeroGrad();
    loss.dispose();
  }
  // a graph recorded before a step refers to the old values: its backward is refused
  const stale = x.matmul(p).sum();
  setGrad(p, Tensor.ones([4, 3], { dtype: 'f64' }));
  opt.step();
  assert.throws(() => stale.backward(), /written in place/);
});

test('clipGradNorm: the total norm, and gradients scaled to maxNorm only when above it', () => {
  const ps = [f64([3, 3], -1, 1, true), f64([5], -1, 1, true), f64([2], -1, 1, true)];
  const gs = ps.map((p) => f64(p.shape, -2, 2));
  const all = gs.flatMap(values);
  const norm = Math.sqrt(all.reduce((a, v) => a + v * v, 0));
  ps.forEach((p, i) => setGrad(p, gs[i]!));
  ps[2]!.grad!.dispose();
  ps[2]!.grad = null; // a parameter without a gradient takes no part
  const withGrad = gs.slice(0, 2).flatMap(values);
  const n2 = Math.sqrt(withGrad.reduce((a, v) => a + v * v, 0));
  const total = optim.clipGradNorm(ps, 1);
  close(values(total), [n2], 1e-14, 'total norm');
  close(
    values(ps[0]!.grad!).concat(values(ps[1]!.grad!)),
    withGrad.map((v) => (v * 1) / (n2 + 1e-6)),
    1e-14,
    'scaled',
  );
  // under the limit: unchanged
  ps.forEach((p, i) => setGrad(p, gs[i]!));
  close(values(optim.clipGradNorm(ps, norm * 2)), [norm], 1e-14, 'norm under the limit');
  close(
    ps.flatMap((p) => values(p.grad!)),
    all,
    1e-15,
    'unchanged under the limit',
  );
  // the infinity norm
  const inf = Math.max(...all.map(Math.abs));
  close(values(optim.clipGradNorm(ps, 0.5, Infinity)), [inf], 0, 'inf norm');
  close(
    ps.flatMap((p) => values(p.grad!)),
    all.map((v) => (v * 0.5) / (inf + 1e-6)),
    1e-14,
    'inf scaled',
  );
  optim.clipGradValue(ps, 0.1);
  assert.ok(ps.flatMap((p) => values(p.grad!)).every((v) => Math.abs(v) <= 0.1));
  assert.throws(() => optim.clipGradNorm(ps, -1), /clipGradNorm: maxNorm must be/);
});

test('schedulers: StepLR, ExponentialLR, CosineAnnealingLR, LinearLR warm-up and SequentialLR', () => {
  const lrs = (make: (o: optim.SGD) => optim.LRScheduler, n: number): number[] => {
    const o = new optim.SGD([f64([1], 0, 1, true)], { lr: 0.1 });
    const s = make(o);
    const out = [o.paramGroups[0]!.lr];
    for (let i = 0; i < n; i++) {
      s.step();
      out.push(s.getLastLr()[0]!);
    }
    return out;
  };
  close(
    lrs((o) => new optim.StepLR(o, 2, { gamma: 0.5 }), 5),
    [0.1, 0.1, 0.05, 0.05, 0.025, 0.025],
    1e-15,
    'StepLR',
  );
  close(
    lrs((o) => new optim.ExponentialLR(o, 0.9), 3),
    [0.1, 0.09, 0.081, 0.0729],
    1e-15,
    'ExponentialLR',
  );
  const cos = [0, 1, 2, 3, 4].map((e) => 0.01 + (0.09 * (1 + Math.cos((Math.PI * e) / 4))) / 2);
  close(
    lrs((o) => new optim.CosineAnnealingLR(o, 4, { etaMin: 0.01 }), 4),
    cos,
    1e-15,
    'CosineAnnealingLR',
  );
  // PyTorch's LinearLR(start 0.25, total 3): 0.025, 0.05, 0.075, 0.1, then held
  close(
    lrs((o) => new optim.LinearLR(o, { startFactor: 0.25, totalIters: 3 }), 5),
    [0.025, 0.05, 0.075, 0.1, 0.1, 0.1],
    1e-15,
    'LinearLR',
  );
  const seq = lrs(
    (o) =>
      new optim.SequentialLR(
        o,
        [new optim.LinearLR(o, { startFactor: 0.5, totalIters: 2 }), new optim.CosineAnnealingLR(o, 2)],
        [2],
      ),
    4,
  );
  close(seq, [0.05, 0.075, 0.1, 0.05, 0], 1e-15, 'warm-up then cosine');
  // state round trip
  const o = new optim.SGD([f64([1], 0, 1, true)], { lr: 0.1 });
  const s = new optim.StepLR(o, 1, { gamma: 0.5 });
  s.step();
  s.step();
  const o2 = new optim.SGD([f64([1], 0, 1, true)], { lr: 0.1 });
  const s2 = new optim.StepLR(o2, 1, { gamma: 0.5 });
  s2.loadStateDict(s.stateDict());
  assert.equal(s2.getLastLr(), s.getLastLr());
  assert.throws(() => new optim.StepLR(o, 0), /StepLR: stepSize must be an integer >= 1/);
});

test('bad arguments are named', () => {
  const p = f64([2], 0, 1, true);
  assert.throws(
    () => new optim.SGD([p], { lr: -1 }),
    (e: Error) => e instanceof TensorError && /SGD: lr must be a number >= 0/.test(e.message),
  );
  assert.throws(() => new optim.SGD([p], { nesterov: true }), /SGD: nesterov needs momentum > 0/);
  assert.throws(() => new optim.Adam([p], { beta1: 1 }), /Adam: beta1 must be a number in \[0, 1\)/);
  assert.throws(() => new optim.Adam([]), /Adam: got an empty parameter list/);
  assert.throws(() => new optim.Adam([p, p]), /appears in more than one place/);
  assert.throws(() => new optim.Adam([f64([2])]), /must be a leaf that requires a gradient/);
});

test.run();
