// GPU top-k (hip-src/topk.hip): the k largest or smallest elements along a dim, in order, with
// their u32 indices. The dim is moved last and made contiguous ([rows, cols] rows). For k up to
// TOPK_MAX (256), blocks select each slice's best k by a radix select, and rows longer than a
// slice are reduced in levels: every slice's best k become a row of candidates (values and
// original indices) for the next launch, until one slice holds a row (a 128256-element row with
// k = 50: 63 slices of 2048, then 2 slices of the 3150 candidates, then one of 100). Larger k
// take the sort path (sort.ts) and keep its first k: that is a full sort of the row, documented
// in the README, not a silent choice.
import type { Device } from '../../device.ts';
import { Tensor } from '../../tensor.ts';
import { asDevicePtr } from '../../runtime/gpu.ts';
import { arg, type KernelArg } from '../../runtime/kernels.ts';
import { copyInto } from '../copy.ts';
import { base, offsetOf } from './reduce.ts';
import { RADIX, TOPK_MAX, checkRadixBlock, checkUnits, gridFor, rowsView, topkLdsBytes } from './radix.ts';
import { sortRows } from './sort.ts';

const FILE = 'topk.hip';
const NULL_PTR: KernelArg = arg.ptr(asDevicePtr(0n));

/**
 * Items a thread (slices of 256 * items) for a level over `cols`: 1024-element slices for rows
 * that fit one, and where 2048-element slices would give fewer blocks than the device has
 * multiprocessors (a few long rows: more, smaller slices keep it busy, at the cost of more
 * candidates); 2048 otherwise. Unmeasured.
 */
function levelItems(dev: Device, rows: number, cols: number): 4 | 8 {
  if (cols <= 4 * RADIX) return 4;
  return rows * Math.ceil(cols / (8 * RADIX)) < dev.runtime.info.multiprocessors ? 4 : 8;
}

/** the first k of each row of c [rows, cols], by the radix select in levels, into vals/idx [rows, k] */
function selectRows(c: Tensor, rows: number, cols: number, k: number, largest: boolean, vals: Tensor, idx: Tensor): void {
  const dev = c.device, dt = c.dtype;
  const lds = topkLdsBytes(dev, dt);
  checkRadixBlock('topk', c, lds);
  let cur = c, curIdx: Tensor | null = null, n = cols;
  const temps: Tensor[] = [];
  try {
    for (;;) {
      const items = levelItems(dev, rows, n), slice = RADIX * items, slices = Math.ceil(n / slice);
      checkUnits('topk', c, rows * slices);
      const last = slices === 1;
      // every slice but the last is full: k candidates each, the last min(k, its length)
      const ocols = last ? k : (slices - 1) * k + Math.min(k, n - (slices - 1) * slice);
      const ov = last ? vals : Tensor.empty([rows, ocols], dt, dev);
      const oi = last ? idx : Tensor.empty([rows, ocols], 'u32', dev);
      if (!last) temps.push(ov, oi);
      dev.kernels.launch(FILE, `topk${items}_${dt}`, gridFor(dev, rows * slices), [RADIX, 1, 1], lds, dev.stream, [
        base(ov), base(oi), base(cur), curIdx ? base(curIdx) : NULL_PTR,
        offsetOf(ov), offsetOf(oi), offsetOf(cur), curIdx ? offsetOf(curIdx) : arg.i64(0),
        arg.u64(rows), arg.u64(n), arg.u64(ocols), arg.u32(k), arg.u32(largest ? 1 : 0)]);
      if (last) return;
      cur = ov; curIdx = oi; n = ocols;
    }
  } finally {
    // queued work keeps them: the allocator is stream-ordered
    for (const t of temps) t.dispose();
  }
}

/** k past TOPK_MAX: the stable sort of each row (descending for largest), its first k copied out */
function sortedRows(c: Tensor, rows: number, cols: number, k: number, largest: boolean, vals: Tensor, idx: Tensor): void {
  const dev = c.device;
  const sv = Tensor.empty([rows, cols], c.dtype, dev), si = Tensor.empty([rows, cols], 'u32', dev);
  try {
    sortRows('topk', c, rows, cols, largest, si, sv);
    const fv = sv.narrow(1, 0, k), fi = si.narrow(1, 0, k);
    try {
      copyInto(vals, fv);
      copyInto(idx, fi);
    } finally { fv.dispose(); fi.dispose(); }
  } finally { sv.dispose(); si.dispose(); }
}

export function topk(x: Tensor, dim: number, k: number, largest: boolean): { values: Tensor; indices: Tensor } {
  const dev = x.device;
  const { c, rows, cols, back } = rowsView(x, dim);
  // the moved shape with k along the last dim (a 0-d x keeps its shape: k is 1 there)
  const shape = x.rank === 0 ? [] : [...c.layout.shape.slice(0, -1), k];
  const vals = Tensor.empty(shape, x.dtype, dev), idx = Tensor.empty(shape, 'u32', dev);
  try {
    if (rows > 0 && k > 0) {
      const v2 = vals.reshape([rows, k]), i2 = idx.reshape([rows, k]);
      try {
        if (k <= TOPK_MAX) selectRows(c, rows, cols, k, largest, v2, i2);
        else sortedRows(c, rows, cols, k, largest, v2, i2);
      } finally { v2.dispose(); i2.dispose(); }
    }
  } catch (e) { vals.dispose(); idx.dispose(); throw e; } finally { c.dispose(); }
  return { values: back(vals), indices: back(idx) };
}
