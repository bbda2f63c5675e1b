// Attention's gradient in two kernels (hip-src/flash-bwd.hip), recomputing the probabilities
// tile by tile from q, k, v, the forward output o and its gradient: flash_bwd_dq takes each
// query row's log-sum-exp and D = rowsum(dO * o) (kept in f32 for the second kernel) and dQ;
// flash_bwd_dkdv then takes dK and dV, a block a key tile summing over the query heads of its
// kv head. Memory beyond the gradients is two f32 values a query row: no score matrix, no atomics
// (the result does not depend on scheduling). Causal either way, windows, u8 and additive masks,
// GQA. f16 and bf16 products on the matrix cores (NVIDIA, gfx90a/gfx942/gfx950, gfx11, gfx12),
// FMAs elsewhere and for f32, sums in f32; f64 stays on the composed GEMM path, whose sums are f64.
// Up to head dim 128 on NVIDIA and gfx90a/gfx942/gfx950 the 16-bit types take the tiled kernels
// (flash_bwd_dq_tc_*, flash_bwd_dkdv_tc_*: 64 rows a block, operands and sums in registers), which
// read the rows' log-sum-exp that the forward kernel kept beside its output where it did (flash.ts
// savedLse) instead of recomputing it: one pass over the keys fewer.
import type { DType } from '../../core/dtype.ts';
import { RawTensor } from '../../device/raw-tensor.ts';
import type { AttentionParams } from '../options.ts';
import { FLASH_BWD_HEAD_DIMS } from '../../runtime/kernel-sigs-flash-bwd.ts';
import { arg, GRID_X_BLOCKS_MAX, type KernelArg } from '../../runtime/kernels.ts';
import type { DeviceInfo } from '../../runtime/gpu.ts';
import { base, offsetOf } from './launch.ts';
import { dense } from './fill.ts';
import { visibility } from './attention.ts';
import { savedLse } from './flash.ts';

const DTYPES: ReadonlySet<DType> = new Set<DType>(['f32', 'f16', 'bf16']);
const MAX_GRID_Y = 65535;

const bucketOf = (d: number): number | undefined => FLASH_BWD_HEAD_DIMS.find((b) => d <= b);

/** the 16 x 16 bodies' tile (flash-bwd.hip FbCfg::B): a block is tile x tile threads */
function smallTile(dtype: DType, bucket: number): number {
  return dtype === 'f32' && bucket > 128 ? 8 : 16;
}

/** the AMD archs with the tiled kernels' body (flash-bwd.hip FbTc::ON, MFMA; on the other AMD
 *  archs flash_bwd_*_tc_* stop with a trap) */
const TILED_AMD = new Set(['gfx90a', 'gfx942', 'gfx950']);

/**
 * whether the tiled matrix-core kernels (flash_bwd_dq_tc_*, flash_bwd_dkdv_tc_*) run: f16 and bf16
 * up to head dim 128 with the matrix cores asked for, on NVIDIA and gfx90a/gfx942/gfx950
 */
export function flashGradTiled(
  info: Pick<DeviceInfo, 'vendor' | 'arch'>,
  dtype: DType,
  bucket: number,
  matrixCores: boolean,
): boolean {
  return (
    matrixCores &&
    (dtype === 'f16' || dtype === 'bf16') &&
    bucket <= 128 &&
    (info.vendor === 'cuda' || TILED_AMD.has(info.arch))
  );
}

/** rows (queries, or keys) a block owns: 64 for the tiled kernels, else the 16 x 16 bodies' tile */
function flashGradTile(tiled: boolean, dtype: DType, bucket: number): number {
  return tiled ? 64 : smallTile(dtype, bucket);
}

/** threads a block (flash-bwd.hip FbCfg::NT): 256, 64 for f32 at head dim 256 */
function flashGradThreads(dtype: DType, bucket: number): number {
  return smallTile(dtype, bucket) ** 2;
}

/**
 * Why the kernels do not take these operands, or null where they do: f32, f16 and bf16; equal
 * head dims of q/k and v up to 256; a gradient in q's dtype; something to compute (empty
 * operands go to the composed path, which gives the zeros); grids within their limits.
 */
export function flashGradRefusal(q: RawTensor, k: RawTensor, v: RawTensor, o: RawTensor, g: RawTensor): string | null {
  const [b, hq, tq, d] = q.layout.shape as [number, number, number, number];
  const [, hkv, tk] = k.layout.shape as [number, number, number];
  const dv = v.layout.shape[3]!;
  if (!DTYPES.has(q.dtype)) return `dtype ${q.dtype} (the kernels take f32, f16 and bf16)`;
  if (g.dtype !== q.dtype || o.dtype !== q.dtype)
    return `gradient ${g.dtype} and output ${o.dtype} differ from q ${q.dtype}`;
  if (d !== dv) return `q/k head dim ${d} differs from v's ${dv}`;
  const bucket = bucketOf(d);
  if (bucket === undefined || d < 1) return `head dim ${d} (the kernels take 1 to 256)`;
  if (b * hq * tq === 0 || tk === 0 || hkv === 0) return 'an empty operand';
  // the smallest tile: the grid bound for either body
  const tile = smallTile(q.dtype, bucket);
  if (b * Math.max(hq, hkv) > GRID_X_BLOCKS_MAX || Math.ceil(Math.max(tq, tk) / tile) > MAX_GRID_Y)
    return `[b, heads, t] = [${b}, ${hq}, ${Math.max(tq, tk)}] past the launch grid`;
  if (tq > 0xffffffff || tk > 0xffffffff) return 'lengths past 32 bits';
  return null;
}

