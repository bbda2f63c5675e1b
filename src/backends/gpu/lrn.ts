// Local response normalization across channels on MIOpen / cuDNN, x seen as [n, c, inner, 1]:
// the odd windows in f32, f16 and bf16 (ops/lrn.ts composes the rest from other ops, see
// ops/lrn-composed.ts). For odd windows the libraries' window [c - (size - 1) / 2, c + (size - 1) / 2]
// is PyTorch's, and both divide alpha by size, as PyTorch does. bf16 runs in an f32 copy (neither
// library's LRN takes it) and rounds back once. The range cuDNN takes (sizes 1..16, k >= 1e-5,
// beta >= 0.01) holds on the GPU for both vendors, whichever path runs.
import type { DType } from '../../core/dtype.ts';
import { TensorError } from '../../core/errors.ts';
import { RawTensor } from '../../device/raw-tensor.ts';
import type { DnnDType, LrnParams } from '../../runtime/gpu.ts';
import { sig } from '../checks.ts';
import type { LrnSettings } from '../lrn-options.ts';
import { cast } from './cast.ts';
import { copyInto } from './copy.ts';
import { denseIn, nchwOf } from './dnn-util.ts';

/** the window sizes, k and beta the GPU takes (cuDNN's limits, held on both vendors) */
export const GPU_LRN_LIMITS = { minSize: 1, maxSize: 16, minK: 1e-5, minBeta: 0.01 } as const;

/** refuses what the GPU does not take, naming the op, the limit and x */
export function checkGpuLrn(op: string, x: RawTensor, p: LrnSettings): void {
  const L = GPU_LRN_LIMITS;
  const bad =
    p.size < L.minSize || p.size > L.maxSize
      ? `size ${p.size} is outside ${L.minSize}..${L.maxSize}`
      : p.k < L.minK
        ? `k ${p.k} is below ${L.minK}`
        : p.beta < L.minBeta
          ? `beta ${p.beta} is below ${L.minBeta}`
          : null;
  if (bad)
    throw new RangeError(
      `${op}: ${bad}, outside what MIOpen's / cuDNN's LRN takes on the GPU (sizes ${L.minSize}..${L.maxSize}, ` +
        `k >= ${L.minK}, beta >= ${L.minBeta}; the CPU takes any) (x ${sig(x)} on ${x.device})`,
    );
}

const libDType = (d: DType): DType => (d === 'bf16' ? 'f32' : d);

/** t as the library takes it: dense, in the library's dtype */
function toLib(t: RawTensor, temps: RawTensor[]): RawTensor {
  if (libDType(t.dtype) !== t.dtype) {
    const c = cast(t, libDType(t.dtype));
    temps.push(c);
    return c;
  }
  return denseIn(t, temps);
}

/** out itself when the library can write it, else an f32 tensor it writes */
function libOut(out: RawTensor, temps: RawTensor[]): RawTensor {
  if (libDType(out.dtype) === out.dtype) return out;
  const t = RawTensor.empty(out.layout.shape, libDType(out.dtype), out.device);
  temps.push(t);
  return t;
}

/** out <- what the library wrote into lib, rounded to out's dtype */
function fromLib(out: RawTensor, lib: RawTensor, temps: RawTensor[]): void {
  if (lib === out) return;
  const c = cast(lib, out.dtype);
  temps.push(c);
  copyInto(out, c);
}

function params(x: RawTensor, p: LrnSettings, X: RawTensor, Y: RawTensor): LrnParams {
  return {
    dtype: X.dtype as DnnDType,
    ...nchwOf(x),
    size: p.size,
    alpha: p.alpha,
    beta: p.beta,
    k: p.k,
    x: X.storage.ptrAt(X.layout.offset),
    y: Y.storage.ptrAt(Y.layout.offset),
  };
}

/** whether the libraries compute this exactly: odd windows in f32, f16 or bf16 */
export const libraryTakes = (x: RawTensor, p: LrnSettings): boolean => p.size % 2 === 1 && x.dtype !== 'f64';

function onlyLibrary(op: string, x: RawTensor, p: LrnSettings): void {
  checkGpuLrn(op, x, p);
  if (!libraryTakes(x, p))
    throw new TensorError(`${op}: internal: size ${p.size} with x ${sig(x)} is for the composed form, not the library`);
}

export function localResponseNorm(x: RawTensor, p: LrnSettings): RawTensor {
  onlyLibrary('localResponseNorm', x, p);
  const y = RawTensor.empty(x.layout.shape, x.dtype, x.device);
  if (y.numel === 0) return y;
  const temps: RawTensor[] = [];
  try {
    const X = toLib(x, temps);
    const Y = libOut(y, temps);
    x.device.dnn('localResponseNorm').lrnForward(params(x, p, X, Y), x.device.stream);
    fromLib(y, Y, temps);
  } catch (e) {
    y.dispose();
    throw e;
  } finally {
    for (const t of temps) t.dispose();
  }
  return y;
}

/** dx from the forward's x and y and the output gradient dy */
export function localResponseNormBackward(x: RawTensor, y: RawTensor, dy: RawTensor, p: LrnSettings): RawTensor {
  onlyLibrary('localResponseNormBackward', x, p);
  const dx = RawTensor.empty(x.layout.shape, x.dtype, x.device);
  if (dx.numel === 0) return dx;
  const temps: RawTensor[] = [];
  try {
    const X = toLib(x, temps),
      Y = toLib(y, temps),
      DY = toLib(dy, temps);
    const DX = libOut(dx, temps);
    x.device.dnn('localResponseNormBackward').lrnBackward(
      {
        ...params(x, p, X, Y),
        dy: DY.storage.ptrAt(DY.layout.offset),
        dx: DX.storage.ptrAt(DX.layout.offset),
      },
      x.device.stream,
    );
    fromLib(dx, DX, temps);
  } catch (e) {
    dx.dispose();
    throw e;
  } finally {
    for (const t of temps) t.dispose();
  }
  return dx;
}
