// GPU path of SwiGLU and its backward (hip-src/swiglu.hip): contiguous rows, one row a block;
// other layouts are copied first (the copies freed once the kernel is queued).
import { RawTensor } from '../../device/raw-tensor.ts';
import { arg } from '../../runtime/kernels.ts';
import { dense, filled } from './fill.ts';
import { base, offsetOf, rowGrid } from './launch.ts';

const FILE = 'swiglu.hip';

/** y = silu(a) b for x = [a, b] along the last dim */
export function swiglu(x: RawTensor): RawTensor {
  const dev = x.device;
  const shape = x.layout.shape;
  const n = shape[shape.length - 1]! / 2;
  const y = RawTensor.empty([...shape.slice(0, -1), n], x.dtype, dev);
  const rows = n === 0 ? 0 : y.numel / n;
  filled(y, (temps) => {
    if (rows === 0) return;
    const xc = dense(x, temps);
    const { grid, block } = rowGrid(dev, rows);
    dev.kernels.launch(FILE, `swiglu_fwd_${x.dtype}`, grid, block, 0, dev.stream, [
      base(y),
      base(xc),
      offsetOf(y),
      offsetOf(xc),
      arg.u64(rows),
      arg.u64(n),
    ]);
  });
  return y;
}

/** the input gradient [da, db] of swiglu from the output's gradient g */
export function swigluBackward(g: RawTensor, x: RawTensor): RawTensor {
  const dev = x.device;
  const shape = x.layout.shape;
  const n = shape[shape.length - 1]! / 2;
  const dx = RawTensor.empty(shape, x.dtype, dev);
  const rows = n === 0 ? 0 : g.numel / n;
  filled(dx, (temps) => {
    if (rows === 0) return;
    const gc = dense(g, temps),
      xc = dense(x, temps);
    const { grid, block } = rowGrid(dev, rows);
    dev.kernels.launch(FILE, `swiglu_bwd_${x.dtype}`, grid, block, 0, dev.stream, [
      base(dx),
      base(gc),
      base(xc),
      offsetOf(dx),
      offsetOf(gc),
      offsetOf(xc),
      arg.u64(rows),
      arg.u64(n),
    ]);
  });
  return dx;
}
