// The DNN interface on cuDNN (ffi/cudnn.ts), the twin of rocm/miopen.ts. Convolutions run from
// execution plans of cuDNN's graph API made once a shape (cudnn-graph.ts), or with
// cudnnTuning.convApi = 'legacy' through the legacy entry points with descriptors and algorithm
// kept per shape; pooling and softmax descriptors are created per call and destroyed in
// `finally`; one workspace per device grows as needed.
import { DTypeError, GpuError, GraphCaptureError, NotOnDeviceError, fmtShape } from '../../core/errors.ts';
import { fmtArgs } from '../../ffi/native.ts';
import { CUDNN_CONST, CUDNN_PERF, loadCudnn, type Cudnn } from '../../ffi/cudnn.ts';
import type {
  BatchNormBackwardParams,
  BatchNormTrainParams,
  ConvParams,
  DevicePtr,
  DnnApi,
  DnnDType,
  GpuStream,
  LrnBackwardParams,
  LrnParams,
  PoolBackwardParams,
  PoolParams,
  SoftmaxParams,
} from '../gpu.ts';
import type { RnnBackwardParams, RnnForwardParams, RnnShape, RnnSizes, RnnWeightOffsets } from '../gpu.ts';
import { CudnnRnn } from './cudnn-rnn.ts';
import { CudnnGraphConvs, convFilterDims, type ConvKind, type GraphConvPlan } from './cudnn-graph.ts';

/**
 * convApi: 'graph' runs convolutions through execution plans of cuDNN's graph API, made once a
 * shape (cudnn-graph.ts); 'legacy' through cudnnConvolutionForward and its backward twins, with
 * descriptors and an algorithm kept per shape (for comparisons and measurements).
 */
export const cudnnTuning: { convApi: 'graph' | 'legacy' } = { convApi: 'graph' };

/** 91400 -> '9.14.0' (cuDNN 9 encodes major*10000 + minor*100 + patch) */
function fmtCudnnVersion(v: number): string {
  return v >= 10000 ? `${Math.floor(v / 10000)}.${Math.floor((v % 10000) / 100)}.${v % 100}` : String(v);
}

const DATA_TYPE: Record<DnnDType, number> = {
  f32: CUDNN_CONST.CUDNN_DATA_FLOAT,
  f64: CUDNN_CONST.CUDNN_DATA_DOUBLE,
  f16: CUDNN_CONST.CUDNN_DATA_HALF,
  bf16: CUDNN_CONST.CUDNN_DATA_BFLOAT16,
};
const isHalf = (d: DnnDType): boolean => d === 'f16' || d === 'bf16';

/** what cuDNN needs from the device runtime */
export interface CudnnHost {
  readonly label: string;
  enter(): void;
  streamPtr(s: GpuStream): bigint | null;
  malloc(bytes: number): DevicePtr;
  free(p: DevicePtr): void;
  streamSynchronize(s: GpuStream): void;
  /** whether a graph is being recorded on any of the device's streams */
  capturing(): boolean;
}

interface AlgoChoice {
  readonly algo: number;
  readonly mathType: number;
  readonly workspace: number;
}
/** a convolution's descriptors: input side a, filter w, output side b, convolution c */
interface ConvPlan {
  readonly a: bigint;
  readonly w: bigint;
  readonly b: bigint;
  readonly c: bigint;
  readonly choice: AlgoChoice;
}
/** convolution shapes whose descriptors a handle keeps */
const CONV_PLANS = 64;

const MAX_ALGOS = 16;

export class CudnnApi implements DnnApi {
  readonly name = 'cuDNN';
  readonly version: string;
  private readonly lib: Cudnn;
  private readonly handle: bigint;
  private lastStream: bigint | null | undefined = undefined;
  private workspace: DevicePtr | null = null;
  private workspaceBytes = 0;
  /** whether a graph capture recorded calls with the current workspace */
  private workspaceCaptured = false;
  /** workspaces outgrown after a capture used them: graphs may still replay with them */
  private readonly retired: DevicePtr[] = [];
  private readonly convPlans = new Map<string, ConvPlan>();
  private graphConvs: CudnnGraphConvs | null = null;
  /** convolution shapes the graph API offered no engine for (they take the legacy calls) */
  private readonly legacyShapes = new Set<string>();
  private readonly one32 = new Float32Array([1]);
  private readonly zero32 = new Float32Array([0]);
  private readonly one64 = new Float64Array([1]);
  private readonly zero64 = new Float64Array([0]);
  private readonly out64 = new BigUint64Array(1);
  private readonly outInt = new Int32Array(1);
  private readonly perf = new Uint8Array(CUDNN_PERF.size * MAX_ALGOS);

