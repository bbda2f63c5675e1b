// Tensor: a storage plus a layout (shape, strides, offset) and a dtype. Views share storage;
// every op is a method here that hands off to ops/<family>.ts, which checks its arguments and
// runs the CPU reference or the GPU path.
import { DTYPE_INFO, isDType, getElem, type DType, type HostArray } from '../core/dtype.ts';
import { Layout, checkShape, normDim, numel, type Shape } from '../core/layout.ts';
import { Device } from '../device/device.ts';
import { Storage } from '../device/storage.ts';
import { RawTensor } from '../device/raw-tensor.ts';
import { ShapeError, TensorError, fmtShape } from '../core/errors.ts';
import { track, SCOPE_LEAF } from '../core/scope.ts';
import type {
  AttentionOptions,
  BatchNormOptions,
  ConvOptions,
  ConvTransposeOptions,
  LinearOptions,
  PoolOptions,
} from './options.ts';
import type { UnaryOp, BinaryOp, CmpOp, ReduceOp } from '../core/op-types.ts';
import * as ew from '../ops/elementwise.ts';
import * as castOps from '../ops/cast.ts';
import * as copyOps from '../ops/copy.ts';
import * as reduceOps from '../ops/reduce.ts';
import * as matmulOps from '../ops/matmul.ts';
import * as linearOps from '../ops/linear.ts';
import * as convOps from '../ops/conv.ts';
import * as poolOps from '../ops/pool.ts';
import * as upOps from '../ops/upsample.ts';
import * as idx from '../ops/indexing.ts';
import * as nn from '../ops/nn.ts';
import * as attentionOps from '../ops/attention.ts';
import * as sortOps from '../ops/sort.ts';
import * as scanOps from '../ops/scan.ts';
import * as creation from '../ops/creation.ts';
import * as random from '../ops/random.ts';
import { toHostArray, hostToNumbers } from '../ops/readback.ts';

export type { DType } from '../core/dtype.ts';
export type { NestedArray } from '../core/dtype.ts';
import type { NestedArray } from '../core/dtype.ts';
export type DeviceLike = Device | string;
export interface CreateOptions {
  dtype?: DType;
  device?: DeviceLike;
}
export interface RandomOptions extends CreateOptions {
  seed?: number;
}
/** what toArray() gives back: f16/bf16 widen to Float32Array (exactly), i64 is BigInt64Array */
export type ReadArray = Float32Array | Float64Array | Uint8Array | Uint32Array | BigInt64Array;

export function toDevice(d: DeviceLike | undefined): Device {
  if (d === undefined) return Device.cpu();
  return typeof d === 'string' ? Device.parse(d) : d;
}

export class Tensor extends RawTensor {
  /** internal: a tensor over a storage and a layout (the registry wraps backend results) */
  constructor(storage: Storage, layout: Layout, dtype: DType) {
    super(storage, layout, dtype);
    track(this);
  }

  /** the Tensor for a backend result: the same object when it is one, else a new Tensor that
   *  takes over the result's reference to its storage */
  static wrap(r: RawTensor): Tensor {
    if (r instanceof Tensor) return r;
    const t = new Tensor(r.storage, r.layout, r.dtype);
    r.dispose();
    return t;
  }

  // ---- creation ------------------------------------------------------------------------------
  /** an uninitialized contiguous tensor (internal building block of ops) */
  static override empty(shape: Shape, dtype: DType, device: Device): Tensor {
    checkShape('empty', shape);
    return new Tensor(Storage.alloc(device, dtype, numel(shape)), Layout.contiguous(shape), dtype);
  }

