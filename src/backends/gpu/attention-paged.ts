// Paged attention for a whole serving step, every sequence's keys and values read in place from
// the pools through the block table, with no gather copy and no per-sequence launch:
// - hip-src/paged-attention.hip, FMA math on every vendor and arch, f32, f16 and bf16: one launch
//   over every token of the step (prefill chunks and decode tokens mixed), the keys a token sees
//   split across blocks when the step alone would leave the device idle (short batches of
//   decodes), and attention.hip's attn_merge combining the splits;
// - hip-src/paged-prefill.hip, flash.hip's forward on the matrix cores: the chunks of more than
//   ATTN_MAX_TQ queries, where flash would take them in the attention op (f16 and bf16, head dims
//   up to 128, q's and v's alike, slot-linear pools), launched after the first, which skips them;
// - hip-src/paged-decode.hip, flash.hip's decode kernel on the matrix cores, under the same
//   conditions with pagedAttentionTuning.decode 'matrix': the sequences of 1 to ATTN_MAX_TQ
//   queries (decode tokens), which the FMA kernel then does not take.
// The sequence lengths reach the kernels as a small u32 array on the device (pagedMetadata's
// layout, then the prefill kernel's tile list): uploaded for the call from the host arrays, or
// the caller's own tensor, which a captured graph replays with new values written into it (an
// upload cannot be captured). With the caller's tensor the FMA kernel takes every sequence: the
// prefill kernel's tiles depend on the lengths, and only the host lists them.
import { RawTensor } from '../../device/raw-tensor.ts';
import { withDeviceErrors } from '../../runtime/device-errors.ts';
import type { DevicePtr } from '../../runtime/gpu.ts';
import { arg } from '../../runtime/kernels.ts';
import { pagedMetadata, type PagedAttentionParams } from '../paged-options.ts';
import { sig } from '../checks.ts';
import { ATT_MAX_SPLITS, ATTN_MAX_TQ, mergeSplits, splitArgs, splitSums, unitLast } from './attention.ts';
import { decodePlan } from './flash.ts';
import { base, offsetOf } from './launch.ts';
import { filled } from './fill.ts';

/** the kernel's largest head dims (paged-attention.hip PA_DMAX) */
const PA_DMAX = 256;
const BLOCK: [number, number, number] = [256, 1, 1];
const DTYPES: ReadonlySet<string> = new Set(['f32', 'f16', 'bf16']);
/** grid limits: x (tokens) as CUDA's 2^31 - 1, y (kv heads times head chunks) and z (splits) */
const GRID_X_MAX = 0x7fffffff,
  GRID_YZ_MAX = 65535;
/**
 * Fewest keys a split is given: a split is a chain of chunk steps (three barriers each), so short
 * ones cost more in latency than they bring in parallelism (as attention.ts's decode kernel).
 */
const MIN_KEYS_PER_SPLIT = 64;

/**
 * decode: which kernel takes the sequences of 1 to ATTN_MAX_TQ queries where the matrix-core
 * one applies (f16/bf16, head dims up to 128, slot-linear pools, lengths from the host): 'fma'
 * paged-attention.hip, 'matrix' paged-decode.hip ('fma' measured faster on an H200, see
 * docs/internals/tried-not-kept.md). blocksPerMp: the blocks a multiprocessor the FMA kernel's
 * key splits aim at (attention.ts's decode kernel aims at two to four; four measured best for 64 decodes of 1-2k keys).
 */
export const pagedAttentionTuning: { decode: 'fma' | 'matrix'; blocksPerMp: number } = {
  decode: 'fma',
  blocksPerMp: 2,
};

/** query heads a block takes: 1 where each kv head has one, else 4 (a grouped-query head's group) */
const rowTile = (group: number): number => (group === 1 ? 1 : 4);

