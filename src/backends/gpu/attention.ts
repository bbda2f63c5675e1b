// Fused attention for short queries on the GPU in FMA math (hip-src/attention.hip): one kernel
// over the keys, split across blocks and merged by a second small kernel (mergeSplits, which
// flash.ts's decode kernel uses too, as it does the operand and argument helper, operands) when
// one (batch, kv head) alone would leave the device idle.
// No score matrix in global memory and no copy of strided K/V views (a KV cache narrowed to its
// filled length reads in place). nn.ts sends it what the matrix-core kernels do not take (f32,
// q and v head dims that differ); where it does not apply either, the composed path (batched
// GEMMs and the softmax kernel).
import { RawTensor } from '../../device/raw-tensor.ts';
import type { AttentionParams } from '../options.ts';
import { arg, GRID_X_BLOCKS_MAX, type KernelArg } from '../../runtime/kernels.ts';
import { contiguous } from './copy.ts';
import { base, offsetOf } from './launch.ts';
import { filled } from './fill.ts';

/** queries per head up to this many take the kernel (decode and short chunks) */
export const ATTN_MAX_TQ = 16;
/**
 * The kernel's row tiles (its RT instances), largest head dim (ATT_DMAX), block, and most splits
 * (ATT_MAX_SPLITS: the merge kernel's shared weights)
 */
const ATT_DMAX = 256,
  ATT_BLOCK: [number, number, number] = [256, 1, 1];
export const ATT_MAX_SPLITS = 1024;
/** columns of o a merge block writes (attention.hip ATT_MCOLS) */
const ATT_MCOLS = 32;
/** a block's query rows: 1 for one query of a head (multi-head decode), else 4 */
function rowTile(R: number): number {
  return R === 1 ? 1 : 4;
}
/**
 * Fewest keys a split is given. Short caches are latency-bound (each split is a chain of
 * dependent loads), so they split finely: measured in a graph on an H200 (bf16, 32/8 heads,
 * d 128, 384 keys), 64 keys a split and one thread a key took 15.6 us a call.
 */
const MIN_KEYS_PER_SPLIT = 16;
/**
 * Keys a split gets before a long cache is split past two blocks per multiprocessor: measured on
 * an H200 (bf16, 32/8 heads, d 128, one row tile), 32768 keys took 165 us over 33 splits, 125 us
 * over 66 and 135 us over 132; 4096 keys took 40 us over 33 splits and 65 us over 66.
 */
const LONG_SPLIT = 512;
const DTYPES: ReadonlySet<string> = new Set(['f32', 'f16', 'bf16']);

/**
 * Whether attentionKernel takes these operands: short queries, or with `anyLength` queries of
 * any length (the route for f32 prefill: FMA work, but no O(tq * tk) memory).
 */
export function attentionKernelApplies(q: RawTensor, k: RawTensor, v: RawTensor, anyLength = false): boolean {
  const [, hq, tq, d] = q.layout.shape as [number, number, number, number];
  const hkv = k.layout.shape[1]!,
    dv = v.layout.shape[3]!;
  const R = (hq / hkv) * tq;
  const short =
    tq <= ATTN_MAX_TQ || (anyLength && q.layout.shape[0]! * hkv * Math.ceil(R / rowTile(R)) <= GRID_X_BLOCKS_MAX);
  return DTYPES.has(q.dtype) && short && d >= 1 && d <= ATT_DMAX && dv >= 1 && dv <= ATT_DMAX;
}

/** t with unit stride along its last (head) dim: itself, or a contiguous copy kept in temps */
export function unitLast(t: RawTensor, temps: RawTensor[]): RawTensor {
  const r = t.rank;
  if (t.layout.strides[r - 1] === 1 || t.layout.shape[r - 1] === 1) return t;
  const c = contiguous(t);
  temps.push(c);
  return c;
}

/**
 * The mask broadcast to [b, hq, tq, tk] (kept in `temps`) and the arguments both attention kernel
 * families take after the q/k/v strides, in their order: the mask's four strides, maskKind (0
 * none, 1 u8, 2 additive), hasDiag, diag, window, scale.
 */
export function visibility(
  p: AttentionParams,
  shape: readonly number[],
  temps: RawTensor[],
): { mask: RawTensor | null; args: KernelArg[] } {
  const mask = p.mask ? p.mask.broadcastAs(shape) : null;
  if (mask) temps.push(mask);
  const ms = mask ? mask.layout.strides : [0, 0, 0, 0];
  return {
    mask,
    args: [
      ...ms.map((x) => arg.i64(x)),
      arg.u32(mask ? (mask.dtype === 'u8' ? 1 : 2) : 0),
      arg.u32(p.diag === null ? 0 : 1),
      arg.i64(p.diag ?? 0),
      arg.i64(p.window ?? 0),
      arg.f32(p.scale),
    ],
  };
}

/**
 * The operands of both kernel families with unit-stride head dims (copies kept in temps), the
 * mask, and the arguments the kernels take after their pointers: the offsets of o, q, k, v and the
 * mask; hq, hkv, tq, tk, d (and dv where given: attn_decode's, whose v may be narrower); the q, k,
 * v strides; visibility's arguments.
 */
