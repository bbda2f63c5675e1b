// The recurrent op and nn.LSTM / nn.GRU on the CPU: against the equations written out in f64 on
// small sizes (both cells, both directions, with and without biases and initial states, every
// float dtype, non-contiguous inputs, NaN), gradients against f64 central finite differences,
// the modules' names, shapes and initialisation, the stacking (layers, directions, batch-first,
// unbatched, dropout) and the errors for bad input.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { DTypeError, ShapeError, TensorError } from '../../src/core/errors.ts';
import type { DType } from '../../src/core/dtype.ts';
import { Tensor, nn, noGrad, tidy } from '../../src/index.ts';
import { assign } from '../../src/nn/assign.ts';
import { rnn, rnnBackward, type RnnMode } from '../../src/ops/rnn.ts';
import { gradCheckAt, leaf } from '../grad-check.ts';
import { assertClose, randT, throwsWith, withLayout } from '../helpers.ts';

/** a parameter's values replaced in place */
const setTo = (p: Tensor, v: number[]): void =>
  noGrad(() => {
    const src = Tensor.from(new Float64Array(v), { shape: p.shape });
    assign(p, src);
    src.dispose();
  });
const vals = (t: Tensor): number[] => Array.from(t.toDtype('f64').toArraySync() as Float64Array);
const sig = (v: number): number => 1 / (1 + Math.exp(-v));

interface Cell {
  mode: RnnMode;
  wIh: number[];
  wHh: number[];
  bIh: number[] | null;
  bHh: number[] | null;
  I: number;
  H: number;
}

/** W [rows, cols] row-major times v, rows [r0, r0 + n) */
function mv(w: number[], cols: number, r0: number, n: number, v: number[]): number[] {
  return Array.from({ length: n }, (_, r) => v.reduce((s, x, k) => s + w[(r0 + r) * cols + k]! * x, 0));
}
const add = (...vs: number[][]): number[] => vs[0]!.map((_, i) => vs.reduce((s, v) => s + v[i]!, 0));
const gateBias = (b: number[] | null, g: number, H: number): number[] =>
  b ? b.slice(g * H, (g + 1) * H) : new Array<number>(H).fill(0);

/** one step of the cell for one batch row, PyTorch's equations */
function step(c: Cell, x: number[], h: number[], cs: number[]): [number[], number[]] {
  const { H, I } = c;
  const pre = (g: number) => ({
    i: add(mv(c.wIh, I, g * H, H, x), gateBias(c.bIh, g, H)),
    h: add(mv(c.wHh, H, g * H, H, h), gateBias(c.bHh, g, H)),
  });
  if (c.mode === 'lstm') {
    const [pi, pf, pg, po] = [0, 1, 2, 3].map(pre).map((p) => add(p.i, p.h));
    const ig = pi!.map(sig),
      fg = pf!.map(sig),
      gg = pg!.map(Math.tanh),
      og = po!.map(sig);
    const cn = cs.map((cv, j) => fg[j]! * cv + ig[j]! * gg[j]!);
    return [cn.map((cv, j) => og[j]! * Math.tanh(cv)), cn];
  }
  const [r, z, n] = [0, 1, 2].map(pre);
  const rg = add(r!.i, r!.h).map(sig),
    zg = add(z!.i, z!.h).map(sig);
  const ng = n!.i.map((v, j) => Math.tanh(v + rg[j]! * n!.h[j]!));
  return [ng.map((v, j) => (1 - zg[j]!) * v + zg[j]! * h[j]!), cs];
}

/** the op's output written out: [T (+1), B, H] flat */
function reference(c: Cell, x: number[], T: number, B: number, h0: number[] | null, c0: number[] | null, rev: boolean) {
  const { H, I } = c;
  const out = new Array<number>((T + (c.mode === 'lstm' ? 1 : 0)) * B * H).fill(0);
  for (let b = 0; b < B; b++) {
    let h = h0 ? h0.slice(b * H, (b + 1) * H) : new Array<number>(H).fill(0);
    let cs = c0 ? c0.slice(b * H, (b + 1) * H) : new Array<number>(H).fill(0);
    for (let s = 0; s < T; s++) {
      const t = rev ? T - 1 - s : s;
      [h, cs] = step(c, x.slice((t * B + b) * I, (t * B + b + 1) * I), h, cs);
      h.forEach((v, j) => {
        out[(t * B + b) * H + j] = v;
      });
    }
    if (c.mode === 'lstm')
      cs.forEach((v, j) => {
        out[(T * B + b) * H + j] = v;
      });
  }
  return out;
}

