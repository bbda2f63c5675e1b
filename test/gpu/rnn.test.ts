// The recurrent op and nn.LSTM / nn.GRU on MIOpen / cuDNN against the CPU reference, outputs
// poisoned: the op (both cells, both directions, with and without biases and initial states) in
// every input layout; its backward op; gradients through backward(); the modules stacked two
// layers deep, bidirectional, batch-first, with and without states, with dropout between layers
// (the same Philox masks on both devices). A dtype the library has no RNN path for must be
// refused with NotOnDeviceError naming it; f32 and f16 must run. Run alone:
//   node --import tsx test/gpu/rnn.test.ts
import * as assert from 'uvu/assert';
import { NotOnDeviceError } from '../../src/core/errors.ts';
import { type DType, type Device, Tensor, nn } from '../../src/index.ts';
import { rnn, rnnBackward, type RnnMode } from '../../src/ops/rnn.ts';
import { randT } from '../helpers.ts';
import { FLOAT_DTYPES, LAYOUTS, checkOp, gpuSuite } from './harness.ts';

const s = gpuSuite('gpu/rnn');

// the libraries keep h between steps in the data's dtype (the CPU in f64), so half types drift a
// little with the sequence; f32 computes on FMA (no TF32)
const FWD_TOL: Partial<Record<DType, number>> = { f32: 1e-4, f16: 2e-2, bf16: 6e-2 };
const BWD_TOL: Partial<Record<DType, number>> = { f32: 2e-4, f16: 4e-2, bf16: 1e-1 };

interface Case {
  mode: RnnMode;
  reverse: boolean;
  bias: boolean;
  states: boolean;
}
const CASES: Case[] = [];
for (const mode of ['lstm', 'gru'] as const)
  for (const reverse of [false, true])
    for (const [bias, states] of [
      [true, true],
      [false, false],
    ] as const)
      CASES.push({ mode, reverse, bias, states });
const label = (k: Case) => `${k.mode}${k.reverse ? ' reverse' : ''}${k.bias ? '' : ' no bias'}${k.states ? ' h0' : ''}`;

const T = 5,
  B = 3,
  I = 4,
  H = 6;

/** x, wIh, wHh, then biases and states as the case has them */
function inputs(k: Case, d: DType): Tensor[] {
  const G = (k.mode === 'lstm' ? 4 : 3) * H;
  const ins = [randT([T, B, I], d, -1, 1), randT([G, I], d, -0.5, 0.5), randT([G, H], d, -0.5, 0.5)];
  if (k.bias) ins.push(randT([G], d, -0.5, 0.5), randT([G], d, -0.5, 0.5));
  if (k.states) ins.push(randT([B, H], d, -1, 1));
  if (k.states && k.mode === 'lstm') ins.push(randT([B, H], d, -1, 1));
  return ins;
}
function options(k: Case, v: Tensor[]) {
  let i = 3;
  const biasIh = k.bias ? v[i++]! : null,
    biasHh = k.bias ? v[i++]! : null;
  const h0 = k.states ? v[i++]! : null,
    c0 = k.states && k.mode === 'lstm' ? v[i++]! : null;
  return { mode: k.mode, weightIh: v[1]!, weightHh: v[2]!, biasIh, biasHh, h0, c0, reverse: k.reverse };
}

/** the float dtypes the device's library runs an RNN in; the others must be refused by name */
const supported = new Map<Device, DType[]>();
function dtypesOn(dev: Device): DType[] {
  const hit = supported.get(dev);
  if (hit) return hit;
  const ok: DType[] = [];
  for (const d of FLOAT_DTYPES) {
    const k = CASES[0]!;
    const v = inputs(k, d).map((t) => t.to(dev));
    try {
      Tensor.wrap(rnn(v[0]!, options(k, v))).dispose();
      ok.push(d);
    } catch (e) {
      if (!(e instanceof NotOnDeviceError)) throw e;
      assert.ok(e.message.includes('rnn') && e.message.includes(d), `the refusal names the op and dtype: ${e.message}`);
      console.log(`gpu/rnn: ${d} refused on ${dev}: ${e.message}`);
    } finally {
      for (const t of v) t.dispose();
    }
  }
  console.log(`gpu/rnn: dtypes run on ${dev}: ${ok.join(', ')}`);
  assert.ok(ok.includes('f32') && ok.includes('f16'), `f32 and f16 must run on ${dev}, got ${ok.join(', ')}`);
  supported.set(dev, ok);
  return ok;
}

s.opTest('rnn', async (dev) => {
  for (const k of CASES)
    await checkOp(
      'rnn',
      dtypesOn(dev),
      LAYOUTS,
      (d) => inputs(k, d),
      (v) => Tensor.wrap(rnn(v[0]!, options(k, v))),
      {
        variant: label(k),
        tol: FWD_TOL,
      },
    );
});

