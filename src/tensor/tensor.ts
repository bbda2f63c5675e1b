// Tensor: a storage plus a layout (shape, strides, offset) and a dtype. Views share storage;
// every op is a method here that hands off to ops/<family>.ts, which checks its arguments and
// runs the CPU reference or the GPU path.
import { DTYPE_INFO, isDType, isFloatDType, getElem, type DType, type HostArray } from '../core/dtype.ts';
import { Layout, checkShape, normDim, numel, sameShape, type Shape } from '../core/layout.ts';
import { Device } from '../device/device.ts';
import { Storage } from '../device/storage.ts';
import { RawTensor } from '../device/raw-tensor.ts';
import { DTypeError, ShapeError, TensorError, fmtShape } from '../core/errors.ts';
import { keep, track, SCOPE_LEAF } from '../core/scope.ts';
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
import * as swigluOps from '../ops/swiglu.ts';
import * as attentionOps from '../ops/attention.ts';
import * as sortOps from '../ops/sort.ts';
import * as scanOps from '../ops/scan.ts';
import * as creation from '../ops/creation.ts';
import * as random from '../ops/random.ts';
import { toHostArray, hostToNumbers } from '../ops/readback.ts';
import { sumTo } from '../ops/grads.ts';
// every op family and gradient rule (autograd may run any of them)
import '../ops/all.ts';
import { batchNormTrain } from '../ops/batchnorm-train.ts';
import * as autograd from './autograd.ts';
import { describeValue, expectDType, expectOptions, expectShape, expectTensor } from '../ops/args.ts';

export type { DType } from '../core/dtype.ts';
export type { NestedArray } from '../core/dtype.ts';
import type { NestedArray } from '../core/dtype.ts';
export type DeviceLike = Device | string;
export interface CreateOptions {
  dtype?: DType;
  device?: DeviceLike;
  /** a leaf whose gradient backward() computes (float dtypes) */
  requiresGrad?: boolean;
}
export interface RandomOptions extends CreateOptions {
  seed?: number;
}
/** what toArray() gives back: f16/bf16 widen to Float32Array (exactly), i64 is BigInt64Array */
export type ReadArray = Float32Array | Float64Array | Uint8Array | Uint32Array | BigInt64Array;

export function toDevice(d: DeviceLike | undefined): Device {
  if (d === undefined) return Device.cpu();
  if (typeof d === 'string') return Device.parse(d);
  // a Device, or an object standing in for one (the storage-level tests' devices)
  if (!(d instanceof Device) && (typeof d !== 'object' || d === null || typeof (d as Device).kind !== 'string'))
    throw new TensorError(`device: expected a Device or a string such as 'cpu' or 'cuda:0', got ${describeValue(d)}`);
  return d;
}

