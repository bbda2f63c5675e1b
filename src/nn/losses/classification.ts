// Cross entropy and negative log-likelihood with PyTorch's semantics: input [N, C, d1, ...] (or
// [C] unbatched) with integer class targets [N, d1, ...] (or class probabilities shaped like the
// input), class weights, ignoreIndex and label smoothing. Cross entropy against class ids is one
// op over rows of logits (crossEntropyRows: a kernel a direction on a GPU, with its gradient);
// nllLoss and probability targets are composed from logSoftmax, gather and elementwise ops.
// Targets are not range-checked on the device (that would read them back every step): in cross
// entropy a class id outside [0, C) gives that row a NaN loss and NaN gradients; in nllLoss it
// fails in gather where the backend checks it, or gives an undefined row.
import { isFloatDType } from '../../core/dtype.ts';
import { INDEX_DTYPES } from '../../backends/checks.ts';
import { DTypeError, ShapeError, TensorError } from '../../core/errors.ts';
import { sameShape } from '../../core/layout.ts';
import { tidy } from '../../core/scope.ts';
import { Tensor } from '../../tensor/tensor.ts';
import { describeValue } from '../../ops/args.ts';
import { crossEntropyRows } from '../../ops/train.ts';
import { type Reduction, checkReduction, floatArg } from './common.ts';

export interface NllOptions {
  /** a weight per class, [C] */
  weight?: Tensor;
  /** targets equal to it take no part (nor in the mean's count); default -100 */
  ignoreIndex?: number;
  reduction?: Reduction;
}

export interface CrossEntropyOptions extends NllOptions {
  /** in [0, 1]: the target becomes (1 - s) one-hot + s / C (default 0) */
  labelSmoothing?: number;
}

const UNSIGNED_MAX: Record<string, number> = { u8: 255, u32: 2 ** 32 - 1 };

/** logp [N, C, ...] moved to [N, ..., C] (a view), and the class count */
function classesLast(logp: Tensor): Tensor {
  if (logp.rank <= 2) return logp.rank === 1 ? logp.unsqueeze(0) : logp;
  const dims = [0, ...logp.shape.slice(2).map((_, i) => i + 2), 1];
  return logp.permute(dims);
}

function checkInput(loss: string, input: unknown): Tensor {
  const x = floatArg(loss, 'input', input);
  if (x.rank === 0) throw new ShapeError(`${loss}: input ${x.describe()} must be [C] or [N, C, ...]`);
  return x;
}

/** the target shape an input takes: the input's without its class dim */
function indexTargetShape(x: Tensor): number[] {
  return x.rank === 1 ? [] : [x.dim(0), ...x.shape.slice(2)];
}

function checkIndexTarget(loss: string, x: Tensor, target: unknown): Tensor {
  if (!(target instanceof Tensor))
    throw new TensorError(`${loss}: target must be a Tensor, got ${describeValue(target)}`);
  if (!INDEX_DTYPES.includes(target.dtype))
    throw new DTypeError(
      `${loss}: class targets must be i64, u32 or u8, got ${target.describe()} (input ${x.describe()})`,
    );
  const want = indexTargetShape(x);
  if (!sameShape(target.shape, want))
    throw new ShapeError(`${loss}: target ${target.describe()} must be [${want.join(', ')}] for input ${x.describe()}`);
  return target;
}

function checkWeight(loss: string, x: Tensor, w: Tensor | undefined): Tensor | null {
  if (w === undefined) return null;
  const t = floatArg(loss, 'weight', w);
  const c = x.rank === 1 ? x.dim(0) : x.dim(1);
  if (t.rank !== 1 || t.dim(0) !== c)
    throw new ShapeError(`${loss}: weight ${t.describe()} must be [${c}], one per class of input ${x.describe()}`);
  return t;
}

function checkIgnore(loss: string, v: number | undefined): number {
  const i = v ?? -100;
  if (!Number.isSafeInteger(i))
    throw new TensorError(`${loss}: ignoreIndex must be an integer, got ${describeValue(v)}`);
  return i;
}

/**
 * The per-target picture both losses share, over logp with classes last ([M..., C]): the valid
 * mask (float, 0 where target == ignoreIndex), the picked log-probabilities, and each target's
 * class weight (null without weights). Target ids at ignored places are replaced by 0 so the
 * gather stays in range.
 */
function pick(
  logpLast: Tensor,
  target: Tensor,
  weight: Tensor | null,
  ignoreIndex: number,
): { valid: Tensor | null; picked: Tensor; w: Tensor | null } {
  const ids = target.rank === 0 ? target.reshape([1]) : target;
  // a target dtype that cannot hold ignoreIndex (u8 and -100, say) has nothing to ignore
  const canIgnore = ids.dtype === 'i64' || (ignoreIndex >= 0 && ignoreIndex <= UNSIGNED_MAX[ids.dtype]!);
  const validU8 = canIgnore ? ids.ne(ignoreIndex) : null;
  const safe = validU8 === null ? ids : Tensor.where(validU8, ids, 0);
  const picked = logpLast.gather(safe.unsqueeze(-1), -1).squeeze(-1);
  const valid = validU8 === null ? null : validU8.toDtype(logpLast.dtype);
  const w = weight === null ? null : Tensor.embedding(safe, weight.unsqueeze(-1)).squeeze(-1);
  return { valid, picked, w };
}