interface Case {
  mode: RnnMode;
  T: number;
  B: number;
  I: number;
  H: number;
  bias: boolean;
  states: boolean;
  reverse: boolean;
}
const CASES: Case[] = [];
for (const mode of ['lstm', 'gru'] as const)
  for (const reverse of [false, true])
    for (const [bias, states] of [
      [true, true],
      [false, false],
      [true, false],
    ] as const)
      CASES.push({ mode, T: 4, B: 2, I: 3, H: 5, bias, states, reverse });

function makeInputs(k: Case, dtype: DType) {
  const G = (k.mode === 'lstm' ? 4 : 3) * k.H;
  return {
    x: randT([k.T, k.B, k.I], dtype, -1.5, 1.5),
    wIh: randT([G, k.I], dtype, -0.6, 0.6),
    wHh: randT([G, k.H], dtype, -0.6, 0.6),
    bIh: k.bias ? randT([G], dtype, -0.5, 0.5) : null,
    bHh: k.bias ? randT([G], dtype, -0.5, 0.5) : null,
    h0: k.states ? randT([k.B, k.H], dtype, -1, 1) : null,
    c0: k.states && k.mode === 'lstm' ? randT([k.B, k.H], dtype, -1, 1) : null,
  };
}
const cellOf = (k: Case, a: ReturnType<typeof makeInputs>): Cell => ({
  mode: k.mode,
  I: k.I,
  H: k.H,
  wIh: vals(a.wIh),
  wHh: vals(a.wHh),
  bIh: a.bIh ? vals(a.bIh) : null,
  bHh: a.bHh ? vals(a.bHh) : null,
});
const call = (k: Case, a: ReturnType<typeof makeInputs>, x: Tensor = a.x) =>
  Tensor.wrap(
    rnn(x, {
      mode: k.mode,
      weightIh: a.wIh,
      weightHh: a.wHh,
      biasIh: a.bIh,
      biasHh: a.bHh,
      h0: a.h0,
      c0: a.c0,
      reverse: k.reverse,
    }),
  );
const label = (k: Case) => `${k.mode}${k.reverse ? ' reverse' : ''}${k.bias ? '' : ' no bias'}${k.states ? ' h0' : ''}`;

const DT_TOL: Record<string, [number, number]> = {
  f64: [1e-12, 1e-12],
  f32: [1e-5, 1e-6],
  f16: [2e-3, 2e-3],
  bf16: [1.6e-2, 1.6e-2],
};

test('rnn op: the equations written out, every float dtype', () =>
  tidy(() => {
    for (const dtype of ['f64', 'f32', 'f16', 'bf16'] as const)
      for (const k of CASES) {
        const a = makeInputs(k, dtype);
        const got = call(k, a);
        assert.equal(got.shape, [k.T + (k.mode === 'lstm' ? 1 : 0), k.B, k.H]);
        assert.is(got.dtype, dtype);
        const want = reference(
          cellOf(k, a),
          vals(a.x),
          k.T,
          k.B,
          a.h0 ? vals(a.h0) : null,
          a.c0 ? vals(a.c0) : null,
          k.reverse,
        );
        const [rtol, atol] = DT_TOL[dtype]!;
        assertClose(vals(got), want, rtol, atol, `${label(k)} ${dtype}`);
      }
  }));

test('rnn op: non-contiguous inputs give the contiguous answer', () =>
  tidy(() => {
    for (const k of [CASES[0]!, CASES[7]!, CASES[3]!]) {
      const a = makeInputs(k, 'f32');
      const want = vals(call(k, a));
      for (const kind of ['transposed', 'narrowed', 'offset'] as const) {
        const b = {
          ...a,
          x: withLayout(a.x, kind).x,
          wIh: withLayout(a.wIh, kind).x,
          wHh: withLayout(a.wHh, kind).x,
          h0: a.h0 ? withLayout(a.h0, kind).x : null,
        };
        assert.ok(!b.x.isContiguous() || kind === 'offset');
        assertClose(vals(call(k, b)), want, 0, 0, `${label(k)} ${kind}`);
      }
    }
  }));

