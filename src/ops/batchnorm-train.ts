// Batch norm in training mode: batch statistics per channel (over every dim but dim 1), the
// running statistics moved towards them (the variance unbiased, as PyTorch does), and its
// gradient: dx and the weight and bias gradients (per-channel sums) from one MIOpen / cuDNN
// batch-norm backward call (f64 loops on the CPU). Also the gradient of inference batch norm.
import { ShapeError, TensorError } from '../core/errors.ts';
import type { RawTensor } from '../device/raw-tensor.ts';
import { FLOATS, dtypeIn, sameDevice, sig } from '../backends/checks.ts';
import * as cpu from '../backends/cpu/batchnorm-train.ts';
import * as gpu from '../backends/gpu/batchnorm-train.ts';
import { cast } from './cast.ts';
import { reshape } from './copy.ts';
import { binary, paramUnary, unary } from './elementwise.ts';
import { checkEps, vec } from './nn.ts';
import { reduce } from './reduce.ts';
import { scoped } from './scoped.ts';
import { defineGrad, defineOp, wantedGrads } from './registry.ts';

export interface BatchNormTrainOptions<T extends RawTensor = RawTensor> {
  readonly weight?: T | null;
  readonly bias?: T | null;
  /** updated in place when given */
  readonly runningMean?: T | null;
  readonly runningVariance?: T | null;
  /** default 0.1 */
  readonly momentum?: number;
  /** default 1e-5 */
  readonly eps?: number;
}

type Args = [RawTensor, RawTensor | null, RawTensor | null, RawTensor | null, RawTensor | null, number, number];

export const batchNormTrain = defineOp({
  name: 'batchNormTrain',
  family: 'nn',
  summary: 'batch norm with the batch statistics (training), moving the running statistics',
  dtypes: FLOATS,
  check: (x: RawTensor, o: BatchNormTrainOptions = {}): Args => {
    const op = 'batchNormTrain';
    x.check(op);
    if (o === null || typeof o !== 'object') throw new TensorError(`${op}: options must be an object (x ${sig(x)})`);
    dtypeIn(op, x, FLOATS);
    if (x.rank < 2) throw new ShapeError(`${op}: x must be [n, c, ...], got ${sig(x)}`);
    const c = x.layout.shape[1]!;
    const per = x.numel / Math.max(c, 1);
    if (per < 2)
      throw new ShapeError(`${op}: training needs more than one value per channel (x ${sig(x)}, ${per} per channel)`);
    const half = x.dtype === 'f16' || x.dtype === 'bf16';
    const named: [string, RawTensor | null][] = [
      ['weight', o.weight ?? null],
      ['bias', o.bias ?? null],
      ['runningMean', o.runningMean ?? null],
      ['runningVariance', o.runningVariance ?? null],
    ];
    for (const [name, t] of named) {
      if (!t) continue;
      t.check(op);
      sameDevice(op, x, t);
      vec(op, name, t, c, x);
      if (t.dtype !== x.dtype && !(half && t.dtype === 'f32'))
        throw new TensorError(`${op}: ${name} must be ${x.dtype}${half ? ' or f32' : ''}, got ${sig(t)} (x ${sig(x)})`);
    }
    const momentum = o.momentum ?? 0.1;
    if (typeof momentum !== 'number' || !(momentum >= 0 && momentum <= 1))
      throw new RangeError(`${op}: momentum must be in [0, 1], got ${String(momentum)}`);
    const eps = o.eps ?? 1e-5;
    checkEps(op, eps);
    return [x, named[0]![1], named[1]![1], named[2]![1], named[3]![1], momentum, eps];
  },
  cpu: cpu.batchNormTrain,
  gpu: gpu.batchNormTrain,
  grad: 'missing',
});

/** batch norm's gradients from x and the output gradient (batch statistics recomputed): the
 *  input's, and the scale's and bias's as the library sums them */
