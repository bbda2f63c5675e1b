// Gradients of the resampling ops, from other ops. Both resamplings are separable, one axis
// after the other:
// - nearest: each output cell copies one input cell, so the gradient adds every output cell's
//   gradient into its source: one indexAdd along the width, then one along the height, with the
//   forward's own source indices;
// - bilinear: the output is A_h · x · A_wᵀ for [out, in] interpolation matrices with two taps a
//   row, so the gradient is A_hᵀ · g · A_w: two matrix products through the library GEMM (in
//   f32 for half types, where the taps' weights would round).
import type { RawTensor } from '../device/raw-tensor.ts';
import { linearTaps, nearestIndex } from '../backends/cpu/upsample.ts';
import { cast } from './cast.ts';
import { fromData, full } from './creation.ts';
import { indexAdd } from './indexing.ts';
import { matmul } from './matmul.ts';
import { scoped } from './scoped.ts';
import { defineGrad } from './registry.ts';

/** g [..., oh, ow] added back into [..., h, w] at the nearest sources (rank 3: the last axis only) */
function nearestGrad(g: RawTensor, x: RawTensor): RawTensor {
  return scoped((keep) => {
    const rank = x.rank;
    let cur = g;
    // the last axis, then (rank 4) the one before it
    for (const axis of rank === 4 ? [3, 2] : [2]) {
      const inSize = x.layout.shape[axis]!,
        outSize = cur.layout.shape[axis]!;
      const ids = keep(
        fromData(
          Uint32Array.from({ length: outSize }, (_, i) => nearestIndex(i, inSize, outSize)),
          [outSize],
          'u32',
          g.device,
        ),
      );
      const shape = cur.layout.shape.map((n, i) => (i === axis ? inSize : n));
      const next = indexAdd(keep(full(shape, 0, g.dtype, g.device)), ids, cur, axis);
      if (cur !== g) cur.dispose();
      cur = next;
    }
    return cur === g ? g.view(g.layout) : cur;
  });
}

/** the [out, in] interpolation matrix of one axis (two taps a row), in f32 or f64 */
function interp(inSize: number, outSize: number, align: boolean, dtype: 'f32' | 'f64', g: RawTensor): RawTensor {
  const a = new Float64Array(outSize * inSize);
  linearTaps(inSize, outSize, align).forEach((t, o) => {
    a[o * inSize + t.i0]! += t.l0;
    a[o * inSize + t.i1]! += t.l1;
  });
  return fromData(dtype === 'f64' ? a : Float32Array.from(a), [outSize, inSize], dtype, g.device);
}

defineGrad('upsampleNearest1d', (g, [x]: [RawTensor, number]) => [[x, nearestGrad(g, x)]]);
defineGrad('upsampleNearest2d', (g, [x]: [RawTensor, number, number]) => [[x, nearestGrad(g, x)]]);
defineGrad('upsampleBilinear2d', (g, [x, oh, ow, align]: [RawTensor, number, number, boolean]) =>
  scoped((keep) => {
    const [, , h, w] = x.layout.shape as [number, number, number, number];
    const wide = x.dtype === 'f64' ? 'f64' : 'f32';
    const gw = g.dtype === wide ? g : keep(cast(g, wide));
    const aw = keep(interp(w, ow, align, wide, g));
    const ahT = keep(keep(interp(h, oh, align, wide, g)).transpose(0, 1));
    // [n, c, oh, ow] · A_w -> [n, c, oh, w]; A_hᵀ · that -> [n, c, h, w]
    const dx = keep(matmul(ahT, keep(matmul(gw, aw))));
    return [[x, dx.dtype === x.dtype ? dx.view(dx.layout) : cast(dx, x.dtype)]];
  }),
);
