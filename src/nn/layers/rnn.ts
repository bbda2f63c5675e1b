// LSTM and GRU as PyTorch has them: stacked layers, optionally bidirectional, dropout between
// layers in training, batch- or sequence-first input (or one unbatched sequence), PyTorch's
// parameter names (weight_ih_l0, bias_hh_l1_reverse, ...), shapes, gate order and
// initialisation (every parameter uniform in +-1/sqrt(hiddenSize)). Each layer and direction is
// one call of the rnn op (one library call on a GPU); the dropout between layers is the dropout
// op, so its masks are the same Philox masks on every device.
import { ShapeError, TensorError } from '../../core/errors.ts';
import { rnn, type RnnMode } from '../../ops/rnn.ts';
import { noGrad } from '../../tensor/autograd.ts';
import { Tensor } from '../../tensor/tensor.ts';
import { type LayerOptions, layerSeed, subSeed } from '../init.ts';
import { Module } from '../module.ts';
import { checkCount, checkProbability } from './checks.ts';

export interface RecurrentLayerOptions extends LayerOptions {
  /** stacked layers; default 1 */
  numLayers?: number;
  /** default true */
  bias?: boolean;
  /** x and output as [batch, seq, feature]; default false ([seq, batch, feature]) */
  batchFirst?: boolean;
  /** dropout on every layer's output but the last, in training; default 0 */
  dropout?: number;
  /** default false */
  bidirectional?: boolean;
}

/** a large odd step between the seeds of successive dropout draws */
const STEP = 0x9e3779b1;

abstract class Recurrent extends Module {
  readonly inputSize: number;
  readonly hiddenSize: number;
  readonly numLayers: number;
  readonly bias: boolean;
  readonly batchFirst: boolean;
  readonly dropout: number;
  readonly bidirectional: boolean;
  private readonly mode: RnnMode;
  private readonly seed: number;
  private calls = 0;

  constructor(mode: RnnMode, inputSize: number, hiddenSize: number, opts: RecurrentLayerOptions) {
    super();
    const name = mode === 'lstm' ? 'LSTM' : 'GRU';
    if (opts === null || typeof opts !== 'object') throw new TensorError(`${name}: options must be an object`);
    this.mode = mode;
    this.inputSize = checkCount(name, 'inputSize', inputSize);
    this.hiddenSize = checkCount(name, 'hiddenSize', hiddenSize);
    this.numLayers = checkCount(name, 'numLayers', opts.numLayers ?? 1);
    this.bias = flag(name, 'bias', opts.bias ?? true);
    this.batchFirst = flag(name, 'batchFirst', opts.batchFirst ?? false);
    this.dropout = checkProbability(name, 'dropout', opts.dropout ?? 0);
    this.bidirectional = flag(name, 'bidirectional', opts.bidirectional ?? false);
    this.seed = layerSeed(name, opts.seed);
    const gates = mode === 'lstm' ? 4 : 3;
    const G = gates * hiddenSize,
      H = hiddenSize;
    const shapes: { name: string; shape: number[] }[] = [];
    for (let l = 0; l < this.numLayers; l++) {
      const inL = l === 0 ? inputSize : H * this.dirs;
      for (let d = 0; d < this.dirs; d++) {
        const sfx = `_l${l}${d === 1 ? '_reverse' : ''}`;
        shapes.push({ name: `weight_ih${sfx}`, shape: [G, inL] }, { name: `weight_hh${sfx}`, shape: [G, H] });
        if (this.bias) shapes.push({ name: `bias_ih${sfx}`, shape: [G] }, { name: `bias_hh${sfx}`, shape: [G] });
      }
    }
    // one uniform draw for all of them (any number of tensors from the layer's one seed), cut
    // and scaled into separate parameters: U(-k, k) with k = 1/sqrt(hidden), as PyTorch does
    const k = 1 / Math.sqrt(H);
    const total = shapes.reduce((s, p) => s + p.shape.reduce((a, b) => a * b, 1), 0);
    noGrad(() => {
      const u = Tensor.rand([total], { seed: subSeed(this.seed, 0), dtype: opts.dtype ?? 'f32', device: opts.device });
      try {
        let at = 0;
        for (const p of shapes) {
          const n = p.shape.reduce((a, b) => a * b, 1);
          const part = u.narrow(0, at, n);
          const shaped = part.reshape(p.shape);
          try {
            this.registerParameter(p.name, shaped.affine(2 * k, -k));
          } finally {
            shaped.dispose();
            part.dispose();
          }
          at += n;
        }
      } finally {
        u.dispose();
      }
    });
  }

  protected get dirs(): number {
    return this.bidirectional ? 2 : 1;
  }

  protected override get label(): string {
    return `${this.mode === 'lstm' ? 'LSTM' : 'GRU'}(${this.inputSize}, ${this.hiddenSize}, layers ${this.numLayers}${this.bidirectional ? ', bidirectional' : ''})`;
  }

