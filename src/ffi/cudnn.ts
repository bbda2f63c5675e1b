// cuDNN 9 legacy API through koffi: prototypes, enum values and the algorithm-perf struct layout
// as data (checked by test/abi where cuDNN's headers exist), declared on first use with the
// library's status text. The twin of miopen.ts; the DNN interface built on it is
// runtime/cuda/cudnn.ts.
import { cudaDirs, openLibrary, type LibrarySpec, type LoadedLibrary } from './loader.ts';
import { declareTable, registerAliases, type NativeAlias, type NativeTable } from './native.ts';

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
  'cudnnConvolutionBwdFilterAlgo_t',
  'cudnnPoolingMode_t',
  'cudnnNanPropagation_t',
  'cudnnSoftmaxAlgorithm_t',
  'cudnnSoftmaxMode_t',
  'cudnnBatchNormMode_t',
  'cudnnRNNAlgo_t',
  'cudnnRNNMode_t',
  'cudnnRNNBiasMode_t',
  'cudnnDirectionMode_t',
  'cudnnRNNInputMode_t',
  'cudnnForwardMode_t',
  'cudnnRNNDataLayout_t',
  'cudnnWgradMode_t',
  'cudnnLRNMode_t',
  'cudnnBackendDescriptorType_t',
  'cudnnBackendAttributeName_t',
  'cudnnBackendAttributeType_t',
] as const;
const HANDLES = [
  'cudnnHandle_t',
  'cudnnTensorDescriptor_t',
  'cudnnFilterDescriptor_t',
  'cudnnConvolutionDescriptor_t',
  'cudnnPoolingDescriptor_t',
  'cudnnDropoutDescriptor_t',
  'cudnnRNNDescriptor_t',
  'cudnnRNNDataDescriptor_t',
  'cudnnLRNDescriptor_t',
  'cudnnBackendDescriptor_t',
] as const;