/** whether the kernel takes these operands (else the op composes other ops: f64, head dims past 256) */
export function pagedKernelApplies(q: RawTensor, kPool: RawTensor, vPool: RawTensor): boolean {
  const [t, hq, d] = q.layout.shape as [number, number, number];
  const hkv = kPool.layout.shape[2]!,
    dv = vPool.layout.shape[3]!;
  const group = hq / hkv;
  return (
    DTYPES.has(q.dtype) &&
    d >= 1 &&
    d <= PA_DMAX &&
    dv >= 1 &&
    dv <= PA_DMAX &&
    t <= GRID_X_MAX &&
    hkv * Math.ceil(group / rowTile(group)) <= GRID_YZ_MAX &&
    kPool.layout.shape[0]! <= 0xffffffff
  );
}

/**
 * The most keys one unit of work sees among the sequences of 1 to maxQ queries: a token's
 * (window or context), or with `wholeSequence` all of a sequence's queries together (a window
 * then widens by the queries after the first)
 */
function mostKeys(p: PagedAttentionParams, maxQ: number, wholeSequence: boolean): number {
  let most = 0;
  p.queryLens.forEach((n, s) => {
    if (n === 0 || n > maxQ) return;
    const ctx = p.contextLens[s]!;
    most = Math.max(most, p.window === null ? ctx : Math.min(p.window + (wholeSequence ? n - 1 : 0), ctx));
  });
  return most;
}

/** the key splits of the FMA kernel's sequences (queries up to maxQ): enough blocks to fill the
 *  device, each split MIN_KEYS_PER_SPLIT keys at least */
function keySplits(blocks: number, multiprocessors: number, p: PagedAttentionParams, maxQ: number): number {
  const most = mostKeys(p, maxQ, false);
  const want = Math.ceil((pagedAttentionTuning.blocksPerMp * multiprocessors) / Math.max(1, blocks));
  return Math.max(1, Math.min(want, ATT_MAX_SPLITS, GRID_YZ_MAX, Math.ceil(most / MIN_KEYS_PER_SPLIT)));
}

/**
 * The head-dim buckets paged-prefill.hip instantiates: those of the common models; wider heads'
 * chunks (up to 256) take the FMA kernel
 */
const PREFILL_HEAD_DIMS = [64, 128] as const;
/** no sequence is left to the prefill kernel */
const ALL_QUERIES = 0xffffffff;

/**
 * Whether the matrix-core kernels (prefill, decode) take these operands: f16 or bf16, one
 * head-dim bucket for q and v, pools whose block stride is bs slots (q and the pools already have
 * unit stride along the head dim), lengths from the host (their lists are uploaded with them).
 */
function matrixApplies(q: RawTensor, kp: RawTensor, vp: RawTensor, p: PagedAttentionParams): boolean {
  const d = q.layout.shape[2]!,
    bs = kp.layout.shape[1]!;
  const [kbk, kss] = kp.layout.strides as [number, number];
  const [vbk, vss] = vp.layout.strides as [number, number];
  return (
    (q.dtype === 'f16' || q.dtype === 'bf16') &&
    vp.layout.shape[3] === d &&
    PREFILL_HEAD_DIMS.some((b) => d <= b) &&
    !p.metadata &&
    // the kernel steps a block as bs slots (with bs 1 too: a size-1 slot dim's stride is
    // arbitrary, so it must equal the block stride for the kernel to read the right rows)
    kbk === bs * kss &&
    vbk === bs * vss
  );
}

/** whether the prefill kernel takes the long chunks of this call */
const prefillApplies = (q: RawTensor, kp: RawTensor, vp: RawTensor, p: PagedAttentionParams): boolean =>
  matrixApplies(q, kp, vp, p) && p.queryLens.some((n) => n > ATTN_MAX_TQ);

/** whether the matrix-core decode kernel takes the short sequences of this call */
const decodeApplies = (q: RawTensor, kp: RawTensor, vp: RawTensor, p: PagedAttentionParams): boolean =>
  pagedAttentionTuning.decode === 'matrix' &&
  matrixApplies(q, kp, vp, p) &&
  p.queryLens.some((n) => n > 0 && n <= ATTN_MAX_TQ);

