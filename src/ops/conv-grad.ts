// The backward ops of convolution and pooling, and the gradient rules that use them. A
// convolution's input gradient is the transposed convolution of the output gradient (and a
// transposed convolution's is the convolution), so those reuse the forward ops; the weight
// gradient is its own op (cuDNN's backward-filter, MIOpen's backward-weights, direct loops on the
// CPU); pooling's is cuDNN's / MIOpen's pooling backward.
import { ShapeError, TensorError } from '../core/errors.ts';
import type { RawTensor } from '../device/raw-tensor.ts';
import { FLOATS, dtypeIn, sameDType, sameDevice, sig } from '../backends/checks.ts';
import type { Conv2dParams, ConvTranspose2dParams, Pool2dParams } from '../core/op-types.ts';
import * as cpuConv from '../backends/cpu/conv.ts';
import * as gpuConv from '../backends/gpu/conv.ts';
import * as cpuPool from '../backends/cpu/pool.ts';
import * as gpuPool from '../backends/gpu/pool.ts';
import { conv1d, conv2d, convTranspose1d, convTranspose2d, type ConvCall } from './conv.ts';
import { full } from './creation.ts';
import { reshape } from './copy.ts';
import { reduce } from './reduce.ts';
import { defineGrad, defineOp, wantedGrads } from './registry.ts';

const rank4 = (op: string, name: string, t: RawTensor): void => {
  if (t.rank !== 4) throw new ShapeError(`${op}: ${name} must be [n, c, h, w], got ${sig(t)}`);
};

/** conv2d's weight gradient from the forward's input x and the output's gradient dy (4-d) */
export const convWeightGrad = defineOp({
  name: 'convWeightGrad',
  family: 'convolution',
  summary: "conv2d's weight gradient from its input and output gradient (backward-filter / backward-weights)",
  dtypes: FLOATS,
  check: (x: RawTensor, dy: RawTensor, wShape: readonly number[], p: Conv2dParams) => {
    const op = 'convWeightGrad';
    x.check(op);
    dy.check(op);
    sameDevice(op, x, dy);
    dtypeIn(op, x, FLOATS);
    sameDType(op, x, dy);
    rank4(op, 'x', x);
    rank4(op, 'dy', dy);
    const [n, cIn] = x.layout.shape as [number, number];
    const [cOut, cg] = wShape as [number, number];
    if (wShape.length !== 4 || dy.layout.shape[0] !== n || dy.layout.shape[1] !== cOut || cg * p.groups !== cIn)
      throw new ShapeError(
        `${op}: x ${sig(x)}, dy ${sig(dy)} and weight [${wShape.join(', ')}] (groups ${p.groups}) do not fit`,
      );
    return [x, dy, [...wShape], p] as [RawTensor, RawTensor, number[], Conv2dParams];
  },
  cpu: cpuConv.convWeightGrad,
  gpu: (x, dy, s, p) => (x.layout.shape[0] === 0 ? full(s, 0, x.dtype, x.device) : gpuConv.convWeightGrad(x, dy, s, p)),
  grad: 'missing',
});

/** a pooling's input gradient, from its input x, output y and the output's gradient dy */
export const pool2dBackward = defineOp({
  name: 'pool2dBackward',
  family: 'pooling',
  summary: "avgPool2d's / maxPool2d's input gradient (to the window, or to the window's maximum)",
  dtypes: FLOATS,
  check: (mode: 'max' | 'avg', x: RawTensor, y: RawTensor, dy: RawTensor, p: Pool2dParams) => {
    const op = 'pool2dBackward';
    for (const t of [x, y, dy]) t.check(op);
    sameDevice(op, x, y, dy);
    dtypeIn(op, x, FLOATS);
    sameDType(op, x, y, dy);
    if (mode !== 'max' && mode !== 'avg') throw new TensorError(`${op}: mode must be 'max' or 'avg', got ${mode}`);
    if (x.rank !== y.rank || y.layout.shape.some((d, i) => dy.layout.shape[i] !== d) || y.rank !== dy.rank)
      throw new ShapeError(`${op}: y ${sig(y)} and dy ${sig(dy)} must have one shape, of x ${sig(x)}'s rank`);
    return [mode, x, y, dy, p] as ['max' | 'avg', RawTensor, RawTensor, RawTensor, Pool2dParams];
  },
  cpu: (mode, x, y, dy, p) => batched4([x, y, dy], (x4, y4, dy4) => cpuPool.pool2dBackward(mode, x4, y4, dy4, p)),
  gpu: (mode, x, y, dy, p) => batched4([x, y, dy], (x4, y4, dy4) => gpuPool.pool2dBackward(mode, x4, y4, dy4, p)),
  grad: 'missing',
});

/** f on 4-d views of three same-rank tensors (an unbatched [c, h, w] gets a batch of one) */
function batched4(
  ts: [RawTensor, RawTensor, RawTensor],
  f: (a: RawTensor, b: RawTensor, c: RawTensor) => RawTensor,
): RawTensor {
  if (ts[0].rank === 4) return f(...ts);
  const v = ts.map((t) => t.unsqueeze(0)) as [RawTensor, RawTensor, RawTensor];
  try {
    const r = f(...v);
    try {
      return r.view(r.layout.squeeze(0));
    } finally {
      r.dispose();
    }
  } finally {
    for (const t of v) t.dispose();
  }
}

