// Names and parameter records shared by the op dispatchers (ops/*.ts) and their CPU and GPU
// implementations (backends/cpu/*.ts, backends/gpu/*.ts), so each op is spelled out once.

export const UNARY_OPS = [
  'exp',
  'log',
  'sin',
  'cos',
  'tanh',
  'neg',
  'recip',
  'sqr',
  'sqrt',
  'gelu',
  'geluErf',
  'erf',
  'relu',
  'silu',
  'abs',
  'ceil',
  'floor',
  'round',
  'sign',
  'sigmoid',
] as const;
export type UnaryOp = (typeof UNARY_OPS)[number];

/** unary ops with scalar parameters: y = f(x; a, b) */
export const PARAM_UNARY_OPS = ['affine', 'powf', 'elu', 'clamp', 'leakyRelu'] as const;
export type ParamUnaryOp = (typeof PARAM_UNARY_OPS)[number];
/** affine: x*a + b; powf: x^a; elu: alpha a; clamp: [a, b]; leakyRelu: slope a */
export interface ParamUnary {
  readonly op: ParamUnaryOp;
  readonly a: number;
  readonly b: number;
}

export const BINARY_OPS = ['add', 'sub', 'mul', 'div', 'maximum', 'minimum'] as const;
export type BinaryOp = (typeof BINARY_OPS)[number];

export const CMP_OPS = ['eq', 'ne', 'lt', 'le', 'gt', 'ge'] as const;
export type CmpOp = (typeof CMP_OPS)[number];

export const REDUCE_OPS = ['sum', 'min', 'max', 'mean', 'argmin', 'argmax'] as const;
export type ReduceOp = (typeof REDUCE_OPS)[number];

export interface Conv2dParams {
  readonly padding: readonly [number, number];
  readonly stride: readonly [number, number];
  readonly dilation: readonly [number, number];
  readonly groups: number;
}
export interface ConvTranspose2dParams extends Conv2dParams {
  readonly outputPadding: readonly [number, number];
}
export interface Pool2dParams {
  readonly kernel: readonly [number, number];
  readonly stride: readonly [number, number];
  readonly padding: readonly [number, number];
  /** avgPool2d only (PyTorch's count_include_pad, default true) */
  readonly countIncludePad: boolean;
}

/** where the causal diagonal sits when tq != tk */
export type CausalAlign = 'top-left' | 'bottom-right';
export const CAUSAL_ALIGNS: readonly CausalAlign[] = ['top-left', 'bottom-right'];
