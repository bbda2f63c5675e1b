// GPU pooling on MIOpen / cuDNN: NCHW, contiguous operands (copied where they are not).
import type { Shape } from '../../core/layout.ts';
import { RawTensor } from '../../device/raw-tensor.ts';
import type { Pool2dParams } from '../../core/op-types.ts';
import type { PoolParams } from '../../runtime/gpu.ts';
import { dense, dnnDType, release } from './dnn-util.ts';

/** the library's parameters for x ([n, c, h, w], its dense form X) pooled into y */
function params(mode: 'max' | 'avg', X: RawTensor, y: RawTensor, p: Pool2dParams): PoolParams {
  const [n, c, inH, inW] = X.layout.shape as [number, number, number, number];
  return {
    dtype: dnnDType(X),
    mode,
    countIncludePad: p.countIncludePad,
    n,
    c,
    inH,
    inW,
    outH: y.layout.shape[2]!,
    outW: y.layout.shape[3]!,
    kH: p.kernel[0],
    kW: p.kernel[1],
    padH: p.padding[0],
    padW: p.padding[1],
    strideH: p.stride[0],
    strideW: p.stride[1],
    x: X.storage.ptrAt(X.layout.offset),
    y: y.storage.ptrAt(y.layout.offset),
  };
}

function pool(mode: 'max' | 'avg', x: RawTensor, p: Pool2dParams, outShape: Shape): RawTensor {
  const y = RawTensor.empty(outShape, x.dtype, x.device);
  if (y.numel === 0) return y;
  const X = dense(x);
  try {
    x.device.dnn('pool').poolForward(params(mode, X.t, y, p), x.device.stream);
  } finally {
    release(X);
  }
  return y;
}

export function avgPool2d(x: RawTensor, p: Pool2dParams, outShape: Shape): RawTensor {
  return pool('avg', x, p, outShape);
}
export function maxPool2d(x: RawTensor, p: Pool2dParams, outShape: Shape): RawTensor {
  return pool('max', x, p, outShape);
}

/** dx of a pooling from the forward's x and y and the output gradient dy (all [n, c, h, w]) */
export function pool2dBackward(
  mode: 'max' | 'avg',
  x: RawTensor,
  y: RawTensor,
  dy: RawTensor,
  p: Pool2dParams,
): RawTensor {
  const dx = RawTensor.empty(x.layout.shape, x.dtype, x.device);
  if (dx.numel === 0) return dx;
  const X = dense(x),
    Y = dense(y),
    DY = dense(dy);
  try {
    x.device
      .dnn('pool')
      .poolBackward(
        { ...params(mode, X.t, Y.t, p), dy: DY.t.storage.ptrAt(DY.t.layout.offset), dx: dx.storage.ptrAt(0) },
        x.device.stream,
      );
  } finally {
    release(X, Y, DY);
  }
  return dx;
}
