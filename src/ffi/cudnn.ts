// cuDNN 9 legacy API through koffi: prototypes, enum values and the algorithm-perf struct layout
// as data (checked by test/abi where cuDNN's headers exist), declared on first use. The twin of
// miopen.ts. Descriptors are created per call and destroyed in `finally`; the chosen algorithm
// and its workspace size are cached per shape; one workspace per device grows as needed.
import { DTypeError, GpuError, NotOnDeviceError, fmtShape } from '../core/errors.ts';
import type { ConvParams, DevicePtr, DnnApi, DnnDType, GpuStream, PoolParams, SoftmaxParams } from '../runtime/gpu.ts';
import { cudaDirs, openLibrary, type LibrarySpec, type LoadedLibrary } from './loader.ts';
import { declareTable, fmtArgs, registerAliases, type NativeAlias, type NativeTable } from './native.ts';

export const CUDNN_LIB: LibrarySpec = {
  id: 'cudnn',
  envVar: 'ROCM_TENSOR_CUDNN_LIB',
  sonames: ['libcudnn.so.9'],
  dirs: cudaDirs,
  install:
    "install cuDNN 9 (`apt install cudnn9-cuda-12` / `cudnn9-cuda-13` from NVIDIA's repository, or " +
    '`pip install nvidia-cudnn-cu12`); or set ROCM_TENSOR_CUDNN_LIB',
};

const ENUMS = [
  'cudnnStatus_t',
  'cudnnDataType_t',
  'cudnnTensorFormat_t',
  'cudnnConvolutionMode_t',
  'cudnnMathType_t',
  'cudnnConvolutionFwdAlgo_t',
  'cudnnConvolutionBwdDataAlgo_t',
  'cudnnPoolingMode_t',
  'cudnnNanPropagation_t',
  'cudnnSoftmaxAlgorithm_t',
  'cudnnSoftmaxMode_t',
] as const;
const HANDLES = [
  'cudnnHandle_t',
  'cudnnTensorDescriptor_t',
  'cudnnFilterDescriptor_t',
  'cudnnConvolutionDescriptor_t',
  'cudnnPoolingDescriptor_t',
] as const;

export const CUDNN_ALIASES: readonly NativeAlias[] = [
  ...ENUMS.map((n): NativeAlias => ({ name: n, c: n, cls: 'enum' })),
  ...HANDLES.map((n): NativeAlias => ({ name: n, c: n, cls: 'pointer', handle: true })),
  { name: 'cudnnStream_t', c: 'cudaStream_t', cls: 'pointer', handle: true },
  // perf results are read as raw bytes at the offsets in CUDNN_PERF, never marshalled by koffi
  { name: 'cudnnFwdPerf_p', c: 'cudnnConvolutionFwdAlgoPerf_t *', cls: 'pointer', koffi: 'void *' },
  { name: 'cudnnBwdDataPerf_p', c: 'cudnnConvolutionBwdDataAlgoPerf_t *', cls: 'pointer', koffi: 'void *' },
];

