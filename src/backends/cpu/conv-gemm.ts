// CPU convolutions as matrix products (im2col): per image and group, the input cells each output
// cell reads become one column of a [c/g · kh · kw, oh · ow] matrix, so the convolution is
// W_g · cols on the CPU GEMM (the system BLAS where installed), its weight gradient is
// dY_g · colsᵀ summed over the images, and the transposed convolution is W_gᵀ · x_g followed by
// the scatter back (col2im). f64 computes in f64; f32, f16 and bf16 in f32, rounded once to the
// dtype on store. The exact reference (cpu/mode.ts) keeps the direct f64 loops of cpu/conv.ts.
import type { Shape } from '../../core/layout.ts';
import type { RawTensor } from '../../device/raw-tensor.ts';
import type { Conv2dParams, ConvTranspose2dParams } from '../../core/op-types.ts';
import { gemm, type F } from './gemm.ts';
import { fromNumbers, fromRaw, readNumbers, readRaw } from './util.ts';

/** t's values in the working precision (f64 for f64, else f32), in index order */
function work(t: RawTensor): F {
  if (t.dtype === 'f32' || t.dtype === 'f64') return readRaw(t) as F;
  return Float32Array.from(readNumbers(t));
}
/** the result: f32 and f64 as they are, half types rounded once */
const result = (out: F, shape: Shape, like: RawTensor): RawTensor =>
  like.dtype === 'f32' || like.dtype === 'f64'
    ? fromRaw(out, shape, like.dtype, like.device)
    : fromNumbers(out, shape, like.dtype, like.device);
const alloc = (like: F, n: number): F => (like instanceof Float64Array ? new Float64Array(n) : new Float32Array(n));

/** the geometry of a convolution from x [n, c, h, w] to [n, cOut, oh, ow] through kh x kw taps */
interface Geom {
  readonly h: number;
  readonly w: number;
  readonly oh: number;
  readonly ow: number;
  readonly kh: number;
  readonly kw: number;
  readonly p: Conv2dParams;
}

/** cols[(c kh + i) kw + j][at + y ow + x] (rows `stride` apart) = the input cell tap (i, j) of
 *  output (y, x) reads (0 outside) */
function im2col(xv: F, base: number, cg: number, g: Geom, cols: F, at: number, stride: number): void {
  const { h, w, oh, ow, kh, kw } = g;
  const [ph, pw] = g.p.padding,
    [sh, sw] = g.p.stride,
    [dh, dw] = g.p.dilation;
  for (let c = 0; c < cg; c++) {
    for (let i = 0; i < kh; i++) {
      for (let j = 0; j < kw; j++) {
        const row = ((c * kh + i) * kw + j) * stride + at;
        for (let y = 0; y < oh; y++) {
          const iy = y * sh - ph + i * dh;
          const o = row + y * ow;
          if (iy < 0 || iy >= h) {
            cols.fill(0, o, o + ow);
            continue;
          }
          // the output columns whose tap lands inside the row: [x0, x1); zeros around them
          const x0 = Math.min(ow, Math.max(0, Math.ceil((pw - j * dw) / sw)));
          const x1 = Math.max(x0, Math.min(ow, Math.floor((w - 1 + pw - j * dw) / sw) + 1));
          const src = base + (c * h + iy) * w + x0 * sw - pw + j * dw;
          if (x0 > 0) cols.fill(0, o, o + x0);
          if (x1 < ow) cols.fill(0, o + x1, o + ow);
          if (sw === 1) cols.set(xv.subarray(src, src + x1 - x0), o + x0);
          else for (let x = x0, k = src; x < x1; x++, k += sw) cols[o + x] = xv[k]!;
        }
      }
    }
  }
}

/** the adjoint of im2col (columns laid out the same way): out cells += the columns that read them */
function col2im(cols: F, at: number, stride: number, cg: number, g: Geom, out: F, base: number): void {
  const { h, w, oh, ow, kh, kw } = g;
  const [ph, pw] = g.p.padding,
    [sh, sw] = g.p.stride,
    [dh, dw] = g.p.dilation;
  for (let c = 0; c < cg; c++) {
    for (let i = 0; i < kh; i++) {
      for (let j = 0; j < kw; j++) {
        const row = ((c * kh + i) * kw + j) * stride + at;
        for (let y = 0; y < oh; y++) {
          const iy = y * sh - ph + i * dh;
          if (iy < 0 || iy >= h) continue;
          const dst = base + (c * h + iy) * w;
          for (let x = 0; x < ow; x++) {
            const ix = x * sw - pw + j * dw;
            if (ix >= 0 && ix < w) out[dst + ix]! += cols[row + y * ow + x]!;
          }
        }
      }
    }
  }
}

/** out [n, c, plane] += bias [c] per channel */
function addBias(out: F, bias: RawTensor, n: number, c: number, plane: number): void {
  const bv = readNumbers(bias);
  for (let b = 0; b < n; b++)
    for (let o = 0; o < c; o++) for (let i = 0; i < plane; i++) out[(b * c + o) * plane + i]! += bv[o]!;
}

/** images per GEMM: the batch's columns side by side, up to about this many elements */
const COLS_ELEMENTS = 1 << 24;
const imagesPerGemm = (n: number, perImage: number): number =>
  Math.max(1, Math.min(n, Math.floor(COLS_ELEMENTS / Math.max(1, perImage))));

