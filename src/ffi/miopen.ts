// MIOpen through koffi: prototypes, enum values and the find-result layout as data (checked
// against MIOpen's headers and symbol table by test/abi), declared on first use with the
// library's version and status text. The DNN interface built on it is runtime/rocm/miopen.ts.
import { GpuError } from '../core/errors.ts';
import { HIP_ALIASES } from './hip.ts';
import { MIOPEN_LIB, openLibrary, type LoadedLibrary } from './loader.ts';
import { declareTable, fmtArgs, registerAliases, type NativeAlias, type NativeTable } from './native.ts';

export const MIOPEN_ALIASES: readonly NativeAlias[] = [
  { name: 'miopenStatus_t', c: 'miopenStatus_t', cls: 'enum' },
  { name: 'miopenDataType_t', c: 'miopenDataType_t', cls: 'enum' },
  { name: 'miopenConvolutionMode_t', c: 'miopenConvolutionMode_t', cls: 'enum' },
  { name: 'miopenConvFwdAlgorithm_t', c: 'miopenConvFwdAlgorithm_t', cls: 'enum' },
  { name: 'miopenConvBwdWeightsAlgorithm_t', c: 'miopenConvBwdWeightsAlgorithm_t', cls: 'enum' },
  { name: 'miopenIndexType_t', c: 'miopenIndexType_t', cls: 'enum' },
  { name: 'miopenBatchNormMode_t', c: 'miopenBatchNormMode_t', cls: 'enum' },
  { name: 'miopenPoolingMode_t', c: 'miopenPoolingMode_t', cls: 'enum' },
  { name: 'miopenSoftmaxAlgorithm_t', c: 'miopenSoftmaxAlgorithm_t', cls: 'enum' },
  { name: 'miopenSoftmaxMode_t', c: 'miopenSoftmaxMode_t', cls: 'enum' },
  { name: 'miopenHandle_t', c: 'miopenHandle_t', cls: 'pointer', handle: true },
  { name: 'miopenTensorDescriptor_t', c: 'miopenTensorDescriptor_t', cls: 'pointer', handle: true },
  { name: 'miopenConvolutionDescriptor_t', c: 'miopenConvolutionDescriptor_t', cls: 'pointer', handle: true },
  { name: 'miopenPoolingDescriptor_t', c: 'miopenPoolingDescriptor_t', cls: 'pointer', handle: true },
  { name: 'miopenAcceleratorQueue_t', c: 'miopenAcceleratorQueue_t', cls: 'pointer', handle: true },
  // find results are read as raw bytes at checked offsets
  { name: 'miopenConvAlgoPerf_p', c: 'miopenConvAlgoPerf_t *', cls: 'pointer', koffi: 'void *' },
];

