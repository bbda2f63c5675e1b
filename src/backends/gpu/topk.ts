// GPU top-k (hip-src/topk.hip): the k largest or smallest elements along a dim, in order, with
// their u32 indices. The dim is moved last and made contiguous ([rows, cols] rows). For k up to
// TOPK_MAX (256), a block streams a slice of a row (16-byte loads where aligned) and keeps its
// best k by a bounded radix select (topk.hip). Few long rows are split over enough blocks to fill
// the device, and one block a row then selects from the slices' candidates: two launches, each
// element read once (on 132 multiprocessors, [64, 128256]: 8 slices a row of 16032, then 64
// rows of 400 candidates; one row of 128256: 32 slices of 4016, then 1600 candidates). Rows
// enough to fill the device take a block a row and one launch. Larger k take the sort path (sort.ts) and keep its
// first k: that is a full sort of the row, documented in the README, not a silent choice.
import type { Device } from '../../device/device.ts';
import type { DType } from '../../core/dtype.ts';
import { RawTensor } from '../../device/raw-tensor.ts';
import { arg } from '../../runtime/kernels.ts';
import { copyInto } from './copy.ts';
import { base, baseOrNull, offsetOf, offsetOrZero } from './launch.ts';
import { RADIX, TOPK_MAX, checkRadixBlock, checkUnits, gridFor, rowsView, topkItems, topkLdsBytes } from './radix.ts';
import { sortRows } from './sort.ts';

const FILE = 'topk.hip';

/**
 * Blocks a multiprocessor the plan counts on being resident at once: topk.hip asks NVIDIA's
 * compiler for registers that let 4 run (launch bounds), and its LDS (29 KiB for 32-bit
 * elements) lets as many run on a 128 KiB multiprocessor or more.
 */
const BLOCKS_PER_SM = 4;

/** slices are whole 16-byte vectors of every dtype, so slices of an aligned row stay aligned */
const SLICE_ALIGN = 16;

const roundUp = (n: number, m: number): number => Math.ceil(n / m) * m;

/**
 * Slices of a level over `cols`: one a row once the rows alone fill the device; else as many as
 * fill it (rows * slices up to multiprocessors * BLOCKS_PER_SM, so no block waits for a second
 * turn), but no slice shorter than a round of the kernel (256 * topkItems) where the row is
 * longer: fewer candidates, and the blocks' fixed cost spread over more elements.
 */
export function topkSlices(dev: Device, dt: DType, rows: number, cols: number): { slen: number; slices: number } {
  const target = dev.runtime.info.multiprocessors * BLOCKS_PER_SM;
  const most = Math.ceil(cols / (RADIX * topkItems(dt)));
  const want = rows >= target ? 1 : Math.max(1, Math.min(most, Math.floor(target / rows)));
  const slen = roundUp(Math.ceil(cols / want), SLICE_ALIGN);
  return { slen, slices: Math.ceil(cols / slen) };
}

/** the first k of each row of c [rows, cols], by the radix select in levels, into vals/idx [rows, k] */
function selectRows(
  c: RawTensor,
  rows: number,
  cols: number,
  k: number,
  largest: boolean,
  vals: RawTensor,
  idx: RawTensor,
): void {
  const dev = c.device,
    dt = c.dtype;
  const lds = topkLdsBytes(dev, dt);
  checkRadixBlock('topk', c, lds);
  let cur = c,
    curIdx: RawTensor | null = null,
    n = cols,
    ld = cols;
  const temps: RawTensor[] = [];
  try {
    for (;;) {
      const { slen, slices } = topkSlices(dev, dt, rows, n);
      checkUnits('topk', c, rows * slices);
      const last = slices === 1;
      // every slice but the last is longer than k: k candidates each, the last min(k, its
      // length); candidate rows padded to 16 elements, so each starts aligned
      const ocols = last ? k : (slices - 1) * k + Math.min(k, n - (slices - 1) * slen);
      const ostride = last ? k : roundUp(ocols, SLICE_ALIGN);
      const ov = last ? vals : RawTensor.empty([rows, ostride], dt, dev);
      const oi = last ? idx : RawTensor.empty([rows, ostride], 'u32', dev);
      if (!last) temps.push(ov, oi);
      dev.kernels.launch(FILE, `topk_${dt}`, gridFor(dev, rows * slices), [RADIX, 1, 1], lds, dev.stream, [
        base(ov),
        base(oi),
        base(cur),
        baseOrNull(curIdx),
        offsetOf(ov),
        offsetOf(oi),
        offsetOf(cur),
        offsetOrZero(curIdx),
        arg.u64(rows),
        arg.u64(n),
        arg.u64(ld),
        arg.u64(slen),
        arg.u64(ostride),
        arg.u32(k),
        arg.u32(largest ? 1 : 0),
      ]);
      if (last) return;
      cur = ov;
      curIdx = oi;
      n = ocols;
      ld = ostride;
    }
  } finally {
    // queued work keeps them: the allocator is stream-ordered
    for (const t of temps) t.dispose();
  }
}

/** k past TOPK_MAX: the stable sort of each row (descending for largest), its first k copied out */
function sortedRows(
  c: RawTensor,
  rows: number,
  cols: number,
  k: number,
  largest: boolean,
  vals: RawTensor,
  idx: RawTensor,
): void {
  const dev = c.device;
  const sv = RawTensor.empty([rows, cols], c.dtype, dev),
    si = RawTensor.empty([rows, cols], 'u32', dev);
  try {
    sortRows('topk', c, rows, cols, largest, si, sv);
    const fv = sv.narrow(1, 0, k),
      fi = si.narrow(1, 0, k);
    try {
      copyInto(vals, fv);
      copyInto(idx, fi);
    } finally {
      fv.dispose();
      fi.dispose();
    }
  } finally {
    sv.dispose();
    si.dispose();
  }
}

export function topk(
  x: RawTensor,
  dim: number,
  k: number,
  largest: boolean,
): { values: RawTensor; indices: RawTensor } {
  const dev = x.device;
  const { c, rows, cols, back } = rowsView(x, dim);
  // the moved shape with k along the last dim (a 0-d x keeps its shape: k is 1 there)
  const shape = x.rank === 0 ? [] : [...c.layout.shape.slice(0, -1), k];
  const vals = RawTensor.empty(shape, x.dtype, dev),
    idx = RawTensor.empty(shape, 'u32', dev);
  try {
    if (rows > 0 && k > 0) {
      const v2 = vals.viewAs([rows, k]),
        i2 = idx.viewAs([rows, k]);
      try {
        if (k <= TOPK_MAX) selectRows(c, rows, cols, k, largest, v2, i2);
        else sortedRows(c, rows, cols, k, largest, v2, i2);
      } finally {
        v2.dispose();
        i2.dispose();
      }
    }
  } catch (e) {
    vals.dispose();
    idx.dispose();
    throw e;
  } finally {
    c.dispose();
  }
  return { values: back(vals), indices: back(idx) };
}