export function conv2d(
  x: RawTensor,
  w: RawTensor,
  bias: RawTensor | null,
  p: Conv2dParams,
  outShape: Shape,
): RawTensor {
  const [n, cIn, h, wd] = x.layout.shape as [number, number, number, number];
  const [cOut, cg, kh, kw] = w.layout.shape as [number, number, number, number];
  const [, , oh, ow] = outShape as [number, number, number, number];
  const g: Geom = { h, w: wd, oh, ow, kh, kw, p };
  const og = cOut / p.groups,
    K = cg * kh * kw,
    L = oh * ow;
  const xv = work(x),
    wv = work(w);
  const out = alloc(xv, n * cOut * L);
  const nb = imagesPerGemm(n, K * L);
  // cols of nb images side by side: [K, nb L]; the product [og, nb L] goes back per image
  const cols = alloc(xv, K * nb * L);
  const prod = alloc(xv, og * nb * L);
  for (let b0 = 0; b0 < n; b0 += nb) {
    const m = Math.min(nb, n - b0);
    for (let gi = 0; gi < p.groups; gi++) {
      for (let b = 0; b < m; b++) im2col(xv, ((b0 + b) * cIn + gi * cg) * h * wd, cg, g, cols, b * L, m * L);
      gemm(
        { host: wv, off: gi * og * K, rs: K, cs: 1 },
        { host: cols, off: 0, rs: m * L, cs: 1 },
        prod,
        0,
        og,
        m * L,
        K,
      );
      for (let o = 0; o < og; o++)
        for (let b = 0; b < m; b++)
          out.set(prod.subarray(o * m * L + b * L, o * m * L + (b + 1) * L), ((b0 + b) * cOut + gi * og + o) * L);
    }
  }
  if (bias) addBias(out, bias, n, cOut, L);
  return result(out, outShape, x);
}

/** the weight gradient: dY_g [og, n L] · cols_gᵀ [n L, K], the images side by side */
export function convWeightGrad(x: RawTensor, dy: RawTensor, wShape: Shape, p: Conv2dParams): RawTensor {
  const [n, cIn, h, wd] = x.layout.shape as [number, number, number, number];
  const [cOut, cg, kh, kw] = wShape as [number, number, number, number];
  const [, , oh, ow] = dy.layout.shape as [number, number, number, number];
  const g: Geom = { h, w: wd, oh, ow, kh, kw, p };
  const og = cOut / p.groups,
    K = cg * kh * kw,
    L = oh * ow;
  const xv = work(x),
    gv = work(dy);
  const dw = alloc(xv, cOut * K);
  const part = alloc(xv, og * K);
  const nb = imagesPerGemm(n, K * L);
  const cols = alloc(xv, K * nb * L);
  const dys = alloc(xv, og * nb * L);
  for (let b0 = 0; b0 < n; b0 += nb) {
    const m = Math.min(nb, n - b0);
    for (let gi = 0; gi < p.groups; gi++) {
      for (let b = 0; b < m; b++) {
        im2col(xv, ((b0 + b) * cIn + gi * cg) * h * wd, cg, g, cols, b * L, m * L);
        for (let o = 0; o < og; o++) {
          const src = ((b0 + b) * cOut + gi * og + o) * L;
          dys.set(gv.subarray(src, src + L), o * m * L + b * L);
        }
      }
      gemm({ host: dys, off: 0, rs: m * L, cs: 1 }, { host: cols, off: 0, rs: 1, cs: m * L }, part, 0, og, K, m * L);
      const at = gi * og * K;
      for (let i = 0; i < og * K; i++) dw[at + i]! += part[i]!;
    }
  }
  return result(dw, wShape, x);
}

/** x [n, cIn, h, w] through w [cIn, og, kh, kw]: cols = W_gᵀ · x_g (images side by side), then
 *  scattered into the output */
export function convTranspose2d(
  x: RawTensor,
  w: RawTensor,
  bias: RawTensor | null,
  p: ConvTranspose2dParams,
  outShape: Shape,
): RawTensor {
  const [n, cIn, h, wd] = x.layout.shape as [number, number, number, number];
  const [, og, kh, kw] = w.layout.shape as [number, number, number, number];
  const [, cOut, oh, ow] = outShape as [number, number, number, number];
  // the geometry of the forward convolution this is the adjoint of: from the output to x
  const g: Geom = { h: oh, w: ow, oh: h, ow: wd, kh, kw, p };
  const cg = cIn / p.groups,
    K = og * kh * kw,
    L = h * wd;
  const xv = work(x),
    wv = work(w);
  const out = alloc(xv, n * cOut * oh * ow);
  const nb = imagesPerGemm(n, K * L);
  const xs = alloc(xv, cg * nb * L);
  const cols = alloc(xv, K * nb * L);
  for (let b0 = 0; b0 < n; b0 += nb) {
    const m = Math.min(nb, n - b0);
    for (let gi = 0; gi < p.groups; gi++) {
      for (let b = 0; b < m; b++)
        for (let c = 0; c < cg; c++) {
          const src = ((b0 + b) * cIn + gi * cg + c) * L;
          xs.set(xv.subarray(src, src + L), c * m * L + b * L);
        }
      gemm({ host: wv, off: gi * cg * K, rs: 1, cs: K }, { host: xs, off: 0, rs: m * L, cs: 1 }, cols, 0, K, m * L, cg);
      for (let b = 0; b < m; b++) col2im(cols, b * L, m * L, og, g, out, ((b0 + b) * cOut + gi * og) * oh * ow);
    }
  }
  if (bias) addBias(out, bias, n, cOut, oh * ow);
  return result(out, outShape, x);
}