  constructor(private readonly host: CudnnHost) {
    this.lib = loadCudnn();
    this.version = fmtCudnnVersion(this.lib.fn.cudnnGetVersion());
    host.enter();
    this.handle = this.create('cudnnCreate', (o) => this.lib.fn.cudnnCreate(o));
  }

  // ---- plumbing -------------------------------------------------------------------------------
  private fail(status: number, what: string, call: string): never {
    const msg = `${what} on ${this.host.label} failed: ${this.lib.statusText(status)}`;
    if (status === CUDNN_CONST.CUDNN_STATUS_NOT_SUPPORTED || (status >= 3000 && status < 4000)) {
      throw new NotOnDeviceError(`${msg} (cuDNN ${this.version} does not support this configuration)`);
    }
    throw new GpuError(msg, status, call);
  }
  private ok(status: number, call: string, args: readonly unknown[]): void {
    if (status !== CUDNN_CONST.CUDNN_STATUS_SUCCESS) this.fail(status, `${call}(${fmtArgs(args)})`, call);
  }
  private create(call: string, f: (out: BigUint64Array) => number): bigint {
    this.out64[0] = 0n;
    this.ok(f(this.out64), call, []);
    return this.out64[0]!;
  }
  private begin(stream: GpuStream): void {
    this.host.enter();
    const s = this.host.streamPtr(stream);
    if (s !== this.lastStream) {
      this.ok(this.lib.fn.cudnnSetStream(this.handle, s), 'cudnnSetStream', [this.handle, s]);
      this.lastStream = s;
    }
  }
  private scalars(d: DnnDType): [ArrayBufferView, ArrayBufferView] {
    return d === 'f64' ? [this.one64, this.zero64] : [this.one32, this.zero32];
  }
  private dataType(d: DnnDType, op: string): number {
    const t = DATA_TYPE[d];
    if (t === undefined) throw new DTypeError(`${op}: cuDNN has no path for dtype ${String(d)}`);
    return t;
  }

  private tensor(dtype: number, n: number, c: number, h: number, w: number): bigint {
    const d = this.create('cudnnCreateTensorDescriptor', (o) => this.lib.fn.cudnnCreateTensorDescriptor(o));
    try {
      this.ok(
        this.lib.fn.cudnnSetTensor4dDescriptor(d, CUDNN_CONST.CUDNN_TENSOR_NCHW, dtype, n, c, h, w),
        'cudnnSetTensor4dDescriptor',
        [`NCHW ${fmtShape([n, c, h, w])}`, `dtype ${dtype}`],
      );
    } catch (e) {
      this.lib.fn.cudnnDestroyTensorDescriptor(d);
      throw e;
    }
    return d;
  }
  private filter(dtype: number, k: number, c: number, h: number, w: number): bigint {
    const d = this.create('cudnnCreateFilterDescriptor', (o) => this.lib.fn.cudnnCreateFilterDescriptor(o));
    try {
      this.ok(
        this.lib.fn.cudnnSetFilterNdDescriptor(
          d,
          dtype,
          CUDNN_CONST.CUDNN_TENSOR_NCHW,
          4,
          new Int32Array([k, c, h, w]),
        ),
        'cudnnSetFilterNdDescriptor',
        [`KCRS ${fmtShape([k, c, h, w])}`, `dtype ${dtype}`],
      );
    } catch (e) {
      this.lib.fn.cudnnDestroyFilterDescriptor(d);
      throw e;
    }
    return d;
  }
  private convolution(p: ConvParams): bigint {
    const d = this.create('cudnnCreateConvolutionDescriptor', (o) => this.lib.fn.cudnnCreateConvolutionDescriptor(o));
    try {
      // accumulate in f32 for half types (f64 for f64), as PyTorch does
      const compute = p.dtype === 'f64' ? CUDNN_CONST.CUDNN_DATA_DOUBLE : CUDNN_CONST.CUDNN_DATA_FLOAT;
      this.ok(
        this.lib.fn.cudnnSetConvolution2dDescriptor(
          d,
          p.padH,
          p.padW,
          p.strideH,
          p.strideW,
          p.dilationH,
          p.dilationW,
          CUDNN_CONST.CUDNN_CROSS_CORRELATION,
          compute,
        ),
        'cudnnSetConvolution2dDescriptor',
        [`pad ${p.padH},${p.padW}`, `stride ${p.strideH},${p.strideW}`, `dilation ${p.dilationH},${p.dilationW}`],
      );
      this.ok(this.lib.fn.cudnnSetConvolutionGroupCount(d, p.groups), 'cudnnSetConvolutionGroupCount', [p.groups]);
      this.ok(this.lib.fn.cudnnSetConvolutionMathType(d, baseMath(p.dtype)), 'cudnnSetConvolutionMathType', [
        baseMath(p.dtype),
      ]);
    } catch (e) {
      this.lib.fn.cudnnDestroyConvolutionDescriptor(d);
      throw e;
    }
    return d;
  }

