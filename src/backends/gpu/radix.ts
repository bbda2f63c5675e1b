// What the GPU sort (sort.ts) and top-k (topk.ts) share about the radix kernels of
// hip-src/radix.h: their block size, each dtype's key width, the LDS their layouts take, and the
// moving of the worked dim last (the kernels see contiguous [rows, cols] rows).
import type { Device } from '../../device/device.ts';
import type { DType } from '../../core/dtype.ts';
import { NotOnDeviceError } from '../../core/errors.ts';
import type { Dim3 } from '../../runtime/kernels.ts';
import { RawTensor } from '../../device/raw-tensor.ts';
import { contiguous } from './copy.ts';
import { sig } from '../checks.ts';

/** threads of every radix block: one per 8-bit digit value (radix.h RADIX) */
export const RADIX = 256;
/** radix.h RADIX_WAVES_MAX: LDS words of block_scan's wave totals */
const WAVES_MAX = 32;
/** topk.hip TOPK_MAX: the most records a top-k block keeps; larger k go through the sort */
export const TOPK_MAX = 256;
/** topk.hip TOPK_CAP: records of a top-k block's append area */
const TOPK_CAP = 2048;

/** bits of a dtype's sort key (radix.h RKey::BITS): its 8-bit digit passes are keyBits / 8 */
export function keyBits(d: DType): number {
  switch (d) {
    case 'u8':
      return 8;
    case 'f16':
    case 'bf16':
      return 16;
    case 'f64':
    case 'i64':
      return 64;
    default:
      return 32;
  }
}

/** bytes of a record's raw bits in LDS (radix.h RKey::R) */
export const rawBytes = (d: DType): number => (keyBits(d) === 64 ? 8 : 4);

const waves = (dev: Device): number => RADIX / dev.runtime.info.warpSize;
/** bytes of a lane mask (radix.h LaneMask) */
const maskBytes = (dev: Device): number => dev.tuning.laneMaskBytes;

/**
 * LDS of radix_rows and radix_sweep over `cap` records (sort.hip RadixLds): the waves' lane
 * masks, the digits' first places and global bases, the wave totals and two sets of votes, the
 * waves' u16 counters, then the records (raw bits or key, and a u32 index)
 */
export function radixLdsBytes(dev: Device, d: DType, cap: number): number {
  const w = waves(dev);
  return w * RADIX * maskBytes(dev) + (2 * RADIX + 3 * WAVES_MAX) * 4 + w * RADIX * 2 + cap * (rawBytes(d) + 4);
}

/** LDS of radix_counts: a u32 counter a digit of each pass */
export const radixCountsLdsBytes = (d: DType): number => (keyBits(d) / 8) * RADIX * 4;

/**
 * LDS of topk (topk.hip TopkLds): two sets of the waves' counters, four of wave totals, the
 * select's state, then two kept sets and the append area of records (raw bits, u32 index)
 */
export function topkLdsBytes(dev: Device, d: DType): number {
  return (2 * waves(dev) * RADIX + 4 * WAVES_MAX + 8) * 4 + (2 * TOPK_MAX + TOPK_CAP) * (rawBytes(d) + 4);
}

/** items a thread of a top-k round (topk.hip TopkItems): 16, 8 for 64-bit elements (rounds of 4096 and 2048) */
export const topkItems = (d: DType): number => (rawBytes(d) === 8 ? 8 : 16);

/** blocks for `units` of work (the kernels loop grid-stride over the rest) */
export function gridFor(dev: Device, units: number): Dim3 {
  return [Math.max(1, Math.min(units, dev.runtime.info.maxGridDim[0])), 1, 1];
}

/** the radix kernels need blocks of RADIX threads and `lds` bytes of LDS */
export function checkRadixBlock(op: string, x: RawTensor, lds: number): void {
  const info = x.device.runtime.info;
  if (info.maxThreadsPerBlock < RADIX || lds > info.maxSharedMemoryPerBlock) {
    throw new NotOnDeviceError(
      `${op}: ${x.device} gives a block ${info.maxThreadsPerBlock} threads and ${info.maxSharedMemoryPerBlock} bytes of shared memory; the radix kernels need ${RADIX} and ${lds} (x ${sig(x)})`,
    );
  }
}

/** the units (row, tile) of a launch are counted in 32 bits on the device */
export function checkUnits(op: string, x: RawTensor, units: number): void {
  if (units >= 2 ** 31)
    throw new NotOnDeviceError(
      `${op}: ${units} tiles of rows in one launch; the kernels count at most 2^31 (x ${sig(x)})`,
    );
}

/**
 * x with `dim` moved last and made contiguous: [rows, cols] rows for the kernels. `back` turns
 * a result of the moved shape into the caller's dim order (a view; it takes the tensor over).
 */
export function rowsView(
  x: RawTensor,
  dim: number,
): { c: RawTensor; rows: number; cols: number; back: (t: RawTensor) => RawTensor } {
  const last = Math.max(x.rank - 1, 0);
  const inPlace = dim === last || x.rank === 0;
  const moved = inPlace ? x.view(x.layout) : x.transpose(dim, last);
  const c = contiguous(moved);
  moved.dispose();
  const cols = x.rank === 0 ? 1 : c.layout.shape[last]!;
  const rows = cols === 0 ? 0 : c.numel / cols;
  const back = (t: RawTensor): RawTensor => {
    if (inPlace) return t;
    const v = t.transpose(dim, last);
    t.dispose();
    return v;
  };
  return { c, rows, cols, back };
}