  /** the stack over x [T, B, I] from states [L * D, B, H] (or none): output [T, B, D * H], hN, cN */
  protected run(x: Tensor, h0: Tensor | null, c0: Tensor | null): [Tensor, Tensor, Tensor | null] {
    const op = this.label;
    if (!(x instanceof Tensor)) throw new TensorError(`${op}: input must be a Tensor`);
    const unbatched = x.rank === 2;
    if ((x.rank !== 2 && x.rank !== 3) || x.dim(-1) !== this.inputSize)
      throw new ShapeError(
        `${op}: input must be ${this.batchFirst ? '[batch, seq' : '[seq, batch'}, ${this.inputSize}] or [seq, ${this.inputSize}], got ${x.describe()}`,
      );
    const seq = unbatched ? x.unsqueeze(1) : this.batchFirst ? x.transpose(0, 1) : x;
    const [T, B] = seq.shape as [number, number];
    const states = this.numLayers * this.dirs;
    const want = unbatched ? [states, this.hiddenSize] : [states, B, this.hiddenSize];
    const state = (t: Tensor | null, name: string): Tensor | null => {
      if (t === null) return null;
      if (!(t instanceof Tensor) || t.shape.join() !== want.join())
        throw new ShapeError(
          `${op}: ${name} must be [${want.join(', ')}] for input ${x.describe()}, got ${t instanceof Tensor ? t.describe() : String(t)}`,
        );
      if (t.dtype !== x.dtype || t.device !== x.device)
        throw new TensorError(`${op}: ${name} ${t.describe()} must match the input ${x.describe()}`);
      return unbatched ? t.unsqueeze(1) : t;
    };
    const h = state(h0, 'h0'),
      c = state(c0, 'c0');
    const hs: Tensor[] = [],
      cs: Tensor[] = [];
    let input = seq;
    for (let l = 0; l < this.numLayers; l++) {
      const ys: Tensor[] = [];
      for (let d = 0; d < this.dirs; d++) {
        const sfx = `_l${l}${d === 1 ? '_reverse' : ''}`;
        const s = l * this.dirs + d;
        const out = Tensor.wrap(
          rnn(input, {
            mode: this.mode,
            h0: h ? h.narrow(0, s, 1).squeeze(0) : null,
            c0: c ? c.narrow(0, s, 1).squeeze(0) : null,
            weightIh: this.param(`weight_ih${sfx}`),
            weightHh: this.param(`weight_hh${sfx}`),
            biasIh: this.bias ? this.param(`bias_ih${sfx}`) : null,
            biasHh: this.bias ? this.param(`bias_hh${sfx}`) : null,
            reverse: d === 1,
          }),
        );
        ys.push(out.narrow(0, 0, T));
        hs.push(out.narrow(0, d === 1 ? 0 : T - 1, 1));
        if (this.mode === 'lstm') cs.push(out.narrow(0, T, 1));
      }
      input = ys.length === 1 ? ys[0]! : Tensor.cat(ys, 2);
      if (l < this.numLayers - 1 && this.training && this.dropout > 0) {
        const seed = (subSeed(this.seed, 1) + this.calls++ * STEP) % 2 ** 52;
        input = input.dropout(this.dropout, { seed, training: true });
      }
    }
    const hN = Tensor.cat(hs, 0),
      cN = this.mode === 'lstm' ? Tensor.cat(cs, 0) : null;
    const output = unbatched ? input.squeeze(1) : this.batchFirst ? input.transpose(0, 1) : input;
    return [output, unbatched ? hN.squeeze(1) : hN, cN && unbatched ? cN.squeeze(1) : cN];
  }
}

function flag(layer: string, name: string, v: boolean): boolean {
  if (typeof v !== 'boolean') throw new TensorError(`${layer}: ${name} must be a boolean, got ${String(v)}`);
  return v;
}

export class LSTM extends Recurrent {
  constructor(inputSize: number, hiddenSize: number, opts: RecurrentLayerOptions = {}) {
    super('lstm', inputSize, hiddenSize, opts);
  }
  /** x [T, B, I] ([B, T, I] batch-first, or [T, I]); state [h0, c0], each [layers * dirs, B, H]
   *  (zeros when absent) -> [output [T, B, dirs * H], [hN, cN]] */
  forward(x: Tensor, state?: readonly [Tensor, Tensor] | null): [Tensor, [Tensor, Tensor]] {
    if (state != null && (!Array.isArray(state) || state.length !== 2))
      throw new TensorError(`${this.label}: the state must be [h0, c0]`);
    const [out, hN, cN] = this.run(x, state?.[0] ?? null, state?.[1] ?? null);
    return [out, [hN, cN!]];
  }
}

export class GRU extends Recurrent {
  constructor(inputSize: number, hiddenSize: number, opts: RecurrentLayerOptions = {}) {
    super('gru', inputSize, hiddenSize, opts);
  }
  /** x [T, B, I] ([B, T, I] batch-first, or [T, I]); h0 [layers * dirs, B, H] (zeros when
   *  absent) -> [output [T, B, dirs * H], hN] */
  forward(x: Tensor, h0?: Tensor | null): [Tensor, Tensor] {
    const [out, hN] = this.run(x, h0 ?? null, null);
    return [out, hN];
  }
}
