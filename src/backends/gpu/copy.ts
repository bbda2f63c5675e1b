// GPU copies and fills (hip-src/copy.hip), plus the helpers every elementwise GPU op shares:
// eachGeom (strided launches of any rank), scalarOn (a number as a one-element device tensor)
// and contigPerThread (the grid of a contiguous launch).
// Dense-to-dense copies are a device-to-device memcpy; views that are rows of contiguous
// elements on both sides (cat, sliceSet, narrow) go through copy_rows_<unit>, 16 bytes a load
// where the rows are aligned; views whose unit-stride dims differ (transposes, batched or not)
// through the tiled transpose_<w> (transpose.ts); everything else goes by element width through
// copy_strided_<w>, so one kernel serves every dtype of that width, in units of up to 16 bytes
// where the innermost dim is unit-stride on both sides (widenedCopy in rows.ts).
import { DTYPE_INFO, numberToBf16Bits, numberToF16Bits, roundTo, type DType } from '../../core/dtype.ts';
import { ShapeError } from '../../core/errors.ts';
import { numel, type Shape } from '../../core/layout.ts';
import type { Device } from '../../device/device.ts';
import { RawTensor, contiguousVia, reshapeVia } from '../../device/raw-tensor.ts';
import { arg, type KernelArg } from '../../runtime/kernels.ts';
import { GEOM_MAX_RANK, copyWidth, packGeom, type StridedOperand } from '../../runtime/kernel-sigs.ts';
import { ALL_DTYPES } from '../checks.ts';
import { rowForm, rowPlan, unitName, widenedCopy, type RowForm } from './rows.ts';
import { launchTranspose, transposeForm } from './transpose.ts';

const FILE = 'copy.hip';

/** kernel names built once, not per launch */
const FILL_NAMES = Object.fromEntries(
  ALL_DTYPES.map((d) => [d, { contig: `fill_${d}`, strided: `fill_${d}_strided` }]),
) as Record<DType, { contig: string; strided: string }>;
const COPY_NAMES = Object.fromEntries(ALL_DTYPES.map((d) => [d, `copy_strided_${copyWidth(d)}`])) as Record<
  DType,
  string
>;
/** copy_strided by unit width, for copies widenedCopy recasts */
const WIDE_NAMES = new Map([2, 4, 8, 16].map((u) => [u, `copy_strided_${unitName(u)}`]));
const ROW_NAMES = new Map([1, 2, 4, 8, 16].map((u) => [u, `copy_rows_${unitName(u)}`]));

/**
 * Calls launch(geom, numel) for a strided kernel over `shape`. A shape that still has more than
 * GEOM_MAX_RANK dims after packGeom merges what it can is split along its outermost non-trivial
 * dim, one launch per slice (rare: only views of rank > 8 that no merge can flatten).
 */
export function eachGeom(
  op: string,
  shape: Shape,
  operands: readonly StridedOperand[],
  launch: (geom: Uint8Array, numel: number) => void,
): void {
  let geom: Uint8Array | null = null;
  try {
    geom = packGeom(op, shape, operands);
  } catch (e) {
    if (!(e instanceof ShapeError) || shape.length <= GEOM_MAX_RANK) throw e;
  }
  if (geom) {
    launch(geom, numel(shape));
    return;
  }
  const d = shape.findIndex((n) => n > 1);
  const rest = shape.filter((_, i) => i !== d);
  for (let i = 0; i < shape[d]!; i++) {
    eachGeom(
      op,
      rest,
      operands.map((o) => ({ strides: o.strides.filter((_, j) => j !== d), offset: o.offset + i * o.strides[d]! })),
      launch,
    );
  }
}

/** vectors a thread takes in the contiguous kernels of hip-src/elementwise.h: RT_UNROLL there */
export const mapUnroll = (dev: Device): number => dev.tuning.mapUnroll;

/** elements a thread of a contiguous elementwise kernel handles, for Kernels.launchContig:
 *  16-byte vectors of the widest operand (hip-src/elementwise.h), `unroll` of them */
export const contigPerThread = (widestBytes: number, unroll: number): number => (16 / widestBytes) * unroll;

/** a tensor's layout as a Geom operand: broadcast to `shape` when given (stride 0 on new dims) */
export function operandOf(t: RawTensor, shape?: Shape): StridedOperand {
  const l = shape && shape !== t.layout.shape ? t.layout.broadcastAs(shape) : t.layout;
  return { strides: l.strides, offset: l.offset };
}

/** a number as a one-element tensor of dtype on dev, for kernels that only read tensors; its
 *  Geom operand is all zero strides. The caller disposes it once the kernel is queued. */
export function scalarOn(dev: Device, dtype: DType, value: number): RawTensor {
  const t = RawTensor.empty([1], dtype, dev);
  constSet(t, value);
  return t;
}
export const zeroStrides = (rank: number): StridedOperand => ({ strides: new Array<number>(rank).fill(0), offset: 0 });

