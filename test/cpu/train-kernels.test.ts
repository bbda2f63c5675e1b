// The fused training ops on the CPU (the reference the GPU kernels are held to): the softmax and
// norm backward ops and cross entropy over rows against f64 central finite differences (views
// and non-contiguous inputs included), every float dtype against the f64 result, the fused Adam
// and SGD steps against the optimizers' op-composed update, and the errors.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { Tensor, nn, optim, liveTensors, noGrad, tidy, DTypeError, ShapeError, TensorError } from '../../src/index.ts';
import { StepTable } from '../../src/backends/train-options.ts';
import {
  adamStep,
  crossEntropyRows,
  crossEntropyRowsBackward,
  layerNormBackward,
  rmsNormBackward,
  sgdStep,
  softmaxBackward,
} from '../../src/ops/train.ts';
import type { DType } from '../../src/core/dtype.ts';
import { close, f64, gradCheck, nextSeed, values } from './nn-check.ts';

const TOL: Record<string, number> = { f64: 1e-12, f32: 2e-5, f16: 4e-3, bf16: 3e-2 };

test('softmax and logSoftmax gradients (the backward op) against finite differences, any dim, views', () => {
  for (const log of [false, true]) {
    const f = (x: Tensor, d: number): Tensor => (log ? x.logSoftmax(d) : x.softmax(d));
    gradCheck(`${log ? 'logSoftmax' : 'softmax'} last`, ([x]) => f(x!, -1), [f64([3, 5])]);
    gradCheck(`${log ? 'logSoftmax' : 'softmax'} dim 0`, ([x]) => f(x!, 0), [f64([4, 3])]);
    gradCheck(`${log ? 'logSoftmax' : 'softmax'} transposed`, ([x]) => f(x!.transpose(0, 1), -1), [f64([5, 3])]);
  }
});

test('layerNorm and rmsNorm gradients (the backward ops) against finite differences', () => {
  gradCheck('layerNorm', ([x, w, b]) => x!.layerNorm(w!, b!, 1e-5), [f64([2, 3, 6]), f64([6]), f64([6])]);
  gradCheck('layerNorm without bias', ([x, w]) => x!.layerNorm(w!, null, 1e-5), [f64([4, 5]), f64([5])]);
  gradCheck('layerNorm transposed x', ([x, w]) => x!.transpose(0, 1).layerNorm(w!, null, 1e-5), [
    f64([5, 3]),
    f64([5]),
  ]);
  gradCheck('rmsNorm', ([x, w]) => x!.rmsNorm(w!, 1e-5), [f64([3, 7]), f64([7])]);
  gradCheck('rmsNorm transposed x', ([x, w]) => x!.transpose(0, 1).rmsNorm(w!, 1e-5), [f64([4, 3]), f64([4])]);
});

test('crossEntropy (the row op and its gradient) against finite differences: weights, ignoreIndex, smoothing', () => {
  const t = Tensor.from([2, 0, -100, 4, 1, 3], { dtype: 'i64' });
  const w = f64([5], 0.2, 2);
  for (const labelSmoothing of [0, 0.2])
    for (const reduction of ['mean', 'sum', 'none'] as const)
      for (const weight of [undefined, w])
        gradCheck(
          `crossEntropy ${reduction} smoothing ${labelSmoothing} ${weight ? 'weighted' : ''}`,
          ([x]) => nn.crossEntropy(x!, t, { labelSmoothing, reduction, weight }),
          [f64([6, 5], -3, 3)],
        );
  // [N, C, d]: classes moved last (a non-contiguous view) before the row op
  const t3 = Tensor.from(
    [
      [1, 0, 2],
      [2, 2, 0],
    ],
    { dtype: 'i64' },
  );
  gradCheck('crossEntropy [N, C, d]', ([x]) => nn.crossEntropy(x!, t3, { labelSmoothing: 0.1 }), [f64([2, 3, 3])]);
  for (const x of [t, w, t3]) x.dispose();
});