export const MIOPEN_FUNCTIONS = {
  miopenGetErrorString: { proto: 'const char *miopenGetErrorString(miopenStatus_t error)' },
  miopenGetVersion: {
    proto: 'miopenStatus_t miopenGetVersion(_Out_ size_t *major, _Out_ size_t *minor, _Out_ size_t *patch)',
  },
  miopenCreateWithStream: {
    proto: 'miopenStatus_t miopenCreateWithStream(_Out_ miopenHandle_t *handle, miopenAcceleratorQueue_t stream)',
  },
  miopenSetStream: {
    proto: 'miopenStatus_t miopenSetStream(miopenHandle_t handle, miopenAcceleratorQueue_t streamID)',
  },
  miopenDestroy: { proto: 'miopenStatus_t miopenDestroy(miopenHandle_t handle)' },
  miopenCreateTensorDescriptor: {
    proto: 'miopenStatus_t miopenCreateTensorDescriptor(_Out_ miopenTensorDescriptor_t *tensorDesc)',
  },
  miopenSet4dTensorDescriptor: {
    proto:
      'miopenStatus_t miopenSet4dTensorDescriptor(miopenTensorDescriptor_t tensorDesc, miopenDataType_t dataType, int n, int c, int h, int w)',
  },
  miopenDestroyTensorDescriptor: {
    proto: 'miopenStatus_t miopenDestroyTensorDescriptor(miopenTensorDescriptor_t tensorDesc)',
  },
  miopenCreateConvolutionDescriptor: {
    proto: 'miopenStatus_t miopenCreateConvolutionDescriptor(_Out_ miopenConvolutionDescriptor_t *convDesc)',
  },
  miopenInitConvolutionDescriptor: {
    proto:
      'miopenStatus_t miopenInitConvolutionDescriptor(miopenConvolutionDescriptor_t convDesc, miopenConvolutionMode_t c_mode, ' +
      'int pad_h, int pad_w, int stride_h, int stride_w, int dilation_h, int dilation_w)',
  },
  miopenSetConvolutionGroupCount: {
    proto: 'miopenStatus_t miopenSetConvolutionGroupCount(miopenConvolutionDescriptor_t convDesc, int groupCount)',
  },
  miopenSetTransposeConvOutputPadding: {
    proto:
      'miopenStatus_t miopenSetTransposeConvOutputPadding(miopenConvolutionDescriptor_t convDesc, int adj_h, int adj_w)',
  },
  miopenGetConvolutionForwardOutputDim: {
    proto:
      'miopenStatus_t miopenGetConvolutionForwardOutputDim(miopenConvolutionDescriptor_t convDesc, ' +
      'miopenTensorDescriptor_t inputTensorDesc, miopenTensorDescriptor_t filterDesc, _Out_ int *n, _Out_ int *c, _Out_ int *h, _Out_ int *w)',
  },
  miopenDestroyConvolutionDescriptor: {
    proto: 'miopenStatus_t miopenDestroyConvolutionDescriptor(miopenConvolutionDescriptor_t convDesc)',
  },
  miopenConvolutionForwardGetWorkSpaceSize: {
    proto:
      'miopenStatus_t miopenConvolutionForwardGetWorkSpaceSize(miopenHandle_t handle, miopenTensorDescriptor_t wDesc, ' +
      'miopenTensorDescriptor_t xDesc, miopenConvolutionDescriptor_t convDesc, miopenTensorDescriptor_t yDesc, _Out_ size_t *workSpaceSize)',
  },
  miopenFindConvolutionForwardAlgorithm: {
    proto:
      'miopenStatus_t miopenFindConvolutionForwardAlgorithm(miopenHandle_t handle, miopenTensorDescriptor_t xDesc, cdevptr_t x, ' +
      'miopenTensorDescriptor_t wDesc, cdevptr_t w, miopenConvolutionDescriptor_t convDesc, miopenTensorDescriptor_t yDesc, devptr_t y, ' +
      'int requestAlgoCount, _Out_ int *returnedAlgoCount, miopenConvAlgoPerf_p perfResults, devptr_t workSpace, size_t workSpaceSize, ' +
      'bool exhaustiveSearch)',
  },
  miopenConvolutionForward: {
    proto:
      'miopenStatus_t miopenConvolutionForward(miopenHandle_t handle, const void *alpha, miopenTensorDescriptor_t xDesc, cdevptr_t x, ' +
      'miopenTensorDescriptor_t wDesc, cdevptr_t w, miopenConvolutionDescriptor_t convDesc, miopenConvFwdAlgorithm_t algo, ' +
      'const void *beta, miopenTensorDescriptor_t yDesc, devptr_t y, devptr_t workSpace, size_t workSpaceSize)',
  },
  miopenConvolutionBackwardWeightsGetWorkSpaceSize: {
    proto:
      'miopenStatus_t miopenConvolutionBackwardWeightsGetWorkSpaceSize(miopenHandle_t handle, miopenTensorDescriptor_t dyDesc, ' +
      'miopenTensorDescriptor_t xDesc, miopenConvolutionDescriptor_t convDesc, miopenTensorDescriptor_t dwDesc, _Out_ size_t *workSpaceSize)',
  },
  miopenFindConvolutionBackwardWeightsAlgorithm: {
    proto:
      'miopenStatus_t miopenFindConvolutionBackwardWeightsAlgorithm(miopenHandle_t handle, miopenTensorDescriptor_t dyDesc, cdevptr_t dy, ' +
      'miopenTensorDescriptor_t xDesc, cdevptr_t x, miopenConvolutionDescriptor_t convDesc, miopenTensorDescriptor_t dwDesc, devptr_t dw, ' +
      'int requestAlgoCount, _Out_ int *returnedAlgoCount, miopenConvAlgoPerf_p perfResults, devptr_t workSpace, size_t workSpaceSize, ' +
      'bool exhaustiveSearch)',
  },
  miopenConvolutionBackwardWeights: {
    proto:
      'miopenStatus_t miopenConvolutionBackwardWeights(miopenHandle_t handle, const void *alpha, miopenTensorDescriptor_t dyDesc, ' +
      'cdevptr_t dy, miopenTensorDescriptor_t xDesc, cdevptr_t x, miopenConvolutionDescriptor_t convDesc, ' +
      'miopenConvBwdWeightsAlgorithm_t algo, const void *beta, miopenTensorDescriptor_t dwDesc, devptr_t dw, devptr_t workSpace, ' +
      'size_t workSpaceSize)',
  },
  miopenCreatePoolingDescriptor: {
    proto: 'miopenStatus_t miopenCreatePoolingDescriptor(_Out_ miopenPoolingDescriptor_t *poolDesc)',
  },
  miopenSet2dPoolingDescriptor: {
    proto:
      'miopenStatus_t miopenSet2dPoolingDescriptor(miopenPoolingDescriptor_t poolDesc, miopenPoolingMode_t mode, ' +
      'int windowHeight, int windowWidth, int pad_h, int pad_w, int stride_h, int stride_w)',
  },
  miopenGetPoolingForwardOutputDim: {
    proto:
      'miopenStatus_t miopenGetPoolingForwardOutputDim(miopenPoolingDescriptor_t poolDesc, miopenTensorDescriptor_t tensorDesc, ' +
      '_Out_ int *n, _Out_ int *c, _Out_ int *h, _Out_ int *w)',
  },
  miopenPoolingForward: {
    proto:
      'miopenStatus_t miopenPoolingForward(miopenHandle_t handle, miopenPoolingDescriptor_t poolDesc, const void *alpha, ' +
      'miopenTensorDescriptor_t xDesc, cdevptr_t x, const void *beta, miopenTensorDescriptor_t yDesc, devptr_t y, ' +
      'bool do_backward, devptr_t workSpace, size_t workSpaceSize)',
  },
  miopenSetPoolingIndexType: {
    proto: 'miopenStatus_t miopenSetPoolingIndexType(miopenPoolingDescriptor_t poolDesc, miopenIndexType_t index_type)',
  },
  miopenPoolingGetWorkSpaceSizeV2: {
    proto:
      'miopenStatus_t miopenPoolingGetWorkSpaceSizeV2(miopenPoolingDescriptor_t poolDesc, miopenTensorDescriptor_t yDesc, ' +
      '_Out_ size_t *workSpaceSize)',
  },
  miopenPoolingBackward: {
    proto:
      'miopenStatus_t miopenPoolingBackward(miopenHandle_t handle, miopenPoolingDescriptor_t poolDesc, const void *alpha, ' +
      'miopenTensorDescriptor_t yDesc, cdevptr_t y, miopenTensorDescriptor_t dyDesc, cdevptr_t dy, miopenTensorDescriptor_t xDesc, ' +
      'cdevptr_t x, const void *beta, miopenTensorDescriptor_t dxDesc, devptr_t dx, devptr_t workSpace)',
  },
  miopenDestroyPoolingDescriptor: {
    proto: 'miopenStatus_t miopenDestroyPoolingDescriptor(miopenPoolingDescriptor_t poolDesc)',
  },
  miopenDeriveBNTensorDescriptor: {
    proto:
      'miopenStatus_t miopenDeriveBNTensorDescriptor(miopenTensorDescriptor_t derivedBnDesc, miopenTensorDescriptor_t xDesc, ' +
      'miopenBatchNormMode_t bn_mode)',
  },
  miopenBatchNormalizationForwardTraining: {
    proto:
      'miopenStatus_t miopenBatchNormalizationForwardTraining(miopenHandle_t handle, miopenBatchNormMode_t bn_mode, void *alpha, ' +
      'void *beta, miopenTensorDescriptor_t xDesc, cdevptr_t x, miopenTensorDescriptor_t yDesc, devptr_t y, ' +
      'miopenTensorDescriptor_t bnScaleBiasMeanVarDesc, devptr_t bnScale, devptr_t bnBias, double expAvgFactor, ' +
      'devptr_t resultRunningMean, devptr_t resultRunningVariance, double epsilon, devptr_t resultSaveMean, ' +
      'devptr_t resultSaveInvVariance)',
  },
  miopenBatchNormalizationBackward: {
    proto:
      'miopenStatus_t miopenBatchNormalizationBackward(miopenHandle_t handle, miopenBatchNormMode_t bn_mode, ' +
      'const void *alphaDataDiff, const void *betaDataDiff, const void *alphaParamDiff, const void *betaParamDiff, ' +
      'miopenTensorDescriptor_t xDesc, cdevptr_t x, miopenTensorDescriptor_t dyDesc, cdevptr_t dy, miopenTensorDescriptor_t dxDesc, ' +
      'devptr_t dx, miopenTensorDescriptor_t bnScaleBiasDiffDesc, cdevptr_t bnScale, devptr_t resultBnScaleDiff, ' +
      'devptr_t resultBnBiasDiff, double epsilon, cdevptr_t savedMean, cdevptr_t savedInvVariance)',
  },
  miopenSoftmaxForward_V2: {
    proto:
      'miopenStatus_t miopenSoftmaxForward_V2(miopenHandle_t handle, const void *alpha, miopenTensorDescriptor_t xDesc, cdevptr_t x, ' +
      'const void *beta, miopenTensorDescriptor_t yDesc, devptr_t y, miopenSoftmaxAlgorithm_t algorithm, miopenSoftmaxMode_t mode)',
  },
} as const satisfies NativeTable;