/** the fill kernel's value argument: the element itself for f32/f64/i64, else a u32 (f16/bf16
 *  as their bit pattern), after rounding the way the CPU reference does */
function fillValue(d: DType, value: number): KernelArg {
  const v = roundTo(d, value);
  switch (d) {
    case 'f32':
      return arg.f32(v);
    case 'f64':
      return arg.f64(v);
    // roundTo truncates but does not wrap i64: wrap like a BigInt64Array store
    case 'i64':
      return arg.i64(Number.isSafeInteger(v) ? v : BigInt.asIntN(64, BigInt(v)));
    case 'f16':
      return arg.u32(numberToF16Bits(value));
    case 'bf16':
      return arg.u32(numberToBf16Bits(value));
    default:
      return arg.u32(v);
  }
}

/** every element of the view x := value (rounded to x's dtype) */
export function constSet(x: RawTensor, value: number): void {
  const n = x.numel;
  if (n === 0) return;
  const dev = x.device,
    l = x.layout,
    v = fillValue(x.dtype, value);
  const base = arg.ptr(x.storage.ptrAt(0));
  const names = FILL_NAMES[x.dtype];
  if (l.isContiguous()) {
    dev.kernels.launch1d(FILE, names.contig, n, dev.stream, [base, arg.i64(l.offset), arg.u64(n), v]);
    return;
  }
  eachGeom('constSet', l.shape, [{ strides: l.strides, offset: l.offset }], (g, work) => {
    dev.kernels.launch1d(FILE, names.strided, work, dev.stream, [base, arg.bytes(g), v]);
  });
}

/** dst (any view) <- src (any view, same shape and dtype, same device); broadcast sources work */
export function copyInto(dst: RawTensor, src: RawTensor): void {
  const n = dst.numel;
  if (n === 0) return;
  const dev = dst.device,
    dl = dst.layout,
    sl = src.layout;
  if (dl.isContiguous() && sl.isContiguous()) {
    dev.runtime.copyDtoDAsync(
      dst.storage.ptrAt(dl.offset),
      src.storage.ptrAt(sl.offset),
      n * DTYPE_INFO[dst.dtype].size,
      dev.stream,
    );
    return;
  }
  const rows = rowForm(dl.shape, dl.strides, sl.strides);
  if (rows && copyRows(dst, src, rows)) return;
  const tp = transposeForm(dl.shape, dl.strides, sl.strides);
  if (tp) {
    launchTranspose(dst, src, tp);
    return;
  }
  const yp = dst.storage.ptrAt(0),
    xp = src.storage.ptrAt(0);
  const y = arg.ptr(yp),
    x = arg.ptr(xp);
  const wide = widenedCopy(dl.shape, dl.strides, sl.strides, [dl.offset, sl.offset], DTYPE_INFO[dst.dtype].size, [
    yp,
    xp,
  ]);
  const name = wide ? WIDE_NAMES.get(wide.unit)! : COPY_NAMES[dst.dtype];
  const geo = wide ?? { shape: dl.shape, dStrides: dl.strides, sStrides: sl.strides, dOff: dl.offset, sOff: sl.offset };
  eachGeom(
    'copy',
    geo.shape,
    [
      { strides: geo.dStrides, offset: geo.dOff },
      { strides: geo.sStrides, offset: geo.sOff },
    ],
    (g, work) => {
      dev.kernels.launch1d(FILE, name, work, dev.stream, [y, x, arg.bytes(g)]);
    },
  );
}

/** dst <- src as rows (copy_rows_<unit>); false when a row is too long for the kernel's
 *  32-bit length, and the caller takes the strided kernel */
function copyRows(dst: RawTensor, src: RawTensor, f: RowForm): boolean {
  const r = rowPlan(dst, src, f.rows, f.len, [f.dStride, f.sStride]);
  if (!r) return false;
  dst.device.kernels.launch(FILE, ROW_NAMES.get(r.unit)!, r.grid, r.block, 0, dst.device.stream, [
    arg.ptr(dst.storage.ptrAt(0)),
    arg.ptr(src.storage.ptrAt(0)),
    arg.i64(r.yOff),
    arg.i64(r.xOff),
    arg.u64(f.rows),
    arg.u64(r.len),
    arg.i64(r.strides[0]!),
    arg.i64(r.strides[1]!),
    arg.u32(r.group),
  ]);
  return true;
}

/** x as a new view when it is contiguous, else a contiguous copy */
export const contiguous = (x: RawTensor): RawTensor => contiguousVia(x, copyInto);

/** x with another shape (same element count): a view where the layout allows, else a copy */
export const reshaped = (x: RawTensor, shape: readonly number[]): RawTensor => reshapeVia(x, shape, copyInto);
