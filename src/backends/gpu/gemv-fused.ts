// Launches of hip-src/gemv-fused.hip: one row of x through a weight with the step's small ops
// folded in (see ops/linear.ts). Each returns null where the kernel does not apply, and the
// caller composes the same result from separate ops.
import { RawTensor } from '../../device/raw-tensor.ts';
import { arg, type KernelArg } from '../../runtime/kernels.ts';
import { NULL_PTR } from '../../runtime/gpu.ts';
import { dense, filled } from './fill.ts';
import { rmsNorm } from './nn.ts';
import { base, offsetOf } from './launch.ts';
import type { LinearOptions, QkvToCacheArgs } from '../options.ts';

const DTYPES: ReadonlySet<string> = new Set(['f32', 'f16', 'bf16']);
const BLOCK = 256;
const U32_MAX = 0xffffffff;
// waves in flight per multiprocessor that cover the memory latency of the stream over W (each
// keeps 4-8 16-byte loads per lane outstanding)
const WAVES_PER_SM = 16;
const FLAG_BIAS = 1,
  FLAG_RESID = 2;

/** W [rows, k] with unit stride along k: rows at w + j * ldw */
function rowsLd(w: RawTensor, k: number): number | null {
  const [s0, s1] = w.layout.strides as [number, number];
  if (k > 1 && s1 !== 1) return null;
  const ld = w.dim(0) === 1 ? k : s0;
  return ld >= k ? ld : null;
}

/** waves per unit: the fewest (at least `least`) that give the GPU enough waves in flight */
function splitFor(dev: RawTensor['device'], units: number, least = 1): number {
  const { warpSize, multiprocessors } = dev.runtime.info;
  const perBlock = BLOCK / warpSize;
  let split = Math.min(least, perBlock);
  while (split < perBlock && units * split < WAVES_PER_SM * multiprocessors) split *= 2;
  return split;
}

/** `perMp` > 0: at most that many blocks a multiprocessor, the units walked grid-stride */
function grid(dev: RawTensor['device'], units: number, split: number, perMp = 0): [number, number, number] {
  const { warpSize, maxGridDim, multiprocessors } = dev.runtime.info;
  const perBlock = BLOCK / warpSize / split;
  const most = perMp > 0 ? Math.min(maxGridDim[0], perMp * multiprocessors) : maxGridDim[0];
  return [Math.max(1, Math.min(Math.ceil(units / perBlock), most)), 1, 1];
}

/** a nullable operand: its pointer and offset, or null and 0 */
function opt(
  t: RawTensor | null | undefined,
  temps: RawTensor[],
  fallback: RawTensor,
): [KernelArg, KernelArg, RawTensor | null] {
  if (!t) return [base(fallback), arg.i64(0), null];
  const d = dense(t, temps);
  return [base(d), offsetOf(d), d];
}

/**
 * The norm is folded into the kernels that compute rows in pairs (SwiGLU here, q/k/v), where
 * two rows share the work on x. For single rows it costs more than it saves: the 128256 x 2048
 * head took 194 us with it against 121 us plain (H200), so a single-row norm is rmsNorm's own
 * kernel (about 5 us) before the plain product.
 */