test('rnn op: NaN in the input reaches the outputs', () =>
  tidy(() => {
    for (const k of [CASES[0]!, CASES[6]!]) {
      const a = makeInputs(k, 'f32');
      const xv = vals(a.x);
      xv[k.B * k.I] = Number.NaN; // time 1, batch row 0
      const x = Tensor.from(new Float32Array(xv), { shape: a.x.shape });
      const out = vals(call(k, a, x));
      // batch row 0 is NaN from time 1 on (forward), row 1 untouched
      for (let j = 0; j < k.H; j++) {
        assert.ok(Number.isNaN(out[(1 * k.B + 0) * k.H + j]!), `${label(k)}: NaN lost at ${j}`);
        assert.ok(Number.isFinite(out[(1 * k.B + 1) * k.H + j]!), `${label(k)}: NaN leaked into row 1`);
      }
    }
  }));

test('rnn op: gradients of every input against f64 finite differences', () => {
  for (const k of CASES) {
    const G = (k.mode === 'lstm' ? 4 : 3) * k.H;
    const T = 3,
      B = 2,
      I = 2,
      H = 3;
    const g = (k.mode === 'lstm' ? 4 : 3) * H;
    void G;
    const xs = [leaf([T, B, I]), leaf([g, I], -0.7, 0.7), leaf([g, H], -0.7, 0.7)];
    if (k.bias) xs.push(leaf([g], -0.5, 0.5), leaf([g], -0.5, 0.5));
    if (k.states) xs.push(leaf([B, H], -1, 1));
    if (k.states && k.mode === 'lstm') xs.push(leaf([B, H], -1, 1));
    gradCheckAt(
      `rnn ${label(k)}`,
      (v) => {
        let i = 3;
        const bIh = k.bias ? v[i++]! : null,
          bHh = k.bias ? v[i++]! : null;
        const h0 = k.states ? v[i++]! : null,
          c0 = k.states && k.mode === 'lstm' ? v[i++]! : null;
        return Tensor.wrap(
          rnn(v[0]!, {
            mode: k.mode,
            weightIh: v[1]!,
            weightHh: v[2]!,
            biasIh: bIh,
            biasHh: bHh,
            h0,
            c0,
            reverse: k.reverse,
          }),
        );
      },
      xs,
    );
    for (const x of xs) x.dispose();
  }
});

test('LSTM / GRU: PyTorch names, shapes and initialisation', () =>
  tidy(() => {
    const m = new nn.LSTM(3, 4, { numLayers: 2, bidirectional: true, seed: 5 });
    const sd = m.stateDict();
    const names = Object.keys(sd);
    const want: string[] = [];
    for (const l of [0, 1])
      for (const s of ['', '_reverse'])
        for (const p of ['weight_ih', 'weight_hh', 'bias_ih', 'bias_hh']) want.push(`${p}_l${l}${s}`);
    assert.equal(names, want);
    assert.equal(sd.weight_ih_l0!.shape, [16, 3]);
    assert.equal(sd.weight_ih_l1!.shape, [16, 8]);
    assert.equal(sd.weight_hh_l1_reverse!.shape, [16, 4]);
    assert.equal(sd.bias_hh_l0!.shape, [16]);
    const all = names.flatMap((n) => vals(sd[n]!));
    const bound = 1 / Math.sqrt(4);
    assert.ok(all.every((v) => Math.abs(v) <= bound));
    assert.ok(Math.max(...all) > 0.8 * bound && Math.min(...all) < -0.8 * bound, 'the draws cover the range');
    assert.ok(new Set(all).size > 0.95 * all.length, 'every parameter draws its own values');
    const g = new nn.GRU(2, 3, { bias: false, seed: 5 });
    assert.equal(Object.keys(g.stateDict()), ['weight_ih_l0', 'weight_hh_l0']);
    assert.equal(g.stateDict().weight_ih_l0!.shape, [9, 2]);
    // the same seed, the same parameters; another seed, others
    const m2 = new nn.LSTM(3, 4, { numLayers: 2, bidirectional: true, seed: 5 });
    assert.equal(vals(m2.stateDict().weight_hh_l1!), vals(sd.weight_hh_l1!));
    const m3 = new nn.LSTM(3, 4, { numLayers: 2, bidirectional: true, seed: 6 });
    assert.not.equal(vals(m3.stateDict().weight_hh_l1!), vals(sd.weight_hh_l1!));
    const f64 = new nn.GRU(2, 3, { dtype: 'f64', seed: 1 });
    assert.is(f64.stateDict().weight_hh_l0!.dtype, 'f64');
  }));

