// MultiheadAttention as PyTorch's layer, over the attention op (flash kernels on a GPU): the
// query, key and value projected (one stacked in-projection weight [3 E, E] when the key and value
// widths equal E), split into heads, attended, joined and projected out. Initialisation as
// PyTorch's: the in-projection xavier-uniform, its bias zeros, the out-projection a Linear with a
// zero bias. The attention weights themselves are not returned (the fused kernels never form them).
import { ShapeError, TensorError } from '../../core/errors.ts';
import { Tensor } from '../../tensor/tensor.ts';
import { type LayerOptions, constant, layerSeed, subSeed, uniform } from '../init.ts';
import { assign } from '../assign.ts';
import { Linear } from './linear.ts';
import { Module } from '../module.ts';
import { checkCount } from './checks.ts';

export interface MultiheadAttentionOptions extends LayerOptions {
  /** biases on the projections; default true */
  readonly bias?: boolean;
  /** inputs [batch, seq, E] (true) or [seq, batch, E] (false, PyTorch's default) */
  readonly batchFirst?: boolean;
  /** the key's and value's widths; default E */
  readonly kdim?: number;
  readonly vdim?: number;
}

export interface MultiheadAttentionCall {
  /** u8 [tq, tk] or [batch * heads, tq, tk]... broadcastable to [batch, heads, tq, tk]: nonzero = attend;
   *  or float, added to the scores (as the attention op's mask) */
  readonly attnMask?: Tensor;
  /** u8 [batch, tk]: nonzero = a padding key, hidden from every query */
  readonly keyPaddingMask?: Tensor;
  /** query i sees keys j <= i */
  readonly isCausal?: boolean;
}

export class MultiheadAttention extends Module {
  readonly embedDim: number;
  readonly numHeads: number;
  readonly headDim: number;
  readonly batchFirst: boolean;
  readonly kdim: number;
  readonly vdim: number;

  constructor(embedDim: number, numHeads: number, opts: MultiheadAttentionOptions = {}) {
    super();
    const op = 'MultiheadAttention';
    this.embedDim = checkCount(op, 'embedDim', embedDim);
    this.numHeads = checkCount(op, 'numHeads', numHeads);
    if (embedDim % numHeads !== 0)
      throw new TensorError(`${op}: embedDim ${embedDim} must be divisible by numHeads ${numHeads}`);
    this.headDim = embedDim / numHeads;
    this.batchFirst = opts.batchFirst ?? false;
    this.kdim = checkCount(op, 'kdim', opts.kdim ?? embedDim);
    this.vdim = checkCount(op, 'vdim', opts.vdim ?? embedDim);
    const seed = layerSeed(op, opts.seed);
    const bias = opts.bias ?? true;
    // xavier-uniform: bound sqrt(6 / (fanIn + fanOut)) of the [3E, E] matrix (of each when separate)
    const xavier = (rows: number, cols: number, k: number) => {
      const b = Math.sqrt(6 / (rows + cols));
      return uniform([rows, cols], -b, b, { ...opts, seed: subSeed(seed, k) });
    };
    const E = embedDim;
    if (this.kdim === E && this.vdim === E) this.registerParameter('in_proj_weight', xavier(3 * E, E, 0));
    else {
      this.registerParameter('q_proj_weight', xavier(E, E, 0));
      this.registerParameter('k_proj_weight', xavier(E, this.kdim, 1));
      this.registerParameter('v_proj_weight', xavier(E, this.vdim, 2));
    }
    this.registerParameter('in_proj_bias', bias ? constant([3 * E], 0, opts) : null);
    // PyTorch's out_proj: a Linear whose bias starts at zero
    const out = new Linear(E, E, { ...opts, bias, seed: subSeed(seed, 3) });
    if (out.bias) {
      const z = constant([E], 0, opts);
      assign(out.bias, z);
      z.dispose();
    }
    this.registerModule('out_proj', out);
  }

  /** query [L, N, E] (or [N, L, E] batchFirst), key [S, N, kdim], value [S, N, vdim] -> [L, N, E] */
  forward(query: Tensor, key: Tensor, value: Tensor, call: MultiheadAttentionCall = {}): Tensor {
    const op = 'MultiheadAttention';
    for (const [name, t, w] of [
      ['query', query, this.embedDim],
      ['key', key, this.kdim],
      ['value', value, this.vdim],
    ] as const) {
      if (!(t instanceof Tensor) || t.rank !== 3 || t.dim(2) !== w)
        throw new ShapeError(
          `${op}: ${name} must be ${this.batchFirst ? '[batch, seq' : '[seq, batch'}, ${w}], got ${t instanceof Tensor ? t.describe() : String(t)}`,
        );
    }
    // everything as [N, L, E]
    const [q0, k0, v0] = this.batchFirst ? [query, key, value] : [query, key, value].map((t) => t.transpose(0, 1));
    const [n, l] = q0!.shape as [number, number];
    const s = k0!.dim(1);
    if (k0!.dim(0) !== n || v0!.dim(0) !== n || v0!.dim(1) !== s)
      throw new ShapeError(
        `${op}: query ${query.describe()}, key ${key.describe()} and value ${value.describe()} disagree`,
      );
    const E = this.embedDim,
      h = this.numHeads,
      d = this.headDim;
    const b = this.paramOrNull('in_proj_bias');
    const slice = (t: Tensor | null, i: number) => (t ? t.narrow(0, i * E, E) : null);
    const stacked = this.kdim === E && this.vdim === E;
    const w = (i: number, name: string) =>
      stacked ? this.param('in_proj_weight').narrow(0, i * E, E) : this.param(name);
    const heads = (t: Tensor, i: number, name: string) =>
      t
        .linear(w(i, name), { bias: slice(b, i) })
        .reshape([n, -1, h, d])
        .transpose(1, 2);
    const q = heads(q0!, 0, 'q_proj_weight'),
      k = heads(k0!, 1, 'k_proj_weight'),
      v = heads(v0!, 2, 'v_proj_weight');
    let mask: Tensor | undefined = call.attnMask;
    if (call.keyPaddingMask) {
      const pad = call.keyPaddingMask;
      if (pad.rank !== 2 || pad.dim(0) !== n || pad.dim(1) !== s || pad.dtype !== 'u8')
        throw new ShapeError(`${op}: keyPaddingMask must be u8 [${n}, ${s}], got ${pad.describe()}`);
      // visible keys: not padding ([n, 1, 1, s]), and the attention mask's where both are u8
      const keep = pad.eq(0).reshape([n, 1, 1, s]);
      if (mask === undefined) mask = keep;
      else if (mask.dtype === 'u8') mask = mask.minimum(keep);
      else mask = Tensor.where(keep, mask, -Infinity);
    }
    const o = Tensor.scaledDotProductAttention(q, k, v, { causal: call.isCausal ?? false, mask });
    const joined = o.transpose(1, 2).reshape([n, l, E]);
    const out = (this.child('out_proj') as Linear).forward(joined);
    return this.batchFirst ? out : out.transpose(0, 1);
  }
}