  /**
   * From a typed array (dtype follows the array: Float32Array f32, Float64Array f64,
   * Uint8Array u8, Uint32Array u32, BigInt64Array i64, Int32Array i64), nested arrays or a number
   * (f32 unless told). f16/bf16 from numbers round to nearest even.
   */
  static from(
    data: ArrayLike<number> | BigInt64Array | NestedArray,
    opts: CreateOptions & { shape?: Shape } = {},
  ): Tensor {
    return Tensor.wrap(creation.fromData(data, opts.shape, opts.dtype, toDevice(opts.device)));
  }
  static zeros(shape: Shape, opts: CreateOptions = {}): Tensor {
    return Tensor.wrap(creation.full(shape, 0, opts.dtype ?? 'f32', toDevice(opts.device)));
  }
  static ones(shape: Shape, opts: CreateOptions = {}): Tensor {
    return Tensor.wrap(creation.full(shape, 1, opts.dtype ?? 'f32', toDevice(opts.device)));
  }
  static full(shape: Shape, value: number, opts: CreateOptions = {}): Tensor {
    return Tensor.wrap(creation.full(shape, value, opts.dtype ?? 'f32', toDevice(opts.device)));
  }
  /** [start, end) by step; arange(n) is [0, n) */
  static arange(start: number, end?: number, step = 1, opts: CreateOptions = {}): Tensor {
    const dev = toDevice(opts.device),
      dtype = opts.dtype ?? 'f32';
    return Tensor.wrap(
      end === undefined ? creation.arange(0, start, step, dtype, dev) : creation.arange(start, end, step, dtype, dev),
    );
  }
  static eye(n: number, opts: CreateOptions = {}): Tensor {
    return Tensor.wrap(creation.eye(n, opts.dtype ?? 'f32', toDevice(opts.device)));
  }
  /** uniform [0, 1); the same numbers on every device for a given seed */
  static rand(shape: Shape, opts: RandomOptions = {}): Tensor {
    return Tensor.wrap(random.rand(shape, opts.seed, opts.dtype ?? 'f32', toDevice(opts.device)));
  }
  /** standard normal; the same numbers on every device for a given seed */
  static randn(shape: Shape, opts: RandomOptions = {}): Tensor {
    return Tensor.wrap(random.randn(shape, opts.seed, opts.dtype ?? 'f32', toDevice(opts.device)));
  }
  /** integers uniform in [low, high) (high - low <= 2^32); i64 unless told; seeded like rand */
  static randint(low: number, high: number, shape: Shape, opts: RandomOptions = {}): Tensor {
    return Tensor.wrap(random.randint(low, high, shape, opts.seed, opts.dtype ?? 'i64', toDevice(opts.device)));
  }
  /** 0/1 with probability p: p a tensor of probabilities (output in its dtype unless told, on
   *  its device), or a number with opts.shape (f32 unless told) */
  static bernoulli(p: Tensor | number, opts: RandomOptions & { shape?: Shape } = {}): Tensor {
    return Tensor.wrap(
      random.bernoulli(p, {
        seed: opts.seed,
        dtype: opts.dtype,
        shape: opts.shape,
        device: typeof p === 'number' ? toDevice(opts.device) : p.device,
      }),
    );
  }
  /** 0/1 with the probabilities in this tensor (see Tensor.bernoulli) */
  bernoulli(opts: { seed?: number; dtype?: DType } = {}): Tensor {
    return Tensor.wrap(random.bernoulli(this, { ...opts, device: this.device }));
  }
  /** zeroes each element with probability p and scales the rest by 1 / (1 - p); with
   *  training: false, a view of this tensor */
  dropout(p: number, opts: { seed?: number; training?: boolean } = {}): Tensor {
    return Tensor.wrap(random.dropout(this, p, opts));
  }
  /** numSamples category indices per row of this [n] or [rows, n] tensor of (unnormalized)
   *  probabilities: i64 unless told; without replacement unless told */
  multinomial(numSamples: number, opts: { replacement?: boolean; seed?: number; dtype?: 'i64' | 'u32' } = {}): Tensor {
    return Tensor.wrap(random.multinomial(this, numSamples, opts));
  }
  zerosLike(): Tensor {
    return Tensor.zeros(this.layout.shape, { dtype: this.dtype, device: this.device });
  }
  onesLike(): Tensor {
    return Tensor.ones(this.layout.shape, { dtype: this.dtype, device: this.device });
  }