/** the stack written out with the reference: output [T, B, D * H], hN, cN (sequence-first) */
function stackRef(m: nn.LSTM | nn.GRU, mode: RnnMode, x: number[], T: number, B: number, h0?: number[], c0?: number[]) {
  const sd = m.stateDict();
  const D = m.bidirectional ? 2 : 1,
    H = m.hiddenSize;
  let input = x,
    I = m.inputSize;
  const hN: number[] = [],
    cN: number[] = [];
  for (let l = 0; l < m.numLayers; l++) {
    const outs: number[][] = [];
    for (let d = 0; d < D; d++) {
      const s = `_l${l}${d ? '_reverse' : ''}`;
      const cell: Cell = {
        mode,
        I,
        H,
        wIh: vals(sd[`weight_ih${s}`]!),
        wHh: vals(sd[`weight_hh${s}`]!),
        bIh: m.bias ? vals(sd[`bias_ih${s}`]!) : null,
        bHh: m.bias ? vals(sd[`bias_hh${s}`]!) : null,
      };
      const k = l * D + d;
      const o = reference(
        cell,
        input,
        T,
        B,
        h0 ? h0.slice(k * B * H, (k + 1) * B * H) : null,
        c0 ? c0.slice(k * B * H, (k + 1) * B * H) : null,
        d === 1,
      );
      outs.push(o);
      hN.push(...o.slice((d ? 0 : T - 1) * B * H, (d ? 1 : T) * B * H));
      if (mode === 'lstm') cN.push(...o.slice(T * B * H, (T + 1) * B * H));
    }
    const next = new Array<number>(T * B * D * H);
    for (let t = 0; t < T; t++)
      for (let b = 0; b < B; b++)
        for (let d = 0; d < D; d++)
          for (let j = 0; j < H; j++) next[((t * B + b) * D + d) * H + j] = outs[d]![(t * B + b) * H + j]!;
    input = next;
    I = D * H;
  }
  return { out: input, hN, cN };
}

test('LSTM / GRU: layers, directions, batch-first, states, against the stack written out', () =>
  tidy(() => {
    const T = 4,
      B = 3,
      I = 3,
      H = 4;
    for (const mode of ['lstm', 'gru'] as const)
      for (const [numLayers, bidirectional, batchFirst, states] of [
        [1, false, false, false],
        [2, false, true, true],
        [2, true, false, true],
        [1, true, true, false],
      ] as const) {
        const opts = { numLayers, bidirectional, batchFirst, seed: 9, dtype: 'f64' as const };
        const m = mode === 'lstm' ? new nn.LSTM(I, H, opts) : new nn.GRU(I, H, opts);
        const D = bidirectional ? 2 : 1;
        const x = randT([T, B, I], 'f64', -1, 1);
        const h0 = states ? randT([numLayers * D, B, H], 'f64', -1, 1) : null;
        const c0 = states ? randT([numLayers * D, B, H], 'f64', -1, 1) : null;
        const xin = batchFirst ? x.transpose(0, 1) : x;
        const what = `${mode} layers ${numLayers}${bidirectional ? ' bi' : ''}${batchFirst ? ' batchFirst' : ''}${states ? ' states' : ''}`;
        let out: Tensor, hN: Tensor, cN: Tensor | null;
        if (m instanceof nn.LSTM) {
          const r = m.forward(xin, h0 && c0 ? [h0, c0] : null);
          [out, [hN, cN]] = r;
        } else {
          [out, hN] = m.forward(xin, h0);
          cN = null;
        }
        const ref = stackRef(m, mode, vals(x), T, B, h0 ? vals(h0) : undefined, c0 ? vals(c0) : undefined);
        assert.equal(out.shape, batchFirst ? [B, T, D * H] : [T, B, D * H], what);
        assert.equal(hN.shape, [numLayers * D, B, H], what);
        assertClose(vals(batchFirst ? out.transpose(0, 1) : out), ref.out, 1e-12, 1e-12, `${what}: output`);
        assertClose(vals(hN), ref.hN, 1e-12, 1e-12, `${what}: hN`);
        if (cN) assertClose(vals(cN), ref.cN, 1e-12, 1e-12, `${what}: cN`);
      }
  }));

