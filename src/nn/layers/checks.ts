// Constructor argument checks shared by the layers: each error names the layer and the argument.
import { TensorError } from '../../core/errors.ts';
import type { Pair } from '../../backends/options.ts';
import { describeValue } from '../../ops/args.ts';

/** a non-negative integer (min 1 unless told) */
export function checkCount(layer: string, name: string, v: number, min = 1): number {
  if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < min)
    throw new TensorError(`${layer}: ${name} must be an integer >= ${min}, got ${describeValue(v)}`);
  return v;
}

/** a number or a pair of them, each an integer >= min, as [a, b] */
export function checkPair(layer: string, name: string, v: Pair, min: number): [number, number] {
  const p: readonly number[] = typeof v === 'number' ? [v, v] : v;
  if (!Array.isArray(p) || p.length !== 2 || !p.every((x) => Number.isSafeInteger(x) && x >= min))
    throw new TensorError(`${layer}: ${name} must be an integer >= ${min} or a pair of them, got ${describeValue(v)}`);
  return [p[0]!, p[1]!];
}

/** a probability in [0, 1] */
export function checkProbability(layer: string, name: string, v: number): number {
  if (typeof v !== 'number' || !(v >= 0 && v <= 1))
    throw new TensorError(`${layer}: ${name} must be in [0, 1], got ${describeValue(v)}`);
  return v;
}

/** a positive finite number */
export function checkPositive(layer: string, name: string, v: number): number {
  if (typeof v !== 'number' || !(v > 0) || !Number.isFinite(v))
    throw new TensorError(`${layer}: ${name} must be a positive number, got ${describeValue(v)}`);
  return v;
}
