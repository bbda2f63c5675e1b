// The row kernels that hold a row in registers (hip-src/rowreg.h: softmax.hip's, norm.hip's and
// reduce-rows.hip's _v<V> kernels) and the split form of softmax and the norms for rows too
// long for that (_part then _fin, a chunk of a row per block): which applies to a call, and the
// launch shape. Both need rows of whole 16-byte vectors at 16-byte boundaries; nn.ts and
// reduce.ts send anything else to the general kernels.
import type { Device } from '../../device/device.ts';
import { dtypeSize, type DType } from '../../core/dtype.ts';
import { RawTensor } from '../../device/raw-tensor.ts';
import { readEnv } from '../../core/config.ts';
import { arg, type Dim3, type KernelArg } from '../../runtime/kernels.ts';
import { REG_FOLD_OPS, REG_ROW_DTYPES, REG_ROW_VECS } from '../../runtime/kernel-sigs-reduce.ts';
import type { ReduceOp } from '../../core/op-types.ts';

/** vectors a thread holds in the split kernels: RT_SOFTMAX_SPLIT_V and RT_NORM_SPLIT_V in
 *  rowreg.h (the reductions have none: reduce.ts splits long rows its own way) */
const SPLIT_VECS = { softmax: 8, norm: 4, fold: 0 } as const;
export type RowFamily = keyof typeof REG_ROW_VECS;
/** the kernels count rows, columns and chunk tasks in 32 bits */
const U32_MAX = 2 ** 31 - 1;
/** a plan with fewer threads than this many per multiprocessor gives each row more threads
 *  (fewer vectors each), so a small batch still spreads its rows' loads over the device */
const THREADS_PER_SM = 1024;
/** where the rows can give the device this many times THREADS_PER_SM a multiprocessor at some
 *  V, the plan takes the largest such V: a row's loads then spread over more threads (bf16
 *  [8192, 4096] on an H200: 4 vectors a thread, 128 threads a row, read 6-8% faster than 16
 *  and 32, softmax 6% faster than 8 and 64), and a block's share of the last wave is short */
const DEEP_FULLS = 4;
/** the split kernels aim for at least this many blocks per multiprocessor */
const SPLIT_BLOCKS_PER_SM = 2;

export type RegPlan =
  | { readonly kind: 'reg'; readonly vecs: number; readonly group: number; readonly grid: Dim3; readonly block: Dim3 }
  | {
      readonly kind: 'split';
      readonly chunkVecs: number;
      readonly chunks: number;
      readonly grid: Dim3;
      readonly block: Dim3;
    };

const nextPow2 = (n: number): number => 2 ** Math.ceil(Math.log2(Math.max(1, n)));
/** threads of a group holding `v` vectors each of a row of `nv` */
const groupOf = (nv: number, v: number): number => nextPow2(Math.ceil(nv / v));

/**
 * ROCM_TENSOR_ROW_VECS, for tuning and tests: 1, 2, 4, 8 or 16 makes the register kernels hold
 * that many vectors a thread wherever the family has that kernel and it fits a block (the plan
 * as usual elsewhere); `split` sends every row softmax and the norms plan to the split kernels.
 * Unset: the plan's own choice.
 */
function forced(): number | 'split' | null {
  const env = readEnv('ROCM_TENSOR_ROW_VECS');
  if (env === undefined) return null;
  return env === 'split' ? env : Number(env);
}

/**
 * How `rows` rows of `cols` elements go to the register kernels, or null where they do not
 * apply (the dtype, rows not whole 16-byte vectors, counts past 32 bits). A row that fits a
 * block's registers takes a group of G threads holding V vectors each: the largest V whose
 * groups give the device DEEP_FULLS times THREADS_PER_SM threads a multiprocessor, else the
 * largest that gives it THREADS_PER_SM, else the smallest V that fits (a short batch, e.g. one
 * token's norm, is latency: more threads a row, less work each).
 * G up to the wave size shares a wave (shuffles only); a larger G is a block of its own. A
 * longer row is split into chunks of up to a block's registers, enough of them for
 * SPLIT_BLOCKS_PER_SM blocks a multiprocessor where the rows allow.
 */