  /** a workspace of at least `bytes`; growing waits for `stream` so the old one is idle */
  private ensureWorkspace(bytes: number, stream: GpuStream): DevicePtr | null {
    if (bytes === 0) return null;
    const capturing = this.host.capturing();
    if (this.workspace !== null && this.workspaceBytes >= bytes) {
      if (capturing) this.workspaceCaptured = true;
      return this.workspace;
    }
    if (capturing)
      throw new GraphCaptureError(
        `cuDNN on ${this.host.label} needs a workspace of ${bytes} bytes (it has ${this.workspaceBytes}) during a graph capture, ` +
          'where it cannot wait and reallocate: run the work once before capturing it',
      );
    if (this.workspace !== null) {
      this.host.streamSynchronize(stream);
      // a graph recorded with this workspace may replay later: it stays allocated until destroy()
      if (this.workspaceCaptured) this.retired.push(this.workspace);
      else this.host.free(this.workspace);
      this.workspaceCaptured = false;
      this.workspace = null;
      this.workspaceBytes = 0;
    }
    this.workspace = this.host.malloc(bytes);
    this.workspaceBytes = bytes;
    return this.workspace;
  }

  /** picks the first algorithm cuDNN's heuristics rank as working in our math mode (once a
   *  shape: convPlan keeps the choice with the shape's descriptors) */
  private chooseAlgo(
    kind: ConvKind,
    p: ConvParams,
    find: (requested: number, returned: Int32Array, perf: Uint8Array) => number,
    wsSize: (algo: number, out: BigUint64Array) => number,
    conv: bigint,
    what: string,
  ): AlgoChoice {
    const call = ALGO_CALL[kind];
    this.outInt[0] = 0;
    this.ok(find(MAX_ALGOS, this.outInt, this.perf), call, [what]);
    const count = Math.min(this.outInt[0]!, MAX_ALGOS);
    const dv = new DataView(this.perf.buffer, this.perf.byteOffset, this.perf.byteLength);
    const f = CUDNN_PERF.fields;
    const tried: string[] = [];
    // second pass (f32/f64 only): an algorithm ranked with tensor-op math still runs, on FMA
    // kernels, when the descriptor keeps FMA math
    for (let i = 0; i < 2 * count; i++) {
      const strict = i < count;
      const at = (i % count) * CUDNN_PERF.size;
      const algo = dv.getInt32(at + f.algo, true);
      const status = dv.getInt32(at + f.status, true);
      const mathType = dv.getInt32(at + f.mathType, true);
      if (strict) tried.push(`algo ${algo} status ${status} math ${mathType}`);
      if (status !== CUDNN_CONST.CUDNN_STATUS_SUCCESS || (strict && !mathAllowed(p.dtype, mathType))) continue;
      const math = isHalf(p.dtype) ? mathType : baseMath(p.dtype);
      this.ok(this.lib.fn.cudnnSetConvolutionMathType(conv, math), 'cudnnSetConvolutionMathType', [math]);
      this.out64[0] = 0n;
      const st = wsSize(algo, this.out64);
      if (st !== CUDNN_CONST.CUDNN_STATUS_SUCCESS) {
        tried.push(`(workspace query: ${st})`);
        continue;
      }
      return { algo, mathType: math, workspace: Number(this.out64[0]!) };
    }
    throw new NotOnDeviceError(
      `${what}: cuDNN ${this.version} on ${this.host.label} offers no usable algorithm ` +
        `(${tried.join('; ') || 'none returned'})`,
    );
  }

