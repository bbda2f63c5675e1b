// GPU cumsum (hip-src/scan.hip): the dim moved last and made contiguous, a block a row (grid-
// stride), each thread's elements summed in order and the block's threads scanned, one read
// and one write of every element; the result comes back as the inverse view.
import { RawTensor } from '../../device/raw-tensor.ts';
import { ShapeError } from '../../core/errors.ts';
import { arg } from '../../runtime/kernels.ts';
import { contiguous } from './copy.ts';

/** the kernel counts rows and columns in 32 bits, below 2^31 (its loops step past them) */
const U32_MAX = 2 ** 31 - 1;

export function cumsum(x: RawTensor, dim: number): RawTensor {
  const dev = x.device,
    shape = x.layout.shape;
  const n = shape[dim]!;
  if (x.numel === 0) return RawTensor.empty(shape, x.dtype, dev);
  const last = x.rank - 1;
  const moved = dim === last ? x.view(x.layout) : x.transpose(dim, last);
  const c = contiguous(moved);
  moved.dispose();
  const rows = c.numel / n;
  if (rows > U32_MAX || n > U32_MAX) {
    c.dispose();
    throw new ShapeError(
      `cumsum: ${rows} rows of ${n} elements are past the GPU kernel's 32-bit counts (x ${x.dtype} [${shape.join(', ')}])`,
    );
  }
  const y = RawTensor.empty(c.layout.shape, x.dtype, dev);
  try {
    const info = dev.runtime.info,
      block = dev.kernels.preferredBlockSize;
    const grid = Math.min(rows, info.maxGridDim[0]);
    dev.kernels.launch('scan.hip', `cumsum_${x.dtype}`, [grid, 1, 1], [block, 1, 1], 0, dev.stream, [
      arg.ptr(y.storage.ptrAt(0)),
      arg.ptr(c.storage.ptrAt(0)),
      arg.i64(y.layout.offset),
      arg.i64(c.layout.offset),
      arg.u32(rows),
      arg.u32(n),
    ]);
  } catch (e) {
    y.dispose();
    throw e;
  } finally {
    c.dispose();
  }
  if (dim === last) return y;
  const back = y.transpose(dim, last);
  y.dispose();
  return back;
}