export interface FlashGradOptions {
  /** f16/bf16 products on the matrix cores where the arch has them (default); false: FMAs */
  readonly matrixCores?: boolean;
  /** read the forward's saved log-sum-exp where there is one (default); false recomputes it */
  readonly forwardLse?: boolean;
}

export interface AttentionGrads {
  readonly dq: RawTensor;
  readonly dk: RawTensor;
  readonly dv: RawTensor;
}

/**
 * dQ, dK, dV of scaled dot-product attention from q [b, hq, tq, d], k, v [b, hkv, tk, d], the
 * forward output o and its gradient g [b, hq, tq, d]. Operands that are not contiguous are
 * copied first. The caller checks flashGradRefusal.
 */
export function flashGrad(
  q0: RawTensor,
  k0: RawTensor,
  v0: RawTensor,
  o0: RawTensor,
  g0: RawTensor,
  p: AttentionParams,
  opts: FlashGradOptions = {},
): AttentionGrads {
  const dev = q0.device;
  const [b, hq, tq, d] = q0.layout.shape as [number, number, number, number];
  const [, hkv, tk] = k0.layout.shape as [number, number, number];
  const dt = q0.dtype;
  const bucket = bucketOf(d)!;
  const matrixCores = opts.matrixCores !== false;
  const tiled = flashGradTiled(dev.runtime.info, dt, bucket, matrixCores);
  const tile = flashGradTile(tiled, dt, bucket);
  const tc = tiled ? 'tc_' : '';
  const temps: RawTensor[] = [];
  const outs: RawTensor[] = [];
  try {
    const q = dense(q0, temps),
      k = dense(k0, temps),
      v = dense(v0, temps),
      o = dense(o0, temps),
      g = dense(g0, temps);
    const dq = RawTensor.empty(q0.layout.shape, dt, dev);
    outs.push(dq);
    const dk = RawTensor.empty(k0.layout.shape, dt, dev);
    outs.push(dk);
    const dv = RawTensor.empty(v0.layout.shape, dt, dev);
    outs.push(dv);
    // the forward's rows (tiled kernels only), else a buffer the query pass fills
    const given = tiled && opts.forwardLse !== false ? savedLse(o0) : null;
    const lse = given === null ? RawTensor.empty([b * hq * tq], 'f32', dev) : null;
    if (lse !== null) temps.push(lse);
    const dd = RawTensor.empty([b * hq * tq], 'f32', dev);
    temps.push(dd);
    const { mask, args: vis } = visibility(p, [b, hq, tq, tk], temps);
    // the last argument: the FMA kernels' mma; the tiled kernels' "lse given"
    const last = tiled ? given !== null : matrixCores;
    const tail: KernelArg[] = [...[hq, hkv, tq, tk, d].map((x) => arg.u32(x)), ...vis, arg.u32(last ? 1 : 0)];
    // an absent mask is never read: any valid pointer stands in
    const m = mask ?? q;
    const block: [number, number, number] = [flashGradThreads(dt, bucket), 1, 1];
    // pointers, then their offsets; 'lse': the forward's rows, or the buffer (offset 0 either way)
    const lsePtr = given === null ? base(lse!) : arg.ptr(given);
    const ptrs = (ts: (RawTensor | 'lse')[]): KernelArg[] => [
      ...ts.map((t) => (t === 'lse' ? lsePtr : base(t))),
      ...ts.map((t) => (t === 'lse' ? arg.i64(0) : offsetOf(t))),
    ];
    dev.kernels.launch(
      'flash-bwd.hip',
      `flash_bwd_dq_${tc}${dt}_${bucket}`,
      [b * hq, Math.ceil(tq / tile), 1],
      block,
      0,
      dev.stream,
      [...ptrs([dq, 'lse', dd, q, k, v, o, g, m]), ...tail],
    );
    dev.kernels.launch(
      'flash-bwd.hip',
      `flash_bwd_dkdv_${tc}${dt}_${bucket}`,
      [b * hkv, Math.ceil(tk / tile), 1],
      block,
      0,
      dev.stream,
      [...ptrs([dk, dv, 'lse', dd, q, k, v, g, m]), ...tail],
    );
    return { dq, dk, dv };
  } catch (e) {
    for (const t of outs) t.dispose();
    throw e;
  } finally {
    // a freed block is reused in stream order, after the kernels queued here
    for (const t of temps) t.dispose();
  }
}
