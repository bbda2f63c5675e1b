// CPU reference resampling: source indices and weights as PyTorch computes them.
import type { RawTensor } from '../../device/raw-tensor.ts';
import { fromNumbers, readNumbers } from './util.ts';

/**
 * PyTorch's 'nearest' source index: floor(dst * scale) with scale = in/out, both in f32
 * (f32 rounding of the scale moves a few indices, e.g. in 2 -> out 82 maps dst 41 to 0, not 1;
 * matching that is the point: the GPU kernels compute it the same way).
 */
export function nearestIndex(dst: number, inSize: number, outSize: number): number {
  if (outSize === inSize) return dst;
  if (outSize === 2 * inSize) return dst >> 1;
  const scale = Math.fround(inSize / outSize);
  return Math.min(Math.floor(Math.fround(dst * scale)), inSize - 1);
}

export function upsampleNearest2d(x: RawTensor, outH: number, outW: number): RawTensor {
  const [n, c, h, w] = x.layout.shape as [number, number, number, number];
  const xv = readNumbers(x);
  const out = new Float64Array(n * c * outH * outW);
  const sx = Array.from({ length: outW }, (_, i) => nearestIndex(i, w, outW));
  for (let plane = 0; plane < n * c; plane++) {
    for (let y = 0; y < outH; y++) {
      const row = plane * h * w + nearestIndex(y, h, outH) * w,
        o = (plane * outH + y) * outW;
      for (let i = 0; i < outW; i++) out[o + i] = xv[row + sx[i]!]!;
    }
  }
  return fromNumbers(out, [n, c, outH, outW], x.dtype, x.device);
}

interface Tap {
  i0: number;
  i1: number;
  l0: number;
  l1: number;
}

/** the two source cells and their weights for each output cell along one axis */
export function linearTaps(inSize: number, outSize: number, alignCorners: boolean): Tap[] {
  const scale = alignCorners ? (outSize > 1 ? (inSize - 1) / (outSize - 1) : 0) : inSize / outSize;
  return Array.from({ length: outSize }, (_, d) => {
    // half-pixel centres, clamped at 0 (PyTorch's area_pixel_compute_source_index)
    const src = alignCorners ? scale * d : Math.max(scale * (d + 0.5) - 0.5, 0);
    const i0 = Math.min(Math.floor(src), inSize - 1);
    const i1 = i0 < inSize - 1 ? i0 + 1 : i0;
    const l1 = src - i0;
    return { i0, i1, l0: 1 - l1, l1 };
  });
}

export function upsampleBilinear2d(x: RawTensor, outH: number, outW: number, alignCorners: boolean): RawTensor {
  const [n, c, h, w] = x.layout.shape as [number, number, number, number];
  const xv = readNumbers(x);
  const out = new Float64Array(n * c * outH * outW);
  const ty = linearTaps(h, outH, alignCorners),
    tx = linearTaps(w, outW, alignCorners);
  for (let plane = 0; plane < n * c; plane++) {
    const base = plane * h * w;
    for (let y = 0; y < outH; y++) {
      const a = ty[y]!,
        r0 = base + a.i0 * w,
        r1 = base + a.i1 * w;
      for (let i = 0; i < outW; i++) {
        const b = tx[i]!;
        out[(plane * outH + y) * outW + i] =
          a.l0 * (b.l0 * xv[r0 + b.i0]! + b.l1 * xv[r0 + b.i1]!) +
          a.l1 * (b.l0 * xv[r1 + b.i0]! + b.l1 * xv[r1 + b.i1]!);
      }
    }
  }
  return fromNumbers(out, [n, c, outH, outW], x.dtype, x.device);
}
