// 1x1 convolutions as library GEMMs (rocBLAS / cuBLAS through gpu/matmul.ts) instead of MIOpen /
// cuDNN. With a 1x1 kernel, no padding and one group, image b of the output is one matrix
// product: y[b] (cOut x oh*ow) = W (cOut x cIn) . x[b] (cIn x oh*ow), where x[b] holds the
// sampled pixels (every stride-th row and column). One strided-batched GEMM does every image; the
// weight is shared through a batch stride of 0. Where oh*ow = 1 the images fold into the GEMM's
// rows instead: y (n x cOut) = x (n x cIn) . W^T, one GEMM with no batch.
//
// Precision: the GEMM accumulates in f32 for f16/bf16 (f64 for f64), like the DNN path, and f32
// stays full f32 (cuBLAS runs with its default math mode and CUBLAS_COMPUTE_32F, so no TF32;
// rocBLAS has no reduced-precision f32 path), so results match the CPU reference as tightly as
// the cuDNN FMA path did.
import { Layout, type Shape } from '../../core/layout.ts';
import type { RawTensor } from '../../device/raw-tensor.ts';
import { isFloatDType, type DType } from '../../core/dtype.ts';
import type { Conv2dParams } from '../../core/op-types.ts';
import { matrixView } from './matmul.ts';

/** how the GEMM reads the operands, as views of their storage (nothing copied) */
export interface GemmConvView {
  /**
   * batched: x as [n, cIn, oh*ow], one GEMM per image in one strided-batched call;
   * folded (oh*ow = 1): x as [n, cIn], one GEMM with the images as its rows
   */
  readonly kind: 'batched' | 'folded';
  readonly x: Layout;
  /** the weight's taps as [cOut, cIn] */
  readonly w: Layout;
}

/** the GEMM reads views of x as they are, or (stride 1 only) of a contiguous copy of x */
export type GemmConvRoute = { readonly copy: false; readonly view: GemmConvView } | { readonly copy: true };

/**
 * THE routing decision for GPU convolutions: a GemmConvRoute where the convolution goes to the
 * library GEMM, null where it stays on MIOpen / cuDNN.
 *
 * Why: on an H200, cuDNN's heuristic choice for conv2d 1x1 bf16 on x [32, 256, 56, 56],
 * w [256, 256, 1, 1] ran at 0.18x PyTorch's speed (f32 1x1 at parity), while a 1x1 convolution
 * is exactly a matrix product, which BLAS runs at its matmul speed on both vendors. So every
 * 1x1, padding-0, one-group convolution of a BLAS dtype takes the GEMM (dilation does not matter
 * with one tap), when:
 * - the input, sampled at the stride, is a matrix BLAS can address without a copy; or
 * - the stride is 1: a layout BLAS cannot address is made contiguous first, as the DNN path
 *   would make it contiguous too.
 * A stride above 1 on a layout that would need a copy (a gather of the sampled pixels) stays on
 * the DNN path, which reads the strided input itself.
 */
export function gemmConvRoute(dtype: DType, x: Layout, w: Layout, p: Conv2dParams): GemmConvRoute | null {
  if (x.rank !== 4 || w.rank !== 4) return null;
  if (w.shape[2] !== 1 || w.shape[3] !== 1 || p.groups !== 1) return null;
  if (p.padding[0] !== 0 || p.padding[1] !== 0 || !isFloatDType(dtype)) return null;
  const view = gemmConvView(x, w, p);
  if (view) return { copy: false, view };
  return p.stride[0] === 1 && p.stride[1] === 1 ? { copy: true } : null;
}

/** the BLAS-addressable views of a 1x1 convolution's operands, or null where x's layout needs a copy */
function gemmConvView(x: Layout, w: Layout, p: Conv2dParams): GemmConvView | null {
  const [n, cIn, h, wd] = x.shape as [number, number, number, number];
  const [s0, s1, s2, s3] = x.strides as [number, number, number, number];
  const [sh, sw] = p.stride;
  // a 1x1 tap with no padding reads pixel (i * sh, j * sw) for output pixel (i, j)
  const oh = Math.floor((h - 1) / sh) + 1,
    ow = Math.floor((wd - 1) / sw) + 1;
  const rowStride = s2 * sh,
    colStride = s3 * sw;
  const wv = new Layout([w.shape[0]!, w.shape[1]!], [w.strides[0]!, w.strides[1]!], w.offset);
  if (oh * ow === 1 && matrixView(n, cIn, s0, s1)) {
    return { kind: 'folded', x: new Layout([n, cIn], [s0, s1], x.offset), w: wv };
  }
  // the sampled pixels as one dim of oh*ow: the rows must follow each other at one stride
  const pixStride = ow === 1 ? rowStride : oh === 1 || rowStride === ow * colStride ? colStride : null;
  if (pixStride !== null && matrixView(cIn, oh * ow, s1, pixStride)) {
    return { kind: 'batched', x: new Layout([n, cIn, oh * ow], [s0, s1, pixStride], x.offset), w: wv };
  }
  return null;
}

/** (a, b, out shape) -> a . b, as backends/gpu/matmul.ts (or the CPU reference's, in tests) */
export type MatmulFn = (a: RawTensor, b: RawTensor, outShape: Shape) => RawTensor;
/** the two ops the route runs: parameters, so that the CPU tests run the same views through the
 *  CPU reference */
export interface GemmOps {
  readonly matmul: MatmulFn;
  readonly contiguous: (x: RawTensor) => RawTensor;
}

/**
 * x [n, cIn, h, w] conv w [cOut, cIn, 1, 1] -> [n, cOut, oh, ow] along `route`, without bias.
 */
export function conv1x1Gemm(
  x: RawTensor,
  w: RawTensor,
  p: Conv2dParams,
  route: GemmConvRoute,
  outShape: Shape,
  ops: GemmOps,
): RawTensor {
  const mm = ops.matmul;
  const [n, cOut, oh, ow] = outShape as [number, number, number, number];
  const owned: RawTensor[] = [];
  const keep = (t: RawTensor): RawTensor => {
    owned.push(t);
    return t;
  };
  try {
    let src = x,
      view: GemmConvView | null;
    if (route.copy) {
      src = keep(ops.contiguous(x));
      view = gemmConvView(src.layout, w.layout, p);
      // a contiguous NCHW tensor is always addressable (pixel stride 1, leading dim oh*ow)
      if (!view)
        throw new Error(`conv2d: internal: no GEMM view of a contiguous input [${src.layout.shape.join(', ')}]`);
    } else {
      view = route.view;
    }
    const xv = keep(src.view(view.x)),
      wv = keep(w.view(view.w));
    const y = view.kind === 'folded' ? mm(xv, keep(wv.T), [n, cOut]) : mm(wv, xv, [n, cOut, oh * ow]);
    try {
      return y.viewAs([n, cOut, oh, ow]);
    } finally {
      y.dispose();
    }
  } finally {
    for (const t of owned) t.dispose();
  }
}
