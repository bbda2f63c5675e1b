// The recurrent op: one layer, one direction of an LSTM or GRU over a sequence-first x [T, B, I],
// PyTorch's equations, weight shapes and gate order (LSTM i, f, g, o; GRU r, z, n with
// n = tanh(W_in x + b_in + r * (W_hn h + b_hn))). Its one output holds every hidden state in
// time order and, for LSTM, the final cell state as one more row, so the final states are views
// of it and its gradient reaches every one of them. nn.LSTM and nn.GRU stack layers and
// directions out of it. The gradient is one backward op (explicit backpropagation through time
// on the CPU; the library's backward data and weights calls on a GPU) whose flat result the rule
// cuts into the inputs' gradients.
import { DTypeError, ShapeError, TensorError } from '../core/errors.ts';
import type { RawTensor } from '../device/raw-tensor.ts';
import { FLOATS, dtypeIn, sameDevice, sig } from '../backends/checks.ts';
import * as cpu from '../backends/cpu/rnn.ts';
import * as gpu from '../backends/gpu/rnn.ts';
import { RNN_GATES, type RnnArgs, type RnnMode, rnnDims, rnnGradParts, rnnOutRows } from '../backends/rnn-args.ts';
import { reshape } from './copy.ts';
import { defineGrad, defineOp } from './registry.ts';

export type { RnnMode } from '../backends/rnn-args.ts';

export interface RnnOptions<T extends RawTensor = RawTensor> {
  readonly mode: RnnMode;
  /** [B, H]; zeros when absent */
  readonly h0?: T | null;
  /** LSTM only: [B, H]; zeros when absent */
  readonly c0?: T | null;
  /** [gates * H, I] */
  readonly weightIh: T;
  /** [gates * H, H] */
  readonly weightHh: T;
  /** [gates * H] each; both or neither */
  readonly biasIh?: T | null;
  readonly biasHh?: T | null;
  /** runs from the last time step to the first (a bidirectional layer's second direction) */
  readonly reverse?: boolean;
}

function checkRnn(x: RawTensor, o: RnnOptions): RnnArgs {
  const op = 'rnn';
  x.check(op);
  if (o === null || typeof o !== 'object') throw new TensorError(`${op}: options must be an object (x ${sig(x)})`);
  const mode = o.mode;
  if (mode !== 'lstm' && mode !== 'gru')
    throw new TensorError(`${op}: mode must be 'lstm' or 'gru', got ${String(mode)} (x ${sig(x)})`);
  dtypeIn(op, x, FLOATS);
  if (x.rank !== 3 || x.layout.shape[0]! < 1 || x.layout.shape[1]! < 1)
    throw new ShapeError(`${op}: x must be [seq >= 1, batch >= 1, input], got ${sig(x)}`);
  const [, B, I] = x.layout.shape as [number, number, number];
  const { weightIh: wIh, weightHh: wHh } = o;
  if (!wIh || !wHh) throw new TensorError(`${op}: weightIh and weightHh are required (x ${sig(x)})`);
  const gates = RNN_GATES[mode];
  const all = (): string =>
    `x ${sig(x)}, weightIh ${sig(wIh)}, weightHh ${sig(wHh)}` +
    [o.biasIh, o.biasHh, o.h0, o.c0]
      .map((t, i) => (t ? `, ${['biasIh', 'biasHh', 'h0', 'c0'][i]} ${sig(t)}` : ''))
      .join('');
  for (const t of [wIh, wHh, o.biasIh, o.biasHh, o.h0, o.c0]) {
    if (!t) continue;
    t.check(op);
    sameDevice(op, x, t);
    if (t.dtype !== x.dtype) throw new DTypeError(`${op}: every tensor must share x's dtype ${x.dtype} (${all()})`);
  }
  if (wHh.rank !== 2 || wHh.layout.shape[1]! < 1 || wHh.layout.shape[0] !== gates * wHh.layout.shape[1]!)
    throw new ShapeError(`${op}(${mode}): weightHh must be [${gates} * hidden, hidden] (${all()})`);
  const H = wHh.layout.shape[1]!;
  if (wIh.rank !== 2 || wIh.layout.shape[0] !== gates * H || wIh.layout.shape[1] !== I)
    throw new ShapeError(`${op}(${mode}): weightIh must be [${gates * H}, ${I}] (${all()})`);
  const bIh = o.biasIh ?? null,
    bHh = o.biasHh ?? null;
  if ((bIh === null) !== (bHh === null))
    throw new TensorError(`${op}(${mode}): give both biasIh and biasHh or neither (${all()})`);
  for (const b of [bIh, bHh])
    if (b && (b.rank !== 1 || b.layout.shape[0] !== gates * H))
      throw new ShapeError(`${op}(${mode}): biases must be [${gates * H}] (${all()})`);
  const h0 = o.h0 ?? null,
    c0 = o.c0 ?? null;
  if (c0 && mode !== 'lstm') throw new TensorError(`${op}(${mode}): c0 is for LSTM only (${all()})`);
  for (const s of [h0, c0])
    if (s && (s.rank !== 2 || s.layout.shape[0] !== B || s.layout.shape[1] !== H))
      throw new ShapeError(`${op}(${mode}): h0 and c0 must be [batch ${B}, hidden ${H}] (${all()})`);
  const reverse = o.reverse ?? false;
  if (typeof reverse !== 'boolean') throw new TensorError(`${op}: reverse must be a boolean, got ${String(reverse)}`);
  return [x, h0, c0, wIh, wHh, bIh, bHh, mode, reverse];
}