  // ---- views ---------------------------------------------------------------------------------
  /** a view when the layout allows it, otherwise a contiguous copy; one dim may be -1 */
  reshape(shape: Shape): Tensor {
    this.check('reshape');
    const target = inferShape('reshape', shape, this.numel, this.layout.shape);
    const v = this.layout.reshapeView(target);
    if (v) return this.view(v);
    const c = this.contiguous();
    const out = c.view(c.layout.reshapeView(target)!);
    c.dispose();
    return out;
  }
  flatten(startDim = 0, endDim = -1): Tensor {
    if (this.rank === 0) return this.reshape([1]);
    const s = normDim('flatten', startDim, this.rank),
      e = normDim('flatten', endDim, this.rank);
    if (s > e) throw new ShapeError(`flatten: start dim ${startDim} after end dim ${endDim}`);
    const sh = this.layout.shape;
    return this.reshape([...sh.slice(0, s), numel(sh.slice(s, e + 1)), ...sh.slice(e + 1)]);
  }
  /** a contiguous tensor with the same values (a new view of the same storage if already so) */
  contiguous(): Tensor {
    return Tensor.wrap(copyOps.contiguous(this.check('contiguous')));
  }
  static cat(tensors: readonly Tensor[], dim = 0): Tensor {
    return Tensor.wrap(copyOps.cat(tensors, dim));
  }
  static stack(tensors: readonly Tensor[], dim = 0): Tensor {
    if (tensors.length === 0) throw new ShapeError('stack: no tensors given');
    const d = normDim('stack', dim, tensors[0]!.rank + 1);
    const us = tensors.map((t) => t.unsqueeze(d));
    try {
      return Tensor.wrap(copyOps.cat(us, d));
    } finally {
      for (const u of us) u.dispose();
    }
  }

  // ---- dtype and device ---------------------------------------------------------------------
  toDtype(dtype: DType): Tensor {
    if (!isDType(dtype)) throw new TensorError(`toDtype: unknown dtype '${String(dtype)}'`);
    return Tensor.wrap(castOps.cast(this.check('toDtype'), dtype));
  }
  /** a copy on another device (same tensor if already there) */
  to(device: DeviceLike): Tensor {
    return Tensor.wrap(copyOps.toDevice(this.check('to'), toDevice(device)));
  }

  // ---- readback --------------------------------------------------------------------------------
  /** the values in row-major order; f16/bf16 come back as Float32Array */
  async toArray(): Promise<ReadArray> {
    return widen(this.dtype, await toHostArray(this.check('toArray'), false));
  }
  /** like toArray(), blocking the thread until the device is done */
  toArraySync(): ReadArray {
    return widen(this.dtype, toHostArray(this.check('toArraySync'), true) as HostArray);
  }
  /** the raw element bits: f16/bf16 as Uint16Array */
  async toRawArray(): Promise<HostArray> {
    return toHostArray(this.check('toRawArray'), false);
  }
  async toNested(): Promise<NestedArray> {
    return nest(hostToNumbers(this.dtype, await this.toRawArray()), this.layout.shape);
  }
  toNestedSync(): NestedArray {
    return nest(
      hostToNumbers(this.dtype, toHostArray(this.check('toNestedSync'), true) as HostArray),
      this.layout.shape,
    );
  }
  async item(): Promise<number> {
    return itemOf(this, await this.toRawArray());
  }
  itemSync(): number {
    return itemOf(this, toHostArray(this.check('itemSync'), true) as HostArray);
  }