test('crossEntropyRows: an out-of-range class gives NaN (loss and gradient), an ignored one 0', () => {
  tidy(() => {
    const x = f64([3, 4]);
    const t = Tensor.from([1, 9, -100], { dtype: 'i64' });
    const p = { weight: null, ignoreIndex: -100, smoothing: 0 };
    const l = values(Tensor.wrap(crossEntropyRows(x, t, p)));
    assert.ok(Number.isFinite(l[0]!) && Number.isNaN(l[1]!) && l[2] === 0, `losses ${l}`);
    const g = values(Tensor.wrap(crossEntropyRowsBackward(Tensor.ones([3], { dtype: 'f64' }), x, t, p)));
    assert.ok(g.slice(4, 8).every(Number.isNaN) && g.slice(8).every((v) => v === 0), `gradient ${g}`);
  });
});

/** op(at dtype) against op(at f64), within the dtype's tolerance (relative above 1) */
function dtypesAgree(what: string, run: (d: DType) => Tensor[], scale = 1): void {
  tidy(() => {
    const ref = run('f64').map(values);
    for (const d of ['f32', 'f16', 'bf16'] as const) {
      const got = run(d);
      got.forEach((t, i) => {
        assert.is(t.dtype, d, `${what} ${d}: output ${i} dtype`);
        close(values(t), ref[i]!, TOL[d]! * scale, `${what} ${d} output ${i}`);
      });
    }
  });
}

test('the backward ops and crossEntropyRows at every float dtype against f64', () => {
  const x = f64([6, 40], -2, 2),
    g = f64([6, 40]),
    w = f64([40], 0.5, 1.5),
    b = f64([40]),
    t = Tensor.from([3, 0, 39, -100, 7, 12], { dtype: 'i64' }),
    gl = f64([6]);
  // inputs rounded to the dtype first, so the f64 run sees the same values
  const at = (v: Tensor, d: DType): Tensor => v.toDtype(d);
  const y = x.softmax(-1);
  for (const log of [false, true]) {
    const yy = log ? x.logSoftmax(-1) : y;
    dtypesAgree(
      `softmaxBackward log ${log}`,
      (d) => {
        const r = (s: Tensor): Tensor => (d === 'f64' ? at(at(s, 'bf16'), 'f64') : at(at(s, 'bf16'), d));
        return [Tensor.wrap(softmaxBackward(r(g), r(yy), -1, log))];
      },
      8,
    );
  }
  const r = (s: Tensor, d: DType): Tensor => (d === 'f64' ? at(at(s, 'bf16'), 'f64') : at(at(s, 'bf16'), d));
  dtypesAgree(
    'layerNormBackward',
    (d) => {
      const [dx, dw, db] = layerNormBackward(r(g, d), r(x, d), r(w, d), r(b, d), 1e-5);
      return [Tensor.wrap(dx), Tensor.wrap(dw), Tensor.wrap(db!)];
    },
    8,
  );
  dtypesAgree(
    'rmsNormBackward',
    (d) => {
      const [dx, dw] = rmsNormBackward(r(g, d), r(x, d), r(w, d), 1e-5);
      return [Tensor.wrap(dx), Tensor.wrap(dw)];
    },
    8,
  );
  dtypesAgree(
    'crossEntropyRows',
    (d) => {
      const p = { weight: r(w, d), ignoreIndex: -100, smoothing: 0.1 };
      return [
        Tensor.wrap(crossEntropyRows(r(x, d), t, p)),
        Tensor.wrap(crossEntropyRowsBackward(r(gl, d), r(x, d), t, p)),
      ];
    },
    8,
  );
  for (const v of [x, g, w, b, t, gl, y]) v.dispose();
});