  /**
   * A convolution's descriptors and algorithm for one shape, made on its first call and kept
   * (CONV_PLANS of them, the oldest made destroyed first): a later call builds only the shape's
   * key and makes the library call; error text is formatted on failure alone.
   */
  private convPlan(kind: ConvKind, p: ConvParams, key: string): ConvPlan {
    const hit = this.convPlans.get(key);
    if (hit) return hit;
    const op = CONV_OP[kind];
    const what = convWhat(op, p);
    const t = this.dataType(p.dtype, op);
    // bwdData (transposed): dy = x, dx = y
    const [fk, fc] = convFilterDims(kind, p);
    const f = this.lib.fn;
    const a = this.tensor(t, p.n, p.cIn, p.inH, p.inW);
    let w = 0n;
    let b = 0n;
    let c = 0n;
    try {
      w = this.filter(t, fk, fc, p.kH, p.kW);
      b = this.tensor(t, p.n, p.cOut, p.outH, p.outW);
      c = this.convolution(p);
      const choice =
        kind === 'fwd'
          ? this.chooseAlgo(
              'fwd',
              p,
              (req, ret, perf) => f.cudnnGetConvolutionForwardAlgorithm_v7(this.handle, a, w, c, b, req, ret, perf),
              (algo, out) => f.cudnnGetConvolutionForwardWorkspaceSize(this.handle, a, w, c, b, algo, out),
              c,
              what,
            )
          : kind === 'bwdData'
            ? this.chooseAlgo(
                'bwdData',
                p,
                (req, ret, perf) =>
                  f.cudnnGetConvolutionBackwardDataAlgorithm_v7(this.handle, w, a, c, b, req, ret, perf),
                (algo, out) => f.cudnnGetConvolutionBackwardDataWorkspaceSize(this.handle, w, a, c, b, algo, out),
                c,
                what,
              )
            : this.chooseAlgo(
                'bwdFilter',
                p,
                (req, ret, perf) =>
                  f.cudnnGetConvolutionBackwardFilterAlgorithm_v7(this.handle, a, b, c, w, req, ret, perf),
                (algo, out) => f.cudnnGetConvolutionBackwardFilterWorkspaceSize(this.handle, a, b, c, w, algo, out),
                c,
                what,
              );
      // the descriptor keeps the math type the algorithm was picked for
      this.ok(f.cudnnSetConvolutionMathType(c, choice.mathType), 'cudnnSetConvolutionMathType', [choice.mathType]);
      const plan: ConvPlan = { a, w, b, c, choice };
      if (this.convPlans.size >= CONV_PLANS) {
        const [oldKey, old] = this.convPlans.entries().next().value!;
        this.convPlans.delete(oldKey);
        this.destroyPlan(old);
      }
      this.convPlans.set(key, plan);
      return plan;
    } catch (e) {
      this.destroyPlan({ a, w, b, c });
      throw e;
    }
  }
  private destroyPlan(pl: Omit<ConvPlan, 'choice'>): void {
    const f = this.lib.fn;
    if (pl.c) f0(f.cudnnDestroyConvolutionDescriptor(pl.c));
    if (pl.b) f0(f.cudnnDestroyTensorDescriptor(pl.b));
    if (pl.w) f0(f.cudnnDestroyFilterDescriptor(pl.w));
    if (pl.a) f0(f.cudnnDestroyTensorDescriptor(pl.a));
  }

  /** the graph API's plans, made on the first convolution that uses them */
  private get graphs(): CudnnGraphConvs {
    this.graphConvs ??= new CudnnGraphConvs(this.lib, this.handle, this.host.label, this.version, CONV_PLANS);
    return this.graphConvs;
  }
  /** the graph API's plan for a shape, or null where it offers no engine (the shape is then
   *  remembered and takes the legacy entry point from now on) */
  private graphPlan(kind: ConvKind, p: ConvParams, shape: string, what: () => string): GraphConvPlan | null {
    try {
      return this.graphs.plan(kind, p, shape, what);
    } catch (e) {
      if (!(e instanceof NotOnDeviceError)) throw e;
      this.legacyShapes.add(shape);
      return null;
    }
  }

