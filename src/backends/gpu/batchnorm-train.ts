// Batch norm in training mode on MIOpen / cuDNN (spatial mode, x as [n, c, inner, 1]). The
// libraries take the per-channel tensors in f32 beside half data (x's dtype otherwise), dense:
// other dtypes or layouts go through a converted copy, written back for the running statistics.
import type { DType } from '../../core/dtype.ts';
import { RawTensor } from '../../device/raw-tensor.ts';
import type { DnnDType } from '../../runtime/gpu.ts';
import type { BatchNormGrads } from '../options.ts';
import { batchNormParamDType } from '../checks.ts';
import { cast } from './cast.ts';
import { constSet, copyInto } from './copy.ts';
import { dense, dnnDType, libraryReady, nchwOf, release } from './dnn-util.ts';

/** t as a dense tensor of dtype d (a converted copy when it is not one already), or a constant */
function param(t: RawTensor | null, d: DType, c: number, x: RawTensor, value: number, temps: RawTensor[]): RawTensor {
  if (t && t.dtype === d && libraryReady(t)) return t;
  const p = t && t.dtype !== d ? cast(t, d) : RawTensor.empty([c], d, x.device);
  temps.push(p);
  if (!t) constSet(p, value);
  else if (t.dtype === d) copyInto(p, t);
  return p;
}

const ptr = (t: RawTensor) => t.storage.ptrAt(t.layout.offset);

export function batchNormTrain(
  x: RawTensor,
  weight: RawTensor | null,
  bias: RawTensor | null,
  runningMean: RawTensor | null,
  runningVar: RawTensor | null,
  momentum: number,
  eps: number,
): RawTensor {
  const y = RawTensor.empty(x.layout.shape, x.dtype, x.device);
  const d = nchwOf(x),
    pd = batchNormParamDType(x);
  const temps: RawTensor[] = [];
  const X = dense(x);
  try {
    const rm = runningMean ? param(runningMean, pd, d.c, x, 0, temps) : null;
    const rv = runningVar ? param(runningVar, pd, d.c, x, 0, temps) : null;
    x.device.dnn('batchNormTrain').batchNormForwardTraining(
      {
        dtype: dnnDType(x) as DnnDType,
        ...d,
        x: ptr(X.t),
        y: ptr(y),
        scale: ptr(param(weight, pd, d.c, x, 1, temps)),
        bias: ptr(param(bias, pd, d.c, x, 0, temps)),
        runningMean: rm ? ptr(rm) : null,
        runningVar: rv ? ptr(rv) : null,
        momentum,
        eps,
      },
      x.device.stream,
    );
    // running statistics updated in a converted copy go back to the caller's tensors
    if (rm && rm !== runningMean) copyBack(runningMean!, rm, temps);
    if (rv && rv !== runningVar) copyBack(runningVar!, rv, temps);
  } catch (e) {
    y.dispose();
    throw e;
  } finally {
    release(X);
    for (const t of temps) t.dispose();
  }
  return y;
}

function copyBack(dst: RawTensor, src: RawTensor, temps: RawTensor[]): void {
  const c = src.dtype === dst.dtype ? src : cast(src, dst.dtype);
  if (c !== src) temps.push(c);
  copyInto(dst, c);
}

/** dx, and the library's scale and bias gradients ([c], f32 beside half x, else x's dtype) */
export function batchNormTrainBackward(
  x: RawTensor,
  dy: RawTensor,
  weight: RawTensor | null,
  eps: number,
): BatchNormGrads {
  const d = nchwOf(x),
    pd = batchNormParamDType(x);
  const dx = RawTensor.empty(x.layout.shape, x.dtype, x.device);
  const dScale = RawTensor.empty([d.c], pd, x.device);
  const dBias = RawTensor.empty([d.c], pd, x.device);
  const temps: RawTensor[] = [];
  const X = dense(x),
    DY = dense(dy);
  try {
    x.device.dnn('batchNormTrain').batchNormBackward(
      {
        dtype: dnnDType(x) as DnnDType,
        ...d,
        x: ptr(X.t),
        dy: ptr(DY.t),
        dx: ptr(dx),
        scale: ptr(param(weight, pd, d.c, x, 1, temps)),
        dScale: ptr(dScale),
        dBias: ptr(dBias),
        eps,
      },
      x.device.stream,
    );
  } catch (e) {
    for (const t of [dx, dScale, dBias]) t.dispose();
    throw e;
  } finally {
    release(X, DY);
    for (const t of temps) t.dispose();
  }
  return { dx, dScale, dBias };
}
