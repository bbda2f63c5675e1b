// CPU reference for element-wise ops. Floats are computed in f64 and rounded once on store;
// u8/u32 arithmetic wraps; i64 goes through BigInt so values above 2^53 stay exact.
import { DTYPE_INFO, fromNumbers as hostFromNumbers, getElem, type DType, type HostArray } from '../../core/dtype.ts';
import { numel, type Shape } from '../../core/layout.ts';
import type { RawTensor } from '../../device/raw-tensor.ts';
import type { BinaryOp, CmpOp, ParamUnary, UnaryOp } from '../../core/op-types.ts';
import { fromNumbers, fromRaw, readNumbers } from './util.ts';

/** t's values broadcast to `shape`, as numbers in row-major order */
function numbersAt(t: RawTensor, shape: Shape): Float64Array {
  const idx = t.layout.broadcastAs(shape).indices();
  const host = t.storage.host;
  const out = new Float64Array(idx.length);
  for (let i = 0; i < idx.length; i++) out[i] = getElem(t.dtype, host, idx[i]!);
  return out;
}

/** t's raw elements broadcast to `shape` (exact for every dtype) */
function rawAt(t: RawTensor, shape: Shape): HostArray {
  const idx = t.layout.broadcastAs(shape).indices();
  const out = new DTYPE_INFO[t.dtype].hostArray(idx.length);
  const host = t.storage.host as Float64Array,
    o = out as Float64Array;
  if (out instanceof BigInt64Array) {
    const h = t.storage.host as BigInt64Array;
    for (let i = 0; i < idx.length; i++) out[i] = h[idx[i]!]!;
  } else for (let i = 0; i < idx.length; i++) o[i] = host[idx[i]!]!;
  return out;
}

/**
 * erf in double precision. |x| < 3: erf(x) = 2/sqrt(pi) e^{-x^2} sum_n (2x^2)^n x / (2n+1)!!,
 * a series of positive terms (no cancellation). |x| >= 3: erfc from its continued fraction
 * erfc(x) = e^{-x^2}/sqrt(pi) / (x + (1/2)/(x + 1/(x + (3/2)/(x + ...)))), evaluated backwards.
 */
export function erf(x: number): number {
  if (Number.isNaN(x)) return x;
  const ax = Math.abs(x);
  if (ax >= 6) return Math.sign(x); // erfc(6) ~ 2e-17, below half an ulp of 1
  if (ax < 3) {
    const x2 = 2 * x * x;
    let term = x,
      sum = x;
    for (let n = 1; n < 200 && Math.abs(term) > 1e-17 * Math.abs(sum); n++) {
      term *= x2 / (2 * n + 1);
      sum += term;
    }
    return (2 / Math.sqrt(Math.PI)) * Math.exp(-x * x) * sum;
  }
  let t = ax;
  for (let k = 120; k >= 1; k--) t = ax + k / 2 / t;
  const erfc = Math.exp(-ax * ax) / (Math.sqrt(Math.PI) * t);
  return Math.sign(x) * (1 - erfc);
}

const SQRT_2_OVER_PI = Math.sqrt(2 / Math.PI);

/** half to even, like torch.round */
function roundHalfEven(x: number): number {
  if (!Number.isFinite(x)) return x;
  const f = Math.floor(x),
    d = x - f;
  if (d < 0.5) return f;
  if (d > 0.5) return f + 1;
  return f % 2 === 0 ? f : f + 1;
}