  // ---- unary -----------------------------------------------------------------------------------
  unary(op: UnaryOp): Tensor {
    return Tensor.wrap(ew.unary(this.check(op), op));
  }
  exp(): Tensor {
    return this.unary('exp');
  }
  log(): Tensor {
    return this.unary('log');
  }
  sin(): Tensor {
    return this.unary('sin');
  }
  cos(): Tensor {
    return this.unary('cos');
  }
  tanh(): Tensor {
    return this.unary('tanh');
  }
  neg(): Tensor {
    return this.unary('neg');
  }
  recip(): Tensor {
    return this.unary('recip');
  }
  sqr(): Tensor {
    return this.unary('sqr');
  }
  sqrt(): Tensor {
    return this.unary('sqrt');
  }
  /** tanh approximation */
  gelu(): Tensor {
    return this.unary('gelu');
  }
  geluErf(): Tensor {
    return this.unary('geluErf');
  }
  erf(): Tensor {
    return this.unary('erf');
  }
  relu(): Tensor {
    return this.unary('relu');
  }
  silu(): Tensor {
    return this.unary('silu');
  }
  abs(): Tensor {
    return this.unary('abs');
  }
  ceil(): Tensor {
    return this.unary('ceil');
  }
  floor(): Tensor {
    return this.unary('floor');
  }
  /** half to even, like torch.round */
  round(): Tensor {
    return this.unary('round');
  }
  sign(): Tensor {
    return this.unary('sign');
  }
  sigmoid(): Tensor {
    return this.unary('sigmoid');
  }
  /** x * mul + add */
  affine(mul: number, add: number): Tensor {
    return Tensor.wrap(ew.paramUnary(this.check('affine'), { op: 'affine', a: mul, b: add }));
  }
  powf(e: number): Tensor {
    return Tensor.wrap(ew.paramUnary(this.check('powf'), { op: 'powf', a: e, b: 0 }));
  }
  elu(alpha = 1): Tensor {
    return Tensor.wrap(ew.paramUnary(this.check('elu'), { op: 'elu', a: alpha, b: 0 }));
  }
  clamp(lo: number, hi: number): Tensor {
    return Tensor.wrap(ew.paramUnary(this.check('clamp'), { op: 'clamp', a: lo, b: hi }));
  }
  leakyRelu(slope = 0.01): Tensor {
    return Tensor.wrap(ew.paramUnary(this.check('leakyRelu'), { op: 'leakyRelu', a: slope, b: 0 }));
  }

  // ---- binary (broadcasting; a number is a scalar of this tensor's dtype) ------------------
  binary(op: BinaryOp, other: Tensor | number): Tensor {
    return Tensor.wrap(ew.binary(op, this.check(op), other));
  }
  add(o: Tensor | number): Tensor {
    return this.binary('add', o);
  }
  sub(o: Tensor | number): Tensor {
    return this.binary('sub', o);
  }
  mul(o: Tensor | number): Tensor {
    return this.binary('mul', o);
  }
  div(o: Tensor | number): Tensor {
    return this.binary('div', o);
  }
  maximum(o: Tensor | number): Tensor {
    return this.binary('maximum', o);
  }
  minimum(o: Tensor | number): Tensor {
    return this.binary('minimum', o);
  }
  /** comparisons give u8 (1 true, 0 false) */
  compare(op: CmpOp, other: Tensor | number): Tensor {
    return Tensor.wrap(ew.compare(op, this.check(op), other));
  }
  eq(o: Tensor | number): Tensor {
    return this.compare('eq', o);
  }
  ne(o: Tensor | number): Tensor {
    return this.compare('ne', o);
  }
  lt(o: Tensor | number): Tensor {
    return this.compare('lt', o);
  }
  le(o: Tensor | number): Tensor {
    return this.compare('le', o);
  }
  gt(o: Tensor | number): Tensor {
    return this.compare('gt', o);
  }
  ge(o: Tensor | number): Tensor {
    return this.compare('ge', o);
  }
  /** cond (u8/u32/i64, nonzero = true) ? a : b, broadcasting all three */
  static where(cond: Tensor, a: Tensor | number, b: Tensor | number): Tensor {
    return Tensor.wrap(ew.where(cond.check('where'), a, b));
  }