export const MIOPEN_CONST = {
  miopenStatusSuccess: 0,
  miopenStatusAllocFailed: 4,
  miopenHalf: 0,
  miopenFloat: 1,
  miopenBFloat16: 5,
  miopenDouble: 6,
  miopenConvolution: 0,
  miopenTranspose: 1,
  miopenPoolingMax: 0,
  miopenPoolingAverage: 1,
  miopenPoolingAverageInclusive: 2,
  miopenIndexUint32: 2,
  miopenBNSpatial: 1,
  MIOPEN_SOFTMAX_ACCURATE: 1,
  MIOPEN_SOFTMAX_LOG: 2,
  MIOPEN_SOFTMAX_MODE_CHANNEL: 1,
} as const;

/** layout of one find result (the algorithm enum sits in a leading union) */
export const MIOPEN_STRUCTS = {
  miopenConvAlgoPerf_t: { size: 16, fields: { fwd_algo: 0, time: 4, memory: 8 } },
} as const;

type Ptr = bigint;
type Status = number;
type Out<T> = [T];
export interface MiopenFns {
  miopenGetErrorString(s: number): string | null;
  miopenGetVersion(a: Out<number>, b: Out<number>, c: Out<number>): Status;
  miopenCreateWithStream(h: Out<Ptr | null>, s: Ptr | null): Status;
  miopenSetStream(h: Ptr, s: Ptr | null): Status;
  miopenDestroy(h: Ptr): Status;
  miopenCreateTensorDescriptor(d: Out<Ptr | null>): Status;
  miopenSet4dTensorDescriptor(d: Ptr, t: number, n: number, c: number, h: number, w: number): Status;
  miopenDestroyTensorDescriptor(d: Ptr): Status;
  miopenCreateConvolutionDescriptor(d: Out<Ptr | null>): Status;
  miopenInitConvolutionDescriptor(
    d: Ptr,
    mode: number,
    ph: number,
    pw: number,
    sh: number,
    sw: number,
    dh: number,
    dw: number,
  ): Status;
  miopenSetConvolutionGroupCount(d: Ptr, g: number): Status;
  miopenSetTransposeConvOutputPadding(d: Ptr, ah: number, aw: number): Status;
  miopenGetConvolutionForwardOutputDim(
    d: Ptr,
    x: Ptr,
    w: Ptr,
    n: Out<number>,
    c: Out<number>,
    h: Out<number>,
    wd: Out<number>,
  ): Status;
  miopenDestroyConvolutionDescriptor(d: Ptr): Status;
  miopenConvolutionForwardGetWorkSpaceSize(h: Ptr, w: Ptr, x: Ptr, conv: Ptr, y: Ptr, size: Out<number>): Status;
  miopenFindConvolutionForwardAlgorithm(
    h: Ptr,
    xd: Ptr,
    x: Ptr,
    wd: Ptr,
    w: Ptr,
    conv: Ptr,
    yd: Ptr,
    y: Ptr,
    request: number,
    returned: Out<number>,
    perf: Uint8Array,
    ws: Ptr,
    wsSize: number,
    exhaustive: boolean,
  ): Status;
  miopenConvolutionForward(
    h: Ptr,
    alpha: Float32Array,
    xd: Ptr,
    x: Ptr,
    wd: Ptr,
    w: Ptr,
    conv: Ptr,
    algo: number,
    beta: Float32Array,
    yd: Ptr,
    y: Ptr,
    ws: Ptr,
    wsSize: number,
  ): Status;
  miopenConvolutionBackwardWeightsGetWorkSpaceSize(
    h: Ptr,
    dy: Ptr,
    x: Ptr,
    conv: Ptr,
    dw: Ptr,
    size: Out<number>,
  ): Status;
  miopenFindConvolutionBackwardWeightsAlgorithm(
    h: Ptr,
    dyd: Ptr,
    dy: Ptr,
    xd: Ptr,
    x: Ptr,
    conv: Ptr,
    dwd: Ptr,
    dw: Ptr,
    request: number,
    returned: Out<number>,
    perf: Uint8Array,
    ws: Ptr,
    wsSize: number,
    exhaustive: boolean,
  ): Status;
  miopenConvolutionBackwardWeights(
    h: Ptr,
    alpha: Float32Array,
    dyd: Ptr,
    dy: Ptr,
    xd: Ptr,
    x: Ptr,
    conv: Ptr,
    algo: number,
    beta: Float32Array,
    dwd: Ptr,
    dw: Ptr,
    ws: Ptr,
    wsSize: number,
  ): Status;
  miopenCreatePoolingDescriptor(d: Out<Ptr | null>): Status;
  miopenSet2dPoolingDescriptor(
    d: Ptr,
    mode: number,
    kh: number,
    kw: number,
    ph: number,
    pw: number,
    sh: number,
    sw: number,
  ): Status;
  miopenGetPoolingForwardOutputDim(
    d: Ptr,
    x: Ptr,
    n: Out<number>,
    c: Out<number>,
    h: Out<number>,
    w: Out<number>,
  ): Status;
  miopenPoolingForward(
    h: Ptr,
    d: Ptr,
    alpha: Float32Array,
    xd: Ptr,
    x: Ptr,
    beta: Float32Array,
    yd: Ptr,
    y: Ptr,
    back: boolean,
    ws: Ptr,
    wsSize: number,
  ): Status;
  miopenSetPoolingIndexType(d: Ptr, t: number): Status;
  miopenPoolingGetWorkSpaceSizeV2(d: Ptr, y: Ptr, size: Out<number>): Status;
  miopenPoolingBackward(
    h: Ptr,
    d: Ptr,
    alpha: Float32Array,
    yd: Ptr,
    y: Ptr,
    dyd: Ptr,
    dy: Ptr,
    xd: Ptr,
    x: Ptr,
    beta: Float32Array,
    dxd: Ptr,
    dx: Ptr,
    ws: Ptr,
  ): Status;
  miopenDestroyPoolingDescriptor(d: Ptr): Status;
  miopenDeriveBNTensorDescriptor(d: Ptr, x: Ptr, mode: number): Status;
  miopenBatchNormalizationForwardTraining(
    h: Ptr,
    mode: number,
    alpha: Float32Array,
    beta: Float32Array,
    xd: Ptr,
    x: Ptr,
    yd: Ptr,
    y: Ptr,
    bnd: Ptr,
    scale: Ptr,
    bias: Ptr,
    factor: number,
    runMean: Ptr,
    runVar: Ptr,
    eps: number,
    saveMean: Ptr,
    saveInvVar: Ptr,
  ): Status;
  miopenBatchNormalizationBackward(
    h: Ptr,
    mode: number,
    alphaData: Float32Array,
    betaData: Float32Array,
    alphaParam: Float32Array,
    betaParam: Float32Array,
    xd: Ptr,
    x: Ptr,
    dyd: Ptr,
    dy: Ptr,
    dxd: Ptr,
    dx: Ptr,
    bnd: Ptr,
    scale: Ptr,
    dScale: Ptr,
    dBias: Ptr,
    eps: number,
    savedMean: Ptr,
    savedInvVar: Ptr,
  ): Status;
  miopenSoftmaxForward_V2(
    h: Ptr,
    alpha: Float32Array,
    xd: Ptr,
    x: Ptr,
    beta: Float32Array,
    yd: Ptr,
    y: Ptr,
    algo: number,
    mode: number,
  ): Status;
}
const _sameKeys: [keyof typeof MIOPEN_FUNCTIONS, keyof MiopenFns] extends [
  keyof MiopenFns,
  keyof typeof MIOPEN_FUNCTIONS,
]
  ? true
  : never = true;
