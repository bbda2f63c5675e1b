// GPU path for element-wise ops (hip-src/unary.hip, binary.hip). When every operand is dense
// with the output's shape, the contiguous kernel runs (vectors when aligned, one block per tile
// through Kernels.launchContig); anything
// else (views, broadcasting, number operands) runs the _strided kernel with a Geom record, in
// which a broadcast dim or a number (a one-element tensor) has stride 0. The dispatcher hands
// over validated arguments: output shape already broadcast, numbers already rounded to the dtype.
import { DTYPE_INFO, type DType } from '../../core/dtype.ts';
import { sameShape, type Shape } from '../../core/layout.ts';
import { RawTensor } from '../../device/raw-tensor.ts';
import type { Device } from '../../device/device.ts';
import { arg, type KernelArg } from '../../runtime/kernels.ts';
import { computeSpec, type StridedOperand } from '../../runtime/kernel-sigs.ts';
import { ALL_DTYPES, FLOATS } from '../checks.ts';
import {
  BINARY_OPS,
  CMP_OPS,
  PARAM_UNARY_OPS,
  UNARY_OPS,
  type BinaryOp,
  type CmpOp,
  type ParamUnary,
  type UnaryOp,
} from '../../core/op-types.ts';
import { mapUnroll, contigPerThread, eachGeom, operandOf, scalarOn, zeroStrides } from './copy.ts';
import { rowsArgs } from './bcast-rows.ts';

/** rows: the broadcast-rows kernel (bcast-rows.ts), where the family and dtype have one */
interface Names {
  readonly contig: string;
  readonly strided: string;
  readonly rows: string | null;
}
/** kernel names per (op, dtype), built once so the hot path only indexes */
function names<O extends string>(
  ops: readonly O[],
  dtypes: readonly DType[],
  prefix: string,
  rowDTypes: readonly DType[] = [],
): Record<O, Record<DType, Names>> {
  const out = {} as Record<O, Record<DType, Names>>;
  for (const op of ops) {
    const per = {} as Record<DType, Names>;
    for (const d of dtypes)
      per[d] = {
        contig: `${prefix}_${op}_${d}`,
        strided: `${prefix}_${op}_${d}_strided`,
        rows: rowDTypes.includes(d) ? `${prefix}_${op}_${d}_rows` : null,
      };
    out[op] = per;
  }
  return out;
}
const UNARY_NAMES = names<UnaryOp | ParamUnary['op']>([...UNARY_OPS, ...PARAM_UNARY_OPS], FLOATS, 'unary');
const BINARY_NAMES = names<BinaryOp>(BINARY_OPS, ALL_DTYPES, 'binary', FLOATS);
const CMP_NAMES = names<CmpOp>(CMP_OPS, ALL_DTYPES, 'cmp');
const WHERE_NAMES = names<'u8'>(['u8'], ALL_DTYPES, 'where').u8;

const UNARY_FILE = 'unary.hip';
const BINARY_FILE = 'binary.hip';

/** vectors a thread in unary.hip's contiguous kernels: UnaryUnroll there */
export function unaryUnroll(op: UnaryOp | ParamUnary['op'], d: DType, dev: Device): number {
  if (d === 'f64') return 1;
  if (op === 'gelu' && size(d) === 2) return 4;
  const u = mapUnroll(dev);
  return op === 'sin' || op === 'cos' ? Math.min(2, u) : u;
}
const size = (d: DType): number => DTYPE_INFO[d].size;
const ZERO = arg.i64(0);

const ptr = (t: RawTensor): KernelArg => arg.ptr(t.storage.ptrAt(0));
const off = (t: RawTensor): KernelArg => arg.i64(t.layout.offset);
const geomOf = (t: RawTensor): StridedOperand => ({ strides: t.layout.strides, offset: t.layout.offset });

/** y = f(x) with `extra` scalar arguments after the contiguous or strided ones */
function map1(x: RawTensor, n: Names, unroll: number, extra: readonly KernelArg[]): RawTensor {
  const dev = x.device;
  const y = RawTensor.empty(x.layout.shape, x.dtype, dev);
  const count = y.numel;
  if (count === 0) return y;
  try {
    const k = dev.kernels,
      s = dev.stream,
      yp = ptr(y),
      xp = ptr(x);
    if (x.layout.isContiguous()) {
      const args = [yp, xp, ZERO, off(x), arg.u64(count)];
      for (const e of extra) args.push(e);
      k.launchContig(UNARY_FILE, n.contig, count, contigPerThread(size(x.dtype), unroll), s, args);
    } else {
      eachGeom(n.contig, x.layout.shape, [geomOf(y), geomOf(x)], (g, work) => {
        k.launch1d(UNARY_FILE, n.strided, work, s, [yp, xp, arg.bytes(g), ...extra]);
      });
    }
  } catch (e) {
    y.dispose();
    throw e;
  }
  return y;
}

/** x is f32/f64/f16/bf16; the result has x's shape and dtype */
export function unary(x: RawTensor, op: UnaryOp): RawTensor {
  return map1(x, UNARY_NAMES[op][x.dtype], unaryUnroll(op, x.dtype, x.device), []);
}

/** x is f32/f64/f16/bf16; the result has x's shape and dtype */
export function paramUnary(x: RawTensor, p: ParamUnary): RawTensor {
  const c = computeSpec(x.dtype);
  return map1(x, UNARY_NAMES[p.op][x.dtype], unaryUnroll(p.op, x.dtype, x.device), [arg[c](p.a), arg[c](p.b)]);
}

/**
 * y = f(a, b) into a new `outDType` tensor of outShape. A number b becomes a one-element tensor
 * read with stride 0 (the kernels have no scalar forms), disposed once the kernel is queued.
 */