const T = 'cudnnTensorDescriptor_t';
const F = 'cudnnFilterDescriptor_t';
const C = 'cudnnConvolutionDescriptor_t';
export const CUDNN_FUNCTIONS = {
  cudnnGetVersion: { proto: 'size_t cudnnGetVersion(void)' },
  cudnnGetErrorString: { proto: 'const char *cudnnGetErrorString(cudnnStatus_t status)' },
  // cuDNN 9: the detailed text of the last failure on this thread
  cudnnGetLastErrorString: { proto: 'void cudnnGetLastErrorString(char *message, size_t max_size)', optional: true },
  cudnnCreate: { proto: 'cudnnStatus_t cudnnCreate(cudnnHandle_t *handle)' },
  cudnnDestroy: { proto: 'cudnnStatus_t cudnnDestroy(cudnnHandle_t handle)' },
  cudnnSetStream: { proto: 'cudnnStatus_t cudnnSetStream(cudnnHandle_t handle, cudnnStream_t streamId)' },
  cudnnCreateTensorDescriptor: { proto: `cudnnStatus_t cudnnCreateTensorDescriptor(${T} *tensorDesc)` },
  cudnnSetTensor4dDescriptor: {
    proto:
      `cudnnStatus_t cudnnSetTensor4dDescriptor(${T} tensorDesc, cudnnTensorFormat_t format, ` +
      'cudnnDataType_t dataType, int n, int c, int h, int w)',
  },
  cudnnDestroyTensorDescriptor: { proto: `cudnnStatus_t cudnnDestroyTensorDescriptor(${T} tensorDesc)` },
  cudnnCreateFilterDescriptor: { proto: `cudnnStatus_t cudnnCreateFilterDescriptor(${F} *filterDesc)` },
  cudnnSetFilterNdDescriptor: {
    proto:
      `cudnnStatus_t cudnnSetFilterNdDescriptor(${F} filterDesc, cudnnDataType_t dataType, ` +
      'cudnnTensorFormat_t format, int nbDims, const int *filterDimA)',
  },
  cudnnDestroyFilterDescriptor: { proto: `cudnnStatus_t cudnnDestroyFilterDescriptor(${F} filterDesc)` },
  cudnnCreateConvolutionDescriptor: { proto: `cudnnStatus_t cudnnCreateConvolutionDescriptor(${C} *convDesc)` },
  cudnnSetConvolution2dDescriptor: {
    proto:
      `cudnnStatus_t cudnnSetConvolution2dDescriptor(${C} convDesc, int pad_h, int pad_w, int u, int v, ` +
      'int dilation_h, int dilation_w, cudnnConvolutionMode_t mode, cudnnDataType_t computeType)',
  },
  cudnnSetConvolutionGroupCount: {
    proto: `cudnnStatus_t cudnnSetConvolutionGroupCount(${C} convDesc, int groupCount)`,
  },
  cudnnSetConvolutionMathType: {
    proto: `cudnnStatus_t cudnnSetConvolutionMathType(${C} convDesc, cudnnMathType_t mathType)`,
  },
  cudnnDestroyConvolutionDescriptor: { proto: `cudnnStatus_t cudnnDestroyConvolutionDescriptor(${C} convDesc)` },
  cudnnGetConvolutionForwardAlgorithm_v7: {
    proto:
      `cudnnStatus_t cudnnGetConvolutionForwardAlgorithm_v7(cudnnHandle_t handle, ${T} srcDesc, ${F} filterDesc, ` +
      `${C} convDesc, ${T} destDesc, int requestedAlgoCount, int *returnedAlgoCount, cudnnFwdPerf_p perfResults)`,
  },
  cudnnGetConvolutionForwardWorkspaceSize: {
    proto:
      `cudnnStatus_t cudnnGetConvolutionForwardWorkspaceSize(cudnnHandle_t handle, ${T} xDesc, ${F} wDesc, ` +
      `${C} convDesc, ${T} yDesc, cudnnConvolutionFwdAlgo_t algo, size_t *sizeInBytes)`,
  },
  cudnnConvolutionForward: {
    proto:
      `cudnnStatus_t cudnnConvolutionForward(cudnnHandle_t handle, const void *alpha, ${T} xDesc, const void *x, ` +
      `${F} wDesc, const void *w, ${C} convDesc, cudnnConvolutionFwdAlgo_t algo, void *workSpace, ` +
      `size_t workSpaceSizeInBytes, const void *beta, ${T} yDesc, void *y)`,
  },
  cudnnGetConvolutionBackwardDataAlgorithm_v7: {
    proto:
      `cudnnStatus_t cudnnGetConvolutionBackwardDataAlgorithm_v7(cudnnHandle_t handle, ${F} filterDesc, ` +
      `${T} diffDesc, ${C} convDesc, ${T} gradDesc, int requestedAlgoCount, int *returnedAlgoCount, ` +
      'cudnnBwdDataPerf_p perfResults)',
  },
  cudnnGetConvolutionBackwardDataWorkspaceSize: {
    proto:
      `cudnnStatus_t cudnnGetConvolutionBackwardDataWorkspaceSize(cudnnHandle_t handle, ${F} wDesc, ${T} dyDesc, ` +
      `${C} convDesc, ${T} dxDesc, cudnnConvolutionBwdDataAlgo_t algo, size_t *sizeInBytes)`,
  },
  cudnnConvolutionBackwardData: {
    proto:
      `cudnnStatus_t cudnnConvolutionBackwardData(cudnnHandle_t handle, const void *alpha, ${F} wDesc, ` +
      `const void *w, ${T} dyDesc, const void *dy, ${C} convDesc, cudnnConvolutionBwdDataAlgo_t algo, ` +
      `void *workSpace, size_t workSpaceSizeInBytes, const void *beta, ${T} dxDesc, void *dx)`,
  },
  cudnnCreatePoolingDescriptor: {
    proto: 'cudnnStatus_t cudnnCreatePoolingDescriptor(cudnnPoolingDescriptor_t *poolingDesc)',
  },
  cudnnSetPooling2dDescriptor: {
    proto:
      'cudnnStatus_t cudnnSetPooling2dDescriptor(cudnnPoolingDescriptor_t poolingDesc, cudnnPoolingMode_t mode, ' +
      'cudnnNanPropagation_t maxpoolingNanOpt, int windowHeight, int windowWidth, int verticalPadding, ' +
      'int horizontalPadding, int verticalStride, int horizontalStride)',
  },
  cudnnDestroyPoolingDescriptor: {
    proto: 'cudnnStatus_t cudnnDestroyPoolingDescriptor(cudnnPoolingDescriptor_t poolingDesc)',
  },
  cudnnPoolingForward: {
    proto:
      `cudnnStatus_t cudnnPoolingForward(cudnnHandle_t handle, cudnnPoolingDescriptor_t poolingDesc, ` +
      `const void *alpha, ${T} xDesc, const void *x, const void *beta, ${T} yDesc, void *y)`,
  },
  cudnnSoftmaxForward: {
    proto:
      'cudnnStatus_t cudnnSoftmaxForward(cudnnHandle_t handle, cudnnSoftmaxAlgorithm_t algo, ' +
      `cudnnSoftmaxMode_t mode, const void *alpha, ${T} xDesc, const void *x, const void *beta, ${T} yDesc, void *y)`,
  },
} as const satisfies NativeTable;