/** [T (+1 for LSTM), B, H]: h_t in time order, then (LSTM) the final cell state */
export const rnn = defineOp({
  name: 'rnn',
  family: 'nn',
  summary: 'one layer and direction of an LSTM or GRU: every hidden state (and the final cell state)',
  dtypes: FLOATS,
  check: checkRnn,
  cpu: cpu.rnn,
  gpu: gpu.rnn,
  grad: 'missing',
});

/** the flat gradients of rnn's tensor inputs (rnnGradParts' order) from its output's gradient */
export const rnnBackward = defineOp({
  name: 'rnnBackward',
  family: 'nn',
  summary: "rnn's input, state, weight and bias gradients, flat (the library's backward calls on a GPU)",
  dtypes: FLOATS,
  check: (g: RawTensor, ...a: RnnArgs): [RawTensor, ...RnnArgs] => {
    const op = 'rnnBackward';
    g.check(op);
    const [x, h0, c0, weightIh, weightHh, biasIh, biasHh, mode, reverse] = a;
    checkRnn(x, { mode, h0, c0, weightIh, weightHh, biasIh, biasHh, reverse });
    const d = rnnDims(a);
    const want = [rnnOutRows(d), d.B, d.H];
    sameDevice(op, g, a[0]);
    if (g.dtype !== a[0].dtype || g.layout.shape.join() !== want.join())
      throw new ShapeError(`${op}: the gradient ${sig(g)} must be [${want.join(', ')}] ${a[0].dtype} (x ${sig(a[0])})`);
    return [g, ...a];
  },
  cpu: cpu.rnnBackward,
  gpu: gpu.rnnBackward,
  grad: 'missing',
});

defineGrad('rnn', (g, a: RnnArgs) => {
  const flat = rnnBackward(g, ...a);
  try {
    const tensors: Record<string, RawTensor | null> = {
      x: a[0],
      h0: a[1],
      c0: a[2],
      wIh: a[3],
      wHh: a[4],
      bIh: a[5],
      bHh: a[6],
    };
    const out: [RawTensor, RawTensor][] = [];
    let at = 0;
    for (const p of rnnGradParts(a)) {
      const n = p.shape.reduce((s, v) => s * v, 1);
      const part = flat.narrow(0, at, n);
      try {
        out.push([tensors[p.name]!, reshape(part, p.shape)]);
      } finally {
        part.dispose();
      }
      at += n;
    }
    return out;
  } finally {
    flat.dispose();
  }
});