/** params of the dtype and grads for them: the same values every call */
function paramsOf(dtype: DType, seed: number): { ps: Tensor[]; gs: Tensor[][] } {
  const shapes = [[7, 5], [3], [40]];
  const draw = (s: number[], sd: number, scale: number): Tensor => {
    const u = Tensor.rand(s, { seed: sd, dtype: 'f64' });
    const a = u.affine(2 * scale, -scale);
    const t = a.toDtype(dtype);
    u.dispose();
    a.dispose();
    return t;
  };
  const ps = shapes.map((s, i) => {
    const p = draw(s, seed + i, 1);
    p.requiresGrad = true;
    return p;
  });
  const gs = [0, 1, 2].map((k) => shapes.map((s, i) => draw(s, seed + 100 * (k + 1) + i, 0.5)));
  return { ps, gs };
}

test('the fused Adam / AdamW and SGD steps equal the op-composed update (every dtype, amsgrad, master weights, momentum, nesterov)', () => {
  const before = liveTensors().length;
  const cases: { name: string; dtype: DType; master: boolean; make: (ps: Tensor[]) => optim.Optimizer<optim.Hyper> }[] =
    [];
  for (const dtype of ['f32', 'f64', 'bf16', 'f16'] as const)
    for (const master of dtype === 'bf16' || dtype === 'f16' ? [false, true] : [false]) {
      // f16 state: the composed update rounds eps = 1e-8 (and small second moments) to 0 and divides by it
      const eps = dtype === 'f16' ? 1e-3 : 1e-8;
      cases.push({
        name: 'AdamW',
        dtype,
        master,
        make: (ps) => new optim.AdamW(ps, { lr: 0.01, eps, weightDecay: 0.1, masterWeights: master }) as never,
      });
      cases.push({
        name: 'Adam amsgrad',
        dtype,
        master,
        make: (ps) =>
          new optim.Adam(ps, { lr: 0.01, eps, weightDecay: 0.05, amsgrad: true, masterWeights: master }) as never,
      });
      cases.push({
        name: 'SGD nesterov',
        dtype,
        master,
        make: (ps) =>
          new optim.SGD(ps, {
            lr: 0.1,
            momentum: 0.9,
            nesterov: true,
            weightDecay: 0.01,
            masterWeights: master,
          }) as never,
      });
      cases.push({
        name: 'SGD dampening',
        dtype,
        master,
        make: (ps) => new optim.SGD(ps, { lr: 0.1, momentum: 0.8, dampening: 0.3, masterWeights: master }) as never,
      });
      cases.push({
        name: 'SGD plain',
        dtype,
        master,
        make: (ps) => new optim.SGD(ps, { lr: 0.1, masterWeights: master }) as never,
      });
    }
  for (const c of cases) {
    const seed = nextSeed() * 1000;
    // composed: the optimizer on the CPU
    const a = paramsOf(c.dtype, seed);
    const opt = c.make(a.ps);
    for (const gs of a.gs) {
      a.ps.forEach((p, i) => (p.grad = gs[i]!.mul(1)));
      opt.step();
      opt.zeroGrad();
    }
    // fused: the step ops, state kept here
    const b = paramsOf(c.dtype, seed);
    const adam = c.name.startsWith('Adam');
    const sdt: DType = c.master ? 'f32' : c.dtype;
    const slots = adam ? (c.name.includes('amsgrad') ? 3 : 2) : c.name === 'SGD plain' ? 0 : 1;
    const state = Array.from({ length: slots }, () => b.ps.map((p) => Tensor.zeros(p.shape, { dtype: sdt })));
    const masters = c.master ? b.ps.map((p) => noGrad(() => p.toDtype('f32'))) : null;
    const cache = new StepTable();
    const h = opt.paramGroups[0]!;
    b.gs.forEach((gs, k) => {
      const t = k + 1;
      const list = { params: b.ps, grads: gs, state, masters, cache };
      noGrad(() => {
        if (adam)
          adamStep(list, {
            lr: h.lr as number,
            beta1: h.beta1 as number,
            beta2: h.beta2 as number,
            eps: h.eps as number,
            weightDecay: h.weightDecay as number,
            decoupled: c.name === 'AdamW',
            amsgrad: h.amsgrad as boolean,
            stepSize: (h.lr as number) / (1 - (h.beta1 as number) ** t),
            invBc2Sqrt: 1 / Math.sqrt(1 - (h.beta2 as number) ** t),
          });
        else
          sgdStep(list, {
            lr: h.lr as number,
            momentum: h.momentum as number,
            dampening: h.dampening as number,
            weightDecay: h.weightDecay as number,
            nesterov: h.nesterov as boolean,
            first: k === 0,
          });
      });
    });
    // a half parameter may round one unit apart where the f32 weights straddle a rounding boundary
    a.ps.forEach((p, i) =>
      close(
        values(b.ps[i]!),
        values(p),
        TOL[c.dtype]! * 4,
        `${c.name} ${c.dtype}${c.master ? ' master' : ''} param ${i}`,
      ),
    );
    const sd = opt.stateDict();
    if (masters)
      a.ps.forEach((_, i) =>
        close(values(masters[i]!), values(sd.state[i]!.master as Tensor), 2e-6, `${c.name} ${c.dtype} master ${i}`),
      );
    {
      const key = adam ? 'expAvg' : 'momentumBuffer';
      a.ps.forEach((_, i) => {
        const ref = sd.state[i]![key] as Tensor;
        if (ref !== undefined)
          close(
            values(state[0]![i]!),
            values(ref),
            c.master ? 1e-6 : TOL[c.dtype]! * 4,
            `${c.name} ${c.dtype} ${key} ${i}`,
          );
      });
      for (const s of Object.values(sd.state)) for (const v of Object.values(s)) if (v instanceof Tensor) v.dispose();
    }
    opt.dispose();
    cache.dispose();
    for (const t of [...a.ps, ...b.ps, ...a.gs.flat(), ...b.gs.flat(), ...state.flat(), ...(masters ?? [])])
      t.dispose();
  }
  assert.is(liveTensors().length, before, 'tensors left alive');
});

