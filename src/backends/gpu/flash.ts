// Fused attention on the matrix cores (hip-src/flash.hip): long queries (flash_fwd) and short
// ones over long keys (flash_dec: decode, the keys split across warps of a block or across
// blocks and merged), f16 and bf16 with f32 sums, q/k/v as strided views (a KV cache narrowed
// to its filled length reads in place), grouped-query heads through the head mapping, causal
// either way, windows and masks, and no score matrix in global memory. Head dims go to the next
// compiled bucket, whose extra columns the kernel fills with zeros in LDS and does not store.
import { RawTensor } from '../../device/raw-tensor.ts';
import { Storage } from '../../device/storage.ts';
import { Layout } from '../../core/layout.ts';
import { DTYPE_INFO } from '../../core/dtype.ts';
import { NULL_PTR, type DeviceInfo, type DevicePtr } from '../../runtime/gpu.ts';
import type { AttentionParams } from '../options.ts';
import { tuningFor } from '../../runtime/tuning.ts';
import { arg } from '../../runtime/kernels.ts';
import { ATT_MAX_SPLITS, ATTN_MAX_TQ, mergeSplits, operands, splitArgs, splitSums } from './attention.ts';
import { base } from './launch.ts';
import { filled } from './fill.ts';

/** the head-dim buckets flash.hip instantiates (flash_fwd_<dt>_<bucket>) */
export const FLASH_HEAD_DIMS = [64, 80, 96, 128, 256] as const;
const MAX_GRID_Y = 65535;

const bucketOf = (d: number): number | undefined => FLASH_HEAD_DIMS.find((b) => d <= b);

/** whether flashAttention takes these operands */
export function flashApplies(q: RawTensor, k: RawTensor, v: RawTensor): boolean {
  const [b, hq, tq, d] = q.layout.shape as [number, number, number, number];
  const dv = v.layout.shape[3]!;
  return (
    (q.dtype === 'f16' || q.dtype === 'bf16') &&
    d === dv &&
    bucketOf(d) !== undefined &&
    Math.ceil(tq / 64) <= MAX_GRID_Y &&
    b * hq <= 0x7fffffff &&
    tq <= 0xffffffff &&
    k.layout.shape[2]! <= 0xffffffff
  );
}

/**
 * Decode splits the key split aims at per multiprocessor (a split is one warp with 18 to 35 KB
 * of LDS on NVIDIA, six of which fit an H200 multiprocessor). Measured in a graph on an H200
 * (bf16, 32/8 heads, d 128, 32768 keys, with the merge): 4 a multiprocessor 42.3 us a call, 3
 * 54.0, 5 47.2, 6 47.5; at 4096 keys 4 to 6 gave the same (10.9 us), 3 15.2.
 */
const DECODE_BLOCKS_PER_MP = 4;

/**
 * Most splits one decode block takes as warps (NVIDIA), each with its own K/V tiles in LDS, which
 * then combine their rows in LDS: where every split fits one block (a short key range) no merge
 * kernel runs. Measured on an H200 in a graph (bf16, 32/8 heads): 200 keys d 64 7.02 -> 5.15 us a
 * call, d 128 8.32 -> 7.64; the replayed 1B decode step (7 splits a layer) 961.2 / 961.6 ->
 * 952.2 / 952.4 us. Past the cap (long keys) a block a split spreads the reads over every
 * multiprocessor, which those need. AMD blocks stay one group (their 64 KiB of LDS would hold
 * one to three; untimed without hardware).
 */
const DECODE_MAX_GROUPS = 8;

/** for measurements and tests: blocks a multiprocessor the splits aim at; warp groups a block
 *  (NVIDIA; at most the splits and what the LDS holds), where blocks of several groups then
 *  still split the keys between them (the last block's last groups may get none) */
export interface DecodeTuning {
  readonly blocksPerMp?: number;
  readonly groups?: number;
}

/** whether flashDecode takes these operands: flashApplies' types and head dims, short queries */
export function flashDecodeApplies(q: RawTensor, k: RawTensor, v: RawTensor): boolean {
  return q.layout.shape[2]! <= ATTN_MAX_TQ && flashApplies(q, k, v);
}

/** LDS bytes of one NVIDIA decode group (FlCfg: a K and a V block of bn keys, rows padded by 8) */
const decodeGroupBytes = (bucket: number, bn: number): number => 2 * (2 * bn) * (bucket + 8);

/** a flash_dec launch: its grid, threads and LDS, and how the keys split */
export interface DecodePlan {
  /** blocks along x: (batch, kv head, 16-row tile) */
  readonly per: number;
  /** blocks along y; more than one: the merge kernel combines them */
  readonly blocksY: number;
  /** warp groups a block (NVIDIA), each its own split of the keys */
  readonly groups: number;
  readonly threads: number;
  /** dynamic LDS bytes (NVIDIA; 0 on AMD, whose LDS is static) */
  readonly shared: number;
  /** keys a group takes, a multiple of the key block */
  readonly perSplit: number;
  readonly splits: number;
}

/**
 * How flash_dec covers [b, hq, tq, d] queries over tk keys on `info`'s device. The keys split
 * into whole key blocks so that about DECODE_BLOCKS_PER_MP groups a multiprocessor run. On
 * NVIDIA, when every split fits one block (DECODE_MAX_GROUPS, and the LDS), the splits are the
 * warps of one block, which combine their rows themselves; otherwise a block a split (one
 * row-wave; wave32 AMD splits the output columns over two, flash.hip FlCfg::CS).
 */