  // ---- ops ------------------------------------------------------------------------------------
  /** one convolution call on its kind's plan and workspace; `call` makes the library call */
  private runConv(
    kind: ConvKind,
    p: ConvParams,
    stream: GpuStream,
    fnName: string,
    call: (pl: ConvPlan, ws: DevicePtr | null, one: ArrayBufferView, zero: ArrayBufferView) => number,
  ): void {
    this.begin(stream);
    const shape = `${kind} ${convKey(p)}`;
    if (cudnnTuning.convApi === 'graph' && !this.legacyShapes.has(shape)) {
      const what = (): string => convWhat(CONV_OP[kind], p);
      const gp = this.graphPlan(kind, p, shape, what);
      if (gp) {
        this.graphs.execute(gp, p, this.ensureWorkspace(gp.workspace, stream), what);
        return;
      }
    }
    const pl = this.convPlan(kind, p, shape);
    const ws = this.ensureWorkspace(pl.choice.workspace, stream);
    const [one, zero] = this.scalars(p.dtype);
    const st = call(pl, ws, one, zero);
    if (st !== CUDNN_CONST.CUDNN_STATUS_SUCCESS)
      this.fail(st, `${fnName}: ${convWhat(CONV_OP[kind], p)}, algo ${pl.choice.algo}`, fnName);
  }

  convForward(p: ConvParams, stream: GpuStream): void {
    const f = this.lib.fn;
    this.runConv('fwd', p, stream, 'cudnnConvolutionForward', (pl, ws, one, zero) =>
      f.cudnnConvolutionForward(
        this.handle,
        one,
        pl.a,
        p.x,
        pl.w,
        p.w,
        pl.c,
        pl.choice.algo,
        ws,
        pl.choice.workspace,
        zero,
        pl.b,
        p.y,
      ),
    );
  }

  /**
   * Transposed convolution as the data gradient of the forward convolution that maps y-shaped
   * tensors to x-shaped ones: filter [cIn, cOut/groups, kH, kW], dy = x, dx = y. Output padding
   * is implied by y's larger extent.
   */
  convTransposeForward(p: ConvParams, stream: GpuStream): void {
    const f = this.lib.fn;
    this.runConv('bwdData', p, stream, 'cudnnConvolutionBackwardData', (pl, ws, one, zero) =>
      f.cudnnConvolutionBackwardData(
        this.handle,
        one,
        pl.w,
        p.w,
        pl.a,
        p.x,
        pl.c,
        pl.choice.algo,
        ws,
        pl.choice.workspace,
        zero,
        pl.b,
        p.y,
      ),
    );
  }

  /** the weight gradient: x, dy = p.y, dw written into p.w */
  convBackwardWeights(p: ConvParams, stream: GpuStream): void {
    const f = this.lib.fn;
    this.runConv('bwdFilter', p, stream, 'cudnnConvolutionBackwardFilter', (pl, ws, one, zero) =>
      f.cudnnConvolutionBackwardFilter(
        this.handle,
        one,
        pl.a,
        p.x,
        pl.b,
        p.y,
        pl.c,
        pl.choice.algo,
        ws,
        pl.choice.workspace,
        zero,
        pl.w,
        p.w,
      ),
    );
  }

  poolForward(p: PoolParams, stream: GpuStream): void {
    this.pool(p, null, stream);
  }
  poolBackward(p: PoolBackwardParams, stream: GpuStream): void {
    this.pool(p, p, stream);
  }

