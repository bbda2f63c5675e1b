// In-place writes of whole tensors: loading a state dict and the optimizers' updates keep the
// tensor objects (an optimizer and a module share them) and write their storage.
import { ShapeError } from '../core/errors.ts';
import { sameShape } from '../core/layout.ts';
import { noGrad } from '../tensor/autograd.ts';
import type { Tensor } from '../tensor/tensor.ts';

/**
 * dst <- src, elementwise, in place (src converted to dst's device and dtype first; shapes must
 * match). Runs with recording off, so parameters that require a gradient can be written; their
 * version moves on, so a graph recorded before the write refuses a later backward().
 */
export function assign(dst: Tensor, src: Tensor): void {
  if (!sameShape(dst.shape, src.shape))
    throw new ShapeError(`assign: ${src.describe()} into ${dst.describe()}: shapes differ`);
  noGrad(() => {
    const temps: Tensor[] = [];
    try {
      let s = src;
      if (s.device !== dst.device) temps.push((s = s.to(dst.device)));
      if (s.dtype !== dst.dtype) temps.push((s = s.toDtype(dst.dtype)));
      // sliceSet writes along a dim: rank-0 tensors go through one-element views
      if (dst.rank === 0) {
        const d = dst.reshape([1]);
        temps.push(d);
        temps.push((s = s.reshape([1])));
        d.sliceSet(s, 0, 0);
      } else dst.sliceSet(s, 0, 0);
    } finally {
      for (const t of temps) t.dispose();
    }
  });
}