export function pagedAttentionKernel(
  q0: RawTensor,
  kPool0: RawTensor,
  vPool0: RawTensor,
  table: RawTensor,
  p: PagedAttentionParams,
): RawTensor {
  const dev = q0.device;
  const [t, hq, d] = q0.layout.shape as [number, number, number];
  const [nblocks, bs, hkv] = kPool0.layout.shape as [number, number, number];
  const dv = vPool0.layout.shape[3]!;
  const [seqs, maxBlocks] = table.layout.shape as [number, number];
  const out = RawTensor.empty([t, hq, dv], q0.dtype, dev);
  if (t === 0) return out;
  return filled(out, (temps) => {
    const q = unitLast(q0, temps),
      kp = unitLast(kPool0, temps),
      vp = unitLast(vPool0, temps);
    const prefill = prefillApplies(q, kp, vp, p);
    const decode = decodeApplies(q, kp, vp, p);
    const maxQ = prefill ? ATTN_MAX_TQ : ALL_QUERIES;
    const bucket = PREFILL_HEAD_DIMS.find((b) => d <= b) ?? 0;
    const fwd = prefill ? dev.tuning.flashFwd(bucket) : null;
    let meta = p.metadata ?? null;
    let tiles = 0,
      listAt = 0,
      blocksX = t,
      entries = 0,
      decAt = 0;
    if (!meta) {
      const lens = pagedMetadata(p.queryLens, p.contextLens);
      // with the prefill kernel: its tiles, (sequence, first row) pairs, first (it reads them
      // from the lengths' end); with the decode kernel, its 16-row tiles of the short sequences'
      // rows (a query chunk times a kv head's group), pairs again; then the FMA kernel's tokens
      // (the others'), so the tokens the matrix kernels take cost it no blocks
      const list: number[] = [];
      if (fwd) {
        p.queryLens.forEach((n, s) => {
          if (n > maxQ) for (let m0 = 0; m0 < n; m0 += fwd.rows) list.push(s, m0);
        });
        tiles = list.length / 2;
      }
      if (decode) {
        decAt = lens.length + list.length;
        const group = hq / hkv;
        p.queryLens.forEach((n, s) => {
          if (n > 0 && n <= ATTN_MAX_TQ) for (let r0 = 0; r0 < group * n; r0 += 16) list.push(s, r0);
        });
        entries = (lens.length + list.length - decAt) / 2;
      }
      if (fwd || decode) {
        listAt = lens.length + list.length;
        blocksX = 0;
        if (!decode)
          p.queryLens.forEach((n, s) => {
            if (n <= maxQ) for (let i = 0; i < n; i++, blocksX++) list.push(lens[s]! + i);
          });
      }
      const words = new Uint32Array(lens.length + list.length);
      words.set(lens);
      words.set(list, lens.length);
      meta = RawTensor.empty([words.length], 'u32', dev);
      temps.push(meta);
      dev.upload(meta.storage.ptrAt(meta.layout.offset), words);
    }
    const [qst, qsh] = q.layout.strides as [number, number];
    const [kbk, kss, ksh] = kp.layout.strides as [number, number, number];
    const [vbk, vss, vsh] = vp.layout.strides as [number, number, number];
    const [tsr, tsc] = table.layout.strides as [number, number];
    const site = {
      op: 'pagedAttention' as const,
      idsShape: table.layout.shape,
      idsDType: table.dtype,
      what: `dim 0 of the key and value pools ${sig(kPool0)}`,
    };
    const tableI64 = table.dtype === 'i64' ? 1 : 0;
    // the table, the lengths, the error record, and the offsets of o, q, k, v, table and lengths
    /** the split kernels' leading arguments: o, the split sums, q, the pools, then `shared` */
    const splitLead = (sums: ReturnType<typeof splitSums>, m: RawTensor, err: DevicePtr) => [
      base(out),
      ...splitArgs(out, sums),
      base(q),
      base(kp),
      base(vp),
      ...shared(m, err),
    ];
    const shared = (m: RawTensor, err: DevicePtr) => [
      base(table),
      base(m),
      arg.ptr(err),
      offsetOf(out),
      offsetOf(q),
      offsetOf(kp),
      offsetOf(vp),
      offsetOf(table),
      offsetOf(m),
    ];
    if (blocksX > 0) {
      const group = hq / hkv,
        rt = rowTile(group),
        chunks = Math.ceil(group / rt);
      let tokens = 0;
      for (const n of p.queryLens) if (n <= maxQ) tokens += n;
      const splits = keySplits(tokens * hkv * chunks, dev.runtime.info.multiprocessors, p, maxQ);
      const sums = splitSums(out, t * hq, splits, dv, temps);
      const m = meta;
      withDeviceErrors(dev, site, (err, tag) =>
        dev.kernels.launch(
          'paged-attention.hip',
          `paged_attn_r${rt}_${q.dtype}`,
          [blocksX, hkv * chunks, splits],
          BLOCK,
          0,
          dev.stream,
          [
            ...splitLead(sums, m, err),
            ...[seqs, hq, hkv, d, dv, bs, nblocks, maxBlocks, tableI64, tag, splits, maxQ, listAt].map((x) =>
              arg.u32(x),
            ),
            ...[qst, qsh, kbk, kss, ksh, vbk, vss, vsh, tsr, tsc, p.window ?? 0].map((x) => arg.i64(x)),
            arg.f32(p.scale),
          ],
        ),
      );
      mergeSplits(out, sums);
    }
    if (entries > 0) {
      // flash_dec's plan over the entries: each is one 16-row tile of one kv head (so b entries,
      // one query head a kv head, one query), the keys those of the longest sequence; the kernel
      // shares each sequence's own keys out over the plan's splits
      const most = mostKeys(p, ATTN_MAX_TQ, true);
      const pl = decodePlan(dev.runtime.info, entries, hkv, hkv, 1, Math.max(1, most), bucket);
      // the merge runs over every row: those of the long chunks get what it makes of partial
      // sums no kernel wrote, until the prefill kernel (launched after it) writes them; the FMA
      // kernel takes no rows beside this one
      const sums = splitSums(out, t * hq, pl.blocksY, d, temps);
      const m = meta;
      withDeviceErrors(dev, site, (err, tag) =>
        dev.kernels.launch(
          'paged-decode.hip',
          `paged_dec_${q.dtype}_${bucket}`,
          [entries * hkv, pl.blocksY, 1],
          [pl.threads, 1, 1],
          pl.shared,
          dev.stream,
          [
            ...splitLead(sums, m, err),
            ...[seqs, hq, hkv, d, bs, nblocks, maxBlocks, tableI64, tag, pl.blocksY, decAt].map((x) => arg.u32(x)),
            ...[qst, qsh, kss, ksh, vss, vsh, tsr, tsc, p.window ?? 0].map((x) => arg.i64(x)),
            arg.f32(p.scale),
          ],
        ),
      );
      mergeSplits(out, sums);
    }
    if (fwd && tiles > 0) {
      const m = meta;
      withDeviceErrors(dev, site, (err, tag) =>
        dev.kernels.launch(
          'paged-prefill.hip',
          `paged_fwd_${q.dtype}_${bucket}`,
          [tiles, hq, 1],
          [fwd.threads, 1, 1],
          fwd.shared,
          dev.stream,
          [
            base(out),
            base(q),
            base(kp),
            base(vp),
            ...shared(m, err),
            ...[seqs, hq, hkv, d, bs, nblocks, maxBlocks, tableI64, tag].map((x) => arg.u32(x)),
            ...[qst, qsh, kss, ksh, vss, vsh, tsr, tsc, p.window ?? 0].map((x) => arg.i64(x)),
            arg.f32(p.scale),
          ],
        ),
      );
    }
  });
}
