// GPU convolutions on MIOpen / cuDNN (through runtime.dnn()): NCHW, contiguous operands, the
// library picks and caches the algorithm per shape. 1x1 convolutions go to the library GEMM
// instead where gemmConvRoute (gpu/conv-gemm.ts) says so. Bias is a broadcast add afterwards.
import { numel, type Shape } from '../../core/layout.ts';
import { RawTensor } from '../../device/raw-tensor.ts';
import type { ConvParams } from '../../runtime/gpu.ts';
import type { Conv2dParams, ConvTranspose2dParams } from '../../core/op-types.ts';
import { addChannelBias, dense, dnnDType, release } from './dnn-util.ts';
import { conv1x1Gemm, gemmConvRoute } from './conv-gemm.ts';
import { matmul } from './matmul.ts';
import { contiguous } from './copy.ts';

function params(x: RawTensor, w: RawTensor, y: RawTensor, p: Conv2dParams, cIn: number, cOut: number): ConvParams {
  const [n, , inH, inW] = x.layout.shape as [number, number, number, number];
  return {
    dtype: dnnDType(x),
    n,
    cIn,
    inH,
    inW,
    cOut,
    kH: w.layout.shape[2]!,
    kW: w.layout.shape[3]!,
    outH: y.layout.shape[2]!,
    outW: y.layout.shape[3]!,
    padH: p.padding[0],
    padW: p.padding[1],
    strideH: p.stride[0],
    strideW: p.stride[1],
    dilationH: p.dilation[0],
    dilationW: p.dilation[1],
    groups: p.groups,
    x: x.storage.ptrAt(x.layout.offset),
    w: w.storage.ptrAt(w.layout.offset),
    y: y.storage.ptrAt(y.layout.offset),
  };
}

/** x [n, cIn, h, w], w [cOut, cIn/groups, kh, kw] */
export function conv2d(
  x: RawTensor,
  w: RawTensor,
  bias: RawTensor | null,
  p: Conv2dParams,
  outShape: Shape,
): RawTensor {
  if (numel(outShape) === 0) return RawTensor.empty(outShape, x.dtype, x.device);
  const route = gemmConvRoute(x.dtype, x.layout, w.layout, p);
  if (route) return addChannelBias(conv1x1Gemm(x, w, p, route, outShape, { matmul, contiguous }), bias);
  const y = RawTensor.empty(outShape, x.dtype, x.device);
  const X = dense(x),
    W = dense(w);
  try {
    x.device.dnn('conv').convForward(params(X.t, W.t, y, p, x.layout.shape[1]!, outShape[1]!), x.device.stream);
  } finally {
    release(X, W);
  }
  return addChannelBias(y, bias);
}

/** x [n, cIn, h, w], w [cIn, cOut/groups, kh, kw]; output padding is in outShape */
export function convTranspose2d(
  x: RawTensor,
  w: RawTensor,
  bias: RawTensor | null,
  p: ConvTranspose2dParams,
  outShape: Shape,
): RawTensor {
  const y = RawTensor.empty(outShape, x.dtype, x.device);
  if (y.numel === 0) return y;
  const X = dense(x),
    W = dense(w);
  try {
    x.device
      .dnn('convTranspose')
      .convTransposeForward(params(X.t, W.t, y, p, x.layout.shape[1]!, outShape[1]!), x.device.stream);
  } finally {
    release(X, W);
  }
  return addChannelBias(y, bias);
}

/**
 * the weight gradient of conv2d: x [n, cIn, h, w] (the forward's input), dy [n, cOut, oh, ow]
 * (its output's gradient) into a new [cOut, cIn/groups, kh, kw]
 */
export function convWeightGrad(x: RawTensor, dy: RawTensor, wShape: Shape, p: Conv2dParams): RawTensor {
  // an empty batch (a zero gradient) is the op layer's
  const dw = RawTensor.empty(wShape, x.dtype, x.device);
  if (dw.numel === 0) return dw;
  const X = dense(x),
    DY = dense(dy);
  try {
    const q = params(X.t, dw, DY.t, p, x.layout.shape[1]!, wShape[0]!);
    x.device.dnn('convBackwardWeights').convBackwardWeights({ ...q, w: dw.storage.ptrAt(0) }, x.device.stream);
  } finally {
    release(X, DY);
  }
  return dw;
}