void _sameKeys;

export interface Miopen {
  readonly loaded: LoadedLibrary;
  readonly fn: MiopenFns;
  readonly version: string;
  check(status: number, call: string, args: readonly unknown[]): void;
}

let miopen: Miopen | null = null;

export function loadMiopen(): Miopen {
  if (miopen) return miopen;
  const loaded = openLibrary(MIOPEN_LIB);
  registerAliases(HIP_ALIASES);
  registerAliases(MIOPEN_ALIASES);
  const fn = Object.fromEntries(declareTable(loaded.lib, MIOPEN_FUNCTIONS, loaded.path)) as unknown as MiopenFns;
  const check = (status: number, call: string, args: readonly unknown[]): void => {
    if (status === MIOPEN_CONST.miopenStatusSuccess) return;
    const text = fn.miopenGetErrorString(status) ?? `miopenStatus ${status}`;
    throw new GpuError(`${call}(${fmtArgs(args)}) failed: ${text} (${status})`, status, call);
  };
  const v: [Out<number>, Out<number>, Out<number>] = [[0], [0], [0]];
  check(fn.miopenGetVersion(v[0], v[1], v[2]), 'miopenGetVersion', []);
  miopen = { loaded, fn, check, version: `${v[0][0]}.${v[1][0]}.${v[2][0]}` };
  return miopen;
}