function map2(n: Names, a: RawTensor, b: RawTensor | number, outShape: Shape, outDType: DType): RawTensor {
  const dev = a.device;
  const y = RawTensor.empty(outShape, outDType, dev);
  const count = y.numel;
  if (count === 0) return y;
  const bt = typeof b === 'number' ? scalarOn(dev, a.dtype, b) : b;
  try {
    const k = dev.kernels,
      s = dev.stream,
      yp = ptr(y),
      ap = ptr(a),
      bp = ptr(bt);
    if (
      bt === b &&
      a.layout.isContiguous() &&
      bt.layout.isContiguous() &&
      sameShape(a.layout.shape, outShape) &&
      sameShape(bt.layout.shape, outShape)
    ) {
      const per = contigPerThread(Math.max(size(a.dtype), size(outDType)), mapUnroll(dev));
      k.launchContig(BINARY_FILE, n.contig, count, per, s, [yp, ap, bp, ZERO, off(a), off(bt), arg.u64(count)]);
    } else {
      const aOp = operandOf(a, outShape),
        bOp = bt === b ? operandOf(bt, outShape) : zeroStrides(outShape.length);
      const rows =
        n.rows === null
          ? null
          : rowsArgs(y, [
              { t: a, op: aOp },
              { t: bt, op: bOp },
            ]);
      if (n.rows !== null && rows !== null) {
        k.launchContig(BINARY_FILE, n.rows, count, contigPerThread(size(a.dtype), mapUnroll(dev)), s, [
          yp,
          ap,
          bp,
          ZERO,
          arg.i64(aOp.offset),
          arg.i64(bOp.offset),
          ...rows,
        ]);
        return y;
      }
      eachGeom(n.contig, outShape, [geomOf(y), aOp, bOp], (g, work) => {
        k.launch1d(BINARY_FILE, n.strided, work, s, [yp, ap, bp, arg.bytes(g)]);
      });
    }
  } catch (e) {
    y.dispose();
    throw e;
  } finally {
    if (bt !== b) bt.dispose();
  }
  return y;
}

/**
 * A float tensor plus, minus or times a number is one affine kernel (x*1 + b, x*a + -0): the
 * same IEEE result as the binary kernel (x*1 is exact, adding -0 changes nothing, and a fused
 * multiply-add rounds once), but it reads one operand and keeps the vector path.
 */
function scalarAffine(op: BinaryOp, a: RawTensor, b: number): RawTensor | null {
  if (op !== 'add' && op !== 'sub' && op !== 'mul') return null;
  if (a.dtype !== 'f32' && a.dtype !== 'f64' && a.dtype !== 'f16' && a.dtype !== 'bf16') return null;
  const scale = op === 'mul' ? b : 1;
  const shift = op === 'add' ? b : op === 'sub' ? -b : -0;
  return paramUnary(a, { op: 'affine', a: scale, b: shift });
}

/** b: a tensor of a's dtype or a scalar rounded to it; both broadcast to outShape */
export function binary(op: BinaryOp, a: RawTensor, b: RawTensor | number, outShape: Shape): RawTensor {
  if (typeof b === 'number') {
    const r = scalarAffine(op, a, b);
    if (r) return r;
  }
  return map2(BINARY_NAMES[op][a.dtype], a, b, outShape, a.dtype);
}

/** like binary; the result is u8 */
export function compare(op: CmpOp, a: RawTensor, b: RawTensor | number, outShape: Shape): RawTensor {
  return map2(CMP_NAMES[op][a.dtype], a, b, outShape, 'u8');
}

/** cond u8/u32/i64; a, b tensors of dtype or scalars rounded to it; all broadcast to outShape */
export function where(
  cond: RawTensor,
  a: RawTensor | number,
  b: RawTensor | number,
  outShape: Shape,
  dtype: DType,
): RawTensor {
  const dev = cond.device;
  const y = RawTensor.empty(outShape, dtype, dev);
  const count = y.numel;
  if (count === 0) return y;
  // the kernels take a u8 condition: a wider one becomes cond != 0 first
  const c = cond.dtype === 'u8' ? cond : compare('ne', cond, 0, cond.layout.shape);
  const at = typeof a === 'number' ? scalarOn(dev, dtype, a) : a;
  const bt = typeof b === 'number' ? scalarOn(dev, dtype, b) : b;
  try {
    const k = dev.kernels,
      s = dev.stream,
      n = WHERE_NAMES[dtype];
    const yp = ptr(y),
      cp = ptr(c),
      ap = ptr(at),
      bp = ptr(bt);
    const dense = (t: RawTensor) => t.layout.isContiguous() && sameShape(t.layout.shape, outShape);
    if (at === a && bt === b && dense(c) && dense(at) && dense(bt)) {
      // the u8 condition is never the widest operand
      k.launchContig(BINARY_FILE, n.contig, count, contigPerThread(size(dtype), mapUnroll(dev)), s, [
        yp,
        cp,
        ap,
        bp,
        ZERO,
        off(c),
        off(at),
        off(bt),
        arg.u64(count),
      ]);
    } else {
      const opnd = (t: RawTensor, given: RawTensor | number) =>
        t === given ? operandOf(t, outShape) : zeroStrides(outShape.length);
      eachGeom(n.contig, outShape, [geomOf(y), operandOf(c, outShape), opnd(at, a), opnd(bt, b)], (g, work) => {
        k.launch1d(BINARY_FILE, n.strided, work, s, [yp, cp, ap, bp, arg.bytes(g)]);
      });
    }
  } catch (e) {
    y.dispose();
    throw e;
  } finally {
    if (c !== cond) c.dispose();
    if (at !== a) at.dispose();
    if (bt !== b) bt.dispose();
  }
  return y;
}
