// conv1d / conv2d and their transposes. Everything is checked here on the caller's shapes and
// then run as a 4-d [n, c, h, w] problem: 1-d ops become h = 1 views, an unbatched input gets a
// batch dim of 1 (views, no copies), so the CPU and GPU paths only implement the 2-d forms.
import { ShapeError, TensorError, fmtShape } from '../core/errors.ts';
import type { RawTensor } from '../device/raw-tensor.ts';
import { FLOATS, dtypeIn, sameDType, sameDevice, sig } from '../backends/checks.ts';
import { pair, type ConvOptions, type ConvTransposeOptions, type Pair } from '../backends/options.ts';
import type { Conv2dParams, ConvTranspose2dParams } from '../core/op-types.ts';
import * as cpu from '../backends/cpu/conv.ts';
import * as gpu from '../backends/gpu/conv.ts';
import { defineOp } from './registry.ts';

type Two = [number, number];

/** 1-d ops take plain numbers; 2-d ops a number or a pair (mapped onto [h, w] = [1, l]) */
function opt(
  op: string,
  name: string,
  v: Pair | undefined,
  spatial: 1 | 2,
  dflt: number,
  min: number,
  pad1d: number,
): Two {
  if (spatial === 2) return pair(op, name, v, dflt, min);
  if (v !== undefined && typeof v !== 'number')
    throw new RangeError(`${op}: ${name} must be an integer >= ${min}, got ${JSON.stringify(v)}`);
  return [pad1d, pair(op, name, v, dflt, min)[0]];
}

/** what the backends' 2-d kernels take, for one checked call */
export interface ConvCall<P> {
  x: RawTensor;
  w: RawTensor;
  bias: RawTensor | null;
  params: P;
  outShape: number[];
  spatial: 1 | 2;
  unbatched: boolean;
}

/** checks the operands; whether x is unbatched */
function checkOperands(op: string, x: RawTensor, w: RawTensor, bias: RawTensor | null, spatial: 1 | 2): boolean {
  if (bias) bias.check(op);
  const ts = bias ? [x, w, bias] : [x, w];
  sameDevice(op, ...ts);
  dtypeIn(op, x, FLOATS);
  sameDType(op, ...ts);
  const dims = spatial === 1 ? '[n, c, l] or [c, l]' : '[n, c, h, w] or [c, h, w]';
  if (x.rank !== spatial + 2 && x.rank !== spatial + 1)
    throw new ShapeError(`${op}: input must be ${dims}, got ${sig(x)}`);
  if (w.rank !== spatial + 2)
    throw new ShapeError(`${op}: weight must have rank ${spatial + 2}, got ${sig(w)} (input ${sig(x)})`);
  return x.rank === spatial + 1;
}

/** x and w as the 4-d views the 2-d kernels take */
function shape4(s: readonly number[], spatial: 1 | 2, unbatched: boolean): number[] {
  const r = unbatched ? [1, ...s] : [...s];
  if (spatial === 1) r.splice(2, 0, 1);
  return r;
}

/** runs a 2-d kernel on 4-d views of the operands; the result in the operands' rank */
function run2d<P>(
  kernel: (x4: RawTensor, w4: RawTensor, bias: RawTensor | null, p: P, outShape: number[]) => RawTensor,
  c: ConvCall<P>,
): RawTensor {
  const { spatial, unbatched } = c;
  const owned: RawTensor[] = [];
  let x4 = c.x,
    w4 = c.w;
  if (unbatched) {
    x4 = x4.unsqueeze(0);
    owned.push(x4);
  }
  if (spatial === 1) {
    x4 = x4.unsqueeze(2);
    owned.push(x4);
    w4 = w4.unsqueeze(2);
    owned.push(w4);
  }
  try {
    const out4 = kernel(x4, w4, c.bias, c.params, c.outShape);
    if (spatial === 2 && !unbatched) return out4;
    let l = out4.layout;
    if (spatial === 1) l = l.squeeze(2);
    if (unbatched) l = l.squeeze(0);
    try {
      return out4.view(l);
    } finally {
      out4.dispose();
    }
  } finally {
    for (const t of owned) t.dispose();
  }
}

