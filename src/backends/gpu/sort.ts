// GPU argsort / sort (hip-src/sort.hip). The sorted dim is moved last and made contiguous, so
// the kernels see [rows, cols] rows; the results come back as the inverse view. By row length:
//   - up to BITONIC_MAX (and the bitonic kernel's shared-memory capacity): the bitonic network,
//     several short rows a block, one launch;
//   - up to 256 * 16 elements (less where a block's LDS is smaller, and for 64-bit keys on 48 KiB
//     devices): radix_rows, one block a row, every 8-bit digit pass in LDS, one launch;
//   - longer: a least-significant-digit pass per 8-bit digit over tiles of 4096 (2048 for
//     64-bit keys) elements: radix_counts counts every pass's digits of each row in one read,
//     then one radix_sweep a pass ranks each tile, finds where its digits start in the row by a
//     decoupled look-back over the row's earlier tiles, and writes the records to their places;
//     values and indices ping-pong through workspaces between passes. A memset, one counting
//     launch and one a pass (6 for f32) where a hist, scan and scatter kernel a pass took 12.
import type { Device } from '../../device/device.ts';
import type { DType } from '../../core/dtype.ts';
import { readEnv } from '../../core/config.ts';
import { RawTensor } from '../../device/raw-tensor.ts';
import { arg, type Dim3, type KernelArg } from '../../runtime/kernels.ts';
import { RADIX_ROW_ITEMS } from '../../runtime/kernel-sigs-sort.ts';
import { base, baseOrNull, offsetOf, offsetOrZero } from './launch.ts';
import {
  RADIX,
  checkRadixBlock,
  checkUnits,
  gridFor,
  keyBits,
  radixCountsLdsBytes,
  radixLdsBytes,
  rawBytes,
  rowsView,
} from './radix.ts';

const FILE = 'sort.hip';

/**
 * Rows up to this long take the bitonic kernel, longer ones the radix kernels. A block of the
 * radix kernels is 256 threads whatever the row, so short rows leave most of it idle through
 * every pass, where the bitonic kernel packs several rows into a block. Not measured yet:
 * ROCM_TENSOR_SORT_BITONIC_MAX (0 to 4096) overrides it, to compare the two on one shape.
 */
const BITONIC_MAX_DEFAULT = 256;
let bitonicMaxCache: number | null = null;
function bitonicMax(): number {
  if (bitonicMaxCache === null) {
    bitonicMaxCache = readEnv('ROCM_TENSOR_SORT_BITONIC_MAX') ?? BITONIC_MAX_DEFAULT;
  }
  return bitonicMaxCache;
}

const nextPow2 = (n: number): number => {
  let p = 1;
  while (p < n) p *= 2;
  return p;
};

// ---- bitonic: short rows ---------------------------------------------------------------------
/** bytes of one bitonic record in shared memory: key << 32 | index, or a u64 key and a u32 index */
const bitonicRecBytes = (d: DType): number => (rawBytes(d) === 8 ? 12 : 8);
/** records the bitonic kernel sorts in a block: 4096 and 2048, within every GPU's 48 KiB */
function bitonicCapacity(dev: Device, d: DType): number {
  let cap = rawBytes(d) === 8 ? 2048 : 4096;
  while (cap > 1 && cap * bitonicRecBytes(d) > dev.runtime.info.maxSharedMemoryPerBlock) cap /= 2;
  return cap;
}

function blocks(dev: Device, n: number): Dim3 {
  const info = dev.runtime.info;
  const cap = Math.min(info.maxGridDim[0], Math.max(1, info.multiprocessors) * 32);
  return [Math.max(1, Math.min(cap, n)), 1, 1];
}

function bitonicRows(
  c: RawTensor,
  rows: number,
  cols: number,
  d: KernelArg,
  idx: RawTensor,
  vals: RawTensor | null,
): void {
  const dev = c.device,
    k = dev.kernels,
    dt = c.dtype;
  const cap = nextPow2(cols);
  // a block of at least a wave; several short rows share one block's pass
  const block = Math.min(k.preferredBlockSize, Math.max(dev.runtime.info.warpSize, cap / 2));
  const per = Math.max(1, Math.floor((2 * block) / cap));
  k.launch(
    FILE,
    `sort_rows_${dt}`,
    blocks(dev, Math.ceil(rows / per)),
    [block, 1, 1],
    per * cap * bitonicRecBytes(dt),
    dev.stream,
    [
      base(idx),
      baseOrNull(vals),
      base(c),
      offsetOf(idx),
      offsetOrZero(vals),
      offsetOf(c),
      arg.u64(rows),
      arg.u64(cols),
      arg.u32(cap),
      arg.u32(per),
      d,
    ],
  );
}

// ---- radix: rows of one block ------------------------------------------------------------------
/** the most items a thread radix_rows can take on this device (its LDS grows with them) */
function rowItemsMax(dev: Device, d: DType): number {
  let best = 0;
  for (const i of RADIX_ROW_ITEMS)
    if (radixLdsBytes(dev, d, RADIX * i) <= dev.runtime.info.maxSharedMemoryPerBlock) best = i;
  return best;
}

function radixRows(
  op: string,
  c: RawTensor,
  rows: number,
  cols: number,
  d: KernelArg,
  idx: RawTensor,
  vals: RawTensor | null,
): void {
  const dev = c.device,
    dt = c.dtype;
  const items = RADIX_ROW_ITEMS.find((i) => RADIX * i >= cols)!;
  const lds = radixLdsBytes(dev, dt, RADIX * items);
  checkRadixBlock(op, c, lds);
  dev.kernels.launch(FILE, `radix_rows${items}_${dt}`, gridFor(dev, rows), [RADIX, 1, 1], lds, dev.stream, [
    base(idx),
    baseOrNull(vals),
    base(c),
    offsetOf(idx),
    offsetOrZero(vals),
    offsetOf(c),
    arg.u64(rows),
    arg.u64(cols),
    d,
  ]);
}