const OPTS = "{ dtype: 'f32', device: 'cpu' }";
/** a tensor argument besides the receiver (the op's name and the argument's in the error) */
const arg: (op: string, name: string, v: unknown) => RawTensor = expectTensor;
/** a creation call's options: an object (a dtype string in its place is a common slip) */
function createOpts<T extends CreateOptions>(op: string, o: T | undefined): T {
  const opts = expectOptions(op, o, OPTS);
  if (opts.dtype !== undefined) expectDType(op, 'dtype', opts.dtype);
  return opts;
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
    // the result's place in autograd moves to the tensor (no reference taken or dropped)
    t.gradState = r.gradState;
    r.gradState = null;
    r.dispose();
    return t;
  }

  // ---- autograd (tensor/autograd.ts) ---------------------------------------------------------
  /** the gradient backward() accumulated into this leaf; null before the first backward() */
  grad: Tensor | null = null;
  /** whether backward() computes a gradient for this tensor (settable on leaves, float dtypes) */
  get requiresGrad(): boolean {
    return this.gradState !== null;
  }
  set requiresGrad(on: boolean) {
    if (typeof on !== 'boolean') throw new TypeError(`requiresGrad: expected a boolean, got ${describeValue(on)}`);
    if (on === this.requiresGrad) return;
    if (!this.isLeaf) {
      throw new TensorError(`requiresGrad: ${this.describe()} is the result of an op; detach() it to make a new leaf`);
    }
    if (on && !isFloatDType(this.dtype)) {
      throw new DTypeError(`requiresGrad: ${this.describe()} has an integer dtype; only float tensors take gradients`);
    }
    this.check('requiresGrad');
    this.gradState = on ? { node: null } : null;
    autograd.leafCount(on ? 1 : -1);
  }
  /** a tensor no op made, or one that takes no part in autograd */
  get isLeaf(): boolean {
    return this.gradState === null || this.gradState.node === null;
  }
  /**
   * Computes the gradient of this tensor with respect to every leaf that requires one and adds
   * it to the leaves' .grad. grad: the gradient of this tensor (default 1 for one element).
   * The graph is freed afterwards unless retainGraph; a second backward() through it is refused.
   */
  backward(grad?: Tensor, opts: { retainGraph?: boolean } = {}): void {
    this.check('backward');
    if (!this.requiresGrad) throw new TensorError(`backward: ${this.describe()} does not require a gradient`);
    let g: RawTensor;
    if (grad === undefined) {
      if (this.numel !== 1) {
        throw new ShapeError(
          `backward: ${this.describe()} has ${this.numel} elements: pass its gradient (a tensor of its shape)`,
        );
      }
      g = creation.full(this.layout.shape, 1, this.dtype, this.device);
    } else {
      const given = arg('backward', 'grad', grad);
      if (
        !sameShape(given.layout.shape, this.layout.shape) ||
        given.dtype !== this.dtype ||
        given.device !== this.device
      ) {
        throw new ShapeError(`backward: grad ${given.describe()} must match ${this.describe()}`);
      }
      g = given.view(given.layout);
    }
    autograd.backward(this, g, opts.retainGraph ?? false, (r) => {
      const t = Tensor.wrap(r);
      keep(t);
      return t;
    });
  }
  /** a view of the same data that takes no part in autograd */
  detach(): Tensor {
    this.check('detach');
    return new Tensor(this.storage, this.layout, this.dtype);
  }
  override dispose(): void {
    if (this.isDisposed) return;
    const state = this.gradState as autograd.GradState | null;
    if (state !== null) {
      if (state.node === null) autograd.leafCount(-1);
      else autograd.dropNode(state.node);
    }
    this.gradState = null;
    super.dispose();
  }

  // views carry gradients: each records how its gradient maps back to this tensor's shape
  override transpose(a: number, b: number): this {
    const out = super.transpose(a, b);
    if (this.gradState !== null) autograd.recordView(this, out, 'transpose', (g) => g.transpose(a, b));
    return out;
  }
  override permute(dims: readonly number[]): this {
    const out = super.permute(dims);
    if (this.gradState !== null) {
      const inv = new Array<number>(dims.length);
      dims.forEach((d, i) => {
        inv[normDim('permute', d, this.rank)] = i;
      });
      autograd.recordView(this, out, 'permute', (g) => g.permute(inv));
    }
    return out;
  }
  override narrow(dim: number, start: number, len: number): this {
    const out = super.narrow(dim, start, len);
    if (this.gradState !== null) {
      const d = normDim('narrow', dim, this.rank);
      autograd.recordView(
        this,
        out,
        'narrow',
        (g) => new autograd.RegionGrad(this.layout.shape, d, start, g.view(g.layout)),
      );
    }
    return out;
  }
  override slice(dim: number, start = 0, end?: number, step = 1): this {
    const out = super.slice(dim, start, end, step);
    if (this.gradState !== null) {
      autograd.recordView(this, out, 'slice', (g) =>
        padInto(this.layout.shape, g, (z) => z.slice(dim, start, end, step)),
      );
    }
    return out;
  }
  override broadcastAs(shape: Shape): this {
    const out = super.broadcastAs(shape);
    if (this.gradState !== null) autograd.recordView(this, out, 'broadcastAs', (g) => sumTo(g, this.layout.shape));
    return out;
  }
  override squeeze(dim?: number): this {
    const out = super.squeeze(dim);
    if (this.gradState !== null) {
      // the gradient gets the removed size-1 dims back as views: never a copy, whatever its strides
      const shape = this.layout.shape;
      const removed =
        dim === undefined
          ? shape.flatMap((n, i) => (n === 1 ? [i] : []))
          : [normDim('squeeze', dim, this.rank)].filter((i) => shape[i] === 1);
      autograd.recordView(this, out, 'squeeze', (g) => {
        let r = g.view(g.layout);
        for (const i of removed) {
          const u = r.unsqueeze(i);
          r.dispose();
          r = u;
        }
        return r;
      });
    }
    return out;
  }
  override unsqueeze(dim: number): this {
    const out = super.unsqueeze(dim);
    if (this.gradState !== null) {
      const d = normDim('unsqueeze', dim, this.rank + 1);
      autograd.recordView(this, out, 'unsqueeze', (g) => g.squeeze(d));
    }
    return out;
  }

  // ---- creation ------------------------------------------------------------------------------
  /** an uninitialized contiguous tensor (internal building block of ops); the CPU by default */
  static override empty(shape: Shape, dtype: DType = 'f32', device: DeviceLike = Device.cpu()): Tensor {
    expectShape('empty', 'shape', shape);
    expectDType('empty', 'dtype', dtype);
    const dev = toDevice(device);
    return new Tensor(Storage.alloc(dev, dtype, numel(shape)), Layout.contiguous(shape), dtype);
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
    const o = createOpts('from', opts);
    return withGrad(o, Tensor.wrap(creation.fromData(data, o.shape, o.dtype, toDevice(o.device))));
  }
  static zeros(shape: Shape, opts: CreateOptions = {}): Tensor {
    const o = createOpts('zeros', opts);
    return withGrad(
      o,
      Tensor.wrap(creation.full(expectShape('zeros', 'shape', shape), 0, o.dtype ?? 'f32', toDevice(o.device))),
    );
  }
  static ones(shape: Shape, opts: CreateOptions = {}): Tensor {
    const o = createOpts('ones', opts);
    return withGrad(
      o,
      Tensor.wrap(creation.full(expectShape('ones', 'shape', shape), 1, o.dtype ?? 'f32', toDevice(o.device))),
    );
  }
  static full(shape: Shape, value: number, opts: CreateOptions = {}): Tensor {
    const o = createOpts('full', opts);
    return withGrad(o, Tensor.wrap(creation.full(shape, value, o.dtype ?? 'f32', toDevice(o.device))));
  }
  /** [start, end) by step; arange(n) is [0, n) */
  static arange(start: number, end?: number, step = 1, opts: CreateOptions = {}): Tensor {
    const o = createOpts('arange', opts);
    const dev = toDevice(o.device),
      dtype = o.dtype ?? 'f32';
    return withGrad(
      o,
      Tensor.wrap(
        end === undefined ? creation.arange(0, start, step, dtype, dev) : creation.arange(start, end, step, dtype, dev),
      ),
    );
  }
  static eye(n: number, opts: CreateOptions = {}): Tensor {
    const o = createOpts('eye', opts);
    return withGrad(o, Tensor.wrap(creation.eye(n, o.dtype ?? 'f32', toDevice(o.device))));
  }
  /** uniform [0, 1); the same numbers on every device for a given seed */
  static rand(shape: Shape, opts: RandomOptions = {}): Tensor {
    const o = createOpts('rand', opts);
    return withGrad(
      o,
      Tensor.wrap(random.rand(expectShape('rand', 'shape', shape), o.seed, o.dtype ?? 'f32', toDevice(o.device))),
    );
  }
  /** standard normal; the same numbers on every device for a given seed */
  static randn(shape: Shape, opts: RandomOptions = {}): Tensor {
    const o = createOpts('randn', opts);
    return withGrad(
      o,
      Tensor.wrap(random.randn(expectShape('randn', 'shape', shape), o.seed, o.dtype ?? 'f32', toDevice(o.device))),
    );
  }
  /** integers uniform in [low, high) (high - low <= 2^32); i64 unless told; seeded like rand */
  static randint(low: number, high: number, shape: Shape, opts: RandomOptions = {}): Tensor {
    const o = createOpts('randint', opts);
    return Tensor.wrap(
      random.randint(low, high, expectShape('randint', 'shape', shape), o.seed, o.dtype ?? 'i64', toDevice(o.device)),
    );
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
    // the reshape op: a view where the layout allows, else a copy; recorded (and its gradient
    // taken) like every op
    return Tensor.wrap(copyOps.reshape(this, inferShape('reshape', shape, this.numel, this.layout.shape)));
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
    return Tensor.wrap(ew.where(arg('where', 'cond', cond), a, b));
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
    return Tensor.wrap(matmulOps.matmul(this.check('matmul'), arg('matmul', 'other', other)));
  }
  /**
   * x W^T with W [out, in] as nn.Linear keeps it, and optionally a bias, an RMSNorm of x before
   * and a SwiGLU or residual after: one kernel for a single row on a GPU (ops/linear.ts)
   */
  linear(w: Tensor, opts: LinearOptions = {}): Tensor {
    return Tensor.wrap(linearOps.linear(this.check('linear'), arg('linear', 'w', w), opts));
  }
  /** x [n, cIn, l], w [cOut, cIn/groups, k] */
  conv1d(w: Tensor, opts: ConvOptions = {}): Tensor {
    return Tensor.wrap(convOps.conv1d(this.check('conv1d'), arg('conv1d', 'w', w), opts));
  }
  /** x [n, cIn, h, w], w [cOut, cIn/groups, kh, kw] */
  conv2d(w: Tensor, opts: ConvOptions = {}): Tensor {
    return Tensor.wrap(convOps.conv2d(this.check('conv2d'), arg('conv2d', 'w', w), opts));
  }
  /** x [n, cIn, l], w [cIn, cOut/groups, k] */
  convTranspose1d(w: Tensor, opts: ConvTransposeOptions = {}): Tensor {
    return Tensor.wrap(convOps.convTranspose1d(this.check('convTranspose1d'), arg('convTranspose1d', 'w', w), opts));
  }
  /** x [n, cIn, h, w], w [cIn, cOut/groups, kh, kw] */
  convTranspose2d(w: Tensor, opts: ConvTransposeOptions = {}): Tensor {
    return Tensor.wrap(convOps.convTranspose2d(this.check('convTranspose2d'), arg('convTranspose2d', 'w', w), opts));
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
    return Tensor.wrap(idx.indexSelect(this.check('indexSelect'), ids, dim));
  }
  /** out[i][j] = x[ids[i][j]][j] (dim 0), ids the same rank as x */
  gather(ids: Tensor, dim: number): Tensor {
    return Tensor.wrap(idx.gather(this.check('gather'), ids, dim));
  }
  /** a copy of x with x[ids[i][j]][j] = src[i][j] (dim 0) */
  scatter(ids: Tensor, src: Tensor, dim: number): Tensor {
    return Tensor.wrap(idx.scatter(this.check('scatter'), ids, src, dim, false));
  }
  /** like scatter, adding src into x */
  scatterAdd(ids: Tensor, src: Tensor, dim: number): Tensor {
    return Tensor.wrap(idx.scatter(this.check('scatterAdd'), ids, src, dim, true));
  }
  /** a copy of x with src's slices added at positions ids along dim */
  indexAdd(ids: Tensor, src: Tensor, dim: number): Tensor {
    return Tensor.wrap(idx.indexAdd(this.check('indexAdd'), ids, src, dim));
  }
  /** rows of `table` [vocab, hidden] picked by ids of any shape -> [...ids.shape, hidden] */
  static embedding(ids: Tensor, table: Tensor): Tensor {
    return Tensor.wrap(idx.embedding(ids, table));
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
    copyOps.sliceSet(this.check('sliceSet'), arg('sliceSet', 'src', src), dim, start);
    return this;
  }
  /** writes src's slices (in place) at positions ids (on the device) along dim: a KV-cache write
   *  whose position lives in device memory, so one captured graph serves every step */
  indexSet(ids: Tensor, src: Tensor, dim: number): this {
    idx.indexSet(this.check('indexSet'), ids, src, dim);
    return this;
  }
  /** indexSet for ids that do not repeat (a repeated id gets one of its slices, unspecified
   *  which): on the GPU one launch with no buffer ordering duplicates */
  indexSetDistinct(ids: Tensor, src: Tensor, dim: number): this {
    idx.indexSetDistinct(this.check('indexSetDistinct'), ids, src, dim);
    return this;
  }
  /** copies `rows` rows of `cols` elements between flat contiguous tensors (in place on dst) */
  static copy2d(src: Tensor, dst: Tensor, p: copyOps.Copy2dParams): void {
    copyOps.copy2d(arg('copy2d', 'src', src), arg('copy2d', 'dst', dst), p);
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
    return Tensor.wrap(
      nn.layerNorm(this.check('layerNorm'), arg('layerNorm', 'w', w), b == null ? null : arg('layerNorm', 'b', b), eps),
    );
  }
  rmsNorm(w: Tensor, eps = 1e-6): Tensor {
    return Tensor.wrap(nn.rmsNorm(this.check('rmsNorm'), arg('rmsNorm', 'w', w), eps));
  }
  /** silu(gate) * up for this = [gate; up] along the last dim (a fused gate-and-up projection's
   *  output): [..., 2n] -> [..., n] */
  swiglu(): Tensor {
    return Tensor.wrap(swigluOps.swiglu(this.check('swiglu')));
  }
  /** rotary embedding on [b, h, t, d] with cos/sin [t, d/2]: halves layout */
  rope(cos: Tensor, sin: Tensor): Tensor {
    return Tensor.wrap(nn.rope(this.check('rope'), arg('rope', 'cos', cos), arg('rope', 'sin', sin), 'halves'));
  }
  /** interleaved pairs (x[2i], x[2i+1]) */
  ropeI(cos: Tensor, sin: Tensor): Tensor {
    return Tensor.wrap(nn.rope(this.check('ropeI'), arg('ropeI', 'cos', cos), arg('ropeI', 'sin', sin), 'interleaved'));
  }
  /** halves layout on [b, t, h, d] */
  ropeThd(cos: Tensor, sin: Tensor): Tensor {
    return Tensor.wrap(nn.rope(this.check('ropeThd'), arg('ropeThd', 'cos', cos), arg('ropeThd', 'sin', sin), 'thd'));
  }
  /** batch norm over dim 1: with the running statistics (inference), or with the batch's and
   *  the running ones moved towards them (training: true) */
  batchNorm(opts: BatchNormOptions): Tensor {
    expectOptions('batchNorm', opts, '{ mean, variance, weight, bias, training }');
    if (opts.training === true) {
      return Tensor.wrap(
        batchNormTrain(this.check('batchNorm'), {
          weight: opts.weight,
          bias: opts.bias,
          runningMean: opts.mean,
          runningVariance: opts.variance,
          momentum: opts.momentum,
          eps: opts.eps,
        }),
      );
    }
    return Tensor.wrap(nn.batchNorm(this.check('batchNorm'), opts));
  }
  /** q [b, hq, tq, d], k/v [b, hkv, tk, d] with hq a multiple of hkv */
  static scaledDotProductAttention(q: Tensor, k: Tensor, v: Tensor, opts: AttentionOptions = {}): Tensor {
    return Tensor.wrap(
      attentionOps.attention(
        arg('scaledDotProductAttention', 'q', q),
        arg('scaledDotProductAttention', 'k', k),
        arg('scaledDotProductAttention', 'v', v),
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

/** t made a leaf that requires a gradient when the creation options say so */
function withGrad(o: CreateOptions, t: Tensor): Tensor {
  if (o.requiresGrad !== undefined && o.requiresGrad !== false) {
    try {
      t.requiresGrad = o.requiresGrad;
    } catch (e) {
      t.dispose();
      throw e;
    }
  }
  return t;
}

/** zeros of `shape` with g written into the view region() makes of them: a view's gradient */
function padInto(shape: readonly number[], g: RawTensor, region: (z: RawTensor) => RawTensor): RawTensor {
  const z = creation.full(shape, 0, g.dtype, g.device);
  const r = region(z);
  try {
    copyOps.copyInto(r, g);
  } finally {
    r.dispose();
  }
  return z;
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
