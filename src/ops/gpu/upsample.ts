// GPU resampling (hip-src/upsample.hip): one thread an output element, x in any layout (its
// four strides go to the kernel), y a new contiguous [n, c, outH, outW]. The scales are computed
// here the way the CPU reference computes them, so the kernels need no division.
import { Tensor } from '../../tensor.ts';
import { arg, type KernelArg } from '../../runtime/kernels.ts';
import { copyWidth } from '../../runtime/kernel-sigs.ts';

const FILE = 'upsample.hip';

/** y and the arguments every upsample kernel starts with */
function begin(x: Tensor, outH: number, outW: number): { y: Tensor; head: KernelArg[] } {
  const [n, c, h, w] = x.layout.shape as [number, number, number, number];
  const [sN, sC, sH, sW] = x.layout.strides as [number, number, number, number];
  const y = Tensor.empty([n, c, outH, outW], x.dtype, x.device);
  const head = [arg.ptr(y.storage.ptrAt(y.layout.offset)), arg.ptr(x.storage.ptrAt(0)), arg.i64(x.layout.offset),
    arg.u64(y.numel), arg.u64(c), arg.u64(h), arg.u64(w), arg.u64(outH), arg.u64(outW),
    arg.i64(sN), arg.i64(sC), arg.i64(sH), arg.i64(sW)];
  return { y, head };
}

function launch(x: Tensor, y: Tensor, name: string, args: readonly KernelArg[]): Tensor {
  const dev = x.device;
  try { dev.kernels.launch1d(FILE, name, y.numel, dev.stream, args); } catch (e) { y.dispose(); throw e; }
  return y;
}

/** x [n, c, h, w] any strides, non-empty h and w; outH, outW >= 1; checked by the dispatcher */
export function upsampleNearest2d(x: Tensor, outH: number, outW: number): Tensor {
  const [, , h, w] = x.layout.shape as [number, number, number, number];
  const { y, head } = begin(x, outH, outW);
  // PyTorch's nearest scale: in / out rounded to f32 (nearestIndex in the CPU reference)
  return launch(x, y, `upsample_nearest_${copyWidth(x.dtype)}`, [...head, arg.f32(Math.fround(h / outH)), arg.f32(Math.fround(w / outW))]);
}

export function upsampleBilinear2d(x: Tensor, outH: number, outW: number, alignCorners: boolean): Tensor {
  const [, , h, w] = x.layout.shape as [number, number, number, number];
  const { y, head } = begin(x, outH, outW);
  const scale = (inSize: number, outSize: number): number =>
    (alignCorners ? (outSize > 1 ? (inSize - 1) / (outSize - 1) : 0) : inSize / outSize);
  const s = x.dtype === 'f64' ? arg.f64 : arg.f32;
  return launch(x, y, `upsample_bilinear_${x.dtype}`, [...head, s(scale(h, outH)), s(scale(w, outW)), arg.u32(alignCorners ? 1 : 0)]);
}
