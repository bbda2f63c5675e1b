// GPU random ops (hip-src/random.hip): every number is drawn on the device from the seed in the
// kernel arguments (no upload, so a graph capture records them), with the same bits as the CPU
// reference in src/backends/cpu/random.ts. Inputs (probabilities, dropout's x) are made contiguous
// first; outputs are new contiguous tensors.
import type { DType } from '../../core/dtype.ts';
import type { Shape } from '../../core/layout.ts';
import type { Device } from '../../device/device.ts';
import { RawTensor } from '../../device/raw-tensor.ts';
import { arg, type KernelArg } from '../../runtime/kernels.ts';

const FILE = 'random.hip';

function launched(
  shape: Shape,
  dtype: DType,
  dev: Device,
  work: number,
  name: string,
  args: (y: KernelArg) => KernelArg[],
): RawTensor {
  const y = RawTensor.empty(shape, dtype, dev);
  if (y.numel === 0) return y;
  try {
    dev.kernels.launch1d(FILE, name, work, dev.stream, args(arg.ptr(y.storage.ptrAt(0))));
  } catch (e) {
    y.dispose();
    throw e;
  }
  return y;
}

const blocks4 = (n: number): number => Math.ceil(n / 4);
const blocks2 = (n: number): number => Math.ceil(n / 2);
const key = (k0: number, k1: number): KernelArg[] => [arg.u32(k0), arg.u32(k1)];

export function rand(shape: Shape, n: number, k0: number, k1: number, dtype: DType, dev: Device): RawTensor {
  return launched(shape, dtype, dev, dtype === 'f64' ? blocks2(n) : blocks4(n), `rand_${dtype}`, (y) => [
    y,
    arg.u64(n),
    ...key(k0, k1),
  ]);
}

export function randn(shape: Shape, n: number, k0: number, k1: number, dtype: DType, dev: Device): RawTensor {
  return launched(shape, dtype, dev, blocks4(n), `randn_${dtype}`, (y) => [y, arg.u64(n), ...key(k0, k1)]);
}

export function randint(
  shape: Shape,
  n: number,
  k0: number,
  k1: number,
  low: number,
  range: number,
  dtype: DType,
  dev: Device,
): RawTensor {
  return launched(shape, dtype, dev, blocks2(n), `randint_${dtype}`, (y) => [
    y,
    arg.u64(n),
    ...key(k0, k1),
    arg.i64(low),
    arg.u64(range),
  ]);
}

export function bernoulliScalar(
  shape: Shape,
  n: number,
  k0: number,
  k1: number,
  thr: number,
  dtype: DType,
  dev: Device,
): RawTensor {
  return launched(shape, dtype, dev, blocks4(n), `bernoulli_scalar_${dtype}`, (y) => [
    y,
    arg.u64(n),
    ...key(k0, k1),
    arg.u32(thr),
  ]);
}

/** p contiguous */
export function bernoulliTensor(p: RawTensor, k0: number, k1: number, dtype: DType): RawTensor {
  const n = p.numel;
  return launched(p.layout.shape, dtype, p.device, blocks4(n), `bernoulli_${p.dtype}_${dtype}`, (y) => [
    y,
    arg.ptr(p.storage.ptrAt(0)),
    arg.i64(p.layout.offset),
    arg.u64(n),
    ...key(k0, k1),
  ]);
}

/** x contiguous */
export function dropout(x: RawTensor, k0: number, k1: number, thr: number, scale: number): RawTensor {
  const n = x.numel,
    d = x.dtype;
  return launched(x.layout.shape, d, x.device, blocks4(n), `dropout_${d}`, (y) => [
    y,
    arg.ptr(x.storage.ptrAt(0)),
    arg.i64(x.layout.offset),
    arg.u64(n),
    ...key(k0, k1),
    arg.u32(thr),
    d === 'f64' ? arg.f64(scale) : arg.f32(scale),
  ]);
}

/** exponential-race keys (f32) of contiguous p */
export function multinomialKeys(p: RawTensor, k0: number, k1: number): RawTensor {
  const n = p.numel;
  return launched(p.layout.shape, 'f32', p.device, blocks4(n), `multinomial_keys_${p.dtype}`, (y) => [
    y,
    arg.ptr(p.storage.ptrAt(0)),
    arg.i64(p.layout.offset),
    arg.u64(n),
    ...key(k0, k1),
  ]);
}

/** draws with replacement from contiguous p [rows, cols]: f64 running sums, then a binary search */
export function multinomialDraw(
  p: RawTensor,
  rows: number,
  cols: number,
  ns: number,
  k0: number,
  k1: number,
  dtype: 'i64' | 'u32',
  outShape: Shape,
): RawTensor {
  const dev = p.device,
    k = dev.kernels,
    s = dev.stream;
  const cdf = RawTensor.empty([rows, cols], 'f64', dev);
  try {
    const grid = Math.min(rows, dev.runtime.info.maxGridDim[0]);
    k.launch(FILE, `multinomial_cdf_${p.dtype}`, [grid, 1, 1], [256, 1, 1], 0, s, [
      arg.ptr(cdf.storage.ptrAt(0)),
      arg.ptr(p.storage.ptrAt(0)),
      arg.i64(p.layout.offset),
      arg.u64(rows),
      arg.u64(cols),
    ]);
    return launched(outShape, dtype, dev, rows * ns, `multinomial_draw_${dtype}`, (y) => [
      y,
      arg.ptr(cdf.storage.ptrAt(0)),
      arg.u64(rows),
      arg.u64(cols),
      arg.u64(ns),
      ...key(k0, k1),
    ]);
  } finally {
    cdf.dispose(); // stream-ordered: the allocator reuses it only after the queued kernels
  }
}