export function operands(
  out: RawTensor,
  q0: RawTensor,
  k0: RawTensor,
  v0: RawTensor,
  p: AttentionParams,
  temps: RawTensor[],
  dv?: number,
) {
  const [b, hq, tq, d] = q0.layout.shape as [number, number, number, number];
  const [, hkv, tk] = k0.layout.shape as [number, number, number];
  const q = unitLast(q0, temps),
    k = unitLast(k0, temps),
    v = unitLast(v0, temps);
  const { mask, args: vis } = visibility(p, [b, hq, tq, tk], temps);
  const [qsb, qsh, qst] = q.layout.strides,
    [ksb, ksh, kst] = k.layout.strides,
    [vsb, vsh, vst] = v.layout.strides;
  const i64 = arg.i64;
  const tail: KernelArg[] = [
    offsetOf(out),
    offsetOf(q),
    offsetOf(k),
    offsetOf(v),
    mask ? offsetOf(mask) : i64(0),
    arg.u32(hq),
    arg.u32(hkv),
    arg.u32(tq),
    arg.u32(tk),
    arg.u32(d),
    ...(dv === undefined ? [] : [arg.u32(dv)]),
    i64(qsb!),
    i64(qsh!),
    i64(qst!),
    i64(ksb!),
    i64(ksh!),
    i64(kst!),
    i64(vsb!),
    i64(vsh!),
    i64(vst!),
    ...vis,
  ];
  return { q, k, v, mask, tail };
}

export function attentionKernel(q0: RawTensor, k0: RawTensor, v0: RawTensor, p: AttentionParams): RawTensor {
  const dev = q0.device;
  const [b, hq, tq] = q0.layout.shape as [number, number, number, number];
  const [, hkv, tk] = k0.layout.shape as [number, number, number];
  const dv = v0.layout.shape[3]!;
  const out = RawTensor.empty(p.outShape, q0.dtype, dev);
  return filled(out, (temps) => {
    const { q, k, v, mask, tail } = operands(out, q0, k0, v0, p, temps, dv);
    const rows = b * hq * tq;
    const rt = rowTile((hq / hkv) * tq);
    const tiles = Math.ceil(((hq / hkv) * tq) / rt);
    const { multiprocessors } = dev.runtime.info;
    // two blocks per multiprocessor; long caches up to four, with at least LONG_SPLIT keys each
    const per = b * hkv * tiles;
    const want = Math.min(
      Math.ceil((4 * multiprocessors) / per),
      Math.max(Math.ceil((2 * multiprocessors) / per), Math.ceil(tk / LONG_SPLIT)),
    );
    const splits = Math.max(1, Math.min(want, ATT_MAX_SPLITS, Math.ceil(tk / MIN_KEYS_PER_SPLIT)));
    const perSplit = Math.ceil(tk / splits);
    const used = Math.ceil(tk / perSplit);
    const sums = splitSums(out, rows, used, dv, temps);
    dev.kernels.launch(
      'attention.hip',
      `attn_decode_r${rt}_${q.dtype}`,
      [b * hkv * tiles, used, 1],
      ATT_BLOCK,
      0,
      dev.stream,
      [
        base(out),
        ...splitArgs(out, sums),
        base(q),
        base(k),
        base(v),
        mask ? base(mask) : base(out),
        ...tail,
        arg.u32(used),
        arg.u32(perSplit),
      ],
    );
    mergeSplits(out, sums);
  });
}

/** the partial sums of a launch that splits the keys: ws [rows, splits, dv] and their (max,
 *  sum) wsml [rows, splits, 2], f32; null for one split, where the kernel writes out itself */
export interface SplitSums {
  readonly ws: RawTensor;
  readonly wsml: RawTensor;
  readonly rows: number;
  readonly splits: number;
  readonly dv: number;
}

export function splitSums(
  out: RawTensor,
  rows: number,
  splits: number,
  dv: number,
  temps: RawTensor[],
): SplitSums | null {
  if (splits <= 1) return null;
  const ws = RawTensor.empty([rows * splits * dv], 'f32', out.device),
    wsml = RawTensor.empty([rows * splits * 2], 'f32', out.device);
  temps.push(ws, wsml);
  return { ws, wsml, rows, splits, dv };
}

/** the kernels' (ws, wsml) arguments: out stands in for both without splits */
export const splitArgs = (out: RawTensor, s: SplitSums | null): [KernelArg, KernelArg] =>
  s ? [base(s.ws), base(s.wsml)] : [base(out), base(out)];

/** loads of partial sums a merge thread has in flight (attention.hip ATT_MLOADS) */
const ATT_MLOADS = 8;

/**
 * attn_merge: the output rows (contiguous [rows, dv]) from the splits' partial sums, if any. A
 * block of one wave at least, doubled until its threads' first loads cover every split, up to
 * ATT_BLOCK: few splits, few threads (the replayed 1B decode step, 7 splits, with the merge of
 * two block reductions this replaced: 972.3-972.8 us with 256, 967.6-967.7 with 128 and
 * 965.6-966.0 with 64, H200, alternating).
 */
export function mergeSplits(out: RawTensor, s: SplitSums | null): void {
  if (!s) return;
  const dev = out.device;
  let threads = dev.runtime.info.warpSize;
  while (threads < ATT_BLOCK[0] && (threads / ATT_MCOLS) * ATT_MLOADS < s.splits) threads *= 2;
  dev.kernels.launch(
    'attention.hip',
    `attn_merge_${out.dtype}`,
    [s.rows, Math.ceil(s.dv / ATT_MCOLS), 1],
    [threads, 1, 1],
    0,
    dev.stream,
    [base(out), base(s.ws), base(s.wsml), offsetOf(out), arg.u32(s.splits), arg.u32(s.dv)],
  );
}