test('errors name the op, the shapes and the dtypes', () => {
  tidy(() => {
    const x = f64([3, 4]);
    const p = { weight: null, ignoreIndex: -100, smoothing: 0 };
    assert.throws(
      () => crossEntropyRows(x, Tensor.from([1, 2], { dtype: 'i64' }), p),
      (e: Error) => e instanceof ShapeError && /crossEntropyRows.*\[3\]/.test(e.message),
    );
    assert.throws(
      () => crossEntropyRows(x, x, p),
      (e: Error) => e instanceof DTypeError && /crossEntropyRows/.test(e.message),
    );
    assert.throws(
      () => crossEntropyRows(x, Tensor.from([1, 2, 0], { dtype: 'i64' }), { ...p, smoothing: 2 }),
      /label smoothing/,
    );
    assert.throws(
      () => softmaxBackward(f64([3, 5]), x, -1, false),
      (e: Error) => e instanceof ShapeError && /softmaxBackward/.test(e.message),
    );
    assert.throws(
      () => layerNormBackward(x, x, f64([5]), null, 1e-5),
      (e: Error) => e instanceof ShapeError && /layerNormBackward.*weight/.test(e.message),
    );
    const ps = [f64([2]), f64([2]).toDtype('f32')];
    const list = { params: ps, grads: ps, state: [ps, ps], masters: null, cache: new StepTable() };
    const h = {
      lr: 1,
      beta1: 0.9,
      beta2: 0.9,
      eps: 1e-8,
      weightDecay: 0,
      decoupled: false,
      amsgrad: false,
      stepSize: 1,
      invBc2Sqrt: 1,
    };
    assert.throws(
      () => adamStep(list, h),
      (e: Error) => e instanceof DTypeError && /adamStep: parameter 1/.test(e.message),
    );
    assert.throws(
      () => adamStep({ ...list, params: [ps[0]!], grads: [ps[0]!], state: [[ps[0]!]] }, h),
      (e: Error) => e instanceof TensorError && /2 state slot/.test(e.message),
    );
    assert.throws(
      () =>
        adamStep({ ...list, params: [ps[0]!], grads: [ps[0]!], state: [[ps[0]!], [ps[0]!]] }, { ...h, lr: Number.NaN }),
      /lr must be a finite number/,
    );
  });
});

test.run();