  /** the forward, or with b the backward (dx from dy, x and y), on one pooling descriptor */
  private pool(p: PoolParams, b: PoolBackwardParams | null, stream: GpuStream): void {
    const op = b ? 'poolBackward' : 'poolForward';
    const what =
      `${op}(${p.mode}${p.mode === 'avg' ? (p.countIncludePad ? ' incl. pad' : ' excl. pad') : ''}, ` +
      `${p.dtype}, x ${fmtShape([p.n, p.c, p.inH, p.inW])}, y ${fmtShape([p.n, p.c, p.outH, p.outW])}, ` +
      `window ${p.kH}x${p.kW} pad ${p.padH},${p.padW} stride ${p.strideH},${p.strideW})`;
    const t = this.dataType(p.dtype, op);
    const mode =
      p.mode === 'max'
        ? CUDNN_CONST.CUDNN_POOLING_MAX
        : p.countIncludePad
          ? CUDNN_CONST.CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING
          : CUDNN_CONST.CUDNN_POOLING_AVERAGE_COUNT_EXCLUDE_PADDING;
    this.begin(stream);
    const f = this.lib.fn;
    const pd = this.create('cudnnCreatePoolingDescriptor', (o) => f.cudnnCreatePoolingDescriptor(o));
    let xd = 0n;
    let yd = 0n;
    try {
      // NaN propagates through max, as in PyTorch
      this.ok(
        f.cudnnSetPooling2dDescriptor(
          pd,
          mode,
          CUDNN_CONST.CUDNN_PROPAGATE_NAN,
          p.kH,
          p.kW,
          p.padH,
          p.padW,
          p.strideH,
          p.strideW,
        ),
        'cudnnSetPooling2dDescriptor',
        [what],
      );
      xd = this.tensor(t, p.n, p.c, p.inH, p.inW);
      yd = this.tensor(t, p.n, p.c, p.outH, p.outW);
      const [one, zero] = this.scalars(p.dtype);
      if (b) {
        // dy and dx share y's and x's shapes, so their descriptors too
        const st = f.cudnnPoolingBackward(this.handle, pd, one, yd, b.y, yd, b.dy, xd, b.x, zero, xd, b.dx);
        if (st !== CUDNN_CONST.CUDNN_STATUS_SUCCESS)
          this.fail(st, `cudnnPoolingBackward: ${what}`, 'cudnnPoolingBackward');
        return;
      }
      const st = f.cudnnPoolingForward(this.handle, pd, one, xd, p.x, zero, yd, p.y);
      if (st !== CUDNN_CONST.CUDNN_STATUS_SUCCESS) this.fail(st, `cudnnPoolingForward: ${what}`, 'cudnnPoolingForward');
    } finally {
      if (yd) f0(f.cudnnDestroyTensorDescriptor(yd));
      if (xd) f0(f.cudnnDestroyTensorDescriptor(xd));
      f0(f.cudnnDestroyPoolingDescriptor(pd));
    }
  }

  batchNormForwardTraining(p: BatchNormTrainParams, stream: GpuStream): void {
    this.batchNorm(p, null, stream);
  }
  batchNormBackward(p: BatchNormBackwardParams, stream: GpuStream): void {
    this.batchNorm(null, p, stream);
  }

  /** the forward (f) or the backward (b) of training-mode batch norm, spatial mode over NCHW */
  private batchNorm(f: BatchNormTrainParams | null, b: BatchNormBackwardParams | null, stream: GpuStream): void {
    const p = (f ?? b)!;
    const op = f ? 'batchNormForwardTraining' : 'batchNormBackward';
    const what = `${op}(${p.dtype}, x ${fmtShape([p.n, p.c, p.h, p.w])}, eps ${p.eps})`;
    // cuDNN refuses a smaller epsilon (CUDNN_BN_MIN_EPSILON)
    if (p.eps < 1e-5) throw new NotOnDeviceError(`${what}: cuDNN's batch norm needs eps >= 1e-5`);
    const t = this.dataType(p.dtype, op);
    this.begin(stream);
    const fn = this.lib.fn;
    const mode = CUDNN_CONST.CUDNN_BATCHNORM_SPATIAL;
    const xd = this.tensor(t, p.n, p.c, p.h, p.w);
    let bd = 0n;
    try {
      bd = this.create('cudnnCreateTensorDescriptor', (o) => fn.cudnnCreateTensorDescriptor(o));
      this.ok(fn.cudnnDeriveBNTensorDescriptor(bd, xd, mode), 'cudnnDeriveBNTensorDescriptor', [what]);
      const [one, zero] = this.scalars(p.dtype);
      const st = f
        ? fn.cudnnBatchNormalizationForwardTraining(
            this.handle,
            mode,
            one,
            zero,
            xd,
            f.x,
            xd,
            f.y,
            bd,
            f.scale,
            f.bias,
            f.momentum,
            f.runningMean,
            f.runningVar,
            f.eps,
            null,
            null,
          )
        : fn.cudnnBatchNormalizationBackward(
            this.handle,
            mode,
            one,
            zero,
            one,
            zero,
            xd,
            b!.x,
            xd,
            b!.dy,
            xd,
            b!.dx,
            bd,
            b!.scale,
            b!.dScale,
            b!.dBias,
            b!.eps,
            null,
            null,
          );
      const call = f ? 'cudnnBatchNormalizationForwardTraining' : 'cudnnBatchNormalizationBackward';
      if (st !== CUDNN_CONST.CUDNN_STATUS_SUCCESS) this.fail(st, `${call}: ${what}`, call);
    } finally {
      if (bd) f0(fn.cudnnDestroyTensorDescriptor(bd));
      f0(fn.cudnnDestroyTensorDescriptor(xd));
    }
  }

