// GPU argsort / sort (hip-src/sort.hip). The sorted dim is moved last and made contiguous, so
// the kernels see [rows, cols] rows; the results come back as the inverse view. Rows that fit a
// block's shared memory are sorted there in one launch; longer rows are padded to a power of 2
// in a workspace, sorted chunk by chunk in shared memory and merged by bitonic steps in global
// memory (one launch a step), then written out.
import type { Device } from '../../device.ts';
import { Tensor } from '../../tensor.ts';
import { asDevicePtr } from '../../runtime/gpu.ts';
import { arg, type Dim3, type KernelArg } from '../../runtime/kernels.ts';
import { sortKeyKind, type SortKeyKind } from '../../runtime/kernel-sigs-sort.ts';
import { contiguous } from '../copy.ts';
import { base, offsetOf } from './reduce.ts';

const FILE = 'sort.hip';
const NULL_PTR: KernelArg = arg.ptr(asDevicePtr(0n));
/** bytes of one record in shared memory: key << 32 | index, or a u64 key and a u32 index */
const REC_BYTES: Record<SortKeyKind, number> = { k32: 8, k64: 12 };
/** records a block sorts in shared memory: 32 KiB and 24 KiB, under every GPU's 48 KiB */
const CAP_MAX: Record<SortKeyKind, number> = { k32: 4096, k64: 2048 };

const nextPow2 = (n: number): number => { let p = 1; while (p < n) p *= 2; return p; };

/** the largest row the shared-memory kernel takes on this device, for this key width */
export function sortRowCapacity(dev: Device, kind: SortKeyKind): number {
  let cap = CAP_MAX[kind];
  while (cap > 1 && cap * REC_BYTES[kind] > dev.runtime.info.maxSharedMemoryPerBlock) cap /= 2;
  return cap;
}

function blocks(dev: Device, n: number): Dim3 {
  const info = dev.runtime.info;
  const cap = Math.min(info.maxGridDim[0], Math.max(1, info.multiprocessors) * 32);
  return [Math.max(1, Math.min(cap, n)), 1, 1];
}

/** sorted positions (and values) of contiguous rows c [rows, cols] into idx (and vals) */
function sortRows(c: Tensor, rows: number, cols: number, desc: boolean, idx: Tensor, vals: Tensor | null): void {
  const dev = c.device, k = dev.kernels, s = dev.stream, dt = c.dtype;
  const kind = sortKeyKind(dt), capMax = sortRowCapacity(dev, kind);
  const rec = REC_BYTES[kind];
  const vy = vals ? base(vals) : NULL_PTR, vOff = vals ? offsetOf(vals) : arg.i64(0);
  const d = arg.u32(desc ? 1 : 0);
  if (cols <= capMax) {
    const cap = nextPow2(cols);
    // a block of at least a wave; several short rows share one block's pass
    const block = Math.min(k.preferredBlockSize, Math.max(dev.runtime.info.warpSize, cap / 2));
    const per = Math.max(1, Math.floor((2 * block) / cap));
    k.launch(FILE, `sort_rows_${dt}`, blocks(dev, Math.ceil(rows / per)), [block, 1, 1], per * cap * rec, s, [
      base(idx), vy, base(c), offsetOf(idx), vOff, offsetOf(c), arg.u64(rows), arg.u64(cols), arg.u32(cap), arg.u32(per), d]);
    return;
  }
  const cap = capMax, npow = nextPow2(cols), total = rows * npow;
  // raw u64 words in an i64 tensor; the u32 index array only for 64-bit keys
  const w = Tensor.empty([total], 'i64', dev);
  const wi = kind === 'k64' ? Tensor.empty([total], 'u32', dev) : null;
  try {
    const ws = [base(w), wi ? base(wi) : NULL_PTR];
    const block: Dim3 = [k.preferredBlockSize, 1, 1];
    k.launch(FILE, `sort_chunks_${dt}`, blocks(dev, total / cap), block, cap * rec, s, [
      ...ws, base(c), offsetOf(c), arg.u64(rows), arg.u64(cols), arg.u64(npow), arg.u32(cap), d]);
    for (let st = 2 * cap; st <= npow; st *= 2) {
      for (let j = st / 2; j >= cap; j /= 2) {
        k.launch1d(FILE, `sort_merge_${kind}`, total / 2, s, [...ws, arg.u64(total), arg.u64(npow), arg.u64(st), arg.u64(j)]);
      }
      k.launch(FILE, `sort_mergelds_${kind}`, blocks(dev, total / cap), block, cap * rec, s, [
        ...ws, arg.u64(total), arg.u64(npow), arg.u64(st), arg.u32(cap)]);
    }
    k.launch1d(FILE, `sort_emit_${dt}`, rows * cols, s, [
      base(idx), vy, ...ws, base(c), offsetOf(idx), vOff, offsetOf(c), arg.u64(rows), arg.u64(cols), arg.u64(npow)]);
  } finally {
    // queued work keeps them: the allocator is stream-ordered
    w.dispose();
    wi?.dispose();
  }
}

function run(x: Tensor, dim: number, desc: boolean, withValues: boolean): { values: Tensor | null; indices: Tensor } {
  const dev = x.device;
  const last = Math.max(x.rank - 1, 0);
  const inPlace = dim === last || x.rank === 0;
  const moved = inPlace ? x.view(x.layout) : x.transpose(dim, last);
  const c = contiguous(moved);
  moved.dispose();
  const shape = c.layout.shape;
  const cols = x.rank === 0 ? 1 : shape[last]!;
  const rows = cols === 0 ? 0 : c.numel / cols;
  const idx = Tensor.empty(shape, 'u32', dev);
  const vals = withValues ? Tensor.empty(shape, x.dtype, dev) : null;
  try {
    if (rows > 0) sortRows(c, rows, cols, desc, idx, vals);
  } catch (e) { idx.dispose(); vals?.dispose(); throw e; } finally { c.dispose(); }
  if (inPlace) return { values: vals, indices: idx };
  const back = (t: Tensor): Tensor => { const v = t.transpose(dim, last); t.dispose(); return v; };
  return { values: vals ? back(vals) : null, indices: back(idx) };
}

export function argsort(x: Tensor, dim: number, descending: boolean): Tensor {
  return run(x, dim, descending, false).indices;
}

export function sort(x: Tensor, dim: number, descending: boolean): { values: Tensor; indices: Tensor } {
  const r = run(x, dim, descending, true);
  return { values: r.values!, indices: r.indices };
}