export const CUDNN_CONST = {
  CUDNN_STATUS_SUCCESS: 0,
  CUDNN_STATUS_NOT_SUPPORTED: 3000,
  CUDNN_DATA_FLOAT: 0,
  CUDNN_DATA_DOUBLE: 1,
  CUDNN_DATA_HALF: 2,
  CUDNN_DATA_BFLOAT16: 9,
  CUDNN_TENSOR_NCHW: 0,
  CUDNN_CROSS_CORRELATION: 1,
  CUDNN_DEFAULT_MATH: 0,
  CUDNN_TENSOR_OP_MATH: 1,
  CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION: 2,
  CUDNN_FMA_MATH: 3,
  CUDNN_POOLING_MAX: 0,
  CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING: 1,
  CUDNN_POOLING_AVERAGE_COUNT_EXCLUDE_PADDING: 2,
  CUDNN_PROPAGATE_NAN: 1,
  CUDNN_SOFTMAX_ACCURATE: 1,
  CUDNN_SOFTMAX_LOG: 2,
  CUDNN_SOFTMAX_MODE_INSTANCE: 0,
} as const;

/** cudnnConvolutionFwdAlgoPerf_t and cudnnConvolutionBwdDataAlgoPerf_t share this layout */
export const CUDNN_PERF = {
  size: 48,
  fields: { algo: 0, status: 4, time: 8, memory: 16, determinism: 24, mathType: 28 },
} as const;

