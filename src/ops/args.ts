// Argument checks shared by the ops' check functions and Tensor's constructors. Each names the
// op, the argument, what it expected and what came instead (and, where a call is easily written
// in another library's order, the order this one takes), so that a wrong type fails with a
// sentence where the call was made, not with a TypeError from deep inside.
import { DTYPES, DTYPE_INFO, isDType, type DType } from '../core/dtype.ts';
import { DTypeError, ShapeError, TensorError, fmtShape } from '../core/errors.ts';
import type { Shape } from '../core/layout.ts';
import { Device } from '../device/device.ts';
import { RawTensor } from '../device/raw-tensor.ts';

/** a short description of any value for an error message: "the number 0", "a Tensor [3] f32" */
export function describeValue(v: unknown): string {
  if (v === undefined) return 'undefined';
  if (v === null) return 'null';
  if (v instanceof RawTensor) return `a Tensor ${fmtShape(v.layout.shape)} ${v.dtype}`;
  if (v instanceof Device) return `the device ${v}`;
  switch (typeof v) {
    case 'number':
      return `the number ${v}`;
    case 'string':
      return `the string '${v.length > 40 ? `${v.slice(0, 40)}...` : v}'`;
    case 'boolean':
      return `${v}`;
    case 'bigint':
      return `the bigint ${v}n`;
    case 'function':
      return 'a function';
    case 'symbol':
      return 'a symbol';
  }
  if (Array.isArray(v)) {
    const shown = v.slice(0, 6).map((x) => (typeof x === 'number' ? String(x) : typeof x));
    return `an array [${shown.join(', ')}${v.length > 6 ? ', ...' : ''}]`;
  }
  if (ArrayBuffer.isView(v)) return `a ${v.constructor.name}`;
  const name = (v as object).constructor?.name;
  return name && name !== 'Object' ? `a ${name}` : 'an object';
}

/**
 * A tensor argument, not yet disposed. `order` is how the call reads in this library, named
 * in the message when something else came (e.g. "x.indexSelect(ids, dim)").
 */
export function expectTensor(op: string, name: string, v: unknown, order?: string): RawTensor {
  if (!(v instanceof RawTensor)) {
    const hint = order ? ` (the arguments are ${order})` : '';
    throw new TensorError(`${op}: ${name} must be a Tensor, got ${describeValue(v)}${hint}`);
  }
  return v.check(op);
}

/** a shape: an array of non-negative integers */
export function expectShape(op: string, name: string, v: unknown): Shape {
  if (!Array.isArray(v)) {
    const hint = typeof v === 'number' ? ` (a 1-d shape of ${v} is [${v}])` : '';
    throw new ShapeError(`${op}: ${name} must be an array of non-negative integers, got ${describeValue(v)}${hint}`);
  }
  const bad = v.findIndex((n) => typeof n !== 'number' || !Number.isInteger(n) || n < 0);
  if (bad >= 0) {
    throw new ShapeError(
      `${op}: invalid ${name} [${v.map((n) => (typeof n === 'number' ? String(n) : describeValue(n))).join(', ')}]: entry ${bad} is not a non-negative integer`,
    );
  }
  return v as Shape;
}

/** an integer, optionally at least `min` */
export function expectInt(op: string, name: string, v: unknown, min?: number): number {
  if (typeof v !== 'number' || !Number.isInteger(v) || (min !== undefined && v < min)) {
    const what = min === undefined ? 'an integer' : min === 0 ? 'an integer >= 0' : `an integer >= ${min}`;
    throw new TensorError(`${op}: ${name} must be ${what}, got ${describeValue(v)}`);
  }
  return v;
}

/** a number (finite unless `finite` is false) */
export function expectNumber(op: string, name: string, v: unknown, finite = true): number {
  if (typeof v !== 'number' || (finite && !Number.isFinite(v)))
    throw new TensorError(`${op}: ${name} must be a ${finite ? 'finite ' : ''}number, got ${describeValue(v)}`);
  return v;
}

/** one of the dtypes */
export function expectDType(op: string, name: string, v: unknown): DType {
  if (!isDType(v)) throw new DTypeError(`${op}: unknown ${name} ${describeValue(v)} (dtypes: ${DTYPES.join(', ')})`);
  return v;
}

/** a Device (a string is parsed by the caller) */
export function expectDevice(op: string, name: string, v: unknown): Device {
  if (!(v instanceof Device))
    throw new TensorError(
      `${op}: ${name} must be a Device or a string such as 'cpu' or 'cuda:0', got ${describeValue(v)}`,
    );
  return v;
}

/** an options record: undefined or a plain object (a dtype string in its place is a common slip) */
export function expectOptions<T extends object>(op: string, v: T | undefined, example: string): T {
  if (v === undefined) return {} as T;
  if (typeof v !== 'object' || v === null || Array.isArray(v) || v instanceof RawTensor || v instanceof Device)
    throw new TensorError(`${op}: options must be an object such as ${example}, got ${describeValue(v)}`);
  return v;
}

// ---- values that must fit an integer dtype ---------------------------------------------------

const INT_RANGE: Partial<Record<DType, readonly [number, number, string]>> = {
  u8: [0, 255, '0 to 255'],
  u32: [0, 2 ** 32 - 1, '0 to 4294967295'],
  // doubles at or past 2^63 are outside i64; the largest double below it is 2^63 - 1024
  i64: [-(2 ** 63), 2 ** 63 - 1024, '-2^63 to 2^63 - 1'],
};

/** why `x` cannot be stored in integer dtype `d` without changing it, or null when it can */
function misfit(d: DType, x: number): string | null {
  const r = INT_RANGE[d];
  if (!r) return null;
  if (!Number.isInteger(x)) return Number.isNaN(x) ? 'NaN is not an integer' : 'not an integer';
  if (x < r[0] || x > r[1]) return `outside ${r[2]}`;
  return null;
}

/**
 * Values going into a tensor of dtype `d`: for the integer dtypes each must be an integer in
 * the dtype's range (as PyTorch refuses them at creation), rather than wrapping or truncating.
 */
export function expectFits(op: string, d: DType, values: ArrayLike<number>): void {
  if (DTYPE_INFO[d].isFloat) return;
  for (let i = 0; i < values.length; i++) {
    const x = values[i]!;
    const why = misfit(d, x);
    if (why !== null)
      throw new DTypeError(`${op}: value ${x} at index ${i} does not fit ${d} (${why}); casts with toDtype() wrap`);
  }
}

/** one value going into every element of a tensor of dtype `d` (full, fill) */
export function expectFitsValue(op: string, d: DType, x: number): void {
  const why = DTYPE_INFO[d].isFloat ? null : misfit(d, x);
  if (why !== null) throw new DTypeError(`${op}: value ${x} does not fit ${d} (${why})`);
}

/** BigInt values going into a tensor of dtype `d` (a BigInt64Array converted to another dtype) */
export function expectFitsBig(op: string, d: DType, values: BigInt64Array): void {
  if (d === 'i64' || DTYPE_INFO[d].isFloat) return;
  const hi = d === 'u8' ? 255n : 4294967295n;
  for (let i = 0; i < values.length; i++) {
    const x = values[i]!;
    if (x < 0n || x > hi)
      throw new DTypeError(
        `${op}: value ${x} at index ${i} does not fit ${d} (outside 0 to ${hi}); casts with toDtype() wrap`,
      );
  }
}
