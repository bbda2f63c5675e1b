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
  { name: 'miopenLRNMode_t', c: 'miopenLRNMode_t', cls: 'enum' },
  { name: 'miopenHandle_t', c: 'miopenHandle_t', cls: 'pointer', handle: true },
  { name: 'miopenTensorDescriptor_t', c: 'miopenTensorDescriptor_t', cls: 'pointer', handle: true },
  { name: 'miopenConvolutionDescriptor_t', c: 'miopenConvolutionDescriptor_t', cls: 'pointer', handle: true },
  { name: 'miopenPoolingDescriptor_t', c: 'miopenPoolingDescriptor_t', cls: 'pointer', handle: true },
  { name: 'miopenAcceleratorQueue_t', c: 'miopenAcceleratorQueue_t', cls: 'pointer', handle: true },
  { name: 'miopenRNNMode_t', c: 'miopenRNNMode_t', cls: 'enum' },
  { name: 'miopenRNNInputMode_t', c: 'miopenRNNInputMode_t', cls: 'enum' },
  { name: 'miopenRNNDirectionMode_t', c: 'miopenRNNDirectionMode_t', cls: 'enum' },
  { name: 'miopenRNNBiasMode_t', c: 'miopenRNNBiasMode_t', cls: 'enum' },
  { name: 'miopenRNNAlgo_t', c: 'miopenRNNAlgo_t', cls: 'enum' },
  { name: 'miopenRNNFWDMode_t', c: 'miopenRNNFWDMode_t', cls: 'enum' },
  { name: 'miopenRNNBaseLayout_t', c: 'miopenRNNBaseLayout_t', cls: 'enum' },
  { name: 'miopenRNNDescriptor_t', c: 'miopenRNNDescriptor_t', cls: 'pointer', handle: true },
  { name: 'miopenSeqTensorDescriptor_t', c: 'miopenSeqTensorDescriptor_t', cls: 'pointer', handle: true },
  { name: 'miopenLRNDescriptor_t', c: 'miopenLRNDescriptor_t', cls: 'pointer', handle: true },
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
  miopenCreateLRNDescriptor: {
    proto: 'miopenStatus_t miopenCreateLRNDescriptor(_Out_ miopenLRNDescriptor_t *lrnDesc)',
  },
  miopenSetLRNDescriptor: {
    proto:
      'miopenStatus_t miopenSetLRNDescriptor(miopenLRNDescriptor_t lrnDesc, miopenLRNMode_t mode, unsigned int lrnN, ' +
      'double lrnAlpha, double lrnBeta, double lrnK)',
  },
  miopenLRNGetWorkSpaceSize: {
    proto: 'miopenStatus_t miopenLRNGetWorkSpaceSize(miopenTensorDescriptor_t yDesc, _Out_ size_t *workSpaceSize)',
  },
  // no workspace size argument: MIOpen takes the size miopenLRNGetWorkSpaceSize gave for yDesc
  miopenLRNForward: {
    proto:
      'miopenStatus_t miopenLRNForward(miopenHandle_t handle, miopenLRNDescriptor_t lrnDesc, const void *alpha, ' +
      'miopenTensorDescriptor_t xDesc, cdevptr_t x, const void *beta, miopenTensorDescriptor_t yDesc, devptr_t y, ' +
      'bool do_backward, devptr_t workSpace)',
  },
  miopenLRNBackward: {
    proto:
      'miopenStatus_t miopenLRNBackward(miopenHandle_t handle, miopenLRNDescriptor_t lrnDesc, const void *alpha, ' +
      'miopenTensorDescriptor_t yDesc, cdevptr_t y, miopenTensorDescriptor_t dyDesc, cdevptr_t dy, ' +
      'miopenTensorDescriptor_t xDesc, cdevptr_t x, const void *beta, miopenTensorDescriptor_t dxDesc, devptr_t dx, ' +
      'cdevptr_t workSpace)',
  },
  miopenDestroyLRNDescriptor: {
    proto: 'miopenStatus_t miopenDestroyLRNDescriptor(miopenLRNDescriptor_t lrnDesc)',
  },
  // recurrent layers through the sequence-tensor API (miopenRNNForward and its two backwards),
  // the twin of cuDNN's v8 RNN API; parameter offsets are in elements of the weight space
  miopenSetTensorDescriptor: {
    proto:
      'miopenStatus_t miopenSetTensorDescriptor(miopenTensorDescriptor_t tensorDesc, miopenDataType_t dataType, ' +
      'int nbDims, const int *dimsA, const int *stridesA)',
  },
  miopenCreateRNNDescriptor: {
    proto: 'miopenStatus_t miopenCreateRNNDescriptor(_Out_ miopenRNNDescriptor_t *rnnDesc)',
  },
  miopenDestroyRNNDescriptor: { proto: 'miopenStatus_t miopenDestroyRNNDescriptor(miopenRNNDescriptor_t rnnDesc)' },
  miopenSetRNNDescriptor: {
    proto:
      'miopenStatus_t miopenSetRNNDescriptor(miopenRNNDescriptor_t rnnDesc, const int hsize, const int nlayers, ' +
      'miopenRNNInputMode_t inMode, miopenRNNDirectionMode_t direction, miopenRNNMode_t rnnMode, ' +
      'miopenRNNBiasMode_t biasMode, miopenRNNAlgo_t algo, miopenDataType_t dataType)',
  },
  miopenCreateSeqTensorDescriptor: {
    proto: 'miopenStatus_t miopenCreateSeqTensorDescriptor(_Out_ miopenSeqTensorDescriptor_t *tensorDesc)',
  },
  miopenDestroySeqTensorDescriptor: {
    proto: 'miopenStatus_t miopenDestroySeqTensorDescriptor(miopenSeqTensorDescriptor_t tensorDesc)',
  },
  miopenSetRNNDataSeqTensorDescriptor: {
    proto:
      'miopenStatus_t miopenSetRNNDataSeqTensorDescriptor(miopenSeqTensorDescriptor_t seqTensorDesc, ' +
      'miopenDataType_t dataType, miopenRNNBaseLayout_t layout, int maxSequenceLen, int batchSize, int vectorSize, ' +
      'const int *sequenceLenArray, void *paddingMarker)',
  },
  miopenGetRNNParamsSize: {
    proto:
      'miopenStatus_t miopenGetRNNParamsSize(miopenHandle_t handle, miopenRNNDescriptor_t rnnDesc, ' +
      'miopenTensorDescriptor_t xDesc, _Out_ size_t *numBytes, miopenDataType_t dtype)',
  },
  miopenGetRNNLayerParamOffset: {
    proto:
      'miopenStatus_t miopenGetRNNLayerParamOffset(miopenRNNDescriptor_t rnnDesc, const int layer, ' +
      'miopenTensorDescriptor_t xDesc, const int paramID, miopenTensorDescriptor_t paramDesc, ' +
      '_Out_ size_t *layerParamOffset)',
  },
  miopenGetRNNLayerBiasOffset: {
    proto:
      'miopenStatus_t miopenGetRNNLayerBiasOffset(miopenRNNDescriptor_t rnnDesc, const int layer, ' +
      'miopenTensorDescriptor_t xDesc, const int biasID, miopenTensorDescriptor_t biasDesc, ' +
      '_Out_ size_t *layerBiasOffset)',
  },
  miopenGetRNNTempSpaceSizes: {
    proto:
      'miopenStatus_t miopenGetRNNTempSpaceSizes(miopenHandle_t handle, miopenRNNDescriptor_t rnnDesc, ' +
      'miopenSeqTensorDescriptor_t xDesc, miopenRNNFWDMode_t fwdMode, _Out_ size_t *workSpaceSize, ' +
      '_Out_ size_t *reserveSpaceSize)',
  },
  miopenRNNForward: {
    proto:
      'miopenStatus_t miopenRNNForward(miopenHandle_t handle, const miopenRNNDescriptor_t rnnDesc, ' +
      'miopenRNNFWDMode_t fwdMode, const miopenSeqTensorDescriptor_t xDesc, cdevptr_t x, ' +
      'const miopenTensorDescriptor_t hDesc, cdevptr_t hx, devptr_t hy, const miopenTensorDescriptor_t cDesc, ' +
      'cdevptr_t cx, devptr_t cy, const miopenSeqTensorDescriptor_t yDesc, devptr_t y, cdevptr_t w, ' +
      'size_t weightSpaceSize, devptr_t workSpace, size_t workSpaceNumBytes, devptr_t reserveSpace, ' +
      'size_t reserveSpaceNumBytes)',
  },
  miopenRNNBackwardSeqData: {
    proto:
      'miopenStatus_t miopenRNNBackwardSeqData(miopenHandle_t handle, const miopenRNNDescriptor_t rnnDesc, ' +
      'const miopenSeqTensorDescriptor_t yDesc, cdevptr_t y, cdevptr_t dy, const miopenTensorDescriptor_t hDesc, ' +
      'cdevptr_t hx, cdevptr_t dhy, devptr_t dhx, const miopenTensorDescriptor_t cDesc, cdevptr_t cx, ' +
      'cdevptr_t dcy, devptr_t dcx, const miopenSeqTensorDescriptor_t xDesc, devptr_t dx, cdevptr_t w, ' +
      'size_t weightSpaceSize, devptr_t workSpace, size_t workSpaceNumBytes, devptr_t reserveSpace, ' +
      'size_t reserveSpaceNumBytes)',
  },
  miopenRNNBackwardWeightsSeqTensor: {
    proto:
      'miopenStatus_t miopenRNNBackwardWeightsSeqTensor(miopenHandle_t handle, const miopenRNNDescriptor_t rnnDesc, ' +
      'const miopenSeqTensorDescriptor_t xDesc, cdevptr_t x, const miopenTensorDescriptor_t hDesc, cdevptr_t hx, ' +
      'const miopenSeqTensorDescriptor_t yDesc, cdevptr_t y, devptr_t dw, size_t weightSpaceSize, ' +
      'devptr_t workSpace, size_t workSpaceNumBytes, cdevptr_t reserveSpace, size_t reserveSpaceNumBytes)',
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
  miopenRNNlinear: 0,
  miopenRNNunidirection: 0,
  miopenLSTM: 2,
  miopenGRU: 3,
  miopenRNNNoBias: 0,
  miopenRNNwithBias: 1,
  miopenRNNdefault: 0,
  miopenRNNTraining: 0,
  miopenRNNInference: 1,
  miopenRNNDataSeqMajorNotPadded: 1,
  miopenLRNCrossChannel: 1,
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
  miopenCreateLRNDescriptor(d: Out<Ptr | null>): Status;
  miopenSetLRNDescriptor(d: Ptr, mode: number, n: number, alpha: number, beta: number, k: number): Status;
  miopenLRNGetWorkSpaceSize(yd: Ptr, size: Out<number>): Status;
  miopenLRNForward(
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
  ): Status;
  miopenLRNBackward(
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
  miopenDestroyLRNDescriptor(d: Ptr): Status;
  miopenSetTensorDescriptor(d: Ptr, t: number, nbDims: number, dims: Int32Array, strides: Int32Array): Status;
  miopenCreateRNNDescriptor(d: Out<Ptr | null>): Status;
  miopenDestroyRNNDescriptor(d: Ptr): Status;
  miopenSetRNNDescriptor(
    d: Ptr,
    hsize: number,
    nlayers: number,
    inMode: number,
    direction: number,
    mode: number,
    biasMode: number,
    algo: number,
    dtype: number,
  ): Status;
  miopenCreateSeqTensorDescriptor(d: Out<Ptr | null>): Status;
  miopenDestroySeqTensorDescriptor(d: Ptr): Status;
  miopenSetRNNDataSeqTensorDescriptor(
    d: Ptr,
    dtype: number,
    layout: number,
    maxSeq: number,
    batch: number,
    vector: number,
    seqLengths: Int32Array,
    paddingMarker: null,
  ): Status;
  miopenGetRNNParamsSize(h: Ptr, d: Ptr, xd: Ptr, bytes: Out<number>, dtype: number): Status;
  miopenGetRNNLayerParamOffset(d: Ptr, layer: number, xd: Ptr, id: number, pd: Ptr, offset: Out<number>): Status;
  miopenGetRNNLayerBiasOffset(d: Ptr, layer: number, xd: Ptr, id: number, bd: Ptr, offset: Out<number>): Status;
  miopenGetRNNTempSpaceSizes(h: Ptr, d: Ptr, xd: Ptr, mode: number, ws: Out<number>, reserve: Out<number>): Status;
  miopenRNNForward(
    h: Ptr,
    d: Ptr,
    mode: number,
    xd: Ptr,
    x: Ptr,
    hd: Ptr,
    hx: Ptr | null,
    hy: Ptr | null,
    cd: Ptr,
    cx: Ptr | null,
    cy: Ptr | null,
    yd: Ptr,
    y: Ptr,
    w: Ptr,
    wBytes: number,
    ws: Ptr | null,
    wsBytes: number,
    reserve: Ptr | null,
    reserveBytes: number,
  ): Status;
  miopenRNNBackwardSeqData(
    h: Ptr,
    d: Ptr,
    yd: Ptr,
    y: Ptr,
    dy: Ptr,
    hd: Ptr,
    hx: Ptr | null,
    dhy: Ptr | null,
    dhx: Ptr | null,
    cd: Ptr,
    cx: Ptr | null,
    dcy: Ptr | null,
    dcx: Ptr | null,
    xd: Ptr,
    dx: Ptr,
    w: Ptr,
    wBytes: number,
    ws: Ptr | null,
    wsBytes: number,
    reserve: Ptr | null,
    reserveBytes: number,
  ): Status;
  miopenRNNBackwardWeightsSeqTensor(
    h: Ptr,
    d: Ptr,
    xd: Ptr,
    x: Ptr,
    hd: Ptr,
    hx: Ptr | null,
    yd: Ptr,
    y: Ptr,
    dw: Ptr,
    wBytes: number,
    ws: Ptr | null,
    wsBytes: number,
    reserve: Ptr | null,
    reserveBytes: number,
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