export function linearRow(
  x: RawTensor,
  w: RawTensor,
  o: LinearOptions,
  n: number,
  k: number,
  outShape: readonly number[],
): RawTensor | null {
  if (!DTYPES.has(x.dtype) || k > U32_MAX || n > U32_MAX) return null;
  if (o.norm && o.act !== 'swiglu') {
    const xn = rmsNorm(x, o.norm.weight, o.norm.eps);
    // fields spelled out: V8 (Node 20) builds `{ ...o, key }` on a slow path, microseconds a call
    try {
      return linearRow(
        xn,
        w,
        { bias: o.bias ?? null, act: o.act ?? null, residual: o.residual ?? null, norm: null },
        n,
        k,
        outShape,
      );
    } finally {
      xn.dispose();
    }
  }
  const ld = rowsLd(w, k);
  if (ld === null) return null;
  const dev = x.device;
  const y = RawTensor.empty(outShape, x.dtype, dev);
  return filled(y, (temps) => {
    const xd = dense(x, temps);
    const [gp, go] = opt(o.norm?.weight, temps, xd);
    const [bp, bo] = opt(o.bias, temps, xd);
    const [rp, ro] = opt(o.residual, temps, xd);
    const flags = (o.bias ? FLAG_BIAS : 0) | (o.residual ? FLAG_RESID : 0);
    // the vendor's launch shapes (runtime/tuning.ts)
    const pair = o.act === 'swiglu',
      tuning = dev.tuning;
    const split = splitFor(dev, n, pair ? 1 : tuning.gemvPlainLeastSplit);
    const name = `gemvf${pair ? '_swiglu' : ''}_${o.norm ? 'r' : 'n'}_${x.dtype}`;
    dev.kernels.launch(
      'gemv-fused.hip',
      name,
      grid(dev, n, split, pair ? tuning.gemvPairBlocksPerMp : 0),
      [BLOCK, 1, 1],
      0,
      dev.stream,
      [
        base(y),
        base(xd),
        base(w),
        gp,
        bp,
        rp,
        offsetOf(y),
        offsetOf(xd),
        offsetOf(w),
        go,
        bo,
        ro,
        arg.u32(n),
        arg.u32(k),
        arg.u64(ld),
        arg.f32(o.norm?.eps ?? 0),
        arg.u32(flags),
        arg.u32(split),
      ],
    );
  });
}

/** a cache [1, kvHeads, maxLen, d] the kernel writes in place: unit stride along d */
function cacheStrides(t: RawTensor): [number, number] | null {
  const s = t.layout.strides;
  return s[3] === 1 ? [s[1]!, s[2]!] : null;
}

export function qkvRow(a: QkvToCacheArgs): RawTensor | null {
  const { x, weight: w, heads, kvHeads, headDim: d } = a;
  const k = x.dim(-1);
  if (!DTYPES.has(x.dtype) || k > U32_MAX) return null;
  const ld = rowsLd(w, k),
    ks = cacheStrides(a.keys),
    vs = cacheStrides(a.values);
  if (ld === null || !ks || !vs || ks[0] !== vs[0] || ks[1] !== vs[1]) return null;
  if (
    a.cos.layout.strides[1] !== 1 ||
    a.sin.layout.strides[1] !== 1 ||
    a.cos.layout.strides[0] !== d / 2 ||
    a.sin.layout.strides[0] !== d / 2
  )
    return null;
  const dev = x.device;
  const q = RawTensor.empty([1, 1, heads, d], x.dtype, dev);
  return filled(q, (temps) => {
    const xd = dense(x, temps);
    const [gp, go] = opt(a.norm?.weight, temps, xd);
    const [bp, bo] = opt(a.bias, temps, xd);
    const devPos = typeof a.pos === 'number' ? null : a.pos;
    const units = (heads + 2 * kvHeads) * (d / 2);
    const split = splitFor(dev, units);
    const name = `gemvf_qkv_${a.norm ? 'r' : 'n'}_${x.dtype}`;
    // a device-held position is read by the kernel: its pointer includes the view's offset
    const posPtr = arg.ptr(devPos ? devPos.storage.ptrAt(devPos.layout.offset) : NULL_PTR);
    dev.kernels.launch('gemv-fused.hip', name, grid(dev, units, split), [BLOCK, 1, 1], 0, dev.stream, [
      base(q),
      base(a.keys),
      base(a.values),
      base(xd),
      base(w),
      gp,
      bp,
      base(a.cos),
      base(a.sin),
      posPtr,
      offsetOf(q),
      offsetOf(a.keys),
      offsetOf(a.values),
      offsetOf(xd),
      offsetOf(w),
      go,
      bo,
      offsetOf(a.cos),
      offsetOf(a.sin),
      arg.u32(k),
      arg.u64(ld),
      arg.f32(a.norm?.eps ?? 0),
      arg.u32(a.bias ? FLAG_BIAS : 0),
      arg.u32(split),
      arg.u32(heads),
      arg.u32(kvHeads),
      arg.u32(d),
      arg.u32(typeof a.pos === 'number' ? a.pos : 0),
      arg.i64(ks[0]),
      arg.i64(ks[1]),
    ]);
  });
}