export const CUDNN_ALIASES: readonly NativeAlias[] = [
  ...ENUMS.map((n): NativeAlias => ({ name: n, c: n, cls: 'enum' })),
  ...HANDLES.map((n): NativeAlias => ({ name: n, c: n, cls: 'pointer', handle: true })),
  { name: 'cudnnStream_t', c: 'cudaStream_t', cls: 'pointer', handle: true },
  // perf results are read as raw bytes at the offsets in CUDNN_PERF, never marshalled by koffi
  { name: 'cudnnFwdPerf_p', c: 'cudnnConvolutionFwdAlgoPerf_t *', cls: 'pointer', koffi: 'void *' },
  { name: 'cudnnBwdDataPerf_p', c: 'cudnnConvolutionBwdDataAlgoPerf_t *', cls: 'pointer', koffi: 'void *' },
  { name: 'cudnnBwdFilterPerf_p', c: 'cudnnConvolutionBwdFilterAlgoPerf_t *', cls: 'pointer', koffi: 'void *' },
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
  cudnnGetConvolutionBackwardFilterAlgorithm_v7: {
    proto:
      `cudnnStatus_t cudnnGetConvolutionBackwardFilterAlgorithm_v7(cudnnHandle_t handle, ${T} srcDesc, ` +
      `${T} diffDesc, ${C} convDesc, ${F} gradDesc, int requestedAlgoCount, int *returnedAlgoCount, ` +
      'cudnnBwdFilterPerf_p perfResults)',
  },
  cudnnGetConvolutionBackwardFilterWorkspaceSize: {
    proto:
      `cudnnStatus_t cudnnGetConvolutionBackwardFilterWorkspaceSize(cudnnHandle_t handle, ${T} xDesc, ` +
      `${T} dyDesc, ${C} convDesc, ${F} gradDesc, cudnnConvolutionBwdFilterAlgo_t algo, size_t *sizeInBytes)`,
  },
  cudnnConvolutionBackwardFilter: {
    proto:
      `cudnnStatus_t cudnnConvolutionBackwardFilter(cudnnHandle_t handle, const void *alpha, ${T} xDesc, ` +
      `const void *x, ${T} dyDesc, const void *dy, ${C} convDesc, cudnnConvolutionBwdFilterAlgo_t algo, ` +
      `void *workSpace, size_t workSpaceSizeInBytes, const void *beta, ${F} dwDesc, void *dw)`,
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
  cudnnPoolingBackward: {
    proto:
      `cudnnStatus_t cudnnPoolingBackward(cudnnHandle_t handle, const cudnnPoolingDescriptor_t poolingDesc, ` +
      `const void *alpha, ${T} yDesc, const void *y, ${T} dyDesc, const void *dy, ${T} xDesc, const void *x, ` +
      `const void *beta, ${T} dxDesc, void *dx)`,
  },
  cudnnDeriveBNTensorDescriptor: {
    proto: `cudnnStatus_t cudnnDeriveBNTensorDescriptor(${T} derivedBnDesc, const ${T} xDesc, cudnnBatchNormMode_t mode)`,
  },
  cudnnBatchNormalizationForwardTraining: {
    proto:
      'cudnnStatus_t cudnnBatchNormalizationForwardTraining(cudnnHandle_t handle, cudnnBatchNormMode_t mode, ' +
      `const void *alpha, const void *beta, const ${T} xDesc, const void *x, const ${T} yDesc, void *y, ` +
      `const ${T} bnScaleBiasMeanVarDesc, const void *bnScale, const void *bnBias, double exponentialAverageFactor, ` +
      'void *resultRunningMean, void *resultRunningVariance, double epsilon, void *resultSaveMean, ' +
      'void *resultSaveInvVariance)',
  },
  cudnnBatchNormalizationBackward: {
    proto:
      'cudnnStatus_t cudnnBatchNormalizationBackward(cudnnHandle_t handle, cudnnBatchNormMode_t mode, ' +
      'const void *alphaDataDiff, const void *betaDataDiff, const void *alphaParamDiff, const void *betaParamDiff, ' +
      `const ${T} xDesc, const void *x, const ${T} dyDesc, const void *dy, const ${T} dxDesc, void *dx, ` +
      `const ${T} dBnScaleBiasDesc, const void *bnScale, void *dBnScaleResult, void *dBnBiasResult, double epsilon, ` +
      'const void *savedMean, const void *savedInvVariance)',
  },
  cudnnSoftmaxForward: {
    proto:
      'cudnnStatus_t cudnnSoftmaxForward(cudnnHandle_t handle, cudnnSoftmaxAlgorithm_t algo, ' +
      `cudnnSoftmaxMode_t mode, const void *alpha, ${T} xDesc, const void *x, const void *beta, ${T} yDesc, void *y)`,
  },
  cudnnCreateLRNDescriptor: { proto: 'cudnnStatus_t cudnnCreateLRNDescriptor(cudnnLRNDescriptor_t *normDesc)' },
  cudnnSetLRNDescriptor: {
    proto:
      'cudnnStatus_t cudnnSetLRNDescriptor(cudnnLRNDescriptor_t normDesc, unsigned int lrnN, double lrnAlpha, ' +
      'double lrnBeta, double lrnK)',
  },
  cudnnDestroyLRNDescriptor: { proto: 'cudnnStatus_t cudnnDestroyLRNDescriptor(cudnnLRNDescriptor_t lrnDesc)' },
  cudnnLRNCrossChannelForward: {
    proto:
      'cudnnStatus_t cudnnLRNCrossChannelForward(cudnnHandle_t handle, cudnnLRNDescriptor_t normDesc, ' +
      `cudnnLRNMode_t lrnMode, const void *alpha, const ${T} xDesc, const void *x, const void *beta, ` +
      `const ${T} yDesc, void *y)`,
  },
  cudnnLRNCrossChannelBackward: {
    proto:
      'cudnnStatus_t cudnnLRNCrossChannelBackward(cudnnHandle_t handle, cudnnLRNDescriptor_t normDesc, ' +
      `cudnnLRNMode_t lrnMode, const void *alpha, const ${T} yDesc, const void *y, const ${T} dyDesc, ` +
      `const void *dy, const ${T} xDesc, const void *x, const void *beta, const ${T} dxDesc, void *dx)`,
  },
  // recurrent layers (cudnn_adv.h, the v8 API): one descriptor per call, weights in one weight space
  cudnnSetTensorNdDescriptor: {
    proto:
      `cudnnStatus_t cudnnSetTensorNdDescriptor(${T} tensorDesc, cudnnDataType_t dataType, int nbDims, ` +
      'const int *dimA, const int *strideA)',
  },
  cudnnCreateDropoutDescriptor: {
    proto: 'cudnnStatus_t cudnnCreateDropoutDescriptor(cudnnDropoutDescriptor_t *dropoutDesc)',
  },
  cudnnSetDropoutDescriptor: {
    proto:
      'cudnnStatus_t cudnnSetDropoutDescriptor(cudnnDropoutDescriptor_t dropoutDesc, cudnnHandle_t handle, ' +
      'float dropout, void *states, size_t stateSizeInBytes, unsigned long long seed)',
  },
  cudnnDestroyDropoutDescriptor: {
    proto: 'cudnnStatus_t cudnnDestroyDropoutDescriptor(cudnnDropoutDescriptor_t dropoutDesc)',
  },
  cudnnCreateRNNDescriptor: { proto: 'cudnnStatus_t cudnnCreateRNNDescriptor(cudnnRNNDescriptor_t *rnnDesc)' },
  cudnnDestroyRNNDescriptor: { proto: 'cudnnStatus_t cudnnDestroyRNNDescriptor(cudnnRNNDescriptor_t rnnDesc)' },
  cudnnSetRNNDescriptor_v8: {
    proto:
      'cudnnStatus_t cudnnSetRNNDescriptor_v8(cudnnRNNDescriptor_t rnnDesc, cudnnRNNAlgo_t algo, ' +
      'cudnnRNNMode_t cellMode, cudnnRNNBiasMode_t biasMode, cudnnDirectionMode_t dirMode, ' +
      'cudnnRNNInputMode_t inputMode, cudnnDataType_t dataType, cudnnDataType_t mathPrec, cudnnMathType_t mathType, ' +
      'int32_t inputSize, int32_t hiddenSize, int32_t projSize, int32_t numLayers, ' +
      'cudnnDropoutDescriptor_t dropoutDesc, uint32_t auxFlags)',
  },
  cudnnGetRNNWeightSpaceSize: {
    proto:
      'cudnnStatus_t cudnnGetRNNWeightSpaceSize(cudnnHandle_t handle, cudnnRNNDescriptor_t rnnDesc, ' +
      'size_t *weightSpaceSize)',
  },
  cudnnGetRNNWeightParams: {
    proto:
      'cudnnStatus_t cudnnGetRNNWeightParams(cudnnHandle_t handle, cudnnRNNDescriptor_t rnnDesc, ' +
      'int32_t pseudoLayer, size_t weightSpaceSize, const void *weightSpace, int32_t linLayerID, ' +
      `${T} mDesc, void **mAddr, ${T} bDesc, void **bAddr)`,
  },
  cudnnCreateRNNDataDescriptor: {
    proto: 'cudnnStatus_t cudnnCreateRNNDataDescriptor(cudnnRNNDataDescriptor_t *rnnDataDesc)',
  },
  cudnnDestroyRNNDataDescriptor: {
    proto: 'cudnnStatus_t cudnnDestroyRNNDataDescriptor(cudnnRNNDataDescriptor_t rnnDataDesc)',
  },
  cudnnSetRNNDataDescriptor: {
    proto:
      'cudnnStatus_t cudnnSetRNNDataDescriptor(cudnnRNNDataDescriptor_t rnnDataDesc, cudnnDataType_t dataType, ' +
      'cudnnRNNDataLayout_t layout, int maxSeqLength, int batchSize, int vectorSize, const int *seqLengthArray, ' +
      'void *paddingFill)',
  },
  cudnnGetRNNTempSpaceSizes: {
    proto:
      'cudnnStatus_t cudnnGetRNNTempSpaceSizes(cudnnHandle_t handle, cudnnRNNDescriptor_t rnnDesc, ' +
      'cudnnForwardMode_t fwdMode, cudnnRNNDataDescriptor_t xDesc, size_t *workSpaceSize, size_t *reserveSpaceSize)',
  },
  cudnnRNNForward: {
    proto:
      'cudnnStatus_t cudnnRNNForward(cudnnHandle_t handle, cudnnRNNDescriptor_t rnnDesc, cudnnForwardMode_t fwdMode, ' +
      'const int32_t *devSeqLengths, cudnnRNNDataDescriptor_t xDesc, const void *x, cudnnRNNDataDescriptor_t yDesc, ' +
      `void *y, ${T} hDesc, const void *hx, void *hy, ${T} cDesc, const void *cx, void *cy, ` +
      'size_t weightSpaceSize, const void *weightSpace, size_t workSpaceSize, void *workSpace, ' +
      'size_t reserveSpaceSize, void *reserveSpace)',
  },
  cudnnRNNBackwardData_v8: {
    proto:
      'cudnnStatus_t cudnnRNNBackwardData_v8(cudnnHandle_t handle, cudnnRNNDescriptor_t rnnDesc, ' +
      'const int32_t *devSeqLengths, cudnnRNNDataDescriptor_t yDesc, const void *y, const void *dy, ' +
      `cudnnRNNDataDescriptor_t xDesc, void *dx, ${T} hDesc, const void *hx, const void *dhy, void *dhx, ` +
      `${T} cDesc, const void *cx, const void *dcy, void *dcx, size_t weightSpaceSize, const void *weightSpace, ` +
      'size_t workSpaceSize, void *workSpace, size_t reserveSpaceSize, void *reserveSpace)',
  },
  cudnnRNNBackwardWeights_v8: {
    proto:
      'cudnnStatus_t cudnnRNNBackwardWeights_v8(cudnnHandle_t handle, cudnnRNNDescriptor_t rnnDesc, ' +
      'cudnnWgradMode_t addGrad, const int32_t *devSeqLengths, cudnnRNNDataDescriptor_t xDesc, const void *x, ' +
      `${T} hDesc, const void *hx, cudnnRNNDataDescriptor_t yDesc, const void *y, size_t weightSpaceSize, ` +
      'void *dweightSpace, size_t workSpaceSize, void *workSpace, size_t reserveSpaceSize, void *reserveSpace)',
  },
  // the graph API (cudnn_graph.h): convolutions through execution plans made once a shape
  cudnnBackendCreateDescriptor: {
    proto:
      'cudnnStatus_t cudnnBackendCreateDescriptor(cudnnBackendDescriptorType_t descriptorType, ' +
      'cudnnBackendDescriptor_t *descriptor)',
  },
  cudnnBackendDestroyDescriptor: {
    proto: 'cudnnStatus_t cudnnBackendDestroyDescriptor(cudnnBackendDescriptor_t descriptor)',
  },
  cudnnBackendFinalize: { proto: 'cudnnStatus_t cudnnBackendFinalize(cudnnBackendDescriptor_t descriptor)' },
  cudnnBackendSetAttribute: {
    proto:
      'cudnnStatus_t cudnnBackendSetAttribute(cudnnBackendDescriptor_t descriptor, ' +
      'cudnnBackendAttributeName_t attributeName, cudnnBackendAttributeType_t attributeType, ' +
      'int64_t elementCount, const void *arrayOfElements)',
  },
  cudnnBackendGetAttribute: {
    proto:
      'cudnnStatus_t cudnnBackendGetAttribute(cudnnBackendDescriptor_t descriptor, ' +
      'cudnnBackendAttributeName_t attributeName, cudnnBackendAttributeType_t attributeType, ' +
      'int64_t requestedElementCount, int64_t *elementCount, void *arrayOfElements)',
  },
  cudnnBackendExecute: {
    proto:
      'cudnnStatus_t cudnnBackendExecute(cudnnHandle_t handle, cudnnBackendDescriptor_t executionPlan, ' +
      'cudnnBackendDescriptor_t variantPack)',
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
  CUDNN_BATCHNORM_SPATIAL: 1,
  CUDNN_RNN_ALGO_STANDARD: 0,
  CUDNN_LSTM: 2,
  CUDNN_GRU: 3,
  CUDNN_RNN_NO_BIAS: 0,
  CUDNN_RNN_DOUBLE_BIAS: 2,
  CUDNN_UNIDIRECTIONAL: 0,
  CUDNN_LINEAR_INPUT: 0,
  CUDNN_FWD_MODE_INFERENCE: 0,
  CUDNN_FWD_MODE_TRAINING: 1,
  CUDNN_RNN_DATA_LAYOUT_SEQ_MAJOR_PACKED: 1,
  CUDNN_RNN_PADDED_IO_DISABLED: 0,
  CUDNN_WGRAD_MODE_ADD: 0,
  CUDNN_LRN_CROSS_CHANNEL_DIM1: 0,
  CUDNN_LRN_MIN_N: 1,
  CUDNN_LRN_MAX_N: 16,
  // the graph API: descriptor types
  CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR: 1,
  CUDNN_BACKEND_ENGINE_DESCRIPTOR: 2,
  CUDNN_BACKEND_ENGINECFG_DESCRIPTOR: 3,
  CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR: 4,
  CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR: 5,
  CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR: 10,
  CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR: 11,
  CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR: 12,
  CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR: 15,
  CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR: 16,
  CUDNN_BACKEND_TENSOR_DESCRIPTOR: 17,
  // attribute value types
  CUDNN_TYPE_HANDLE: 0,
  CUDNN_TYPE_DATA_TYPE: 1,
  CUDNN_TYPE_INT64: 3,
  CUDNN_TYPE_FLOAT: 4,
  CUDNN_TYPE_DOUBLE: 5,
  CUDNN_TYPE_VOID_PTR: 6,
  CUDNN_TYPE_CONVOLUTION_MODE: 7,
  CUDNN_TYPE_HEUR_MODE: 8,
  CUDNN_TYPE_NUMERICAL_NOTE: 11,
  CUDNN_TYPE_BACKEND_DESCRIPTOR: 15,
  CUDNN_TYPE_BEHAVIOR_NOTE: 19,
  // attribute names
  CUDNN_ATTR_CONVOLUTION_COMP_TYPE: 100,
  CUDNN_ATTR_CONVOLUTION_CONV_MODE: 101,
  CUDNN_ATTR_CONVOLUTION_DILATIONS: 102,
  CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES: 103,
  CUDNN_ATTR_CONVOLUTION_POST_PADDINGS: 104,
  CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS: 105,
  CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS: 106,
  CUDNN_ATTR_ENGINEHEUR_MODE: 200,
  CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH: 201,
  CUDNN_ATTR_ENGINEHEUR_RESULTS: 202,
  CUDNN_ATTR_ENGINECFG_ENGINE: 300,
  CUDNN_ATTR_EXECUTION_PLAN_HANDLE: 400,
  CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG: 401,
  CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE: 402,
  CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA: 700,
  CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA: 701,
  CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC: 702,
  CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W: 703,
  CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X: 704,
  CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y: 705,
  CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_ALPHA: 706,
  CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_BETA: 707,
  CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_CONV_DESC: 708,
  CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_W: 709,
  CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DX: 710,
  CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DY: 711,
  CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_ALPHA: 712,
  CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_BETA: 713,
  CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_CONV_DESC: 714,
  CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DW: 715,
  CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_X: 716,
  CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DY: 717,
  CUDNN_ATTR_OPERATIONGRAPH_HANDLE: 800,
  CUDNN_ATTR_OPERATIONGRAPH_OPS: 801,
  CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT: 900,
  CUDNN_ATTR_TENSOR_DATA_TYPE: 901,
  CUDNN_ATTR_TENSOR_DIMENSIONS: 902,
  CUDNN_ATTR_TENSOR_STRIDES: 903,
  CUDNN_ATTR_TENSOR_UNIQUE_ID: 906,
  CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS: 1000,
  CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS: 1001,
  CUDNN_ATTR_VARIANT_PACK_WORKSPACE: 1003,
  CUDNN_ATTR_ENGINE_NUMERICAL_NOTE: 1303,
  CUDNN_ATTR_ENGINE_BEHAVIOR_NOTE: 1305,
  // heuristics, and the notes an engine carries
  CUDNN_HEUR_MODE_INSTANT: 0,
  CUDNN_HEUR_MODE_FALLBACK: 2,
  CUDNN_HEUR_MODE_A: 3,
  CUDNN_NUMERICAL_NOTE_TENSOR_CORE: 0,
  CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS: 1,
  CUDNN_NUMERICAL_NOTE_REDUCED_PRECISION_REDUCTION: 2,
  CUDNN_NUMERICAL_NOTE_TYPE_COUNT: 10,
  CUDNN_BEHAVIOR_NOTE_RUNTIME_COMPILATION: 0,
  CUDNN_BEHAVIOR_NOTE_TYPE_COUNT: 4,
} as const;

/** cudnnConvolutionFwdAlgoPerf_t, cudnnConvolutionBwdDataAlgoPerf_t and
 *  cudnnConvolutionBwdFilterAlgoPerf_t share this layout */
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
  cudnnGetConvolutionBackwardFilterAlgorithm_v7(
    h: H,
    x: H,
    dy: H,
    c: H,
    dw: H,
    requested: number,
    returned: Int32Array,
    perf: Uint8Array,
  ): R;
  cudnnGetConvolutionBackwardFilterWorkspaceSize(h: H, x: H, dy: H, c: H, dw: H, algo: number, out: BigUint64Array): R;
  cudnnConvolutionBackwardFilter(
    h: H,
    alpha: ArrayBufferView,
    xd: H,
    x: P,
    dyd: H,
    dy: P,
    cd: H,
    algo: number,
    ws: P | null,
    wsBytes: number,
    beta: ArrayBufferView,
    dwd: H,
    dw: P,
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
  cudnnPoolingBackward(
    h: H,
    pd: H,
    alpha: ArrayBufferView,
    yd: H,
    y: P,
    dyd: H,
    dy: P,
    xd: H,
    x: P,
    beta: ArrayBufferView,
    dxd: H,
    dx: P,
  ): R;
  cudnnDeriveBNTensorDescriptor(d: H, x: H, mode: number): R;
  cudnnBatchNormalizationForwardTraining(
    h: H,
    mode: number,
    alpha: ArrayBufferView,
    beta: ArrayBufferView,
    xd: H,
    x: P,
    yd: H,
    y: P,
    bnd: H,
    scale: P,
    bias: P,
    factor: number,
    runMean: P | null,
    runVar: P | null,
    eps: number,
    saveMean: P | null,
    saveInvVar: P | null,
  ): R;
  cudnnBatchNormalizationBackward(
    h: H,
    mode: number,
    alphaData: ArrayBufferView,
    betaData: ArrayBufferView,
    alphaParam: ArrayBufferView,
    betaParam: ArrayBufferView,
    xd: H,
    x: P,
    dyd: H,
    dy: P,
    dxd: H,
    dx: P,
    bnd: H,
    scale: P,
    dScale: P,
    dBias: P,
    eps: number,
    savedMean: P | null,
    savedInvVar: P | null,
  ): R;
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
  cudnnCreateLRNDescriptor(out: BigUint64Array): R;
  cudnnSetLRNDescriptor(d: H, n: number, alpha: number, beta: number, k: number): R;
  cudnnDestroyLRNDescriptor(d: H): R;
  cudnnLRNCrossChannelForward(
    h: H,
    d: H,
    mode: number,
    alpha: ArrayBufferView,
    xd: H,
    x: P,
    beta: ArrayBufferView,
    yd: H,
    y: P,
  ): R;
  cudnnLRNCrossChannelBackward(
    h: H,
    d: H,
    mode: number,
    alpha: ArrayBufferView,
    yd: H,
    y: P,
    dyd: H,
    dy: P,
    xd: H,
    x: P,
    beta: ArrayBufferView,
    dxd: H,
    dx: P,
  ): R;
  cudnnSetTensorNdDescriptor(d: H, type: number, nbDims: number, dims: Int32Array, strides: Int32Array): R;
  cudnnCreateDropoutDescriptor(out: BigUint64Array): R;
  cudnnSetDropoutDescriptor(d: H, h: H, dropout: number, states: P | null, bytes: number, seed: number): R;
  cudnnDestroyDropoutDescriptor(d: H): R;
  cudnnCreateRNNDescriptor(out: BigUint64Array): R;
  cudnnDestroyRNNDescriptor(d: H): R;
  cudnnSetRNNDescriptor_v8(
    d: H,
    algo: number,
    cellMode: number,
    biasMode: number,
    dirMode: number,
    inputMode: number,
    dataType: number,
    mathPrec: number,
    mathType: number,
    inputSize: number,
    hiddenSize: number,
    projSize: number,
    numLayers: number,
    dropout: H,
    auxFlags: number,
  ): R;
  cudnnGetRNNWeightSpaceSize(h: H, d: H, out: BigUint64Array): R;
  cudnnGetRNNWeightParams(
    h: H,
    d: H,
    pseudoLayer: number,
    wsBytes: number,
    ws: P,
    linLayerID: number,
    mDesc: H,
    mAddr: BigUint64Array,
    bDesc: H,
    bAddr: BigUint64Array,
  ): R;
  cudnnCreateRNNDataDescriptor(out: BigUint64Array): R;
  cudnnDestroyRNNDataDescriptor(d: H): R;
  cudnnSetRNNDataDescriptor(
    d: H,
    type: number,
    layout: number,
    maxSeq: number,
    batch: number,
    vector: number,
    seqLengths: Int32Array,
    paddingFill: ArrayBufferView | null,
  ): R;
  cudnnGetRNNTempSpaceSizes(h: H, d: H, fwdMode: number, xd: H, ws: BigUint64Array, reserve: BigUint64Array): R;
  cudnnRNNForward(
    h: H,
    d: H,
    fwdMode: number,
    devSeqLengths: P,
    xd: H,
    x: P,
    yd: H,
    y: P,
    hd: H,
    hx: P | null,
    hy: P | null,
    cd: H,
    cx: P | null,
    cy: P | null,
    wBytes: number,
    w: P,
    wsBytes: number,
    ws: P | null,
    reserveBytes: number,
    reserve: P | null,
  ): R;
  cudnnRNNBackwardData_v8(
    h: H,
    d: H,
    devSeqLengths: P,
    yd: H,
    y: P,
    dy: P,
    xd: H,
    dx: P,
    hd: H,
    hx: P | null,
    dhy: P | null,
    dhx: P | null,
    cd: H,
    cx: P | null,
    dcy: P | null,
    dcx: P | null,
    wBytes: number,
    w: P,
    wsBytes: number,
    ws: P | null,
    reserveBytes: number,
    reserve: P | null,
  ): R;
  cudnnRNNBackwardWeights_v8(
    h: H,
    d: H,
    addGrad: number,
    devSeqLengths: P,
    xd: H,
    x: P,
    hd: H,
    hx: P | null,
    yd: H,
    y: P,
    wBytes: number,
    dw: P,
    wsBytes: number,
    ws: P | null,
    reserveBytes: number,
    reserve: P | null,
  ): R;
  cudnnBackendCreateDescriptor(type: number, out: BigUint64Array): R;
  cudnnBackendDestroyDescriptor(d: H): R;
  cudnnBackendFinalize(d: H): R;
  cudnnBackendSetAttribute(d: H, name: number, type: number, count: number, values: ArrayBufferView): R;
  cudnnBackendGetAttribute(
    d: H,
    name: number,
    type: number,
    requested: number,
    count: BigInt64Array,
    values: ArrayBufferView | null,
  ): R;
  cudnnBackendExecute(h: H, plan: H, variantPack: H): R;
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
