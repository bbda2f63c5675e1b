// CPU reference of the recurrent op in f64: one layer, one direction, a loop over time of the
// gate matmuls and gate math (PyTorch's equations and gate order), and its gradient by explicit
// backpropagation through time over the states the forward pass recomputes.
import type { RawTensor } from '../../device/raw-tensor.ts';
import { type RnnArgs, type RnnDims, rnnDims, rnnGradParts, rnnOutRows } from '../rnn-args.ts';
import { fromNumbers, readNumbers } from './util.ts';

const sigmoid = (v: number): number => 1 / (1 + Math.exp(-v));

interface Inputs {
  readonly d: RnnDims;
  readonly x: Float64Array;
  readonly h0: Float64Array;
  readonly c0: Float64Array;
  readonly wIh: Float64Array;
  readonly wHh: Float64Array;
  readonly bIh: Float64Array;
  readonly bHh: Float64Array;
}

function inputs(a: RnnArgs): Inputs {
  const d = rnnDims(a);
  const [x, h0, c0, wIh, wHh, bIh, bHh] = a;
  const zeros = (n: number) => new Float64Array(n);
  return {
    d,
    x: readNumbers(x),
    h0: h0 ? readNumbers(h0) : zeros(d.B * d.H),
    c0: c0 ? readNumbers(c0) : zeros(d.B * d.H),
    wIh: readNumbers(wIh),
    wHh: readNumbers(wHh),
    bIh: bIh ? readNumbers(bIh) : zeros(d.G),
    bHh: bHh ? readNumbers(bHh) : zeros(d.G),
  };
}

/** what the steps keep for the backward pass, by time step: the states after the step, the gate
 *  activations, and for GRU the hidden side of n apart (r scales it) */
interface Trace {
  /** [T][B * H] hidden states in time order */
  readonly h: Float64Array[];
  /** [T][B * H] LSTM cell states in time order */
  readonly c: Float64Array[];
  /** [T][B * G] gate activations */
  readonly act: Float64Array[];
  /** [T][B * H] GRU only: W_hn h + b_hn */
  readonly ghn: Float64Array[];
}

/** times in processing order */
const order = (d: RnnDims): number[] => {
  const ts = Array.from({ length: d.T }, (_, i) => i);
  return d.reverse ? ts.reverse() : ts;
};

function run(inp: Inputs): Trace {
  const { d, x, wIh, wHh, bIh, bHh } = inp;
  const { B, I, H, G } = d;
  const tr: Trace = { h: [], c: [], act: [], ghn: [] };
  let hPrev = inp.h0;
  let cPrev = inp.c0;
  const gi = new Float64Array(G),
    gh = new Float64Array(G);
  for (const t of order(d)) {
    const h = new Float64Array(B * H),
      c = new Float64Array(B * H),
      act = new Float64Array(B * G),
      ghn = new Float64Array(B * H);
    for (let b = 0; b < B; b++) {
      const xo = (t * B + b) * I,
        ho = b * H;
      for (let r = 0; r < G; r++) {
        let si = bIh[r]!,
          sh = bHh[r]!;
        for (let k = 0; k < I; k++) si += wIh[r * I + k]! * x[xo + k]!;
        for (let k = 0; k < H; k++) sh += wHh[r * H + k]! * hPrev[ho + k]!;
        gi[r] = si;
        gh[r] = sh;
      }
      const a = b * G;
      if (d.mode === 'lstm') {
        for (let j = 0; j < H; j++) {
          const ig = sigmoid(gi[j]! + gh[j]!);
          const fg = sigmoid(gi[H + j]! + gh[H + j]!);
          const gg = Math.tanh(gi[2 * H + j]! + gh[2 * H + j]!);
          const og = sigmoid(gi[3 * H + j]! + gh[3 * H + j]!);
          const cn = fg * cPrev[ho + j]! + ig * gg;
          act[a + j] = ig;
          act[a + H + j] = fg;
          act[a + 2 * H + j] = gg;
          act[a + 3 * H + j] = og;
          c[ho + j] = cn;
          h[ho + j] = og * Math.tanh(cn);
        }
      } else {
        for (let j = 0; j < H; j++) {
          const rg = sigmoid(gi[j]! + gh[j]!);
          const zg = sigmoid(gi[H + j]! + gh[H + j]!);
          const ng = Math.tanh(gi[2 * H + j]! + rg * gh[2 * H + j]!);
          act[a + j] = rg;
          act[a + H + j] = zg;
          act[a + 2 * H + j] = ng;
          ghn[ho + j] = gh[2 * H + j]!;
          h[ho + j] = (1 - zg) * ng + zg * hPrev[ho + j]!;
        }
      }
    }
    tr.h[t] = h;
    tr.c[t] = c;
    tr.act[t] = act;
    tr.ghn[t] = ghn;
    hPrev = h;
    cPrev = c;
  }
  return tr;
}