function checkBias(op: string, bias: RawTensor | null, cOut: number, x: RawTensor, w: RawTensor): void {
  if (bias && (bias.rank !== 1 || bias.layout.shape[0] !== cOut)) {
    throw new ShapeError(`${op}: bias must be [${cOut}], got ${sig(bias)} (input ${sig(x)}, weight ${sig(w)})`);
  }
}

function checkGroups(op: string, groups: number): void {
  if (!Number.isInteger(groups) || groups < 1)
    throw new RangeError(`${op}: groups must be an integer >= 1, got ${groups}`);
}

/** the options both convolution kinds share, checked and normalized to pairs */
function convParams(op: string, o: ConvOptions, spatial: 1 | 2): Conv2dParams {
  const groups = o.groups ?? 1;
  checkGroups(op, groups);
  return {
    padding: opt(op, 'padding', o.padding, spatial, 0, 0, 0),
    stride: opt(op, 'stride', o.stride, spatial, 1, 1, 1),
    dilation: opt(op, 'dilation', o.dilation, spatial, 1, 1, 1),
    groups,
  };
}

function checkOptions(op: string, o: unknown): void {
  if (o === null || typeof o !== 'object') throw new TensorError(`${op}: options must be an object, got ${String(o)}`);
}

function checkConv(op: string, x: RawTensor, w: RawTensor, o: ConvOptions, spatial: 1 | 2): ConvCall<Conv2dParams> {
  checkOptions(op, o);
  const bias = o.bias ?? null;
  const unbatched = checkOperands(op, x, w, bias, spatial);
  {
    const params = convParams(op, o, spatial);
    const groups = params.groups;
    const [n, cIn, h, wd] = shape4(x.layout.shape, spatial, unbatched) as [number, number, number, number];
    const [cOut, cPerGroup, kh, kw] = shape4(w.layout.shape, spatial, false) as [number, number, number, number];
    const what = (): string => `(input ${sig(x)}, weight ${sig(w)}, groups ${groups})`;
    const geom = () =>
      `(input ${sig(x)}, weight ${sig(w)}, groups ${groups}, padding ${fmtPair(params.padding, spatial)}, stride ${fmtPair(params.stride, spatial)}, dilation ${fmtPair(params.dilation, spatial)})`;
    if (cIn % groups !== 0 || cOut % groups !== 0)
      throw new ShapeError(
        `${op}: input channels ${cIn} and output channels ${cOut} must both be divisible by groups ${what()}`,
      );
    if (cPerGroup * groups !== cIn)
      throw new ShapeError(
        `${op}: weight expects ${cPerGroup * groups} input channels (${cPerGroup} per group), input has ${cIn} ${what()}`,
      );
    if (kh < 1 || kw < 1) throw new ShapeError(`${op}: kernel size must be >= 1 ${what()}`);
    checkBias(op, bias, cOut, x, w);
    const size = (i: number, k: number, d: 0 | 1) =>
      Math.floor((i + 2 * params.padding[d] - params.dilation[d] * (k - 1) - 1) / params.stride[d]) + 1;
    const oh = size(h, kh, 0),
      ow = size(wd, kw, 1);
    if (oh < 1 || ow < 1) {
      const sp = spatial === 1 ? `${ow}` : `${oh}x${ow}`;
      throw new ShapeError(`${op}: output size ${sp} is too small ${geom()}`);
    }
    return { x, w, bias, params, outShape: [n, cOut, oh, ow], spatial, unbatched };
  }
}

