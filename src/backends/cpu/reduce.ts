// CPU reference for reductions. The input is viewed with the kept dims first and the reduced
// dims last, so each output element reduces one run of consecutive row-major elements.
import { numel, type Shape } from '../../core/layout.ts';
import type { RawTensor } from '../../device/raw-tensor.ts';
import { getElem } from '../../core/dtype.ts';
import type { ReduceOp } from '../../core/op-types.ts';
import { fromNumbers, fromRaw } from './util.ts';

/** Neumaier-compensated sum, so the f64 reference stays accurate for long rows */
function sumRun(v: Float64Array, start: number, len: number): number {
  let s = 0,
    c = 0;
  for (let i = start; i < start + len; i++) {
    const x = v[i]!,
      t = s + x;
    c += Math.abs(s) >= Math.abs(x) ? s - t + x : x - t + s;
    s = t;
  }
  // inf/NaN make the compensation NaN; the plain sum is then the answer
  return Number.isFinite(s) ? s + c : s;
}

/** index of the first extreme in the run; NaN counts as the extreme (torch.argmax/argmin) */
function argRun(v: Float64Array, start: number, len: number, isMax: boolean): number {
  let best = 0;
  for (let i = 0; i < len; i++) {
    const x = v[start + i]!;
    if (Number.isNaN(x)) return i;
    if (isMax ? x > v[start + best]! : x < v[start + best]!) best = i;
  }
  return best;
}

function argRunBig(v: BigInt64Array, start: number, len: number, isMax: boolean): number {
  let best = 0;
  for (let i = 1; i < len; i++)
    if (isMax ? v[start + i]! > v[start + best]! : v[start + i]! < v[start + best]!) best = i;
  return best;
}

/**
 * dims: sorted, distinct, normalized; outShape: the result's shape (keepdim already applied).
 * sum/min/max keep x's dtype (integers wrap), mean is float only, argmin/argmax give u32.
 */
export function reduce(
  op: ReduceOp,
  x: RawTensor,
  dims: readonly number[],
  _keepdim: boolean,
  outShape: Shape,
): RawTensor {
  const shape = x.layout.shape;
  const kept = shape.map((_, i) => i).filter((i) => !dims.includes(i));
  const idx = x.layout.permute([...kept, ...dims]).indices();
  const runLen = numel(dims.map((d) => shape[d]!));
  const nOut = numel(outShape);
  const host = x.storage.host;

  if (x.dtype === 'i64') {
    const big = host as BigInt64Array;
    const v = new BigInt64Array(idx.length);
    for (let i = 0; i < idx.length; i++) v[i] = big[idx[i]!]!;
    if (op === 'argmin' || op === 'argmax') {
      const out = new Uint32Array(nOut);
      for (let o = 0; o < nOut; o++) out[o] = argRunBig(v, o * runLen, runLen, op === 'argmax');
      return fromRaw(out, outShape, 'u32', x.device);
    }
    const out = new BigInt64Array(nOut);
    for (let o = 0; o < nOut; o++) {
      const s = o * runLen;
      let acc = op === 'sum' ? 0n : v[s]!;
      for (let i = s + (op === 'sum' ? 0 : 1); i < s + runLen; i++) {
        const e = v[i]!;
        if (op === 'sum') acc += e;
        else if (op === 'max' ? e > acc : e < acc) acc = e;
      }
      out[o] = BigInt.asIntN(64, acc);
    }
    return fromRaw(out, outShape, 'i64', x.device);
  }

  const v = new Float64Array(idx.length);
  for (let i = 0; i < idx.length; i++) v[i] = getElem(x.dtype, host, idx[i]!);
  const out = new Float64Array(nOut);
  for (let o = 0; o < nOut; o++) {
    const s = o * runLen;
    switch (op) {
      case 'sum':
        out[o] = sumRun(v, s, runLen);
        break;
      // an empty run gives 0/0 = NaN, as torch.mean does
      case 'mean':
        out[o] = sumRun(v, s, runLen) / runLen;
        break;
      case 'argmin':
      case 'argmax':
        out[o] = argRun(v, s, runLen, op === 'argmax');
        break;
      case 'min':
      case 'max': {
        const i = argRun(v, s, runLen, op === 'max');
        out[o] = v[s + i]!;
        break;
      }
    }
  }
  const dtype = op === 'argmin' || op === 'argmax' ? 'u32' : x.dtype;
  return fromNumbers(out, outShape, dtype, x.device);
}