/** the per-element losses reduced the way PyTorch reduces weighted, ignoring losses */
function reduceWeighted(loss: Tensor, denom: Tensor | null, count: number, r: Reduction, unbatched: boolean): Tensor {
  if (r === 'none') return unbatched ? loss.reshape([]) : loss;
  if (r === 'sum') return loss.sum();
  return denom === null ? loss.sum().div(count) : loss.sum().div(denom.sum());
}

/** the mean's denominator: the weights of the valid targets (or their count); null: all of them, unweighted */
function denominator(valid: Tensor | null, w: Tensor | null): Tensor | null {
  if (w === null) return valid;
  return valid === null ? w : w.mul(valid);
}

/** -logp[target] (times the target's class weight), from log-probabilities */
export function nllLoss(input: Tensor, target: Tensor, opts: NllOptions = {}): Tensor {
  const op = 'nllLoss';
  const r = checkReduction(op, opts.reduction);
  const x = checkInput(op, input);
  const t = checkIndexTarget(op, x, target);
  const weight = checkWeight(op, x, opts.weight);
  const ignore = checkIgnore(op, opts.ignoreIndex);
  return tidy(() => {
    const { valid, picked, w } = pick(classesLast(x), t, weight, ignore);
    let loss = picked.neg();
    if (w !== null) loss = loss.mul(w);
    if (valid !== null) loss = loss.mul(valid);
    return reduceWeighted(loss, denominator(valid, w), picked.numel, r, x.rank === 1);
  });
}

/**
 * Cross entropy of logits input [N, C, ...] (or [C]) against class ids [N, ...] (or a class
 * probability tensor shaped like input): logSoftmax over the classes, then the negative
 * log-likelihood, with label smoothing mixing in the mean over classes.
 */
export function crossEntropy(input: Tensor, target: Tensor, opts: CrossEntropyOptions = {}): Tensor {
  const op = 'crossEntropy';
  const r = checkReduction(op, opts.reduction);
  const x = checkInput(op, input);
  const weight = checkWeight(op, x, opts.weight);
  const s = opts.labelSmoothing ?? 0;
  if (typeof s !== 'number' || !(s >= 0 && s <= 1))
    throw new TensorError(`${op}: labelSmoothing must be in [0, 1], got ${describeValue(s)}`);
  const classDim = x.rank === 1 ? 0 : 1;
  const c = x.dim(classDim);
  // a float target holds class probabilities
  if (target instanceof Tensor && isFloatDType(target.dtype)) {
    if (target.dtype !== x.dtype)
      throw new DTypeError(
        `${op}: probability target ${target.describe()} must have the dtype of input ${x.describe()}`,
      );
    return probabilityTargets(x, target, weight, s, r, classDim);
  }
  const t = checkIndexTarget(op, x, target);
  const ignore = checkIgnore(op, opts.ignoreIndex);
  return tidy(() => {
    const rows = classesLast(x);
    const m = rows.numel / Math.max(c, 1);
    const ids = t.reshape([m]);
    const loss = Tensor.wrap(
      crossEntropyRows(rows.reshape([m, c]), ids, {
        weight: weight?.detach() ?? null,
        ignoreIndex: ignore,
        smoothing: s,
      }),
    );
    // the mean's denominator: the class weights of the rows that count (or their count)
    const canIgnore = ids.dtype === 'i64' || (ignore >= 0 && ignore <= UNSIGNED_MAX[ids.dtype]!);
    const validU8 = canIgnore ? ids.ne(ignore) : null;
    // in the losses' dtype (f32 under autocast, whatever x's)
    const valid = validU8 === null ? null : validU8.toDtype(loss.dtype);
    const picked =
      weight === null
        ? null
        : Tensor.embedding(
            validU8 === null ? ids : Tensor.where(validU8, ids, 0),
            weight.detach().unsqueeze(-1),
          ).squeeze(-1);
    const w = picked === null || picked.dtype === loss.dtype ? picked : picked.toDtype(loss.dtype);
    const shaped = r === 'none' && x.rank > 2 ? loss.reshape(indexTargetShape(x)) : loss;
    return reduceWeighted(shaped, denominator(valid, w), m, r, x.rank === 1);
  });
}

/** targets that are class probabilities shaped like the input; the mean is over N (and the rest) */
function probabilityTargets(
  x: Tensor,
  target: Tensor,
  weight: Tensor | null,
  s: number,
  r: Reduction,
  classDim: number,
): Tensor {
  if (target.rank !== x.rank || target.shape.some((d, i) => d !== x.dim(i)))
    throw new ShapeError(
      `crossEntropy: probability target ${target.describe()} must be shaped like input ${x.describe()}`,
    );
  return tidy(() => {
    const c = x.dim(classDim);
    const logp = x.logSoftmax(classDim);
    const p = s > 0 ? target.mul(1 - s).add(s / c) : target;
    let prod = logp.mul(p);
    if (weight !== null) prod = prod.mul(weight.reshape(x.shape.map((d, i) => (i === classDim ? d : 1))));
    const loss = prod.sum(classDim).neg();
    if (r === 'none') return loss;
    return r === 'sum' ? loss.sum() : loss.mean();
  });
}