const UNARY: Record<UnaryOp, (x: number) => number> = {
  exp: Math.exp,
  log: Math.log,
  sin: Math.sin,
  cos: Math.cos,
  tanh: Math.tanh,
  neg: (x) => -x,
  recip: (x) => 1 / x,
  sqr: (x) => x * x,
  sqrt: Math.sqrt,
  gelu: (x) => 0.5 * x * (1 + Math.tanh(SQRT_2_OVER_PI * (x + 0.044715 * x * x * x))),
  geluErf: (x) => 0.5 * x * (1 + erf(x / Math.SQRT2)),
  erf,
  // NaN passes through, as in torch.relu
  relu: (x) => (x > 0 || Number.isNaN(x) ? x : 0),
  silu: (x) => x / (1 + Math.exp(-x)),
  abs: Math.abs,
  ceil: Math.ceil,
  floor: Math.floor,
  round: roundHalfEven,
  // 0 and NaN map to themselves
  sign: (x) => (x > 0 ? 1 : x < 0 ? -1 : x),
  sigmoid: (x) => 1 / (1 + Math.exp(-x)),
};

export function unary(x: RawTensor, op: UnaryOp): RawTensor {
  const f = UNARY[op];
  const v = readNumbers(x);
  for (let i = 0; i < v.length; i++) v[i] = f(v[i]!);
  return fromNumbers(v, x.layout.shape, x.dtype, x.device);
}

function paramFn(p: ParamUnary): (x: number) => number {
  const { a, b } = p;
  switch (p.op) {
    case 'affine':
      return (x) => x * a + b;
    case 'powf':
      return (x) => Math.pow(x, a);
    case 'elu':
      return (x) => (x > 0 || Number.isNaN(x) ? x : a * Math.expm1(x));
    // NaN propagates; lo > hi gives hi everywhere (torch.clamp does the same)
    case 'clamp':
      return (x) => (Number.isNaN(x) ? x : Math.min(Math.max(x, a), b));
    case 'leakyRelu':
      return (x) => (x > 0 || Number.isNaN(x) ? x : x * a);
  }
}

export function paramUnary(x: RawTensor, p: ParamUnary): RawTensor {
  const f = paramFn(p);
  const v = readNumbers(x);
  for (let i = 0; i < v.length; i++) v[i] = f(v[i]!);
  return fromNumbers(v, x.layout.shape, x.dtype, x.device);
}

// ---- binary -----------------------------------------------------------------------------------
const I64_MIN = -(2n ** 63n);

function binaryI64(op: BinaryOp, x: bigint, y: bigint): bigint {
  switch (op) {
    case 'add':
      return BigInt.asIntN(64, x + y);
    case 'sub':
      return BigInt.asIntN(64, x - y);
    case 'mul':
      return BigInt.asIntN(64, x * y);
    // BigInt division truncates toward zero; x/0 -> 0 (our choice for every integer dtype)
    case 'div':
      return y === 0n ? 0n : x === I64_MIN && y === -1n ? I64_MIN : x / y;
    case 'maximum':
      return x > y ? x : y;
    case 'minimum':
      return x < y ? x : y;
  }
}

function binaryUint(op: BinaryOp, dtype: 'u8' | 'u32', x: number, y: number): number {
  switch (op) {
    case 'add':
      return x + y;
    case 'sub':
      return x - y;
    // Math.imul keeps the low 32 bits exactly, where x*y in f64 could lose them
    case 'mul':
      return dtype === 'u32' ? Math.imul(x, y) >>> 0 : x * y;
    case 'div':
      return y === 0 ? 0 : Math.trunc(x / y);
    case 'maximum':
      return Math.max(x, y);
    case 'minimum':
      return Math.min(x, y);
  }
}

function binaryFloat(op: BinaryOp, x: number, y: number): number {
  switch (op) {
    case 'add':
      return x + y;
    case 'sub':
      return x - y;
    case 'mul':
      return x * y;
    case 'div':
      return x / y;
    // NaN propagates, as torch.maximum/minimum do (Math.max/min already do)
    case 'maximum':
      return Math.max(x, y);
    case 'minimum':
      return Math.min(x, y);
  }
}

