// The fused training ops: the backward of softmax / logSoftmax and of the two norms (used by
// their gradient rules in grads.ts), cross entropy over rows of logits with its gradient, and the
// multi-tensor Adam and SGD steps the optimizers run on a GPU.
import { normDim, sameShape } from '../core/layout.ts';
import { DTypeError, ShapeError, TensorError } from '../core/errors.ts';
import type { DType } from '../core/dtype.ts';
import type { RawTensor } from '../device/raw-tensor.ts';
import { FLOATS, INDEX_DTYPES, dtypeIn, sameDevice, sig } from '../backends/checks.ts';
import type { AdamStepParams, CrossEntropyParams, SgdStepParams, StepList } from '../backends/train-options.ts';
import * as cpu from '../backends/cpu/train.ts';
import * as gpu from '../backends/gpu/train.ts';
import { checkEps, floats, vec } from './nn.ts';
import { defineGrad, defineOp } from './registry.ts';

function sameShapes(op: string, a: RawTensor, b: RawTensor, an: string, bn: string): void {
  if (!sameShape(a.layout.shape, b.layout.shape))
    throw new ShapeError(`${op}: ${an} ${sig(a)} and ${bn} ${sig(b)} must have the same shape`);
}

export const softmaxBackward = defineOp({
  name: 'softmaxBackward',
  family: 'nn',
  summary: "softmax's (log: logSoftmax's) input gradient from its output y and the output's gradient",
  dtypes: FLOATS,
  check: (g: RawTensor, y: RawTensor, dim: number, log: boolean): [RawTensor, RawTensor, number, boolean] => {
    const op = log ? 'logSoftmaxBackward' : 'softmaxBackward';
    floats(op, g, y);
    sameShapes(op, g, y, 'gradient', 'output');
    return [g, y, normDim(op, dim, Math.max(y.rank, 1)), log];
  },
  cpu: cpu.softmaxBackward,
  gpu: gpu.softmaxBackward,
  grad: 'missing',
});

type NormGrads = [RawTensor, RawTensor, RawTensor | null];

function normGradArgs(op: string, g: RawTensor, x: RawTensor, w: RawTensor, b: RawTensor | null, eps: number): void {
  floats(op, ...(b ? [g, x, w, b] : [g, x, w]));
  checkEps(op, eps);
  if (x.rank < 1) throw new ShapeError(`${op}: x must have at least 1 dim, got ${sig(x)}`);
  sameShapes(op, g, x, 'gradient', 'x');
  const h = x.layout.shape[x.rank - 1]!;
  vec(op, 'weight', w, h, x);
  if (b) vec(op, 'bias', b, h, x);
}

export const layerNormBackward = defineOp({
  name: 'layerNormBackward',
  family: 'nn',
  summary: "layerNorm's gradients [dx, dw, db] from the output's gradient (dw, db summed over rows in a fixed order)",
  dtypes: FLOATS,
  check: (
    g: RawTensor,
    x: RawTensor,
    w: RawTensor,
    b: RawTensor | null,
    eps: number,
  ): [RawTensor, RawTensor, RawTensor, RawTensor | null, number, boolean] => {
    normGradArgs('layerNormBackward', g, x, w, b, eps);
    return [g, x, w, b, eps, false];
  },
  cpu: cpu.normBackward,
  gpu: gpu.normBackward,
  grad: 'missing',
});

export const rmsNormBackward = defineOp({
  name: 'rmsNormBackward',
  family: 'nn',
  summary: "rmsNorm's gradients [dx, dw] from the output's gradient (dw summed over rows in a fixed order)",
  dtypes: FLOATS,
  check: (
    g: RawTensor,
    x: RawTensor,
    w: RawTensor,
    eps: number,
  ): [RawTensor, RawTensor, RawTensor, RawTensor | null, number, boolean] => {
    normGradArgs('rmsNormBackward', g, x, w, null, eps);
    return [g, x, w, null, eps, true];
  },
  cpu: (g, x, w, b, eps, rms): NormGrads => cpu.normBackward(g, x, w, b, eps, rms),
  gpu: (g, x, w, b, eps, rms): NormGrads => gpu.normBackward(g, x, w, b, eps, rms),
  grad: 'missing',
});

type XentArgs = [RawTensor, RawTensor, CrossEntropyParams];