test('LSTM / GRU: one unbatched sequence is the batch of one', () =>
  tidy(() => {
    const m = new nn.GRU(2, 3, { numLayers: 2, bidirectional: true, seed: 3, dtype: 'f64' });
    const x = randT([5, 2], 'f64', -1, 1);
    const h0 = randT([4, 3], 'f64', -1, 1);
    const [out, hN] = m.forward(x, h0);
    const [outB, hNB] = m.forward(x.unsqueeze(1), h0.unsqueeze(1));
    assert.equal(out.shape, [5, 6]);
    assert.equal(hN.shape, [4, 3]);
    assertClose(vals(out), vals(outB), 0, 0, 'output');
    assertClose(vals(hN), vals(hNB), 0, 0, 'hN');
    const l = new nn.LSTM(2, 3, { seed: 3 });
    const [o2, [h2, c2]] = l.forward(randT([5, 2]));
    assert.equal(
      [o2.shape, h2.shape, c2.shape],
      [
        [5, 3],
        [1, 3],
        [1, 3],
      ],
    );
  }));

test('LSTM: dropout between layers in training only, the identity in evaluation', () =>
  tidy(() => {
    const x = randT([6, 2, 3], 'f64', -1, 1);
    const a = new nn.LSTM(3, 8, { numLayers: 2, dropout: 0.5, seed: 4, dtype: 'f64' });
    const b = new nn.LSTM(3, 8, { numLayers: 2, seed: 4, dtype: 'f64' });
    a.eval();
    assertClose(vals(a.forward(x)[0]), vals(b.forward(x)[0]), 0, 0, 'eval: no dropout');
    a.train();
    const t1 = vals(a.forward(x)[0]),
      t2 = vals(a.forward(x)[0]);
    assert.not.equal(t1, vals(b.forward(x)[0]), 'training: dropout changes the output');
    assert.not.equal(t1, t2, 'each call draws a fresh mask');
    // one layer: nothing between layers to drop
    const one = new nn.LSTM(3, 8, { dropout: 0.5, seed: 4, dtype: 'f64' });
    const oneRef = new nn.LSTM(3, 8, { seed: 4, dtype: 'f64' });
    assertClose(vals(one.forward(x)[0]), vals(oneRef.forward(x)[0]), 0, 0, 'one layer');
  }));

test('LSTM / GRU: gradients of input, states and every parameter against f64 finite differences', () => {
  for (const mode of ['lstm', 'gru'] as const) {
    const opts = { numLayers: 2, bidirectional: true, batchFirst: true, seed: 12, dtype: 'f64' as const };
    const m = mode === 'lstm' ? new nn.LSTM(2, 2, opts) : new nn.GRU(2, 2, opts);
    const params = Object.values(m.stateDict());
    const x = leaf([2, 3, 2]),
      h0 = leaf([4, 2, 2], -1, 1),
      c0 = leaf([4, 2, 2], -1, 1);
    const flat = (t: Tensor) => t.reshape([t.numel]);
    const run = (v: Tensor[]): Tensor => {
      if (m instanceof nn.LSTM) {
        const [o, [h, c]] = m.forward(v[0]!, [v[1]!, v[2]!]);
        return Tensor.cat([flat(o), flat(h), flat(c)], 0);
      }
      const [o, h] = m.forward(v[0]!, v[1]!);
      return Tensor.cat([flat(o), flat(h)], 0);
    };
    gradCheckAt(`${mode} module inputs`, run, mode === 'lstm' ? [x, h0, c0] : [x, h0], { module: m });
    // the parameters: perturbed through a copy of the module's values
    const before = params.map(vals);
    const loss = tidy(() => run([x.detach(), h0.detach(), c0.detach()]).sum());
    m.zeroGrad();
    loss.backward();
    const grads = params.map((p) => (p.grad ? vals(p.grad) : null));
    params.forEach((p, i) => {
      assert.ok(grads[i], `${mode}: parameter ${i} has no gradient`);
      const v = before[i]!;
      for (const j of [0, v.length - 1]) {
        const at = (d: number): number => {
          const w = v.slice();
          w[j]! += d;
          setTo(p, w);
          const r = tidy(() => run([x.detach(), h0.detach(), c0.detach()]).sum().itemSync());
          return r;
        };
        const fd = (at(1e-6) - at(-1e-6)) / 2e-6;
        setTo(p, v);
        assert.ok(
          Math.abs(fd - grads[i]![j]!) <= 1e-6 * Math.max(1, Math.abs(fd)),
          `${mode}: parameter ${i}[${j}]: ${grads[i]![j]} vs ${fd}`,
        );
      }
    });
    m.zeroGrad();
    for (const t of [x, h0, c0, loss]) t.dispose();
  }
});