export function regPlan(dev: Device, rows: number, cols: number, dtype: DType, family: RowFamily): RegPlan | null {
  if (!REG_ROW_DTYPES.includes(dtype) || rows < 1 || rows > U32_MAX || cols < 1 || cols > U32_MAX) return null;
  const per = 16 / dtypeSize(dtype);
  if (cols % per !== 0) return null;
  const nv = cols / per;
  const info = dev.runtime.info,
    ws = info.warpSize,
    sms = Math.max(1, info.multiprocessors);
  const maxBlock = dev.kernels.preferredBlockSize;
  const force = forced();
  // one pass over the family's V (ascending), no closures or arrays: this runs on every call
  let smallest = 0,
    deep = 0,
    some = 0,
    forcedFits = false;
  if (force !== 'split') {
    for (const v of REG_ROW_VECS[family]) {
      const g = groupOf(nv, v);
      if (g > maxBlock) continue;
      if (smallest === 0) smallest = v;
      if (rows * g >= DEEP_FULLS * sms * THREADS_PER_SM) deep = v;
      if (rows * g >= sms * THREADS_PER_SM) some = v;
      if (v === force) forcedFits = true;
    }
  }
  if (smallest > 0) {
    const vecs = forcedFits && typeof force === 'number' ? force : deep > 0 ? deep : some > 0 ? some : smallest;
    const group = groupOf(nv, vecs);
    const block = group > ws ? group : Math.min(2 * ws, maxBlock);
    const grid = Math.min(info.maxGridDim[0], Math.ceil(rows / (block / group)));
    return { kind: 'reg', vecs, group, grid: [grid, 1, 1], block: [block, 1, 1] };
  }
  if (SPLIT_VECS[family] === 0) return null;
  let chunkVecs = maxBlock * SPLIT_VECS[family];
  while (chunkVecs > maxBlock && rows * Math.ceil(nv / chunkVecs) < SPLIT_BLOCKS_PER_SM * sms) chunkVecs /= 2;
  const chunks = Math.ceil(nv / chunkVecs);
  if (rows * chunks > U32_MAX) return null;
  const grid = Math.min(info.maxGridDim[0], rows * chunks);
  return { kind: 'split', chunkVecs, chunks, grid: [grid, 1, 1], block: [maxBlock, 1, 1] };
}

/** every tensor's first element sits on a 16-byte boundary (the register kernels' vectors) */
export function aligned16(...ts: readonly RawTensor[]): boolean {
  return ts.every((t) => (t.storage.ptrAt(t.layout.offset) as bigint) % 16n === 0n);
}

type Split = RegPlan & { kind: 'split' };

/** a tensor's storage base and its offset, as the kernels take them */
const base = (t: RawTensor): KernelArg => arg.ptr(t.storage.ptrAt(0));
const off = (t: RawTensor): KernelArg => arg.i64(t.layout.offset);

/**
 * Runs `first` (the _part kernel) with a workspace of `width` floats per chunk, then `second`
 * (the _fin kernel) with the same; the workspace is freed once both are queued (the allocator
 * is stream-ordered).
 */
function withChunkStats(
  dev: Device,
  p: Split,
  rows: number,
  width: number,
  first: (ws: KernelArg) => void,
  second: (ws: KernelArg) => void,
): void {
  const ws = RawTensor.empty([rows * p.chunks * width], 'f32', dev);
  try {
    first(base(ws));
    second(base(ws));
  } finally {
    ws.dispose();
  }
}

