// Row copies (copy_rows in hip-src/copy.hip, index_rows in hip-src/index-rows.hip): which views
// are rows of contiguous elements, the widest unit every row start is aligned to (16-byte
// vectors where possible), and the launch shape of one group of threads per row.
import type { Device } from '../../device/device.ts';
import { DTYPE_INFO } from '../../core/dtype.ts';
import type { RawTensor } from '../../device/raw-tensor.ts';
import { mergedDims } from './copy-dims.ts';
import { groupGrid } from './launch.ts';
import type { Dim3 } from '../../runtime/kernels.ts';
import type { DevicePtr } from '../../runtime/gpu.ts';
import type { RowUnit } from '../../runtime/kernel-sigs-indexing.ts';

/** one (size, stride) per run of dims that merge (size-1 dims dropped), outermost first */
export function mergedRuns(shape: readonly number[], strides: readonly number[]): { n: number; s: number }[] {
  const out: { n: number; s: number }[] = [];
  for (let i = shape.length - 1; i >= 0; i--) {
    const n = shape[i]!;
    if (n === 1) continue;
    const last = out[0];
    if (last && strides[i] === last.s * last.n) last.n *= n;
    else out.unshift({ n, s: strides[i]! });
  }
  return out;
}

/** the row kernels take a row's length in units as a 32-bit count below 2^31 */
export const ROW_LEN_MAX = 2 ** 31 - 1;

/** units a thread of a row group moves per pass: the kernels' batch of 4 loads in flight */
const UNITS_PER_THREAD = 4;

/** one view pair as `rows` rows of `len` contiguous elements, `dStride`/`sStride` apart */
export interface RowForm {
  readonly rows: number;
  readonly len: number;
  readonly dStride: number;
  readonly sStride: number;
}

/**
 * dst and src (the same shape) as rows of contiguous elements, or null: size-1 dims dropped,
 * dims contiguous in both merged (as packGeom does), and at most two dims left, the inner one
 * unit-stride in both. A dense pair is one row.
 */
export function rowForm(
  shape: readonly number[],
  dStrides: readonly number[],
  sStrides: readonly number[],
): RowForm | null {
  const dims = mergedDims(shape, dStrides, sStrides);
  if (dims.length === 0) return { rows: 1, len: 1, dStride: 1, sStride: 1 };
  const inner = dims[0]!;
  if (inner.d !== 1 || inner.s !== 1 || dims.length > 2) return null;
  const outer = dims[1];
  return outer
    ? { rows: outer.n, len: inner.n, dStride: outer.d, sStride: outer.s }
    : { rows: 1, len: inner.n, dStride: inner.n, sStride: inner.n };
}

/**
 * The widest unit (16, 8, 4, 2 or 1 bytes, never narrower than an element) that divides every
 * base address and every byte offset, stride and length given: rows then start on unit
 * boundaries and hold whole units. `counts` are in elements of `elemBytes`.
 */
export function rowUnitBytes(elemBytes: number, ptrs: readonly DevicePtr[], counts: readonly number[]): number {
  for (const u of [16, 8, 4, 2, 1]) {
    if (u < elemBytes) break;
    if (ptrs.every((p) => (p as bigint) % BigInt(u) === 0n) && counts.every((c) => (Math.abs(c) * elemBytes) % u === 0))
      return u;
  }
  return elemBytes;
}

export const unitName = (bytes: number): RowUnit => `b${bytes}` as RowUnit;

/** grid, block and group size for `rows` rows of `lenUnits` units: the smallest power-of-two
 *  group that moves a row in UNITS_PER_THREAD passes (up to the whole block); the grid is
 *  reduce.ts's groupGrid */
export function rowLaunch(dev: Device, rows: number, lenUnits: number): { grid: Dim3; block: Dim3; group: number } {
  const block = dev.kernels.preferredBlockSize;
  let group = 1;
  while (group < block && group * UNITS_PER_THREAD < lenUnits) group *= 2;
  return groupGrid(dev, rows, block, group);
}

/** How rows of x go to rows of y: the widest unit (bytes) every row start, stride and length is
 *  aligned to; the offsets, the given row strides and the row length in that unit; the launch.
 *  Null when a row is too long for the kernels' 32-bit length (the caller takes its per-element
 *  kernel). */
export interface RowPlan {
  readonly unit: number;
  readonly yOff: number;
  readonly xOff: number;
  readonly strides: readonly number[];
  readonly len: number;
  readonly grid: Dim3;
  readonly block: Dim3;
  readonly group: number;
}
export function rowPlan(
  y: RawTensor,
  x: RawTensor,
  rows: number,
  len: number,
  strides: readonly number[],
): RowPlan | null {
  const es = DTYPE_INFO[x.dtype].size;
  const yOff = y.layout.offset,
    xOff = x.layout.offset;
  const unit = rowUnitBytes(es, [y.storage.ptrAt(0), x.storage.ptrAt(0)], [yOff, xOff, ...strides, len]);
  const per = unit / es,
    n = len / per;
  if (n > ROW_LEN_MAX) return null;
  return {
    unit,
    yOff: yOff / per,
    xOff: xOff / per,
    strides: strides.map((t) => t / per),
    len: n,
    ...rowLaunch(y.device, rows, n),
  };
}

/** a strided copy recast in units wider than its elements: outermost-first shape and strides
 *  and offsets, all in units of `unit` bytes */
export interface WideCopy {
  readonly unit: 2 | 4 | 8 | 16;
  readonly shape: number[];
  readonly dStrides: number[];
  readonly sStrides: number[];
  readonly dOff: number;
  readonly sOff: number;
}

/**
 * A copy whose innermost merged dim is unit-stride in both dst and src (a transpose of rows, as
 * attention's [b, h, t, d] <-> [b, t, h, d]), in the widest unit up to 16 bytes that divides
 * both base addresses, both offsets, every stride and the inner length; null when no unit is
 * wider than the element. The strided kernel divides its index per dim per element, so a 2-byte
 * element copied 16 bytes at a time costs an eighth of the divisions and moves in 16-byte loads.
 */
export function widenedCopy(
  shape: readonly number[],
  dStrides: readonly number[],
  sStrides: readonly number[],
  offsets: readonly [number, number],
  elemBytes: number,
  ptrs: readonly DevicePtr[],
): WideCopy | null {
  const dims = mergedDims(shape, dStrides, sStrides);
  const inner = dims[0];
  if (!inner || inner.d !== 1 || inner.s !== 1) return null;
  const counts = [inner.n, offsets[0], offsets[1], ...dims.slice(1).flatMap((m) => [m.d, m.s])];
  const unit = rowUnitBytes(elemBytes, ptrs, counts);
  if (unit <= elemBytes) return null;
  const k = unit / elemBytes;
  const outer = dims.slice(1).reverse();
  return {
    unit: unit as 2 | 4 | 8 | 16,
    shape: [...outer.map((m) => m.n), inner.n / k],
    dStrides: [...outer.map((m) => m.d / k), 1],
    sStrides: [...outer.map((m) => m.s / k), 1],
    dOff: offsets[0] / k,
    sOff: offsets[1] / k,
  };
}