test('rnn op and the modules: bad input names the op, the shapes and the dtypes', () =>
  tidy(() => {
    const k = CASES[0]!;
    const a = makeInputs(k, 'f32');
    const base = { mode: 'lstm' as const, weightIh: a.wIh, weightHh: a.wHh };
    throwsWith(() => rnn(randT([4, 3]), base), ShapeError, 'rnn', 'x must be [seq >= 1, batch >= 1, input]', '[4, 3]');
    throwsWith(() => rnn(randT([4, 2, 5]), base), ShapeError, 'weightIh must be [20, 5]', 'x [4, 2, 5] f32');
    throwsWith(
      () => rnn(a.x, { ...base, mode: 'gru' }),
      ShapeError,
      'rnn(gru)',
      'weightHh must be [3 * hidden, hidden]',
    );
    throwsWith(() => rnn(a.x, { ...base, mode: 'rnn' as RnnMode }), TensorError, "mode must be 'lstm' or 'gru'");
    throwsWith(() => rnn(a.x.toDtype('f64'), base), DTypeError, "share x's dtype f64", 'weightIh [20, 3] f32');
    throwsWith(() => rnn(a.x.toDtype('i64'), base), TensorError, 'rnn', 'i64');
    throwsWith(() => rnn(a.x, { ...base, biasIh: randT([20]) }), TensorError, 'both biasIh and biasHh');
    throwsWith(() => rnn(a.x, { ...base, biasIh: randT([8]), biasHh: randT([8]) }), ShapeError, 'biases must be [20]');
    throwsWith(() => rnn(a.x, { ...base, h0: randT([3, 5]) }), ShapeError, 'h0 and c0 must be [batch 2, hidden 5]');
    const g = makeInputs({ ...k, mode: 'gru' }, 'f32');
    throwsWith(
      () => rnn(g.x, { mode: 'gru', weightIh: g.wIh, weightHh: g.wHh, c0: randT([2, 5]) }),
      TensorError,
      'c0 is for LSTM only',
    );
    throwsWith(
      () => rnnBackward(randT([4, 2, 5]), a.x, null, null, a.wIh, a.wHh, null, null, 'lstm', false),
      ShapeError,
      'rnnBackward',
      'must be [5, 2, 5] f32',
    );
    throwsWith(
      () => rnnBackward(randT([5, 2, 5]), a.x, null, null, a.wHh, a.wHh, null, null, 'lstm', false),
      ShapeError,
      'weightIh must be [20, 3]',
    );
    throwsWith(() => new nn.LSTM(0, 3), TensorError, 'LSTM', 'inputSize');
    throwsWith(() => new nn.GRU(3, 3, { dropout: 2 }), TensorError, 'GRU', 'dropout');
    throwsWith(() => new nn.GRU(3, 3, { numLayers: 1.5 }), TensorError, 'numLayers');
    const m = new nn.LSTM(3, 4, { numLayers: 2 });
    throwsWith(() => m.forward(randT([5, 2, 4])), ShapeError, 'LSTM(3, 4, layers 2)', '[seq, batch, 3]', '[5, 2, 4]');
    throwsWith(
      () => m.forward(randT([5, 2, 3]), [randT([1, 2, 4]), randT([2, 2, 4])]),
      ShapeError,
      'h0 must be [2, 2, 4]',
    );
    throwsWith(
      () => m.forward(randT([5, 2, 3]), [randT([2, 2, 4], 'f64'), randT([2, 2, 4])]),
      TensorError,
      'h0',
      'f64',
    );
  }));

test.run();
