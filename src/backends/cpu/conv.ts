// CPU convolutions: the exact reference as direct loops in f64 with one rounding to the dtype on
// store; otherwise as matrix products on the CPU GEMM (cpu/conv-gemm.ts).
import type { Shape } from '../../core/layout.ts';
import type { RawTensor } from '../../device/raw-tensor.ts';
import type { Conv2dParams, ConvTranspose2dParams } from '../../core/op-types.ts';
import { fromNumbers, readNumbers } from './util.ts';
import { cpuExact } from './mode.ts';
import * as viaGemm from './conv-gemm.ts';

export function conv2d(
  x: RawTensor,
  w: RawTensor,
  bias: RawTensor | null,
  p: Conv2dParams,
  outShape: Shape,
): RawTensor {
  return (cpuExact() ? conv2dExact : viaGemm.conv2d)(x, w, bias, p, outShape);
}
export function convTranspose2d(
  x: RawTensor,
  w: RawTensor,
  bias: RawTensor | null,
  p: ConvTranspose2dParams,
  outShape: Shape,
): RawTensor {
  return (cpuExact() ? convTranspose2dExact : viaGemm.convTranspose2d)(x, w, bias, p, outShape);
}
export function convWeightGrad(x: RawTensor, dy: RawTensor, wShape: Shape, p: Conv2dParams): RawTensor {
  return (cpuExact() ? convWeightGradExact : viaGemm.convWeightGrad)(x, dy, wShape, p);
}

/** out[b, o, y, x] = bias[o] + sum over the group's input channels c and taps (i, j) */
function conv2dExact(x: RawTensor, w: RawTensor, bias: RawTensor | null, p: Conv2dParams, outShape: Shape): RawTensor {
  const [n, cIn, h, wd] = x.layout.shape as [number, number, number, number];
  const [cOut, cg, kh, kw] = w.layout.shape as [number, number, number, number];
  const [, , oh, ow] = outShape as [number, number, number, number];
  const [ph, pw] = p.padding,
    [sh, sw] = p.stride,
    [dh, dw] = p.dilation;
  const oPerGroup = cOut / p.groups;
  const xv = readNumbers(x),
    wv = readNumbers(w),
    bv = bias ? readNumbers(bias) : null;
  const out = new Float64Array(n * cOut * oh * ow);
  for (let b = 0; b < n; b++) {
    for (let o = 0; o < cOut; o++) {
      const c0 = Math.floor(o / oPerGroup) * cg;
      for (let y = 0; y < oh; y++) {
        for (let xo = 0; xo < ow; xo++) {
          let s = bv ? bv[o]! : 0;
          for (let c = 0; c < cg; c++) {
            const xBase = (b * cIn + c0 + c) * h * wd,
              wBase = (o * cg + c) * kh * kw;
            for (let i = 0; i < kh; i++) {
              const iy = y * sh - ph + i * dh;
              if (iy < 0 || iy >= h) continue;
              for (let j = 0; j < kw; j++) {
                const ix = xo * sw - pw + j * dw;
                if (ix < 0 || ix >= wd) continue;
                s += xv[xBase + iy * wd + ix]! * wv[wBase + i * kw + j]!;
              }
            }
          }
          out[((b * cOut + o) * oh + y) * ow + xo] = s;
        }
      }
    }
  }
  return fromNumbers(out, outShape, x.dtype, x.device);
}

/** each input cell scatters x * w into the output cells its taps reach (conv2d's adjoint) */
function convTranspose2dExact(
  x: RawTensor,
  w: RawTensor,
  bias: RawTensor | null,
  p: ConvTranspose2dParams,
  outShape: Shape,
): RawTensor {
  const [n, cIn, h, wd] = x.layout.shape as [number, number, number, number];
  const [, og, kh, kw] = w.layout.shape as [number, number, number, number];
  const [, cOut, oh, ow] = outShape as [number, number, number, number];
  const [ph, pw] = p.padding,
    [sh, sw] = p.stride,
    [dh, dw] = p.dilation;
  const inPerGroup = cIn / p.groups;
  const xv = readNumbers(x),
    wv = readNumbers(w),
    bv = bias ? readNumbers(bias) : null;
  const out = new Float64Array(n * cOut * oh * ow);
  for (let b = 0; b < n; b++) {
    if (bv) for (let o = 0; o < cOut; o++) out.fill(bv[o]!, (b * cOut + o) * oh * ow, (b * cOut + o + 1) * oh * ow);
    for (let c = 0; c < cIn; c++) {
      const o0 = Math.floor(c / inPerGroup) * og;
      for (let y = 0; y < h; y++) {
        for (let xi = 0; xi < wd; xi++) {
          const v = xv[((b * cIn + c) * h + y) * wd + xi]!;
          for (let o = 0; o < og; o++) {
            const wBase = (c * og + o) * kh * kw,
              oBase = (b * cOut + o0 + o) * oh * ow;
            for (let i = 0; i < kh; i++) {
              const oy = y * sh - ph + i * dh;
              if (oy < 0 || oy >= oh) continue;
              for (let j = 0; j < kw; j++) {
                const ox = xi * sw - pw + j * dw;
                if (ox < 0 || ox >= ow) continue;
                out[oBase + oy * ow + ox] += v * wv[wBase + i * kw + j]!;
              }
            }
          }
        }
      }
    }
  }
  return fromNumbers(out, outShape, x.dtype, x.device);
}

/** conv2d's weight gradient: dw[o, c, i, j] = sum over images and output cells of dy * the x cell
 *  tap (i, j) read for it */
function convWeightGradExact(x: RawTensor, dy: RawTensor, wShape: Shape, p: Conv2dParams): RawTensor {
  const [n, cIn, h, wd] = x.layout.shape as [number, number, number, number];
  const [cOut, cg, kh, kw] = wShape as [number, number, number, number];
  const [, , oh, ow] = dy.layout.shape as [number, number, number, number];
  const [ph, pw] = p.padding,
    [sh, sw] = p.stride,
    [dh, dw] = p.dilation;
  const oPerGroup = cOut / p.groups;
  const xv = readNumbers(x),
    gv = readNumbers(dy);
  const out = new Float64Array(cOut * cg * kh * kw);
  for (let o = 0; o < cOut; o++) {
    const c0 = Math.floor(o / oPerGroup) * cg;
    for (let c = 0; c < cg; c++) {
      for (let i = 0; i < kh; i++) {
        for (let j = 0; j < kw; j++) {
          let s = 0;
          for (let b = 0; b < n; b++) {
            const xBase = (b * cIn + c0 + c) * h * wd,
              gBase = (b * cOut + o) * oh * ow;
            for (let y = 0; y < oh; y++) {
              const iy = y * sh - ph + i * dh;
              if (iy < 0 || iy >= h) continue;
              for (let xo = 0; xo < ow; xo++) {
                const ix = xo * sw - pw + j * dw;
                if (ix < 0 || ix >= wd) continue;
                s += gv[gBase + y * ow + xo]! * xv[xBase + iy * wd + ix]!;
              }
            }
          }
          out[((o * cg + c) * kh + i) * kw + j] = s;
        }
      }
    }
  }
  return fromNumbers(out, wShape, x.dtype, x.device);
}
