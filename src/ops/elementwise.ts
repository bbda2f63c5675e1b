// Element-wise ops: unary (float dtypes only), unary with scalar parameters (float only),
// broadcasting binary arithmetic and comparisons (every dtype), and where.
import { roundTo, type DType } from '../core/dtype.ts';
import { DTypeError, TensorError } from '../core/errors.ts';
import { broadcastShapes, type Shape } from '../core/layout.ts';
import { RawTensor } from '../device/raw-tensor.ts';
import { ALL_DTYPES, FLOATS, INDEX_DTYPES, dtypeIn, sameDType, sameDevice, sig } from '../backends/checks.ts';
import {
  BINARY_OPS,
  CMP_OPS,
  PARAM_UNARY_OPS,
  UNARY_OPS,
  type BinaryOp,
  type CmpOp,
  type ParamUnary,
  type UnaryOp,
} from '../core/op-types.ts';
import * as cpu from '../backends/cpu/elementwise.ts';
import * as gpu from '../backends/gpu/elementwise.ts';
import { defineOp } from './registry.ts';

export const unary = defineOp({
  name: 'unary',
  family: 'elementwise',
  summary: 'one float function of each element',
  variants: UNARY_OPS,
  dtypes: FLOATS,
  check: (x: RawTensor, op: UnaryOp): [RawTensor, UnaryOp] => {
    if (!(UNARY_OPS as readonly string[]).includes(op))
      throw new TensorError(`unary: unknown op '${String(op)}' (tensor ${sig(x)})`);
    x.check(op);
    dtypeIn(op, x, FLOATS);
    return [x, op];
  },
  cpu: cpu.unary,
  gpu: gpu.unary,
  grad: 'missing',
});

export const paramUnary = defineOp({
  name: 'paramUnary',
  family: 'elementwise',
  summary: 'a float function of each element with number parameters',
  variants: PARAM_UNARY_OPS,
  dtypes: FLOATS,
  check: (x: RawTensor, p: ParamUnary): [RawTensor, ParamUnary] => {
    if (!(PARAM_UNARY_OPS as readonly string[]).includes(p.op))
      throw new TensorError(`paramUnary: unknown op '${String(p.op)}' (tensor ${sig(x)})`);
    x.check(p.op);
    if (typeof p.a !== 'number' || typeof p.b !== 'number') {
      throw new TypeError(
        `${p.op}: parameters must be numbers, got ${typeof p.a} and ${typeof p.b} (tensor ${sig(x)})`,
      );
    }
    dtypeIn(p.op, x, FLOATS);
    return [x, p];
  },
  cpu: cpu.paramUnary,
  gpu: gpu.paramUnary,
  grad: 'missing',
});

/** the second operand checked against a: same device and dtype, or a number rounded to a's dtype */
function operand(op: string, a: RawTensor, b: RawTensor | number): { b: RawTensor | number; shape: Shape } {
  if (typeof b === 'number') return { b: roundTo(a.dtype, b), shape: a.layout.shape };
  if (!(b instanceof RawTensor))
    throw new TypeError(`${op}: the other operand must be a Tensor or a number, got ${typeof b} (tensor ${sig(a)})`);
  b.check(op);
  sameDevice(op, a, b);
  sameDType(op, a, b);
  return { b, shape: broadcastShapes(op, a.layout.shape, b.layout.shape) };
}

/** integer div truncates toward zero and x/0 is 0; u8/u32 wrap; i64 wraps at 64 bits */
export const binary = defineOp({
  name: 'binary',
  family: 'elementwise',
  summary: "broadcasting arithmetic; a number is a scalar of the tensor's dtype",
  variants: BINARY_OPS,
  dtypes: ALL_DTYPES,
  check: (op: BinaryOp, a: RawTensor, b: RawTensor | number): [BinaryOp, RawTensor, RawTensor | number, Shape] => {
    if (!(BINARY_OPS as readonly string[]).includes(op))
      throw new TensorError(`binary: unknown op '${String(op)}' (tensor ${sig(a)})`);
    a.check(op);
    dtypeIn(op, a, ALL_DTYPES);
    const o = operand(op, a, b);
    return [op, a, o.b, o.shape];
  },
  cpu: cpu.binary,
  gpu: gpu.binary,
  grad: 'missing',
});

/** u8 result, 1 where the comparison holds (NaN compares unequal to everything) */
export const compare = defineOp({
  name: 'compare',
  family: 'elementwise',
  summary: 'broadcasting comparison: u8, 1 where it holds (NaN compares unequal)',
  variants: CMP_OPS,
  dtypes: ALL_DTYPES,
  check: (op: CmpOp, a: RawTensor, b: RawTensor | number): [CmpOp, RawTensor, RawTensor | number, Shape] => {
    if (!(CMP_OPS as readonly string[]).includes(op))
      throw new TensorError(`compare: unknown op '${String(op)}' (tensor ${sig(a)})`);
    a.check(op);
    dtypeIn(op, a, ALL_DTYPES);
    const o = operand(op, a, b);
    return [op, a, o.b, o.shape];
  },
  cpu: cpu.compare,
  gpu: gpu.compare,
  grad: 'none',
});

/** cond ? a : b; a number takes the other operand's dtype, two numbers give f32 */
export const where = defineOp({
  name: 'where',
  family: 'elementwise',
  summary: 'cond ? a : b, broadcasting all three; cond u8/u32/i64',
  dtypes: ALL_DTYPES,
  check: (
    cond: RawTensor,
    a: RawTensor | number,
    b: RawTensor | number,
  ): [RawTensor, RawTensor | number, RawTensor | number, Shape, DType] => {
    cond.check('where');
    if (!(cond instanceof RawTensor)) throw new TypeError('where: cond must be a Tensor');
    for (const v of [a, b]) {
      if (typeof v !== 'number' && !(v instanceof RawTensor))
        throw new TypeError(`where: a and b must be Tensors or numbers, got ${typeof v} (cond ${sig(cond)})`);
    }
    if (!INDEX_DTYPES.includes(cond.dtype)) {
      throw new DTypeError(
        `where: cond dtype ${cond.dtype} not supported (cond ${sig(cond)}; supported: ${INDEX_DTYPES.join(', ')})`,
      );
    }
    const ts = [a, b].filter((v): v is RawTensor => v instanceof RawTensor);
    for (const t of ts) t.check('where');
    sameDevice('where', cond, ...ts);
    if (ts.length === 2) sameDType('where', ts[0]!, ts[1]!);
    const dtype: DType = ts[0]?.dtype ?? 'f32';
    let shape: Shape = cond.layout.shape;
    for (const t of ts) shape = broadcastShapes('where', shape, t.layout.shape);
    const av = typeof a === 'number' ? roundTo(dtype, a) : a;
    const bv = typeof b === 'number' ? roundTo(dtype, b) : b;
    return [cond, av, bv, shape, dtype];
  },
  cpu: cpu.where,
  gpu: gpu.where,
  grad: 'missing',
});