/** [T (+1 for LSTM), B, H]: the hidden states in time order, then (LSTM) the final cell state */
export function rnn(...a: RnnArgs): RawTensor {
  const inp = inputs(a);
  const d = inp.d;
  const tr = run(inp);
  const n = d.B * d.H;
  const out = new Float64Array(rnnOutRows(d) * n);
  for (let t = 0; t < d.T; t++) out.set(tr.h[t]!, t * n);
  if (d.mode === 'lstm') out.set(tr.c[d.reverse ? 0 : d.T - 1]!, d.T * n);
  return fromNumbers(out, [rnnOutRows(d), d.B, d.H], a[0].dtype, a[0].device);
}

/** the gradients rnnGradParts lists, flat, from the output's gradient g */
export function rnnBackward(g: RawTensor, ...a: RnnArgs): RawTensor {
  const inp = inputs(a);
  const { d, x, wIh, wHh } = inp;
  const { B, I, H, G, T } = d;
  const tr = run(inp);
  const gv = readNumbers(g);
  const n = B * H;
  const dx = new Float64Array(T * B * I),
    dWih = new Float64Array(G * I),
    dWhh = new Float64Array(G * H),
    dbIh = new Float64Array(G),
    dbHh = new Float64Array(G);
  // carried from the later step: the hidden state's gradient beyond its own output row, and the cell's
  let dhNext = new Float64Array(n);
  let dcNext = d.mode === 'lstm' ? gv.slice(T * n, (T + 1) * n) : new Float64Array(n);
  const dai = new Float64Array(G),
    dah = new Float64Array(G);
  const steps = order(d).reverse();
  for (let s = 0; s < steps.length; s++) {
    const t = steps[s]!;
    const prev = s + 1 < steps.length ? steps[s + 1]! : -1;
    const hPrev = prev < 0 ? inp.h0 : tr.h[prev]!;
    const cPrev = prev < 0 ? inp.c0 : tr.c[prev]!;
    const dhPrev = new Float64Array(n),
      dcPrev = new Float64Array(n);
    const act = tr.act[t]!;
    for (let b = 0; b < B; b++) {
      const ho = b * H,
        ao = b * G;
      for (let j = 0; j < H; j++) {
        const dh = gv[t * n + ho + j]! + dhNext[ho + j]!;
        if (d.mode === 'lstm') {
          const ig = act[ao + j]!,
            fg = act[ao + H + j]!,
            gg = act[ao + 2 * H + j]!,
            og = act[ao + 3 * H + j]!;
          const tc = Math.tanh(tr.c[t]![ho + j]!);
          const dc = dcNext[ho + j]! + dh * og * (1 - tc * tc);
          dai[j] = dc * gg * ig * (1 - ig);
          dai[H + j] = dc * cPrev[ho + j]! * fg * (1 - fg);
          dai[2 * H + j] = dc * ig * (1 - gg * gg);
          dai[3 * H + j] = dh * tc * og * (1 - og);
          dcPrev[ho + j] = dc * fg;
        } else {
          const rg = act[ao + j]!,
            zg = act[ao + H + j]!,
            ng = act[ao + 2 * H + j]!;
          const dan = dh * (1 - zg) * (1 - ng * ng);
          const dar = dan * tr.ghn[t]![ho + j]! * rg * (1 - rg);
          const daz = dh * (hPrev[ho + j]! - ng) * zg * (1 - zg);
          dai[j] = dar;
          dai[H + j] = daz;
          dai[2 * H + j] = dan;
          dah[2 * H + j] = dan * rg;
          dhPrev[ho + j] = dh * zg;
        }
      }
      // the hidden side shares the input side's r and z gradients; GRU's n differs (r scales it)
      if (d.mode === 'lstm') dah.set(dai);
      else for (let j = 0; j < 2 * H; j++) dah[j] = dai[j]!;
      const xo = (t * B + b) * I;
      for (let r = 0; r < G; r++) {
        const vi = dai[r]!,
          vh = dah[r]!;
        dbIh[r]! += vi;
        dbHh[r]! += vh;
        for (let k = 0; k < I; k++) {
          dWih[r * I + k]! += vi * x[xo + k]!;
          dx[xo + k]! += wIh[r * I + k]! * vi;
        }
        for (let k = 0; k < H; k++) {
          dWhh[r * H + k]! += vh * hPrev[ho + k]!;
          dhPrev[ho + k]! += wHh[r * H + k]! * vh;
        }
      }
    }
    dhNext = dhPrev;
    dcNext = dcPrev;
  }
  const byName: Record<string, Float64Array> = {
    x: dx,
    h0: dhNext,
    c0: dcNext,
    wIh: dWih,
    wHh: dWhh,
    bIh: dbIh,
    bHh: dbHh,
  };
  const parts = rnnGradParts(a);
  let total = 0;
  for (const p of parts) total += byName[p.name]!.length;
  const flat = new Float64Array(total);
  let at = 0;
  for (const p of parts) {
    flat.set(byName[p.name]!, at);
    at += byName[p.name]!.length;
  }
  return fromNumbers(flat, [total], a[0].dtype, a[0].device);
}