  // ---- reductions ------------------------------------------------------------------------------
  reduce(op: ReduceOp, dims?: number | readonly number[], keepdim = false): Tensor {
    return Tensor.wrap(reduceOps.reduce(op, this.check(op), dims, keepdim));
  }
  /** over `dims` (all dims when omitted) */
  sum(dims?: number | readonly number[], keepdim = false): Tensor {
    return this.reduce('sum', dims, keepdim);
  }
  min(dims?: number | readonly number[], keepdim = false): Tensor {
    return this.reduce('min', dims, keepdim);
  }
  max(dims?: number | readonly number[], keepdim = false): Tensor {
    return this.reduce('max', dims, keepdim);
  }
  mean(dims?: number | readonly number[], keepdim = false): Tensor {
    return this.reduce('mean', dims, keepdim);
  }
  /** u32 indices of the first minimum along dim */
  argmin(dim: number, keepdim = false): Tensor {
    return this.reduce('argmin', dim, keepdim);
  }
  argmax(dim: number, keepdim = false): Tensor {
    return this.reduce('argmax', dim, keepdim);
  }
  /** running sums along dim (float dtypes): out[..., i, ...] = sum of x[..., 0..i, ...] */
  cumsum(dim: number): Tensor {
    return Tensor.wrap(scanOps.cumsum(this.check('cumsum'), dim));
  }
  /** sum of every element, as a 0-d tensor */
  sumAll(): Tensor {
    return Tensor.wrap(reduceOps.reduce('sum', this.check('sumAll'), undefined, false));
  }

  // ---- linear algebra, convolution, pooling, resampling ------------------------------------
  /** batched, broadcasting batch dims: [..., m, k] x [..., k, n] */
  matmul(other: Tensor): Tensor {
    return Tensor.wrap(matmulOps.matmul(this.check('matmul'), other.check('matmul')));
  }
  /**
   * x W^T with W [out, in] as nn.Linear keeps it, and optionally a bias, an RMSNorm of x before
   * and a SwiGLU or residual after: one kernel for a single row on a GPU (ops/linear.ts)
   */
  linear(w: Tensor, opts: LinearOptions = {}): Tensor {
    return Tensor.wrap(linearOps.linear(this.check('linear'), w.check('linear'), opts));
  }
  /** x [n, cIn, l], w [cOut, cIn/groups, k] */
  conv1d(w: Tensor, opts: ConvOptions = {}): Tensor {
    return Tensor.wrap(convOps.conv1d(this.check('conv1d'), w.check('conv1d'), opts));
  }
  /** x [n, cIn, h, w], w [cOut, cIn/groups, kh, kw] */
  conv2d(w: Tensor, opts: ConvOptions = {}): Tensor {
    return Tensor.wrap(convOps.conv2d(this.check('conv2d'), w.check('conv2d'), opts));
  }
  /** x [n, cIn, l], w [cIn, cOut/groups, k] */
  convTranspose1d(w: Tensor, opts: ConvTransposeOptions = {}): Tensor {
    return Tensor.wrap(convOps.convTranspose1d(this.check('convTranspose1d'), w.check('convTranspose1d'), opts));
  }
  /** x [n, cIn, h, w], w [cIn, cOut/groups, kh, kw] */
  convTranspose2d(w: Tensor, opts: ConvTransposeOptions = {}): Tensor {
    return Tensor.wrap(convOps.convTranspose2d(this.check('convTranspose2d'), w.check('convTranspose2d'), opts));
  }
  avgPool2d(opts: PoolOptions): Tensor {
    return Tensor.wrap(poolOps.avgPool2d(this.check('avgPool2d'), opts));
  }
  maxPool2d(opts: PoolOptions): Tensor {
    return Tensor.wrap(poolOps.maxPool2d(this.check('maxPool2d'), opts));
  }
  /** x [n, c, l] -> [n, c, size] */
  upsampleNearest1d(size: number): Tensor {
    return Tensor.wrap(upOps.upsampleNearest1d(this.check('upsampleNearest1d'), size));
  }
  /** x [n, c, h, w] -> [n, c, outH, outW] */
  upsampleNearest2d(outH: number, outW: number): Tensor {
    return Tensor.wrap(upOps.upsampleNearest2d(this.check('upsampleNearest2d'), outH, outW));
  }
  upsampleBilinear2d(outH: number, outW: number, alignCorners = false): Tensor {
    return Tensor.wrap(upOps.upsampleBilinear2d(this.check('upsampleBilinear2d'), outH, outW, alignCorners));
  }

