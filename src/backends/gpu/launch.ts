// What the GPU launches share: the launch shape of the row kernels (softmax, norms, reductions,
// row copies) and the pointer-and-offset arguments every kernel takes for an operand.
import { dtypeSize, type DType } from '../../core/dtype.ts';
import type { Device } from '../../device/device.ts';
import type { RawTensor } from '../../device/raw-tensor.ts';
import { NULL_PTR } from '../../runtime/gpu.ts';
import { arg, type Dim3, type KernelArg } from '../../runtime/kernels.ts';

/** 16-byte vectors a thread of the row kernels keeps in registers (SOFTMAX_KV, NORM_KV) */
const ROW_KV = 4;

/** the row kernels (softmax, norms) index rows in 32 bits: bigger launches are split */
export const ROW_LAUNCH_MAX = 2 ** 31 - 1;

/**
 * Launch shape of a row kernel (softmax, norms): `group` threads per row, the fewest (a wave
 * multiple dividing the block) whose registers hold the whole row, so the row is read once and
 * short rows leave no thread idle; several rows per block when the group is smaller than it.
 * The kernels loop grid-stride, so the grid is capped.
 */
export function rowLaunch(
  dev: Device,
  rows: number,
  cols: number,
  dtype: DType,
): { grid: Dim3; block: Dim3; group: number } {
  const k = dev.kernels,
    info = dev.runtime.info;
  const block = k.preferredBlockSize;
  const vectors = Math.ceil(cols / (16 / dtypeSize(dtype)));
  let group = Math.min(info.warpSize, block);
  while (group * ROW_KV < vectors && group * 2 <= block && block % (group * 2) === 0) group *= 2;
  return groupGrid(dev, rows, block, group);
}

/** blocks of `block` threads enough for `rows` rows at `group` threads each, capped at about 32
 *  a multiprocessor (every row kernel loops grid-stride) */
export function groupGrid(
  dev: Device,
  rows: number,
  block: number,
  group: number,
): { grid: Dim3; block: Dim3; group: number } {
  const info = dev.runtime.info;
  const perBlock = Math.max(1, Math.floor(block / group));
  const cap = Math.min(info.maxGridDim[0], Math.max(1, info.multiprocessors) * 32);
  return { grid: [Math.max(1, Math.min(cap, Math.ceil(rows / perBlock))), 1, 1], block: [block, 1, 1], group };
}

/** one row a block: as many blocks as rows, capped at perSm a multiprocessor (the kernels loop rows grid-stride) */
export function rowGrid(dev: Device, rows: number, perSm = 8): { grid: Dim3; block: Dim3 } {
  const info = dev.runtime.info;
  const cap = Math.min(info.maxGridDim[0], Math.max(1, info.multiprocessors) * perSm);
  return { grid: [Math.max(1, Math.min(cap, rows)), 1, 1], block: [dev.kernels.preferredBlockSize, 1, 1] };
}

/** element offset of a tensor's first element, for kernels that take base pointer + offset */
export const base = (t: RawTensor): KernelArg => arg.ptr(t.storage.ptrAt(0));
export const offsetOf = (t: RawTensor): KernelArg => arg.i64(t.layout.offset);
/** an optional operand's pointer and offset: the null pointer and 0 when absent */
export const baseOrNull = (t: RawTensor | null): KernelArg => (t ? base(t) : arg.ptr(NULL_PTR));
export const offsetOrZero = (t: RawTensor | null): KernelArg => (t ? offsetOf(t) : arg.i64(0));