s.opTest('rnnBackward', async (dev) => {
  for (const k of CASES)
    await checkOp(
      'rnnBackward',
      dtypesOn(dev),
      LAYOUTS,
      (d) => [randT([T + (k.mode === 'lstm' ? 1 : 0), B, H], d, -1, 1), ...inputs(k, d)],
      ([g, ...v]) => {
        const o = options(k, v);
        return Tensor.wrap(
          rnnBackward(g!, v[0]!, o.h0, o.c0, o.weightIh, o.weightHh, o.biasIh, o.biasHh, k.mode, k.reverse),
        );
      },
      { variant: label(k), tol: BWD_TOL },
    );
});

s.test('rnn: gradients through backward() against the CPU', async (dev) => {
  for (const k of CASES)
    await checkOp(
      'rnn',
      dtypesOn(dev),
      ['contiguous', 'transposed'],
      (d) => [...inputs(k, d), randT([T + (k.mode === 'lstm' ? 1 : 0), B, H], d, -1, 1)],
      (v) => {
        const g = v[v.length - 1]!;
        const ins = v.slice(0, -1);
        for (const t of ins) t.requiresGrad = true;
        Tensor.wrap(rnn(ins[0]!, options(k, ins))).backward(g);
        return Tensor.cat(
          ins.map((t) => t.grad!.reshape([t.numel])),
          0,
        );
      },
      { variant: `grad ${label(k)}`, tol: BWD_TOL, fixed: [] },
    );
});

// [variant, cell, layers, bidirectional, batchFirst, states, dropout]
const STACKS: readonly [string, RnnMode, number, boolean, boolean, boolean, number][] = [
  ['LSTM 2 layers bidirectional, states', 'lstm', 2, true, false, true, 0],
  ['LSTM batch-first, no states', 'lstm', 1, false, true, false, 0],
  ['GRU 2 layers bidirectional batch-first, states', 'gru', 2, true, true, true, 0],
  ['GRU 2 layers, dropout 0.3', 'gru', 2, false, false, false, 0.3],
  ['LSTM 3 layers, dropout 0.5, states', 'lstm', 3, false, false, true, 0.5],
];

function stackInputs(mode: RnnMode, layers: number, bi: boolean, batchFirst: boolean, states: boolean, d: DType) {
  const D = bi ? 2 : 1;
  const ins = [randT(batchFirst ? [B, T, I] : [T, B, I], d, -1, 1)];
  if (states) ins.push(randT([layers * D, B, H], d, -1, 1));
  if (states && mode === 'lstm') ins.push(randT([layers * D, B, H], d, -1, 1));
  return ins;
}

/** the module built on the inputs' device with one seed (the same parameters on every device) */
function stackRun(
  mode: RnnMode,
  layers: number,
  bi: boolean,
  batchFirst: boolean,
  dropout: number,
  v: Tensor[],
  d: DType,
) {
  const opts = { numLayers: layers, bidirectional: bi, batchFirst, dropout, seed: 21, dtype: d, device: v[0]!.device };
  const m = mode === 'lstm' ? new nn.LSTM(I, H, opts) : new nn.GRU(I, H, opts);
  const flat = (t: Tensor) => t.reshape([t.numel]);
  let parts: Tensor[];
  if (m instanceof nn.LSTM) {
    const [o, [h, c]] = m.forward(v[0]!, v.length > 1 ? [v[1]!, v[2]!] : null);
    parts = [o, h, c];
  } else {
    const [o, h] = m.forward(v[0]!, v[1] ?? null);
    parts = [o, h];
  }
  return { m, out: Tensor.cat(parts.map(flat), 0) };
}

s.test('LSTM / GRU modules: outputs and final states against the CPU', async (dev) => {
  for (const [variant, mode, layers, bi, bf, states, dropout] of STACKS)
    await checkOp(
      'rnn',
      dtypesOn(dev),
      LAYOUTS,
      (d) => stackInputs(mode, layers, bi, bf, states, d),
      (v, d) => stackRun(mode, layers, bi, bf, dropout, v, d).out,
      { variant, tol: FWD_TOL },
    );
});

s.test('LSTM / GRU modules: input, state and parameter gradients against the CPU', async (dev) => {
  for (const [variant, mode, layers, bi, bf, states, dropout] of STACKS)
    await checkOp(
      'rnn',
      dtypesOn(dev),
      ['contiguous', 'narrowed'],
      (d) => stackInputs(mode, layers, bi, bf, states, d),
      (v, d) => {
        for (const t of v) t.requiresGrad = true;
        const { m, out } = stackRun(mode, layers, bi, bf, dropout, v, d);
        // a fixed weighting of the outputs, the same on both devices
        const w = Tensor.rand([out.numel], { seed: 5, dtype: d, device: out.device });
        out.mul(w).sum().backward();
        const grads = [...v, ...Object.values(m.stateDict())].map((t) => t.grad!.reshape([t.numel]));
        return Tensor.cat(grads, 0);
      },
      { variant: `grad ${variant}`, tol: BWD_TOL },
    );
});

s.run();