/** b is a tensor of a's dtype (already validated) or a scalar already rounded to that dtype */
export function binary(op: BinaryOp, a: RawTensor, b: RawTensor | number, outShape: Shape): RawTensor {
  const dtype = a.dtype,
    n = numel(outShape);
  if (dtype === 'i64') {
    const x = rawAt(a, outShape) as BigInt64Array;
    const y = typeof b === 'number' ? null : (rawAt(b, outShape) as BigInt64Array);
    const s = typeof b === 'number' ? BigInt(b) : 0n;
    const out = new BigInt64Array(n);
    for (let i = 0; i < n; i++) out[i] = binaryI64(op, x[i]!, y ? y[i]! : s);
    return fromRaw(out, outShape, dtype, a.device);
  }
  const x = numbersAt(a, outShape);
  const y = typeof b === 'number' ? null : numbersAt(b, outShape);
  const s = typeof b === 'number' ? b : 0;
  const out = new Float64Array(n);
  if (dtype === 'u8' || dtype === 'u32')
    for (let i = 0; i < n; i++) out[i] = binaryUint(op, dtype, x[i]!, y ? y[i]! : s);
  else for (let i = 0; i < n; i++) out[i] = binaryFloat(op, x[i]!, y ? y[i]! : s);
  return fromNumbers(out, outShape, dtype, a.device);
}

function cmp<T extends number | bigint>(op: CmpOp, x: T, y: T): boolean {
  switch (op) {
    case 'eq':
      return x === y;
    case 'ne':
      return x !== y;
    case 'lt':
      return x < y;
    case 'le':
      return x <= y;
    case 'gt':
      return x > y;
    case 'ge':
      return x >= y;
  }
}

/** u8 result: 1 where the comparison holds */
export function compare(op: CmpOp, a: RawTensor, b: RawTensor | number, outShape: Shape): RawTensor {
  const n = numel(outShape);
  const out = new Uint8Array(n);
  if (a.dtype === 'i64') {
    const x = rawAt(a, outShape) as BigInt64Array;
    const y = typeof b === 'number' ? null : (rawAt(b, outShape) as BigInt64Array);
    const s = typeof b === 'number' ? BigInt(b) : 0n;
    for (let i = 0; i < n; i++) out[i] = cmp(op, x[i]!, y ? y[i]! : s) ? 1 : 0;
  } else {
    const x = numbersAt(a, outShape);
    const y = typeof b === 'number' ? null : numbersAt(b, outShape);
    const s = typeof b === 'number' ? b : 0;
    for (let i = 0; i < n; i++) out[i] = cmp(op, x[i]!, y ? y[i]! : s) ? 1 : 0;
  }
  return fromRaw(out, outShape, 'u8', a.device);
}

/** a and b are tensors of `dtype` or scalars already rounded to it; cond is u8/u32/i64 */
export function where(
  cond: RawTensor,
  a: RawTensor | number,
  b: RawTensor | number,
  outShape: Shape,
  dtype: DType,
): RawTensor {
  const n = numel(outShape);
  const c = numbersAt(cond, outShape);
  const src = (v: RawTensor | number): { raw: HostArray; step: number } =>
    typeof v === 'number' ? { raw: hostFromNumbers(dtype, [v]), step: 0 } : { raw: rawAt(v, outShape), step: 1 };
  const A = src(a),
    B = src(b);
  const out = new DTYPE_INFO[dtype].hostArray(n);
  if (out instanceof BigInt64Array) {
    const ra = A.raw as BigInt64Array,
      rb = B.raw as BigInt64Array;
    for (let i = 0; i < n; i++) out[i] = c[i] !== 0 ? ra[i * A.step]! : rb[i * B.step]!;
  } else {
    const o = out as Float64Array,
      ra = A.raw as Float64Array,
      rb = B.raw as Float64Array;
    for (let i = 0; i < n; i++) o[i] = c[i] !== 0 ? ra[i * A.step]! : rb[i * B.step]!;
  }
  return fromRaw(out, outShape, dtype, cond.device);
}