export function decodePlan(
  info: DeviceInfo,
  b: number,
  hq: number,
  hkv: number,
  tq: number,
  tk: number,
  d: number,
  tune: DecodeTuning = {},
): DecodePlan {
  const tuning = tuningFor(info.vendor);
  const bucket = bucketOf(d)!;
  const bn = tuning.flashDecodeKeyBlock(info.warpSize, bucket);
  const tiles = Math.ceil(((hq / hkv) * tq) / 16),
    per = b * hkv * tiles;
  const keyBlocks = Math.ceil(tk / bn);
  const aim = Math.ceil(((tune.blocksPerMp ?? DECODE_BLOCKS_PER_MP) * info.multiprocessors) / per);
  const want = Math.max(1, Math.min(keyBlocks, ATT_MAX_SPLITS, aim));
  const blocksPerSplit = Math.ceil(keyBlocks / want),
    splits = Math.ceil(keyBlocks / blocksPerSplit);
  const grouped = tuning.flashDecodeGroups;
  const groupBytes = grouped ? decodeGroupBytes(bucket, bn) : 0;
  const fit = grouped ? Math.max(1, Math.floor(info.maxSharedMemoryPerBlockOptin / groupBytes)) : 1;
  const groups =
    tune.groups !== undefined
      ? Math.max(1, Math.min(tune.groups, splits, fit))
      : splits <= Math.min(DECODE_MAX_GROUPS, fit)
        ? splits
        : 1;
  return {
    per,
    blocksY: Math.ceil(splits / groups),
    groups,
    threads: tuning.flashDecodeSplitThreads * groups,
    shared: groups * groupBytes,
    perSplit: blocksPerSplit * bn,
    splits,
  };
}

/** Short queries (decode) on the matrix cores, as decodePlan lays them out. */
export function flashDecode(
  q0: RawTensor,
  k0: RawTensor,
  v0: RawTensor,
  p: AttentionParams,
  tune: DecodeTuning = {},
): RawTensor {
  const dev = q0.device;
  const [b, hq, tq, d] = q0.layout.shape as [number, number, number, number];
  const [, hkv, tk] = k0.layout.shape as [number, number, number];
  const out = RawTensor.empty(p.outShape, q0.dtype, dev);
  return filled(out, (temps) => {
    const { q, k, v, mask, tail } = operands(out, q0, k0, v0, p, temps);
    const pl = decodePlan(dev.runtime.info, b, hq, hkv, tq, tk, d, tune);
    const sums = splitSums(out, b * hq * tq, pl.blocksY, d, temps);
    dev.kernels.launch(
      'flash.hip',
      `flash_dec_${q.dtype}_${bucketOf(d)!}`,
      [pl.per, pl.blocksY, 1],
      [pl.threads, 1, 1],
      pl.shared,
      dev.stream,
      [
        base(out),
        ...splitArgs(out, sums),
        base(q),
        base(k),
        base(v),
        mask ? base(mask) : base(out),
        ...tail,
        arg.u32(pl.blocksY),
        arg.u32(pl.perSplit),
      ],
    );
    mergeSplits(out, sums);
  });
}

/**
 * Outputs whose storage holds, past the output, each query row's log-sum-exp (f32 [b, hq, tq],
 * flash_fwd's lse) for the gradient: the storage and the element where the rows start. Kept in
 * the output's own allocation, the rows live exactly as long as the output does.
 */
const lseRows = new WeakMap<Storage, number>();

/** the address of the log-sum-exp rows flash_fwd kept beside `out`, or null where it kept none */
export function savedLse(out: RawTensor): DevicePtr | null {
  const at = lseRows.get(out.storage);
  return at === undefined || out.layout.offset !== 0 || !out.isContiguous() ? null : out.storage.ptrAt(at);
}

/** an output [b, hq, tq, d] with room for its rows' log-sum-exp after it (16-byte aligned) */
function outputWithLse(p: AttentionParams, q: RawTensor): RawTensor {
  const size = DTYPE_INFO[q.dtype].size;
  const n = p.outShape.reduce((a, x) => a * x, 1);
  const rows = n / p.outShape[3]!;
  const at = Math.ceil((n * size) / 16) * (16 / size);
  const storage = Storage.alloc(q.device, q.dtype, at + rows * (4 / size));
  lseRows.set(storage, at);
  return new RawTensor(storage, Layout.contiguous(p.outShape), q.dtype);
}

export function flashAttention(q0: RawTensor, k0: RawTensor, v0: RawTensor, p: AttentionParams): RawTensor {
  const dev = q0.device;
  const [b, hq, tq, d] = q0.layout.shape as [number, number, number, number];
  const out = p.saveLse && p.outShape[3]! > 0 ? outputWithLse(p, q0) : RawTensor.empty(p.outShape, q0.dtype, dev);
  const lse = savedLse(out);
  return filled(out, (temps) => {
    const bucket = bucketOf(d)!;
    const { q, k, v, mask, tail } = operands(out, q0, k0, v0, p, temps);
    const { rows, threads, shared } = dev.tuning.flashFwd(bucket);
    dev.kernels.launch(
      'flash.hip',
      `flash_fwd_${q.dtype}_${bucket}`,
      [b * hq, Math.ceil(tq / rows), 1],
      [threads, 1, 1],
      shared,
      dev.stream,
      [
        base(out),
        base(q),
        base(k),
        base(v),
        mask ? base(mask) : base(out),
        ...tail,
        lse === null ? arg.ptr(NULL_PTR) : arg.ptr(lse),
        arg.i64(0),
      ],
    );
  });
}
