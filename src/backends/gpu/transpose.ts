// Copies between views whose unit-stride dims differ (x.T.contiguous(), a batch of [r, c] ->
// [c, r], a contiguous tensor written into a transposed view): copy.hip's transpose_<w>, tiles
// through LDS with 16-byte loads and stores on both sides (hip-src/transpose.h). The per-element
// strided kernel would read one side a few bytes at a time and divide per element.
import { dtypeSize } from '../../core/dtype.ts';
import type { RawTensor } from '../../device/raw-tensor.ts';
import { arg } from '../../runtime/kernels.ts';
import { copyWidth } from '../../runtime/kernel-sigs.ts';
import { mergedDims } from './copy-dims.ts';

const FILE = 'copy.hip';
/** threads a block of transpose_<w>: the kernel's TP_THREADS */
const TP_THREADS = 256;
/** the tile's extent (elements) along i and j per element width (transpose.h's TpShape) */
const TILE: Record<number, { i: number; j: number }> = {
  1: { i: 256, j: 128 },
  2: { i: 128, j: 64 },
  4: { i: 64, j: 64 },
  8: { i: 32, j: 64 },
};
/** shorter sides than this stay with the strided kernel: a tile would be mostly empty */
const MIN_SIDE = 8;

/**
 * y[b*yB + i*yI + j] = x[b*xB + j*xJ + i] (strides in elements, from each view's offset): i runs
 * along src's unit-stride dim, j along dst's.
 */
export interface TransposeForm {
  readonly nI: number;
  readonly nJ: number;
  readonly batch: number;
  readonly yI: number;
  readonly xJ: number;
  readonly yB: number;
  readonly xB: number;
}

/**
 * dst and src (the same shape) in transpose form, or null: size-1 dims dropped, dims contiguous
 * in both merged, then one dim unit-stride in dst, another unit-stride in src, and at most one
 * more (the batch). A copy's dims may be visited in any order, so which dims these are does not
 * matter.
 */
export function transposeForm(
  shape: readonly number[],
  dStrides: readonly number[],
  sStrides: readonly number[],
): TransposeForm | null {
  const dims = mergedDims(shape, dStrides, sStrides);
  if (dims.length < 2 || dims.length > 3) return null;
  const u = dims.findIndex((x) => x.d === 1 && x.s !== 1);
  const v = dims.findIndex((x) => x.s === 1 && x.d !== 1);
  if (u < 0 || v < 0) return null;
  const j = dims[u]!,
    i = dims[v]!;
  if (i.n < MIN_SIDE || j.n < MIN_SIDE) return null;
  const b = dims.find((_, k) => k !== u && k !== v);
  return { nI: i.n, nJ: j.n, batch: b?.n ?? 1, yI: i.d, xJ: j.s, yB: b?.d ?? 0, xB: b?.s ?? 0 };
}

/** dst <- src through transpose_<w> (the views' offsets are the kernel's yOff, xOff) */
export function launchTranspose(dst: RawTensor, src: RawTensor, f: TransposeForm): void {
  const dev = dst.device;
  const es = dtypeSize(dst.dtype);
  const t = TILE[es]!;
  const tiles = Math.ceil(f.nI / t.i) * Math.ceil(f.nJ / t.j) * f.batch;
  const grid = Math.max(1, Math.min(tiles, dev.runtime.info.maxGridDim[0]));
  dev.kernels.launch(FILE, `transpose_${copyWidth(dst.dtype)}`, [grid, 1, 1], [TP_THREADS, 1, 1], 0, dev.stream, [
    arg.ptr(dst.storage.ptrAt(0)),
    arg.ptr(src.storage.ptrAt(0)),
    arg.i64(dst.layout.offset),
    arg.i64(src.layout.offset),
    arg.u64(f.nI),
    arg.u64(f.nJ),
    arg.u64(f.batch),
    arg.i64(f.yI),
    arg.i64(f.xJ),
    arg.i64(f.yB),
    arg.i64(f.xB),
  ]);
}