// ---- radix: long rows, a pass per digit --------------------------------------------------------
/** items a thread of radix_sweep (sort.hip ScatterItems): tiles of 4096, 2048 for 64-bit keys */
const scatterItems = (d: DType): number => (rawBytes(d) === 8 ? 8 : 16);

function radixLong(
  op: string,
  c: RawTensor,
  rows: number,
  cols: number,
  desc: boolean,
  idx: RawTensor,
  vals: RawTensor | null,
): void {
  const dev = c.device,
    k = dev.kernels,
    s = dev.stream,
    dt = c.dtype;
  const items = scatterItems(dt),
    tile = RADIX * items,
    tiles = Math.ceil(cols / tile);
  const units = rows * tiles,
    lds = radixLdsBytes(dev, dt, tile);
  checkRadixBlock(op, c, lds);
  checkUnits(op, c, units);
  const passes = keyBits(dt) / 8,
    n = rows * cols;
  const d = arg.u32(desc ? 1 : 0);
  const temps: RawTensor[] = [];
  const temp = (t: RawTensor): RawTensor => {
    temps.push(t);
    return t;
  };
  try {
    // sort.hip SweepWs: counts [rows][passes][256], the passes' tile counters (an even count of
    // words), the look-back status [rows * tiles][256] in u64 words; all zero to start
    const words = rows * passes * RADIX + 2 * Math.ceil(passes / 2) + 2 * units * RADIX;
    const ws = temp(RawTensor.empty([words], 'u32', dev));
    dev.runtime.memsetAsync(ws.storage.ptrAt(0), 0, words * 4, s);
    // values and indices between passes, two sets once there are three passes or more
    const pp = Array.from({ length: Math.min(passes - 1, 2) }, () => ({
      v: temp(RawTensor.empty([n], dt, dev)),
      i: temp(RawTensor.empty([n], 'u32', dev)),
    }));
    const grid = gridFor(dev, units),
      block: Dim3 = [RADIX, 1, 1];
    k.launch(FILE, `radix_counts_${dt}`, grid, block, radixCountsLdsBytes(dt), s, [
      base(ws),
      base(c),
      offsetOf(c),
      arg.u64(rows),
      arg.u64(cols),
      arg.u32(tiles),
      arg.u32(items),
      arg.u32(passes),
      d,
    ]);
    for (let p = 0; p < passes; p++) {
      const src = p === 0 ? null : pp[(p - 1) % 2]!;
      const ki = src ? src.v : c,
        ii = src ? src.i : null;
      const last = p === passes - 1;
      const ko = last ? vals : pp[p % 2]!.v,
        io = last ? idx : pp[p % 2]!.i;
      k.launch(FILE, `radix_sweep_${dt}`, grid, block, lds, s, [
        baseOrNull(ko),
        base(io),
        base(ki),
        baseOrNull(ii),
        base(ws),
        offsetOrZero(ko),
        offsetOf(io),
        offsetOf(ki),
        offsetOrZero(ii),
        arg.u64(rows),
        arg.u64(cols),
        arg.u32(tiles),
        arg.u32(p),
        arg.u32(passes),
        d,
      ]);
    }
  } finally {
    // queued work keeps them: the allocator is stream-ordered
    for (const t of temps) t.dispose();
  }
}

/** sorted positions (and values) of contiguous rows c [rows, cols] into idx (and vals) */
export function sortRows(
  op: string,
  c: RawTensor,
  rows: number,
  cols: number,
  desc: boolean,
  idx: RawTensor,
  vals: RawTensor | null,
): void {
  const dev = c.device,
    dt = c.dtype;
  const d = arg.u32(desc ? 1 : 0);
  if (cols <= bitonicMax() && cols <= bitonicCapacity(dev, dt)) {
    bitonicRows(c, rows, cols, d, idx, vals);
    return;
  }
  const itemsMax = rowItemsMax(dev, dt);
  if (cols <= RADIX * itemsMax) {
    radixRows(op, c, rows, cols, d, idx, vals);
    return;
  }
  radixLong(op, c, rows, cols, desc, idx, vals);
}

function run(
  op: string,
  x: RawTensor,
  dim: number,
  desc: boolean,
  withValues: boolean,
): { values: RawTensor | null; indices: RawTensor } {
  const dev = x.device;
  const { c, rows, cols, back } = rowsView(x, dim);
  const shape = c.layout.shape;
  const idx = RawTensor.empty(shape, 'u32', dev);
  const vals = withValues ? RawTensor.empty(shape, x.dtype, dev) : null;
  try {
    if (rows > 0) sortRows(op, c, rows, cols, desc, idx, vals);
  } catch (e) {
    idx.dispose();
    vals?.dispose();
    throw e;
  } finally {
    c.dispose();
  }
  return { values: vals ? back(vals) : null, indices: back(idx) };
}

export function argsort(x: RawTensor, dim: number, descending: boolean): RawTensor {
  return run('argsort', x, dim, descending, false).indices;
}

export function sort(x: RawTensor, dim: number, descending: boolean): { values: RawTensor; indices: RawTensor } {
  const r = run('sort', x, dim, descending, true);
  return { values: r.values!, indices: r.indices };
}
