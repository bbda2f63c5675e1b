// CPU reference for element-wise ops. Floats are computed in f64 and rounded once on store;
// u8/u32 arithmetic wraps; i64 goes through BigInt so values above 2^53 stay exact. Operands of
// any layout are walked run by run (cpu/util.ts), with no index list and no f64 copy of a whole
// operand: f32 and f64 binary ops loop over the typed arrays directly (the f64 result of two f32
// values rounds to the same f32 as the f32 operation), other dtypes go CHUNK elements at a time
// through f64 buffers.
import { fromNumbers as hostFromNumbers, type DType, type HostArray } from '../../core/dtype.ts';
import { contiguousStrides, numel, type Shape } from '../../core/layout.ts';
import type { RawTensor } from '../../device/raw-tensor.ts';
import type { BinaryOp, CmpOp, ParamUnary, UnaryOp } from '../../core/op-types.ts';
import { CHUNK, forEachRun, fromRaw, gather, outArray, scatter, walk } from './util.ts';
import { expF32Scalar } from './fast-math.ts';
import { binaryF32, expF32Wasm, type ArithOp } from './wasm-kernels.ts';
import { cpuExact } from './mode.ts';

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

/** each unary op on one f64 value (the reference's definitions, shared by fused ops' references) */
export const UNARY: Record<UnaryOp, (x: number) => number> = {
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

/** out (contiguous, x's shape and out's dtype) = f(x) element by element, through f64 chunks */
function mapChunks(x: RawTensor, out: HostArray, outDtype: DType, f: (buf: Float64Array, len: number) => void): void {
  const host = x.storage.host,
    dtype = x.dtype;
  const w = walk(x.layout.shape, [x.layout.strides]);
  const st = w.strides[0]![w.shape.length - 1]!;
  const buf = new Float64Array(Math.min(CHUNK, x.numel));
  let p = 0;
  forEachRun(w, [x.layout.offset], (offs, len) => {
    for (let c = 0; c < len; c += CHUNK) {
      const m = Math.min(CHUNK, len - c);
      gather(dtype, host, offs[0]! + c * st, st, buf, 0, m);
      f(buf, m);
      scatter(outDtype, buf, 0, out, p, m);
      p += m;
    }
  });
}

export function unary(x: RawTensor, op: UnaryOp): RawTensor {
  const n = x.numel,
    dtype = x.dtype;
  const out = outArray(dtype, n);
  if (n > 0) {
    if (op === 'exp' && dtype === 'f32' && !cpuExact()) {
      // table-driven exp straight from the f32 storage (cpu/fast-math.ts: within 4e-16 before the
      // rounding), in SIMD where WebAssembly runs
      const w = walk(x.layout.shape, [x.layout.strides]);
      const st = w.strides[0]![w.shape.length - 1]!;
      let p = 0;
      forEachRun(w, [x.layout.offset], (offs, len) => {
        const src = x.storage.host as Float32Array,
          o = out as Float32Array;
        if (!expF32Wasm(src, offs[0]!, st, o, p, len)) expF32Scalar(src, offs[0]!, st, o, p, len);
        p += len;
      });
    } else {
      const f = UNARY[op];
      mapChunks(x, out, dtype, (buf, len) => {
        for (let i = 0; i < len; i++) buf[i] = f(buf[i]!);
      });
    }
  }
  return fromRaw(out, x.layout.shape, dtype, x.device);
}

function paramFn(p: ParamUnary): (x: number) => number {
  const { a, b } = p;
  switch (p.op) {
    case 'affine':
      return (x) => x * a + b;
    case 'powf':
      return (x) => x ** a;
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
  const out = outArray(x.dtype, x.numel);
  if (x.numel > 0) {
    if (p.op === 'affine') {
      const { a, b } = p;
      mapChunks(x, out, x.dtype, (buf, len) => {
        for (let i = 0; i < len; i++) buf[i] = buf[i]! * a + b;
      });
    } else {
      const f = paramFn(p);
      mapChunks(x, out, x.dtype, (buf, len) => {
        for (let i = 0; i < len; i++) buf[i] = f(buf[i]!);
      });
    }
  }
  return fromRaw(out, x.layout.shape, x.dtype, x.device);
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

type Num = Float32Array | Float64Array;

/** o[oo + i] = x[xo + i xs] op y[yo + i ys] for i < len, on f32 or f64 arrays of one type */
function binaryRun(
  op: BinaryOp,
  x: Num,
  xo: number,
  xs: number,
  y: Num,
  yo: number,
  ys: number,
  o: Num,
  oo: number,
  len: number,
): void {
  if (xs === 1 && ys === 1) {
    switch (op) {
      case 'add':
        for (let i = 0; i < len; i++) o[oo + i] = x[xo + i]! + y[yo + i]!;
        return;
      case 'sub':
        for (let i = 0; i < len; i++) o[oo + i] = x[xo + i]! - y[yo + i]!;
        return;
      case 'mul':
        for (let i = 0; i < len; i++) o[oo + i] = x[xo + i]! * y[yo + i]!;
        return;
      case 'div':
        for (let i = 0; i < len; i++) o[oo + i] = x[xo + i]! / y[yo + i]!;
        return;
    }
  } else if (xs === 1 && ys === 0) {
    const c = y[yo]!;
    switch (op) {
      case 'add':
        for (let i = 0; i < len; i++) o[oo + i] = x[xo + i]! + c;
        return;
      case 'sub':
        for (let i = 0; i < len; i++) o[oo + i] = x[xo + i]! - c;
        return;
      case 'mul':
        for (let i = 0; i < len; i++) o[oo + i] = x[xo + i]! * c;
        return;
      case 'div':
        for (let i = 0; i < len; i++) o[oo + i] = x[xo + i]! / c;
        return;
    }
  }
  switch (op) {
    case 'add':
      for (let i = 0; i < len; i++) o[oo + i] = x[xo + i * xs]! + y[yo + i * ys]!;
      return;
    case 'sub':
      for (let i = 0; i < len; i++) o[oo + i] = x[xo + i * xs]! - y[yo + i * ys]!;
      return;
    case 'mul':
      for (let i = 0; i < len; i++) o[oo + i] = x[xo + i * xs]! * y[yo + i * ys]!;
      return;
    case 'div':
      for (let i = 0; i < len; i++) o[oo + i] = x[xo + i * xs]! / y[yo + i * ys]!;
      return;
    // NaN propagates, as torch.maximum/minimum do (Math.max/min already do)
    case 'maximum':
      for (let i = 0; i < len; i++) o[oo + i] = Math.max(x[xo + i * xs]!, y[yo + i * ys]!);
      return;
    case 'minimum':
      for (let i = 0; i < len; i++) o[oo + i] = Math.min(x[xo + i * xs]!, y[yo + i * ys]!);
      return;
  }
}

/** bx[i] = bx[i] op by[i] in f64, for the chunked dtypes (f16, bf16) */
function binaryFloatChunk(op: BinaryOp, bx: Float64Array, by: Float64Array, len: number): void {
  switch (op) {
    case 'add':
      for (let i = 0; i < len; i++) bx[i] = bx[i]! + by[i]!;
      return;
    case 'sub':
      for (let i = 0; i < len; i++) bx[i] = bx[i]! - by[i]!;
      return;
    case 'mul':
      for (let i = 0; i < len; i++) bx[i] = bx[i]! * by[i]!;
      return;
    default:
      for (let i = 0; i < len; i++) bx[i] = binaryFloat(op, bx[i]!, by[i]!);
  }
}

/** the joint walk of the output (contiguous outShape) and the operands broadcast to it */
function jointWalk(outShape: Shape, ts: readonly (RawTensor | null)[]) {
  const strides = [
    contiguousStrides(outShape),
    ...ts.map((t) => (t ? t.layout.broadcastAs(outShape).strides : [...outShape].fill(0))),
  ];
  const w = walk(outShape, strides);
  const r = w.shape.length - 1;
  return { w, st: w.strides.map((s) => s[r]!), bases: [0, ...ts.map((t) => (t ? t.layout.offset : 0))] };
}

/** b is a tensor of a's dtype (already validated) or a scalar already rounded to that dtype */
export function binary(op: BinaryOp, a: RawTensor, b: RawTensor | number, outShape: Shape): RawTensor {
  const dtype = a.dtype,
    n = numel(outShape);
  const out = outArray(dtype, n);
  if (n === 0) return fromRaw(out, outShape, dtype, a.device);
  const bt = typeof b === 'number' ? null : b;
  const { w, st, bases } = jointWalk(outShape, [a, bt]);
  const ha = a.storage.host;
  if (dtype === 'i64') {
    const x = ha as BigInt64Array,
      y = bt ? (bt.storage.host as BigInt64Array) : BigInt64Array.of(BigInt(b as number));
    const o = out as BigInt64Array;
    forEachRun(w, bases, (offs, len) => {
      const oo = offs[0]!,
        xo = offs[1]!,
        yo = offs[2]!;
      for (let i = 0; i < len; i++) o[oo + i] = binaryI64(op, x[xo + i * st[1]!]!, y[yo + i * st[2]!]!);
    });
  } else if (dtype === 'f32' || dtype === 'f64') {
    const x = ha as Num;
    const y = bt
      ? (bt.storage.host as Num)
      : dtype === 'f32'
        ? Float32Array.of(b as number)
        : Float64Array.of(b as number);
    // f32 runs read in order (or against one value): the SIMD loop, where it runs
    const simd = dtype === 'f32' && op !== 'maximum' && op !== 'minimum' && st[1] === 1 && (st[2] === 1 || st[2] === 0);
    forEachRun(w, bases, (offs, len) => {
      if (
        simd &&
        len >= 64 &&
        binaryF32(
          op as ArithOp,
          x as Float32Array,
          offs[1]!,
          st[2] === 1 ? (y as Float32Array) : null,
          offs[2]!,
          y[offs[2]!]!,
          out as Float32Array,
          offs[0]!,
          len,
        )
      )
        return;
      binaryRun(op, x, offs[1]!, st[1]!, y, offs[2]!, st[2]!, out as Num, offs[0]!, len);
    });
  } else {
    const hb = bt ? bt.storage.host : null,
      s = typeof b === 'number' ? b : 0;
    const m0 = Math.min(CHUNK, n);
    const bx = new Float64Array(m0),
      by = new Float64Array(m0).fill(s);
    const uint = dtype === 'u8' || dtype === 'u32';
    forEachRun(w, bases, (offs, len) => {
      for (let c = 0; c < len; c += CHUNK) {
        const m = Math.min(CHUNK, len - c);
        gather(dtype, ha, offs[1]! + c * st[1]!, st[1]!, bx, 0, m);
        if (hb) gather(dtype, hb, offs[2]! + c * st[2]!, st[2]!, by, 0, m);
        if (uint) for (let i = 0; i < m; i++) bx[i] = binaryUint(op, dtype, bx[i]!, by[i]!);
        else binaryFloatChunk(op, bx, by, m);
        scatter(dtype, bx, 0, out, offs[0]! + c, m);
      }
    });
  }
  return fromRaw(out, outShape, dtype, a.device);
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
  const out = outArray('u8', n) as Uint8Array;
  if (n === 0) return fromRaw(out, outShape, 'u8', a.device);
  const bt = typeof b === 'number' ? null : b;
  const { w, st, bases } = jointWalk(outShape, [a, bt]);
  if (a.dtype === 'i64') {
    const x = a.storage.host as BigInt64Array,
      y = bt ? (bt.storage.host as BigInt64Array) : BigInt64Array.of(BigInt(b as number));
    forEachRun(w, bases, (offs, len) => {
      for (let i = 0; i < len; i++)
        out[offs[0]! + i] = cmp(op, x[offs[1]! + i * st[1]!]!, y[offs[2]! + i * st[2]!]!) ? 1 : 0;
    });
  } else {
    const dtype = a.dtype,
      ha = a.storage.host,
      hb = bt ? bt.storage.host : null;
    const m0 = Math.min(CHUNK, n);
    const bx = new Float64Array(m0),
      by = new Float64Array(m0).fill(typeof b === 'number' ? b : 0);
    forEachRun(w, bases, (offs, len) => {
      for (let c = 0; c < len; c += CHUNK) {
        const m = Math.min(CHUNK, len - c),
          o = offs[0]! + c;
        gather(dtype, ha, offs[1]! + c * st[1]!, st[1]!, bx, 0, m);
        if (hb) gather(dtype, hb, offs[2]! + c * st[2]!, st[2]!, by, 0, m);
        for (let i = 0; i < m; i++) out[o + i] = cmp(op, bx[i]!, by[i]!) ? 1 : 0;
      }
    });
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
  const out = outArray(dtype, n);
  if (n === 0) return fromRaw(out, outShape, dtype, cond.device);
  const at = typeof a === 'number' ? null : a,
    bt = typeof b === 'number' ? null : b;
  const { w, st, bases } = jointWalk(outShape, [cond, at, bt]);
  // scalars as one element of the dtype's host array, read with stride 0
  const ra = (at ? at.storage.host : hostFromNumbers(dtype, [a as number])) as Float64Array,
    rb = (bt ? bt.storage.host : hostFromNumbers(dtype, [b as number])) as Float64Array;
  const c = cond.storage.host as Float64Array;
  const big = cond.dtype === 'i64';
  const o = out as Float64Array;
  forEachRun(w, bases, (offs, len) => {
    const oo = offs[0]!,
      co = offs[1]!,
      ao = offs[2]!,
      bo = offs[3]!;
    for (let i = 0; i < len; i++) {
      const ci = c[co + i * st[1]!]!;
      const take = big ? (ci as unknown as bigint) !== 0n : ci !== 0;
      o[oo + i] = take ? ra[ao + i * st[2]!]! : rb[bo + i * st[3]!]!;
    }
  });
  return fromRaw(out, outShape, dtype, cond.device);
}
