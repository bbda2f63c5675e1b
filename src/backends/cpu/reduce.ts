// CPU reference for reductions. The input is viewed with the kept dims first and the reduced
// dims last, so each output element reduces one run of consecutive row-major elements; that view
// is walked run by run (cpu/util.ts) and fed, CHUNK elements at a time, to one accumulator that
// finishes an output every runLen elements. No index list, no copy of the input.
import { numel, type Shape } from '../../core/layout.ts';
import type { RawTensor } from '../../device/raw-tensor.ts';
import type { ReduceOp } from '../../core/op-types.ts';
import { CHUNK, forEachRun, fromRaw, gather, outArray, scatter, walk } from './util.ts';

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
  const l = x.layout.permute([...kept, ...dims]);
  const runLen = numel(dims.map((d) => shape[d]!));
  const nOut = numel(outShape);
  const isArg = op === 'argmin' || op === 'argmax';
  const dtype = isArg ? 'u32' : x.dtype;
  if (x.dtype === 'i64') return reduceBig(op, x, l.shape, l.strides, runLen, nOut, outShape);

  const vals = new Float64Array(nOut);
  const acc = accumulator(op, runLen, vals);
  if (runLen === 0) for (let o = 0; o < nOut; o++) acc.empty(o);
  else if (nOut > 0) {
    const host = x.storage.host;
    const w = walk(l.shape, [l.strides]);
    const st = w.strides[0]![w.shape.length - 1]!;
    const buf = new Float64Array(Math.min(CHUNK, nOut * runLen));
    forEachRun(w, [l.offset], (offs, len) => {
      for (let c = 0; c < len; c += CHUNK) {
        const m = Math.min(CHUNK, len - c);
        gather(x.dtype, host, offs[0]! + c * st, st, buf, 0, m);
        acc.feed(buf, m);
      }
    });
  }
  const out = outArray(dtype, nOut);
  scatter(dtype, vals, 0, out, 0, nOut);
  return fromRaw(out, outShape, dtype, x.device);
}

interface Acc {
  feed(buf: Float64Array, len: number): void;
  empty(o: number): void;
}

/** reduces consecutive runs of runLen values fed in order, output o into vals[o] */
function accumulator(op: ReduceOp, runLen: number, vals: Float64Array): Acc {
  let o = 0,
    i = 0; // output being reduced, and the position in its run
  const empty = (k: number) => {
    // an empty run: sum 0, mean 0/0 = NaN (as torch.mean), min/max NaN, arg 0
    vals[k] = op === 'sum' || op === 'argmin' || op === 'argmax' ? 0 : NaN;
  };
  if (op === 'sum' || op === 'mean') {
    // Neumaier-compensated sum, so the f64 reference stays accurate for long rows
    let s = 0,
      comp = 0;
    return {
      empty,
      feed(buf, len) {
        for (let q = 0; q < len; q++) {
          const x = buf[q]!,
            t = s + x;
          comp += Math.abs(s) >= Math.abs(x) ? s - t + x : x - t + s;
          s = t;
          if (++i === runLen) {
            // inf/NaN make the compensation NaN; the plain sum is then the answer
            const total = Number.isFinite(s) ? s + comp : s;
            vals[o++] = op === 'mean' ? total / runLen : total;
            s = comp = 0;
            i = 0;
          }
        }
      },
    };
  }
  // min/max/argmin/argmax: the first extreme; NaN counts as the extreme (torch.argmax/argmin)
  const isMax = op === 'max' || op === 'argmax',
    isArg = op === 'argmin' || op === 'argmax';
  let best = 0,
    bestAt = 0,
    nan = false;
  return {
    empty,
    feed(buf, len) {
      for (let q = 0; q < len; q++) {
        const x = buf[q]!;
        if (i === 0) {
          best = x;
          bestAt = 0;
          nan = Number.isNaN(x);
        } else if (!nan) {
          if (Number.isNaN(x)) {
            nan = true;
            best = x;
            bestAt = i;
          } else if (isMax ? x > best : x < best) {
            best = x;
            bestAt = i;
          }
        }
        if (++i === runLen) {
          vals[o++] = isArg ? bestAt : best;
          i = 0;
        }
      }
    },
  };
}

function reduceBig(
  op: ReduceOp,
  x: RawTensor,
  shape: Shape,
  strides: readonly number[],
  runLen: number,
  nOut: number,
  outShape: Shape,
): RawTensor {
  const big = x.storage.host as BigInt64Array;
  const isArg = op === 'argmin' || op === 'argmax',
    isMax = op === 'max' || op === 'argmax';
  const out = isArg ? new Uint32Array(nOut) : new BigInt64Array(nOut);
  let o = 0,
    i = 0,
    acc = 0n,
    bestAt = 0;
  if (runLen > 0 && nOut > 0) {
    const w = walk(shape, [strides]);
    const st = w.strides[0]![w.shape.length - 1]!;
    forEachRun(w, [x.layout.offset], (offs, len) => {
      for (let q = 0; q < len; q++) {
        const e = big[offs[0]! + q * st]!;
        if (i === 0) {
          acc = e;
          bestAt = 0;
        } else if (op === 'sum') acc += e;
        else if (isMax ? e > acc : e < acc) {
          acc = e;
          bestAt = i;
        }
        if (++i === runLen) {
          if (isArg) out[o++] = bestAt;
          else out[o++] = BigInt.asIntN(64, acc) as never;
          i = 0;
        }
      }
    });
  }
  return fromRaw(out, outShape, isArg ? 'u32' : 'i64', x.device);
}