function xentArgs(op: string, x: RawTensor, target: RawTensor, p: CrossEntropyParams): XentArgs {
  if (p === null || typeof p !== 'object') throw new TensorError(`${op}: expected { weight, ignoreIndex, smoothing }`);
  floats(op, x);
  if (x.rank !== 2) throw new ShapeError(`${op}: x must be [rows, classes], got ${sig(x)}`);
  dtypeIn(op, target, INDEX_DTYPES);
  if (target.rank !== 1 || target.layout.shape[0] !== x.layout.shape[0])
    throw new ShapeError(`${op}: target must be [${x.layout.shape[0]}] class ids for x ${sig(x)}, got ${sig(target)}`);
  sameDevice(op, x, target, ...(p.weight ? [p.weight] : []));
  if (p.weight) {
    vec(op, 'weight', p.weight, x.layout.shape[1]!, x);
    if (p.weight.dtype !== x.dtype)
      throw new DTypeError(`${op}: weight ${sig(p.weight)} must have the dtype of x ${sig(x)}`);
    if (p.weight.gradState !== null)
      throw new TensorError(`${op}: class weights ${sig(p.weight)} take no gradient here; pass them detach()ed`);
  }
  if (!Number.isSafeInteger(p.ignoreIndex))
    throw new TensorError(`${op}: ignoreIndex must be an integer, got ${String(p.ignoreIndex)}`);
  if (typeof p.smoothing !== 'number' || !(p.smoothing >= 0 && p.smoothing <= 1))
    throw new RangeError(`${op}: label smoothing must be in [0, 1], got ${String(p.smoothing)}`);
  return [x, target, { weight: p.weight, ignoreIndex: p.ignoreIndex, smoothing: p.smoothing }];
}

export const crossEntropyRows = defineOp({
  name: 'crossEntropyRows',
  family: 'nn',
  summary:
    'cross entropy of each row of logits [rows, classes] against class ids [rows]: class weights, ignoreIndex (loss 0), label smoothing',
  dtypes: FLOATS,
  check: (x: RawTensor, target: RawTensor, p: CrossEntropyParams): XentArgs =>
    xentArgs('crossEntropyRows', x, target, p),
  cpu: cpu.crossEntropyRows,
  gpu: gpu.crossEntropyRows,
  grad: 'missing',
});

export const crossEntropyRowsBackward = defineOp({
  name: 'crossEntropyRowsBackward',
  family: 'nn',
  summary: "crossEntropyRows' logit gradient (softmax - smoothed one-hot, weighted) times each row's loss gradient",
  dtypes: FLOATS,
  check: (g: RawTensor, x: RawTensor, target: RawTensor, p: CrossEntropyParams): [RawTensor, ...XentArgs] => {
    const a = xentArgs('crossEntropyRowsBackward', x, target, p);
    floats('crossEntropyRowsBackward', g, x);
    if (g.rank !== 1 || g.layout.shape[0] !== x.layout.shape[0])
      throw new ShapeError(
        `crossEntropyRowsBackward: gradient ${sig(g)} must be [${x.layout.shape[0]}] for x ${sig(x)}`,
      );
    return [g, ...a];
  },
  cpu: cpu.crossEntropyRowsBackward,
  gpu: gpu.crossEntropyRowsBackward,
  grad: 'missing',
});

defineGrad('crossEntropyRows', (g, [x, target, p]: XentArgs) => [[x, crossEntropyRowsBackward(g, x, target, p)]]);

// ---- multi-tensor steps -------------------------------------------------------------------

/** the (parameter, state) dtype pairs optim.hip has */
const STEP_PAIRS = new Set(['f32/f32', 'f64/f64', 'f16/f16', 'bf16/bf16', 'f16/f32', 'bf16/f32']);