  // ---- indexing --------------------------------------------------------------------------------
  /** ids: 1-d u8/u32/i64; picks slices along dim */
  indexSelect(ids: Tensor, dim = 0): Tensor {
    return Tensor.wrap(idx.indexSelect(this.check('indexSelect'), ids.check('indexSelect'), dim));
  }
  /** out[i][j] = x[ids[i][j]][j] (dim 0), ids the same rank as x */
  gather(ids: Tensor, dim: number): Tensor {
    return Tensor.wrap(idx.gather(this.check('gather'), ids.check('gather'), dim));
  }
  /** a copy of x with x[ids[i][j]][j] = src[i][j] (dim 0) */
  scatter(ids: Tensor, src: Tensor, dim: number): Tensor {
    return Tensor.wrap(idx.scatter(this.check('scatter'), ids.check('scatter'), src.check('scatter'), dim, false));
  }
  /** like scatter, adding src into x */
  scatterAdd(ids: Tensor, src: Tensor, dim: number): Tensor {
    return Tensor.wrap(
      idx.scatter(this.check('scatterAdd'), ids.check('scatterAdd'), src.check('scatterAdd'), dim, true),
    );
  }
  /** a copy of x with src's slices added at positions ids along dim */
  indexAdd(ids: Tensor, src: Tensor, dim: number): Tensor {
    return Tensor.wrap(idx.indexAdd(this.check('indexAdd'), ids.check('indexAdd'), src.check('indexAdd'), dim));
  }
  /** rows of `table` [vocab, hidden] picked by ids of any shape -> [...ids.shape, hidden] */
  static embedding(ids: Tensor, table: Tensor): Tensor {
    return Tensor.wrap(idx.embedding(ids.check('embedding'), table.check('embedding')));
  }

  // ---- copies and in-place writes ----------------------------------------------------------
  /** sets every element of this view (in place) */
  constSet(value: number): this {
    copyOps.constSet(this.check('constSet'), value);
    return this;
  }
  fill(value: number): this {
    return this.constSet(value);
  }
  /** writes src into this tensor (in place) at `start` along dim */
  sliceSet(src: Tensor, dim: number, start: number): this {
    copyOps.sliceSet(this.check('sliceSet'), src.check('sliceSet'), dim, start);
    return this;
  }
  /** writes src's slices (in place) at positions ids (on the device) along dim: a KV-cache write
   *  whose position lives in device memory, so one captured graph serves every step */
  indexSet(ids: Tensor, src: Tensor, dim: number): this {
    idx.indexSet(this.check('indexSet'), ids.check('indexSet'), src.check('indexSet'), dim);
    return this;
  }
  /** copies `rows` rows of `cols` elements between flat contiguous tensors (in place on dst) */
  static copy2d(src: Tensor, dst: Tensor, p: copyOps.Copy2dParams): void {
    copyOps.copy2d(src.check('copy2d'), dst.check('copy2d'), p);
  }

  // ---- nn ----------------------------------------------------------------------------------
  softmax(dim = -1): Tensor {
    return Tensor.wrap(nn.softmax(this.check('softmax'), dim, false));
  }
  logSoftmax(dim = -1): Tensor {
    return Tensor.wrap(nn.softmax(this.check('logSoftmax'), dim, true));
  }
  /** over the last dim; w and b [hidden] (b optional) */
  layerNorm(w: Tensor, b: Tensor | null, eps = 1e-5): Tensor {
    return Tensor.wrap(nn.layerNorm(this.check('layerNorm'), w.check('layerNorm'), b?.check('layerNorm') ?? null, eps));
  }
  rmsNorm(w: Tensor, eps = 1e-6): Tensor {
    return Tensor.wrap(nn.rmsNorm(this.check('rmsNorm'), w.check('rmsNorm'), eps));
  }
  /** rotary embedding on [b, h, t, d] with cos/sin [t, d/2]: halves layout */
  rope(cos: Tensor, sin: Tensor): Tensor {
    return Tensor.wrap(nn.rope(this.check('rope'), cos.check('rope'), sin.check('rope'), 'halves'));
  }
  /** interleaved pairs (x[2i], x[2i+1]) */
  ropeI(cos: Tensor, sin: Tensor): Tensor {
    return Tensor.wrap(nn.rope(this.check('ropeI'), cos.check('ropeI'), sin.check('ropeI'), 'interleaved'));
  }
  /** halves layout on [b, t, h, d] */
  ropeThd(cos: Tensor, sin: Tensor): Tensor {
    return Tensor.wrap(nn.rope(this.check('ropeThd'), cos.check('ropeThd'), sin.check('ropeThd'), 'thd'));
  }
  /** inference batch norm over dim 1 */
  batchNorm(opts: BatchNormOptions): Tensor {
    return Tensor.wrap(nn.batchNorm(this.check('batchNorm'), opts));
  }
  /** q [b, hq, tq, d], k/v [b, hkv, tk, d] with hq a multiple of hkv */
  static scaledDotProductAttention(q: Tensor, k: Tensor, v: Tensor, opts: AttentionOptions = {}): Tensor {
    return Tensor.wrap(
      attentionOps.attention(
        q.check('scaledDotProductAttention'),
        k.check('scaledDotProductAttention'),
        v.check('scaledDotProductAttention'),
        opts,
      ),
    );
  }

