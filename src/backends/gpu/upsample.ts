// GPU resampling (hip-src/upsample.hip): one thread an output element, x in any layout (its
// four strides go to the kernel), y a new contiguous [n, c, outH, outW]. The scales are computed
// here the way the CPU reference computes them, so the kernels need no division. Where x's rows
// are whole aligned 16-byte vectors, exactly 2x (nearest, and bilinear without alignCorners)
// goes a task per output column vector and strip of input rows, each input vector loaded about
// once (upsample_nearest_x2, upsample_bilinear_x2); other nearest resampling whose columns map
// to themselves or double moves whole vectors a row at a time (upsample_nearest_rows); other
// bilinear goes a 16-byte output vector a thread where the output's rows are whole vectors
// (upsample_bilinear_rows).
import { RawTensor } from '../../device/raw-tensor.ts';
import { arg, type KernelArg } from '../../runtime/kernels.ts';
import { copyWidth } from '../../runtime/kernel-sigs.ts';
import { dtypeSize } from '../../core/dtype.ts';
import { aligned16 } from './rowreg.ts';

const FILE = 'upsample.hip';

/** y and the arguments every upsample kernel starts with */
function begin(x: RawTensor, outH: number, outW: number): { y: RawTensor; head: KernelArg[] } {
  const [n, c, h, w] = x.layout.shape as [number, number, number, number];
  const [sN, sC, sH, sW] = x.layout.strides as [number, number, number, number];
  const y = RawTensor.empty([n, c, outH, outW], x.dtype, x.device);
  const head = [
    arg.ptr(y.storage.ptrAt(y.layout.offset)),
    arg.ptr(x.storage.ptrAt(0)),
    arg.i64(x.layout.offset),
    arg.u64(y.numel),
    arg.u64(c),
    arg.u64(h),
    arg.u64(w),
    arg.u64(outH),
    arg.u64(outW),
    arg.i64(sN),
    arg.i64(sC),
    arg.i64(sH),
    arg.i64(sW),
  ];
  return { y, head };
}

function launch(x: RawTensor, y: RawTensor, name: string, args: readonly KernelArg[]): RawTensor {
  const dev = x.device;
  try {
    dev.kernels.launch1d(FILE, name, y.numel, dev.stream, args);
  } catch (e) {
    y.dispose();
    throw e;
  }
  return y;
}

/** x [n, c, h, w] any strides, non-empty h and w; outH, outW >= 1; checked by the dispatcher */
export function upsampleNearest2d(x: RawTensor, outH: number, outW: number): RawTensor {
  const [, , h, w] = x.layout.shape as [number, number, number, number];
  // PyTorch's nearest scale: in / out rounded to f32 (nearestIndex in the CPU reference)
  const scaleH = Math.fround(h / outH),
    scaleW = Math.fround(w / outW);
  if (exactX2(x, outH, outW)) return launchX2(x, `upsample_nearest_x2_${copyWidth(x.dtype)}`);
  const dup = vectorRows(x, outW, scaleW);
  if (dup) return nearestRows(x, outH, outW, scaleH, dup);
  const { y, head } = begin(x, outH, outW);
  return launch(x, y, `upsample_nearest_${copyWidth(x.dtype)}`, [...head, arg.f32(scaleH), arg.f32(scaleW)]);
}

/**
 * 1 or 2 where upsample_nearest_rows applies: output columns are the input's (outW = w) or each
 * twice (outW = 2w, the f32 scale exactly 0.5, and outW below 2^24, where (float)j * 0.5 is
 * exactly j / 2, PyTorch's index); x's rows are unit-stride whole 16-byte vectors at 16-byte
 * boundaries. 0 otherwise.
 */
function vectorRows(x: RawTensor, outW: number, scaleW: number): 0 | 1 | 2 {
  const [, , , w] = x.layout.shape as [number, number, number, number];
  const dup = outW === w ? 1 : outW === 2 * w && scaleW === 0.5 && outW < 2 ** 24 ? 2 : 0;
  return dup !== 0 && rowsOfVectors(x) ? dup : 0;
}

/** x's rows are unit-stride whole 16-byte vectors at 16-byte boundaries (every plane and row
 *  start included) */
function rowsOfVectors(x: RawTensor): boolean {
  const [, , , w] = x.layout.shape as [number, number, number, number];
  const [sN, sC, sH, sW] = x.layout.strides as [number, number, number, number];
  const per = 16 / dtypeSize(x.dtype);
  if (!Number.isInteger(per) || sW !== 1 || w % per !== 0) return false;
  if (![sN, sC, sH].every((st) => st % per === 0)) return false;
  return aligned16(x);
}

/** input rows a task of the x2 kernels covers: RT_UP2_ROWS in hip-src/upsample.hip */
const X2_ROWS = 4;

/**
 * Where upsample_nearest_x2 / upsample_bilinear_x2 apply: outH = 2h and outW = 2w, both below
 * 2^23 (there PyTorch's f32 source index is exactly dst >> 1 and the bilinear weights exactly
 * 0, 0.25 and 0.75, which the kernels' cell choice relies on), rows of whole vectors
 * (rowsOfVectors), and fewer than 2^31 tasks (the kernels count them in 32 bits).
 */