function checkConvTranspose(
  op: string,
  x: RawTensor,
  w: RawTensor,
  o: ConvTransposeOptions,
  spatial: 1 | 2,
): ConvCall<ConvTranspose2dParams> {
  checkOptions(op, o);
  const bias = o.bias ?? null;
  const unbatched = checkOperands(op, x, w, bias, spatial);
  {
    const params: ConvTranspose2dParams = {
      ...convParams(op, o, spatial),
      outputPadding: opt(op, 'outputPadding', o.outputPadding, spatial, 0, 0, 0),
    };
    const groups = params.groups;
    const [n, cIn, h, wd] = shape4(x.layout.shape, spatial, unbatched) as [number, number, number, number];
    const [wIn, cOutPerGroup, kh, kw] = shape4(w.layout.shape, spatial, false) as [number, number, number, number];
    const cOut = cOutPerGroup * groups;
    const what = (): string => `(input ${sig(x)}, weight ${sig(w)}, groups ${groups})`;
    const geom = () =>
      `(input ${sig(x)}, weight ${sig(w)}, groups ${groups}, padding ${fmtPair(params.padding, spatial)}, stride ${fmtPair(params.stride, spatial)}, dilation ${fmtPair(params.dilation, spatial)})`;
    if (cIn % groups !== 0) throw new ShapeError(`${op}: input channels ${cIn} must be divisible by groups ${what()}`);
    if (wIn !== cIn)
      throw new ShapeError(`${op}: weight dim 0 must equal the input channels ${cIn}, got ${wIn} ${what()}`);
    if (kh < 1 || kw < 1) throw new ShapeError(`${op}: kernel size must be >= 1 ${what()}`);
    for (const d of [0, 1] as const) {
      const op_ = params.outputPadding[d];
      if (op_ >= params.stride[d] && op_ >= params.dilation[d]) {
        throw new ShapeError(
          `${op}: outputPadding ${fmtPair(params.outputPadding, spatial)} must be smaller than stride ${fmtPair(params.stride, spatial)} or dilation ${fmtPair(params.dilation, spatial)} ${what()}`,
        );
      }
    }
    checkBias(op, bias, cOut, x, w);
    const size = (i: number, k: number, d: 0 | 1) =>
      (i - 1) * params.stride[d] - 2 * params.padding[d] + params.dilation[d] * (k - 1) + params.outputPadding[d] + 1;
    const oh = size(h, kh, 0),
      ow = size(wd, kw, 1);
    if (oh < 1 || ow < 1) {
      const sp = spatial === 1 ? `${ow}` : `${oh}x${ow}`;
      throw new ShapeError(`${op}: output size ${sp} is too small ${geom()}`);
    }
    return { x, w, bias, params, outShape: [n, cOut, oh, ow], spatial, unbatched };
  }
}

function fmtPair(v: readonly [number, number], spatial: 1 | 2): string {
  return spatial === 1 ? `${v[1]}` : fmtShape(v);
}

function convOp(name: string, spatial: 1 | 2, summary: string) {
  return defineOp({
    name,
    family: 'convolution',
    summary,
    dtypes: FLOATS,
    check: (x: RawTensor, w: RawTensor, o: ConvOptions): [ConvCall<Conv2dParams>] => [
      checkConv(name, x, w, o, spatial),
    ],
    device: (c) => c.x.device,
    cpu: (c) => run2d(cpu.conv2d, c),
    gpu: (c) => run2d(gpu.conv2d, c),
    grad: 'missing',
  });
}
function convTransposeOp(name: string, spatial: 1 | 2, summary: string) {
  return defineOp({
    name,
    family: 'convolution',
    summary,
    dtypes: FLOATS,
    check: (x: RawTensor, w: RawTensor, o: ConvTransposeOptions): [ConvCall<ConvTranspose2dParams>] => [
      checkConvTranspose(name, x, w, o, spatial),
    ],
    device: (c) => c.x.device,
    cpu: (c) => run2d(cpu.convTranspose2d, c),
    gpu: (c) => run2d(gpu.convTranspose2d, c),
    grad: 'missing',
  });
}

export const conv1d = convOp(
  'conv1d',
  1,
  'x [n, cIn, l] (or unbatched) with w [cOut, cIn/groups, k]; padding, stride, dilation, groups, bias',
);
export const conv2d = convOp(
  'conv2d',
  2,
  'x [n, cIn, h, w] (or unbatched) with w [cOut, cIn/groups, kh, kw]; MIOpen/cuDNN on a GPU',
);
export const convTranspose1d = convTransposeOp(
  'convTranspose1d',
  1,
  'x [n, cIn, l] with w [cIn, cOut/groups, k]; outputPadding too',
);
export const convTranspose2d = convTransposeOp(
  'convTranspose2d',
  2,
  'x [n, cIn, h, w] with w [cIn, cOut/groups, kh, kw]',
);