/** checks a step's list: one device, one parameter dtype, one state dtype, shapes alike, dense */
function checkList(op: string, list: StepList, slots: number): StepList {
  if (list === null || typeof list !== 'object' || !Array.isArray(list.params) || list.params.length === 0)
    throw new TensorError(`${op}: expected a non-empty list of parameters`);
  const n = list.params.length;
  const p0 = list.params[0]!;
  if (list.grads.length !== n) throw new TensorError(`${op}: ${n} parameters but ${list.grads.length} gradients`);
  if (list.state.length < slots || list.state.slice(0, slots).some((s) => s.length !== n))
    throw new TensorError(`${op}: expected ${slots} state slot(s) of ${n} tensors each`);
  if (list.masters !== null && list.masters.length !== n)
    throw new TensorError(`${op}: ${n} parameters but ${list.masters.length} master copies`);
  const stateDType: DType = list.masters?.[0]?.dtype ?? list.state[0]?.[0]?.dtype ?? p0.dtype;
  if (!STEP_PAIRS.has(`${p0.dtype}/${stateDType}`))
    throw new DTypeError(`${op}: parameters ${p0.dtype} with state ${stateDType} have no fused step`);
  const all: RawTensor[] = [];
  list.params.forEach((p, i) => {
    const g = list.grads[i]!;
    if (p.dtype !== p0.dtype)
      throw new DTypeError(`${op}: parameter ${i} ${sig(p)} is not ${p0.dtype} like parameter 0`);
    if (!p.layout.isContiguous()) throw new ShapeError(`${op}: parameter ${i} ${sig(p)} must be contiguous`);
    sameShapes(op, p, g, `parameter ${i}`, 'its gradient');
    if (g.dtype !== p.dtype)
      throw new DTypeError(`${op}: gradient ${sig(g)} of parameter ${i} ${sig(p)} must be ${p.dtype}`);
    const own = [...list.state.slice(0, slots).map((s) => s[i]!), ...(list.masters ? [list.masters[i]!] : [])];
    for (const s of own) {
      sameShapes(op, p, s, `parameter ${i}`, 'its state');
      if (s.dtype !== stateDType)
        throw new DTypeError(`${op}: state ${sig(s)} of parameter ${i} must be ${stateDType}`);
      if (!s.layout.isContiguous()) throw new ShapeError(`${op}: state ${sig(s)} of parameter ${i} must be contiguous`);
    }
    all.push(p, g, ...own);
  });
  sameDevice(op, ...all);
  return list;
}

function checkNumbers(op: string, h: Record<string, unknown>, names: readonly string[]): void {
  for (const k of names)
    if (typeof h[k] !== 'number' || !Number.isFinite(h[k] as number))
      throw new TensorError(`${op}: ${k} must be a finite number, got ${String(h[k])}`);
}

/** every tensor a step writes: its storage's version moves on (the registry moves the first one's) */
function written(list: StepList): RawTensor {
  const rest = [...list.params.slice(1), ...list.state.flat(), ...(list.masters ?? [])];
  for (const t of rest) t.storage.version++;
  return list.params[0]!;
}

export const adamStep = defineOp({
  name: 'adamStep',
  family: 'optim',
  summary:
    'one Adam / AdamW (decoupled) step over a list of parameters in place, moments and master copies included; one launch on a GPU',
  dtypes: ['f32', 'f64', 'f16', 'bf16'],
  check: (list: StepList, h: AdamStepParams): [StepList, AdamStepParams] => {
    const op = h?.decoupled ? 'adamWStep' : 'adamStep';
    checkNumbers(op, h as unknown as Record<string, unknown>, [
      'lr',
      'beta1',
      'beta2',
      'eps',
      'weightDecay',
      'stepSize',
      'invBc2Sqrt',
    ]);
    return [checkList(op, list, h.amsgrad ? 3 : 2), h];
  },
  device: (list) => list.params[0]!.device,
  cpu: cpu.adamStep,
  gpu: gpu.adamStep,
  grad: 'none',
  writes: written,
});

export const sgdStep = defineOp({
  name: 'sgdStep',
  family: 'optim',
  summary:
    'one SGD step (momentum, dampening, nesterov, weight decay) over a list of parameters in place; one launch on a GPU',
  dtypes: ['f32', 'f64', 'f16', 'bf16'],
  check: (list: StepList, h: SgdStepParams): [StepList, SgdStepParams] => {
    checkNumbers('sgdStep', h as unknown as Record<string, unknown>, ['lr', 'momentum', 'dampening', 'weightDecay']);
    return [checkList('sgdStep', list, h.momentum !== 0 ? 1 : 0), h];
  },
  device: (list) => list.params[0]!.device,
  cpu: cpu.sgdStep,
  gpu: gpu.sgdStep,
  grad: 'none',
  writes: written,
});
