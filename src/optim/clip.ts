// Gradient clipping, on the device: the total norm is a 0-d tensor and the scale is applied
// whatever its value (a factor of 1 when under the limit), so nothing is read back.
import { TensorError } from '../core/errors.ts';
import { tidy } from '../core/scope.ts';
import { describeValue } from '../ops/args.ts';
import { assign } from '../nn/assign.ts';
import { noGrad } from '../tensor/autograd.ts';
import { Tensor } from '../tensor/tensor.ts';

function gradsOf(op: string, params: Iterable<Tensor>): Tensor[] {
  const grads: Tensor[] = [];
  for (const p of params) {
    if (!(p instanceof Tensor)) throw new TensorError(`${op}: parameters must be Tensors, got ${describeValue(p)}`);
    if (p.grad !== null) grads.push(p.grad);
  }
  const dev = grads[0]?.device;
  for (const g of grads)
    if (g.device !== dev)
      throw new TensorError(`${op}: gradients on ${dev} and ${g.device}; clip each device's separately`);
  return grads;
}

/**
 * Scales the parameters' gradients in place so that their total norm (normType 2, or Infinity
 * for the largest magnitude) is at most maxNorm: each is multiplied by
 * min(1, maxNorm / (total + 1e-6)). Returns the total norm before clipping, a 0-d tensor (f32,
 * or f64 when a gradient is f64); 0 when no parameter has a gradient.
 */
export function clipGradNorm(params: Iterable<Tensor>, maxNorm: number, normType = 2): Tensor {
  const op = 'clipGradNorm';
  if (typeof maxNorm !== 'number' || !(maxNorm >= 0))
    throw new TensorError(`${op}: maxNorm must be a number >= 0, got ${describeValue(maxNorm)}`);
  if (normType !== 2 && normType !== Infinity)
    throw new TensorError(`${op}: normType must be 2 or Infinity, got ${describeValue(normType)}`);
  const list = [...params];
  const grads = gradsOf(op, list);
  if (grads.length === 0) return Tensor.zeros([], { device: list[0]?.device });
  const acc = grads.some((g) => g.dtype === 'f64') ? 'f64' : 'f32';
  return noGrad(() =>
    tidy(() => {
      let total: Tensor | null = null;
      for (const g of grads) {
        const w = g.toDtype(acc);
        const part = normType === 2 ? w.sqr().sum() : w.abs().max();
        total = total === null ? part : normType === 2 ? total.add(part) : total.maximum(part);
      }
      const norm = normType === 2 ? total!.sqrt() : total!;
      const coef = norm.add(1e-6).recip().mul(maxNorm).minimum(1);
      for (const g of grads) assign(g, g.mul(coef.toDtype(g.dtype)));
      return norm;
    }),
  );
}

/** clamps every gradient in place to [-clipValue, clipValue] */
export function clipGradValue(params: Iterable<Tensor>, clipValue: number): void {
  const op = 'clipGradValue';
  if (typeof clipValue !== 'number' || !(clipValue >= 0))
    throw new TensorError(`${op}: clipValue must be a number >= 0, got ${describeValue(clipValue)}`);
  const grads = gradsOf(op, params);
  noGrad(() =>
    tidy(() => {
      for (const g of grads) assign(g, g.clamp(-clipValue, clipValue));
    }),
  );
}
