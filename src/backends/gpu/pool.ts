// GPU pooling on MIOpen / cuDNN: NCHW, contiguous input.
import type { Shape } from '../../core/layout.ts';
import { RawTensor } from '../../device/raw-tensor.ts';
import type { Pool2dParams } from '../../core/op-types.ts';
import { dense, dnnDType, release } from './dnn-util.ts';

function pool(mode: 'max' | 'avg', x: RawTensor, p: Pool2dParams, outShape: Shape): RawTensor {
  const y = RawTensor.empty(outShape, x.dtype, x.device);
  if (y.numel === 0) return y;
  const X = dense(x);
  try {
    const [n, c, inH, inW] = x.layout.shape as [number, number, number, number];
    x.device.dnn('pool').poolForward(
      {
        dtype: dnnDType(x),
        mode,
        countIncludePad: p.countIncludePad,
        n,
        c,
        inH,
        inW,
        outH: outShape[2]!,
        outW: outShape[3]!,
        kH: p.kernel[0],
        kW: p.kernel[1],
        padH: p.padding[0],
        padW: p.padding[1],
        strideH: p.stride[0],
        strideW: p.stride[1],
        x: X.t.storage.ptrAt(X.t.layout.offset),
        y: y.storage.ptrAt(0),
      },
      x.device.stream,
    );
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