  // ---- sorting -------------------------------------------------------------------------------
  /** u32 indices that sort along dim (stable) */
  argsort(dim = -1, opts: { descending?: boolean } = {}): Tensor {
    return Tensor.wrap(sortOps.argsort(this.check('argsort'), dim, opts.descending ?? false));
  }
  sort(dim = -1, opts: { descending?: boolean } = {}): { values: Tensor; indices: Tensor } {
    return wrapPair(sortOps.sort(this.check('sort'), dim, opts.descending ?? false));
  }
  /**
   * the k largest (largest: false: smallest) along dim (default -1), largest (smallest) first,
   * with u32 indices; ties: the lower index first; NaN counts as the largest value
   */
  topk(k: number, opts: sortOps.TopkOptions = {}): { values: Tensor; indices: Tensor } {
    return wrapPair(sortOps.topk(this.check('topk'), k, opts));
  }
}

function wrapPair(r: { values: RawTensor; indices: RawTensor }): { values: Tensor; indices: Tensor } {
  return { values: Tensor.wrap(r.values), indices: Tensor.wrap(r.indices) };
}

// ---- helpers ---------------------------------------------------------------------------------
function inferShape(op: string, shape: Shape, n: number, from: Shape): number[] {
  const holes = shape.filter((x) => x === -1).length;
  if (holes > 1) throw new ShapeError(`${op}: at most one -1 in ${fmtShape(shape)}`);
  const known = shape.reduce((a, b) => (b === -1 ? a : a * b), 1);
  if (holes === 1 && known !== 0 && n % known !== 0)
    throw new ShapeError(`${op}: cannot reshape ${fmtShape(from)} (${n} elements) to ${fmtShape(shape)}`);
  const out = shape.map((x) => (x === -1 ? (known === 0 ? 0 : n / known) : x));
  checkShape(op, out);
  if (numel(out) !== n)
    throw new ShapeError(`${op}: cannot reshape ${fmtShape(from)} (${n} elements) to ${fmtShape(shape)}`);
  return out;
}

// tidy() keeps a result tensor without walking its storage and device
Object.defineProperty(Tensor.prototype, SCOPE_LEAF, { value: true });

function widen(dtype: DType, a: HostArray): ReadArray {
  if (dtype !== 'f16' && dtype !== 'bf16') return a as ReadArray;
  const out = new Float32Array(a.length);
  for (let i = 0; i < a.length; i++) out[i] = getElem(dtype, a, i);
  return out;
}

function nest(flat: Float64Array, shape: Shape): NestedArray {
  if (shape.length === 0) return flat[0]!;
  let pos = 0;
  const build = (d: number): NestedArray[] => {
    const out: NestedArray[] = [];
    for (let i = 0; i < shape[d]!; i++) out.push(d === shape.length - 1 ? flat[pos++]! : build(d + 1));
    return out;
  };
  return build(0);
}

function itemOf(t: Tensor, a: HostArray): number {
  if (t.numel !== 1) throw new ShapeError(`item: tensor ${fmtShape(t.layout.shape)} has ${t.numel} elements, not 1`);
  return getElem(t.dtype, a, 0);
}

export { DTYPE_INFO };