  softmaxForward(p: SoftmaxParams, stream: GpuStream): void {
    const what = `${p.log ? 'logSoftmax' : 'softmax'}Forward(${p.dtype}, ${fmtShape([p.rows, p.cols])})`;
    const t = this.dataType(p.dtype, 'softmaxForward');
    this.begin(stream);
    const f = this.lib.fn;
    // INSTANCE mode over [rows, cols, 1, 1]: one softmax per row across its cols
    const d = this.tensor(t, p.rows, p.cols, 1, 1);
    try {
      const [one, zero] = this.scalars(p.dtype);
      const algo = p.log ? CUDNN_CONST.CUDNN_SOFTMAX_LOG : CUDNN_CONST.CUDNN_SOFTMAX_ACCURATE;
      const st = f.cudnnSoftmaxForward(
        this.handle,
        algo,
        CUDNN_CONST.CUDNN_SOFTMAX_MODE_INSTANCE,
        one,
        d,
        p.x,
        zero,
        d,
        p.y,
      );
      if (st !== CUDNN_CONST.CUDNN_STATUS_SUCCESS) this.fail(st, `cudnnSoftmaxForward: ${what}`, 'cudnnSoftmaxForward');
    } finally {
      f0(f.cudnnDestroyTensorDescriptor(d));
    }
  }

  lrnForward(p: LrnParams, stream: GpuStream): void {
    this.lrn(p, null, stream);
  }
  lrnBackward(p: LrnBackwardParams, stream: GpuStream): void {
    this.lrn(p, p, stream);
  }

  /** LRN across channels (cuDNN divides alpha by lrnN, as PyTorch does); with b its backward */
  private lrn(p: LrnParams, b: LrnBackwardParams | null, stream: GpuStream): void {
    const op = b ? 'cudnnLRNCrossChannelBackward' : 'cudnnLRNCrossChannelForward';
    const what =
      `${b ? 'lrnBackward' : 'lrnForward'}(${p.dtype}, x ${fmtShape([p.n, p.c, p.h, p.w])}, ` +
      `size ${p.size}, alpha ${p.alpha}, beta ${p.beta}, k ${p.k})`;
    const t = this.dataType(p.dtype, b ? 'lrnBackward' : 'lrnForward');
    this.begin(stream);
    const f = this.lib.fn;
    const ld = this.create('cudnnCreateLRNDescriptor', (o) => f.cudnnCreateLRNDescriptor(o));
    let xd = 0n;
    try {
      this.ok(f.cudnnSetLRNDescriptor(ld, p.size, p.alpha, p.beta, p.k), 'cudnnSetLRNDescriptor', [what]);
      xd = this.tensor(t, p.n, p.c, p.h, p.w);
      const [one, zero] = this.scalars(p.dtype);
      const mode = CUDNN_CONST.CUDNN_LRN_CROSS_CHANNEL_DIM1;
      // x, y, dy and dx share one shape, so one descriptor
      const st = b
        ? f.cudnnLRNCrossChannelBackward(this.handle, ld, mode, one, xd, b.y, xd, b.dy, xd, b.x, zero, xd, b.dx)
        : f.cudnnLRNCrossChannelForward(this.handle, ld, mode, one, xd, p.x, zero, xd, p.y);
      if (st !== CUDNN_CONST.CUDNN_STATUS_SUCCESS) this.fail(st, `${op}: ${what}`, op);
    } finally {
      if (xd) f0(f.cudnnDestroyTensorDescriptor(xd));
      f0(f.cudnnDestroyLRNDescriptor(ld));
    }
  }