type R = number;
type H = bigint;
type P = bigint | ArrayBufferView;
export interface CudnnFns {
  cudnnGetVersion(): number;
  cudnnGetErrorString(s: number): string | null;
  cudnnGetLastErrorString(buf: Uint8Array, size: number): void;
  cudnnCreate(out: BigUint64Array): R;
  cudnnDestroy(h: H): R;
  cudnnSetStream(h: H, s: bigint | null): R;
  cudnnCreateTensorDescriptor(out: BigUint64Array): R;
  cudnnSetTensor4dDescriptor(d: H, format: number, type: number, n: number, c: number, h: number, w: number): R;
  cudnnDestroyTensorDescriptor(d: H): R;
  cudnnCreateFilterDescriptor(out: BigUint64Array): R;
  cudnnSetFilterNdDescriptor(d: H, type: number, format: number, nbDims: number, dims: Int32Array): R;
  cudnnDestroyFilterDescriptor(d: H): R;
  cudnnCreateConvolutionDescriptor(out: BigUint64Array): R;
  cudnnSetConvolution2dDescriptor(
    d: H,
    padH: number,
    padW: number,
    u: number,
    v: number,
    dilH: number,
    dilW: number,
    mode: number,
    compute: number,
  ): R;
  cudnnSetConvolutionGroupCount(d: H, groups: number): R;
  cudnnSetConvolutionMathType(d: H, math: number): R;
  cudnnDestroyConvolutionDescriptor(d: H): R;
  cudnnGetConvolutionForwardAlgorithm_v7(
    h: H,
    x: H,
    w: H,
    c: H,
    y: H,
    requested: number,
    returned: Int32Array,
    perf: Uint8Array,
  ): R;
  cudnnGetConvolutionForwardWorkspaceSize(h: H, x: H, w: H, c: H, y: H, algo: number, out: BigUint64Array): R;
  cudnnConvolutionForward(
    h: H,
    alpha: ArrayBufferView,
    xd: H,
    x: P,
    wd: H,
    w: P,
    cd: H,
    algo: number,
    ws: P | null,
    wsBytes: number,
    beta: ArrayBufferView,
    yd: H,
    y: P,
  ): R;
  cudnnGetConvolutionBackwardDataAlgorithm_v7(
    h: H,
    w: H,
    dy: H,
    c: H,
    dx: H,
    requested: number,
    returned: Int32Array,
    perf: Uint8Array,
  ): R;
  cudnnGetConvolutionBackwardDataWorkspaceSize(h: H, w: H, dy: H, c: H, dx: H, algo: number, out: BigUint64Array): R;
  cudnnConvolutionBackwardData(
    h: H,
    alpha: ArrayBufferView,
    wd: H,
    w: P,
    dyd: H,
    dy: P,
    cd: H,
    algo: number,
    ws: P | null,
    wsBytes: number,
    beta: ArrayBufferView,
    dxd: H,
    dx: P,
  ): R;
  cudnnCreatePoolingDescriptor(out: BigUint64Array): R;
  cudnnSetPooling2dDescriptor(
    d: H,
    mode: number,
    nan: number,
    wh: number,
    ww: number,
    ph: number,
    pw: number,
    sh: number,
    sw: number,
  ): R;
  cudnnDestroyPoolingDescriptor(d: H): R;
  cudnnPoolingForward(h: H, pd: H, alpha: ArrayBufferView, xd: H, x: P, beta: ArrayBufferView, yd: H, y: P): R;
  cudnnSoftmaxForward(
    h: H,
    algo: number,
    mode: number,
    alpha: ArrayBufferView,
    xd: H,
    x: P,
    beta: ArrayBufferView,
    yd: H,
    y: P,
  ): R;
}
type CudnnKey = keyof typeof CUDNN_FUNCTIONS;
const _sameKeys: [CudnnKey, keyof CudnnFns] extends [keyof CudnnFns, CudnnKey] ? true : never = true;
void _sameKeys;

export interface Cudnn {
  readonly loaded: LoadedLibrary;
  readonly fn: Omit<CudnnFns, 'cudnnGetLastErrorString'> & {
    cudnnGetLastErrorString: CudnnFns['cudnnGetLastErrorString'] | undefined;
  };
  statusText(status: number): string;
}

let cudnn: Cudnn | null = null;