export const batchNormTrainBackward = defineOp({
  name: 'batchNormTrainBackward',
  family: 'nn',
  summary: "batchNormTrain's input, scale and bias gradients (MIOpen / cuDNN batch-norm backward)",
  dtypes: FLOATS,
  check: (
    x: RawTensor,
    dy: RawTensor,
    weight: RawTensor | null,
    eps: number,
  ): [RawTensor, RawTensor, RawTensor | null, number] => {
    const op = 'batchNormTrainBackward';
    x.check(op);
    dy.check(op);
    sameDevice(op, x, dy);
    if (dy.dtype !== x.dtype || dy.layout.shape.join() !== x.layout.shape.join())
      throw new ShapeError(`${op}: dy ${sig(dy)} must be shaped and typed like x ${sig(x)}`);
    return [x, dy, weight, eps];
  },
  cpu: cpu.batchNormTrainBackward,
  gpu: gpu.batchNormTrainBackward,
  grad: 'missing',
});

/** every dim of x but the channel one */
const notChannel = (x: RawTensor): number[] => x.layout.shape.map((_, i) => i).filter((i) => i !== 1);

/** [c] sums over the batch of a (and of a * b), in dtype like's */
function channelSum(a: RawTensor, like: RawTensor, keep: (t: RawTensor) => RawTensor): RawTensor {
  const s = keep(reduce('sum', a, notChannel(a), false));
  return s.dtype === like.dtype ? s.view(s.layout) : cast(s, like.dtype);
}

/** [1, c, 1, ...]: a per-channel vector as x's broadcast shape */
const perChannel = (v: RawTensor, x: RawTensor): RawTensor =>
  reshape(
    v,
    x.layout.shape.map((n, i) => (i === 1 ? n : 1)),
  );

/** 1 / sqrt(v + eps) */
const invStd = (v: RawTensor, eps: number, keep: (t: RawTensor) => RawTensor): RawTensor =>
  keep(unary(keep(unary(keep(paramUnary(v, { op: 'affine', a: 1, b: eps })), 'sqrt')), 'recip'));

// one library call gives all three: the scale's and bias's gradients are its per-channel sums
// (in f32 beside half x), cast to the parameters' dtype where that differs
defineGrad('batchNormTrain', (g, [x, weight, bias, , , , eps]: Args, _y, wants) => {
  const r = batchNormTrainBackward(x, g, weight, eps);
  const as = (t: RawTensor, like: RawTensor): RawTensor =>
    t.dtype === like.dtype ? t.view(t.layout) : cast(t, like.dtype);
  try {
    const params = wantedGrads(wants, [
      [weight, () => as(r.dScale, weight!)],
      [bias, () => as(r.dBias, bias!)],
    ]);
    return [[x, r.dx.view(r.dx.layout)], ...params];
  } finally {
    for (const t of [r.dx, r.dScale, r.dBias]) t.dispose();
  }
});

// inference batch norm: y = (x - mean) / sqrt(var + eps) * w + b with fixed statistics
defineGrad(
  'batchNorm',
  (
    g,
    [x, mean, variance, weight, bias, eps]: [
      RawTensor,
      RawTensor,
      RawTensor,
      RawTensor | null,
      RawTensor | null,
      number,
    ],
  ) =>
    scoped((keep) => {
      const inv = invStd(variance, eps, keep);
      const scaleVec = weight ? keep(binary('mul', keep(cast(inv, weight.dtype)), weight)) : inv;
      const scaleX = keep(cast(keep(perChannel(scaleVec, x)), x.dtype));
      const out: [RawTensor, RawTensor][] = [[x, binary('mul', g, scaleX)]];
      if (weight) {
        const xhat = keep(
          binary(
            'mul',
            keep(binary('sub', x, keep(cast(keep(perChannel(mean, x)), x.dtype)))),
            keep(cast(keep(perChannel(inv, x)), x.dtype)),
          ),
        );
        out.push([weight, channelSum(keep(binary('mul', g, xhat)), weight, keep)]);
      }
      if (bias) out.push([bias, channelSum(g, bias, keep)]);
      return out;
    }),
);