/** y = softmax (or logSoftmax) of x's rows, both contiguous [rows, cols] and plan-checked */
export function softmaxRows(y: RawTensor, x: RawTensor, rows: number, cols: number, log: boolean, p: RegPlan): void {
  const dev = x.device,
    k = dev.kernels,
    d = x.dtype,
    name = log ? 'logsoftmax' : 'softmax';
  if (p.kind === 'reg') {
    k.launch('softmax.hip', `${name}_${d}_v${p.vecs}`, p.grid, p.block, 0, dev.stream, [
      base(y),
      base(x),
      off(y),
      off(x),
      arg.u32(rows),
      arg.u32(cols),
      arg.u32(p.group),
    ]);
    return;
  }
  const counts = [arg.u32(rows), arg.u32(cols), arg.u32(p.chunkVecs), arg.u32(p.chunks)];
  withChunkStats(
    dev,
    p,
    rows,
    2,
    (ws) =>
      k.launch('softmax.hip', `softmax_part_${d}`, p.grid, p.block, 0, dev.stream, [ws, base(x), off(x), ...counts]),
    (ws) =>
      k.launch('softmax.hip', `${name}_fin_${d}`, p.grid, p.block, 0, dev.stream, [
        base(y),
        base(x),
        ws,
        off(y),
        off(x),
        ...counts,
      ]),
  );
}

/** y = layerNorm (b: a tensor or null) or rmsNorm (b: 'rms') of x's rows; x, y contiguous
 *  [rows, cols], w and b contiguous [cols], plan-checked */
export function normRows(
  y: RawTensor,
  x: RawTensor,
  w: RawTensor,
  b: RawTensor | null | 'rms',
  rows: number,
  cols: number,
  eps: number,
  p: RegPlan,
): void {
  const dev = x.device,
    k = dev.kernels,
    d = x.dtype;
  const rms = b === 'rms',
    bias = b !== null && b !== 'rms' ? b : null;
  const bArgs = rms ? [] : [bias ? base(bias) : base(w)];
  const bOff = rms ? [] : [bias ? off(bias) : arg.i64(0)];
  const hasBias = rms ? [] : [arg.u32(bias ? 1 : 0)];
  const name = rms ? 'rmsnorm' : 'layernorm';
  if (p.kind === 'reg') {
    k.launch('norm.hip', `${name}_${d}_v${p.vecs}`, p.grid, p.block, 0, dev.stream, [
      base(y),
      base(x),
      base(w),
      ...bArgs,
      off(y),
      off(x),
      off(w),
      ...bOff,
      arg.u32(rows),
      arg.u32(cols),
      arg.f32(eps),
      ...hasBias,
      arg.u32(p.group),
    ]);
    return;
  }
  const counts = [arg.u32(rows), arg.u32(cols), arg.u32(p.chunkVecs), arg.u32(p.chunks)];
  withChunkStats(
    dev,
    p,
    rows,
    rms ? 1 : 2,
    (ws) => k.launch('norm.hip', `${name}_part_${d}`, p.grid, p.block, 0, dev.stream, [ws, base(x), off(x), ...counts]),
    (ws) =>
      k.launch('norm.hip', `${name}_fin_${d}`, p.grid, p.block, 0, dev.stream, [
        base(y),
        base(x),
        base(w),
        ...bArgs,
        ws,
        off(y),
        off(x),
        off(w),
        ...bOff,
        ...counts,
        arg.f32(eps),
        ...hasBias,
      ]),
  );
}

/**
 * y = op over the last dim of x's rows (x contiguous [rows, cols] from xOffset, y a new
 * [rows]) on reduce-rows.hip, where it applies: sum, mean, max, min of f32/f16/bf16 rows a
 * block's registers hold, at least a row a multiprocessor (fewer rows go to reduce.ts's split
 * segments, which spread a row over several blocks). False where it does not.
 */
export function foldRows(
  op: ReduceOp,
  y: RawTensor,
  x: RawTensor,
  xOffset: number,
  rows: number,
  cols: number,
): boolean {
  const dev = x.device;
  if (!REG_FOLD_OPS.includes(op) || rows < Math.max(1, dev.runtime.info.multiprocessors)) return false;
  if ((x.storage.ptrAt(xOffset) as bigint) % 16n !== 0n) return false;
  const p = regPlan(dev, rows, cols, x.dtype, 'fold');
  if (!p || p.kind !== 'reg') return false;
  dev.kernels.launch('reduce-rows.hip', `reduce_${op}_${x.dtype}_v${p.vecs}`, p.grid, p.block, 0, dev.stream, [
    base(y),
    base(x),
    off(y),
    arg.i64(xOffset),
    arg.u32(rows),
    arg.u32(cols),
    arg.u32(p.group),
  ]);
  return true;
}