/** opens libcudnn.so.9 and declares its functions once */
export function loadCudnn(): Cudnn {
  if (cudnn) return cudnn;
  const loaded = openLibrary(CUDNN_LIB);
  registerAliases(CUDNN_ALIASES);
  const table = declareTable(loaded.lib, CUDNN_FUNCTIONS, loaded.path);
  const fn = Object.fromEntries([...table].map(([k, v]) => [k, v ?? undefined])) as unknown as Cudnn['fn'];
  const lastBuf = new Uint8Array(1024);
  const statusText = (s: number): string => {
    let detail = '';
    if (fn.cudnnGetLastErrorString) {
      lastBuf.fill(0);
      fn.cudnnGetLastErrorString(lastBuf, lastBuf.length);
      const end = lastBuf.indexOf(0);
      detail = new TextDecoder().decode(lastBuf.subarray(0, end < 0 ? lastBuf.length : end)).trim();
    }
    return `${fn.cudnnGetErrorString(s) ?? `cudnnStatus ${s}`} (${s})${detail ? `: ${detail}` : ''}`;
  };
  cudnn = { loaded, fn, statusText };
  return cudnn;
}

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
  private readonly convPlans = new Map<string, ConvPlan>();
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
    if (this.workspace !== null && this.workspaceBytes >= bytes) return this.workspace;
    if (this.workspace !== null) {
      this.host.streamSynchronize(stream);
      this.host.free(this.workspace);
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
    kind: 'fwd' | 'bwdData',
    p: ConvParams,
    find: (requested: number, returned: Int32Array, perf: Uint8Array) => number,
    wsSize: (algo: number, out: BigUint64Array) => number,
    conv: bigint,
    what: string,
  ): AlgoChoice {
    const call =
      kind === 'fwd' ? 'cudnnGetConvolutionForwardAlgorithm_v7' : 'cudnnGetConvolutionBackwardDataAlgorithm_v7';
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
  private convPlan(kind: 'fwd' | 'bwdData', p: ConvParams): ConvPlan {
    const key = `${kind} ${convKey(p)}`;
    const hit = this.convPlans.get(key);
    if (hit) return hit;
    const op = kind === 'fwd' ? 'convForward' : 'convTransposeForward';
    const what = convWhat(op, p);
    const t = this.dataType(p.dtype, op);
    // fwd: x [n, cIn, ...] -> y through the filter [cOut, cIn/g, kh, kw]; bwdData (transposed):
    // dy = x, dx = y, the filter [cIn, cOut/g, kh, kw]
    const [fk, fc] = kind === 'fwd' ? [p.cOut, p.cIn / p.groups] : [p.cIn, p.cOut / p.groups];
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
          : this.chooseAlgo(
              'bwdData',
              p,
              (req, ret, perf) =>
                f.cudnnGetConvolutionBackwardDataAlgorithm_v7(this.handle, w, a, c, b, req, ret, perf),
              (algo, out) => f.cudnnGetConvolutionBackwardDataWorkspaceSize(this.handle, w, a, c, b, algo, out),
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

  // ---- ops ------------------------------------------------------------------------------------
  convForward(p: ConvParams, stream: GpuStream): void {
    this.begin(stream);
    const pl = this.convPlan('fwd', p),
      ch = pl.choice;
    const ws = this.ensureWorkspace(ch.workspace, stream);
    const [one, zero] = this.scalars(p.dtype);
    const st = this.lib.fn.cudnnConvolutionForward(
      this.handle,
      one,
      pl.a,
      p.x,
      pl.w,
      p.w,
      pl.c,
      ch.algo,
      ws,
      ch.workspace,
      zero,
      pl.b,
      p.y,
    );
    if (st !== CUDNN_CONST.CUDNN_STATUS_SUCCESS) {
      this.fail(
        st,
        `cudnnConvolutionForward: ${convWhat('convForward', p)}, algo ${ch.algo}`,
        'cudnnConvolutionForward',
      );
    }
  }

  /**
   * Transposed convolution as the data gradient of the forward convolution that maps y-shaped
   * tensors to x-shaped ones: filter [cIn, cOut/groups, kH, kW], dy = x, dx = y. Output padding
   * is implied by y's larger extent.
   */
  convTransposeForward(p: ConvParams, stream: GpuStream): void {
    this.begin(stream);
    const pl = this.convPlan('bwdData', p),
      ch = pl.choice;
    const ws = this.ensureWorkspace(ch.workspace, stream);
    const [one, zero] = this.scalars(p.dtype);
    const st = this.lib.fn.cudnnConvolutionBackwardData(
      this.handle,
      one,
      pl.w,
      p.w,
      pl.a,
      p.x,
      pl.c,
      ch.algo,
      ws,
      ch.workspace,
      zero,
      pl.b,
      p.y,
    );
    if (st !== CUDNN_CONST.CUDNN_STATUS_SUCCESS) {
      this.fail(
        st,
        `cudnnConvolutionBackwardData: ${convWhat('convTransposeForward', p)}, algo ${ch.algo}`,
        'cudnnConvolutionBackwardData',
      );
    }
  }

  poolForward(p: PoolParams, stream: GpuStream): void {
    const what =
      `poolForward(${p.mode}${p.mode === 'avg' ? (p.countIncludePad ? ' incl. pad' : ' excl. pad') : ''}, ` +
      `${p.dtype}, x ${fmtShape([p.n, p.c, p.inH, p.inW])}, y ${fmtShape([p.n, p.c, p.outH, p.outW])}, ` +
      `window ${p.kH}x${p.kW} pad ${p.padH},${p.padW} stride ${p.strideH},${p.strideW})`;
    const t = this.dataType(p.dtype, 'poolForward');
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
      const st = f.cudnnPoolingForward(this.handle, pd, one, xd, p.x, zero, yd, p.y);
      if (st !== CUDNN_CONST.CUDNN_STATUS_SUCCESS) this.fail(st, `cudnnPoolingForward: ${what}`, 'cudnnPoolingForward');
    } finally {
      if (yd) f0(f.cudnnDestroyTensorDescriptor(yd));
      if (xd) f0(f.cudnnDestroyTensorDescriptor(xd));
      f0(f.cudnnDestroyPoolingDescriptor(pd));
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

  destroy(): void {
    this.host.enter();
    for (const pl of this.convPlans.values()) this.destroyPlan(pl);
    this.convPlans.clear();
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

function convWhat(op: string, p: ConvParams): string {
  const w = op === 'convForward' ? [p.cOut, p.cIn / p.groups, p.kH, p.kW] : [p.cIn, p.cOut / p.groups, p.kH, p.kW];
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