function exactX2(x: RawTensor, outH: number, outW: number): boolean {
  const [n, c, h, w] = x.layout.shape as [number, number, number, number];
  if (outH !== 2 * h || outW !== 2 * w || outH >= 2 ** 23 || outW >= 2 ** 23 || n * c === 0) return false;
  return x2Tasks(x) < 2 ** 31 && rowsOfVectors(x);
}

function x2Tasks(x: RawTensor): number {
  const [n, c, h, w] = x.layout.shape as [number, number, number, number];
  return n * c * Math.ceil(h / X2_ROWS) * ((2 * w) / (16 / dtypeSize(x.dtype)));
}

/** a launch of upsample_nearest_x2 or upsample_bilinear_x2, which share their arguments */
function launchX2(x: RawTensor, name: string): RawTensor {
  const dev = x.device;
  const [n, c, h, w] = x.layout.shape as [number, number, number, number];
  const [sN, sC, sH] = x.layout.strides as [number, number, number, number];
  const y = RawTensor.empty([n, c, 2 * h, 2 * w], x.dtype, dev);
  const tasks = x2Tasks(x);
  try {
    dev.kernels.launch1d(FILE, name, tasks, dev.stream, [
      arg.ptr(y.storage.ptrAt(y.layout.offset)),
      arg.ptr(x.storage.ptrAt(0)),
      arg.i64(x.layout.offset),
      arg.u32(tasks),
      arg.u64(c),
      arg.u64(h),
      arg.u64(w),
      arg.u64(Math.ceil(h / X2_ROWS)),
      arg.i64(sN),
      arg.i64(sC),
      arg.i64(sH),
    ]);
  } catch (e) {
    y.dispose();
    throw e;
  }
  return y;
}

function nearestRows(x: RawTensor, outH: number, outW: number, scaleH: number, dup: 1 | 2): RawTensor {
  const dev = x.device;
  const [n, c, h, w] = x.layout.shape as [number, number, number, number];
  const [sN, sC, sH] = x.layout.strides as [number, number, number, number];
  const y = RawTensor.empty([n, c, outH, outW], x.dtype, dev);
  const rows = n * c * outH,
    vw = w / (16 / dtypeSize(x.dtype));
  if (rows * vw === 0) return y;
  try {
    // the kernel moves RT_UP_U (2) vectors a thread
    dev.kernels.launch1d(FILE, `upsample_nearest_rows_${copyWidth(x.dtype)}`, Math.ceil((rows * vw) / 2), dev.stream, [
      arg.ptr(y.storage.ptrAt(y.layout.offset)),
      arg.ptr(x.storage.ptrAt(0)),
      arg.i64(x.layout.offset),
      arg.u64(rows),
      arg.u64(c),
      arg.u64(h),
      arg.u64(outH),
      arg.u64(vw),
      arg.i64(sN),
      arg.i64(sC),
      arg.i64(sH),
      arg.f32(scaleH),
      arg.u32(dup),
    ]);
  } catch (e) {
    y.dispose();
    throw e;
  }
  return y;
}

/** Output rows of whole 16-byte vectors from unit-stride input columns go a vector a thread
 *  (upsample_bilinear_rows: the row taps once a vector), anything else an element a thread. */
export function upsampleBilinear2d(x: RawTensor, outH: number, outW: number, alignCorners: boolean): RawTensor {
  const dev = x.device;
  const [n, c, h, w] = x.layout.shape as [number, number, number, number];
  const [sN, sC, sH, sW] = x.layout.strides as [number, number, number, number];
  const scale = (inSize: number, outSize: number): number =>
    alignCorners ? (outSize > 1 ? (inSize - 1) / (outSize - 1) : 0) : inSize / outSize;
  if (!alignCorners && x.dtype !== 'f64' && exactX2(x, outH, outW))
    return launchX2(x, `upsample_bilinear_x2_${x.dtype}`);
  const s = x.dtype === 'f64' ? arg.f64 : arg.f32;
  const tail = [s(scale(h, outH)), s(scale(w, outW)), arg.u32(alignCorners ? 1 : 0)];
  const per = 16 / dtypeSize(x.dtype);
  if (outW % per === 0 && (sW === 1 || w === 1) && w < 2 ** 31) {
    const y = RawTensor.empty([n, c, outH, outW], x.dtype, dev);
    const vecs = y.numel / per;
    try {
      dev.kernels.launch1d(FILE, `upsample_bilinear_rows_${x.dtype}`, vecs, dev.stream, [
        arg.ptr(y.storage.ptrAt(y.layout.offset)),
        arg.ptr(x.storage.ptrAt(0)),
        arg.i64(x.layout.offset),
        arg.u64(vecs),
        arg.u64(c),
        arg.u64(h),
        arg.u64(w),
        arg.u64(outH),
        arg.u64(outW),
        arg.i64(sN),
        arg.i64(sC),
        arg.i64(sH),
        ...tail,
      ]);
    } catch (e) {
      y.dispose();
      throw e;
    }
    return y;
  }
  const { y, head } = begin(x, outH, outW);
  return launch(x, y, `upsample_bilinear_${x.dtype}`, [...head, ...tail]);
}