defineGrad('avgPool2d', (g, [x, p]: [RawTensor, Pool2dParams, number[]], y) => [
  [x, pool2dBackward('avg', x, y, g, p)],
]);
defineGrad('maxPool2d', (g, [x, p]: [RawTensor, Pool2dParams, number[]], y) => [
  [x, pool2dBackward('max', x, y, g, p)],
]);

// ---- convolution ------------------------------------------------------------------------------

/** t as the [n, c, h, w] view the 2-d kernels take (1-d: h = 1; unbatched: n = 1) */
function view4<P>(t: RawTensor, c: ConvCall<P>): RawTensor {
  let l = t.layout;
  if (c.unbatched) l = l.unsqueeze(0);
  if (c.spatial === 1) l = l.unsqueeze(2);
  return t.view(l);
}
/** the weight as 4-d (1-d weights get kh = 1) */
const weight4 = <P>(w: RawTensor, c: ConvCall<P>): RawTensor =>
  w.view(c.spatial === 1 ? w.layout.unsqueeze(2) : w.layout);

/** the options of the op on the caller's ranks: numbers for 1-d ops, pairs for 2-d */
function opts(p: Conv2dParams, spatial: 1 | 2, extra: { outputPadding?: readonly [number, number] } = {}) {
  const pick = (v: readonly [number, number]): number | readonly [number, number] => (spatial === 1 ? v[1] : v);
  return {
    padding: pick(p.padding),
    stride: pick(p.stride),
    dilation: pick(p.dilation),
    groups: p.groups,
    ...(extra.outputPadding ? { outputPadding: pick(extra.outputPadding) } : {}),
  };
}

/** the weight gradient through convWeightGrad on 4-d views, back in w's rank */
function weightGrad<P extends Conv2dParams>(c: ConvCall<P>, input: RawTensor, dy: RawTensor, w: RawTensor): RawTensor {
  const i4 = view4(input, c),
    d4 = view4(dy, c),
    w4 = weight4(w, c);
  const p: Conv2dParams = {
    padding: c.params.padding,
    stride: c.params.stride,
    dilation: c.params.dilation,
    groups: c.params.groups,
  };
  try {
    const dw4 = convWeightGrad(i4, d4, w4.layout.shape, p);
    if (c.spatial === 2) return dw4;
    try {
      return reshape(dw4, w.layout.shape);
    } finally {
      dw4.dispose();
    }
  } finally {
    i4.dispose();
    d4.dispose();
    w4.dispose();
  }
}

/** the bias gradient: g summed over every dim but the channel one */
function biasGrad<P>(g: RawTensor, c: ConvCall<P>): RawTensor {
  const ch = c.unbatched ? 0 : 1;
  const dims = g.layout.shape.map((_, i) => i).filter((i) => i !== ch);
  return reduce('sum', g, dims, false);
}

function convGrad(
  g: RawTensor,
  [c]: [ConvCall<Conv2dParams>],
  _out: RawTensor,
  wants: (t: RawTensor) => boolean,
): [RawTensor, RawTensor][] {
  const { x, w, bias, params: p, spatial } = c;
  const sp = x.layout.shape.slice(-2);
  const osp = g.layout.shape.slice(-2);
  const k = w.layout.shape.slice(-2);
  const ks: [number, number] = spatial === 1 ? [1, k[1]!] : [k[0]!, k[1]!];
  const is: [number, number] = spatial === 1 ? [1, sp[sp.length - 1]!] : [sp[0]!, sp[1]!];
  const os: [number, number] = spatial === 1 ? [1, osp[osp.length - 1]!] : [osp[0]!, osp[1]!];
  // the rows and columns the forward's floor division left over: the transposed convolution's
  // output padding that gives back x's size exactly (always below the stride)
  const outputPadding = [0, 1].map(
    (d) => is[d]! + 2 * p.padding[d]! - p.dilation[d]! * (ks[d]! - 1) - 1 - (os[d]! - 1) * p.stride[d]!,
  ) as [number, number];
  const t = spatial === 1 ? convTranspose1d : convTranspose2d;
  // a network's first convolution needs no input gradient (its images require none)
  return wantedGrads(wants, [
    [x, () => t(g, w, opts(p, spatial, { outputPadding }))],
    [w, () => weightGrad(c, x, g, w)],
    [bias, () => biasGrad(g, c)],
  ]);
}

function convTransposeGrad(
  g: RawTensor,
  [c]: [ConvCall<ConvTranspose2dParams>],
  _out: RawTensor,
  wants: (t: RawTensor) => boolean,
): [RawTensor, RawTensor][] {
  const { x, w, bias, params: p, spatial } = c;
  for (const d of [0, 1] as const) {
    if (p.outputPadding[d] >= p.stride[d])
      throw new TensorError(
        `convTranspose${spatial}d: the gradient with outputPadding (${p.outputPadding[d]}) at or above the stride ` +
          `(${p.stride[d]}) is not supported (x ${sig(x)}, weight ${sig(w)})`,
      );
  }
  // the transposed convolution is the adjoint of the convolution with the same weight
  const f = spatial === 1 ? conv1d : conv2d;
  return wantedGrads(wants, [
    [x, () => f(g, w, opts(p, spatial))],
    [w, () => weightGrad(c, g, x, w)],
    [bias, () => biasGrad(g, c)],
  ]);
}

defineGrad('conv1d', convGrad);
defineGrad('conv2d', convGrad);
defineGrad('convTranspose1d', convTransposeGrad);
defineGrad('convTranspose2d', convTransposeGrad);