  // ---- recurrent layers (cudnn-rnn.ts) ------------------------------------------------------
  private rnnCalls: CudnnRnn | null = null;
  private get rnn(): CudnnRnn {
    this.rnnCalls ??= new CudnnRnn({
      lib: this.lib,
      handle: this.handle,
      enter: () => this.host.enter(),
      begin: (s) => this.begin(s),
      fail: (status, what, call) => this.fail(status, what, call),
    });
    return this.rnnCalls;
  }
  rnnSizes(p: RnnShape, training: boolean, _stream: GpuStream): RnnSizes {
    return this.rnn.sizes(p, training);
  }
  rnnWeightOffsets(p: RnnShape, weights: DevicePtr, weightBytes: number): RnnWeightOffsets {
    return this.rnn.weightOffsets(p, weights, weightBytes);
  }
  rnnForward(p: RnnForwardParams, stream: GpuStream): void {
    this.rnn.forward(p, stream);
  }
  rnnBackwardData(p: RnnBackwardParams, stream: GpuStream): void {
    this.rnn.backwardData(p, stream);
  }
  rnnBackwardWeights(p: RnnBackwardParams, stream: GpuStream): void {
    this.rnn.backwardWeights(p, stream);
  }

  destroy(): void {
    this.host.enter();
    for (const pl of this.convPlans.values()) this.destroyPlan(pl);
    this.convPlans.clear();
    this.graphConvs?.destroy();
    this.graphConvs = null;
    for (const w of this.retired.splice(0)) this.host.free(w);
    if (this.workspace !== null) {
      this.host.free(this.workspace);
      this.workspace = null;
      this.workspaceBytes = 0;
    }
    this.ok(this.lib.fn.cudnnDestroy(this.handle), 'cudnnDestroy', [this.handle]);
  }
}

/** destroy calls in `finally` must not mask the original error */
function f0(_status: number): void {
  /* status of a destroy: nothing useful to do with it */
}

/** f32/f64 stay on FMA kernels (no TF32, so results match the CPU reference); half types may use tensor cores */
function baseMath(d: DnnDType): number {
  return isHalf(d) ? CUDNN_CONST.CUDNN_TENSOR_OP_MATH : CUDNN_CONST.CUDNN_FMA_MATH;
}
function mathAllowed(d: DnnDType, math: number): boolean {
  if (isHalf(d)) return true;
  return math !== CUDNN_CONST.CUDNN_TENSOR_OP_MATH && math !== CUDNN_CONST.CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION;
}

const ALGO_CALL: Record<ConvKind, string> = {
  fwd: 'cudnnGetConvolutionForwardAlgorithm_v7',
  bwdData: 'cudnnGetConvolutionBackwardDataAlgorithm_v7',
  bwdFilter: 'cudnnGetConvolutionBackwardFilterAlgorithm_v7',
};
const CONV_OP: Record<ConvKind, string> = {
  fwd: 'convForward',
  bwdData: 'convTransposeForward',
  bwdFilter: 'convBackwardWeights',
};

function convWhat(op: string, p: ConvParams): string {
  const w =
    op !== 'convTransposeForward' ? [p.cOut, p.cIn / p.groups, p.kH, p.kW] : [p.cIn, p.cOut / p.groups, p.kH, p.kW];
  return (
    `${op}(${p.dtype}, x ${fmtShape([p.n, p.cIn, p.inH, p.inW])}, w ${fmtShape(w)}, ` +
    `y ${fmtShape([p.n, p.cOut, p.outH, p.outW])}, pad ${p.padH},${p.padW} stride ${p.strideH},${p.strideW} ` +
    `dilation ${p.dilationH},${p.dilationW} groups ${p.groups})`
  );
}

function convKey(p: ConvParams): string {
  return [
    p.dtype,
    p.n,
    p.cIn,
    p.inH,
    p.inW,
    p.cOut,
    p.kH,
    p.kW,
    p.outH,
    p.outW,
    p.padH,
    p.padW,
    p.strideH,
    p.strideW,
    p.dilationH,
    p.dilationW,
    p.groups,
  ].join(',');
}
