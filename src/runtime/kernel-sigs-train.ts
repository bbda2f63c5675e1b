// Signatures of the training kernels (hip-src/optim.hip, cross-entropy.hip, norm-grad.hip,
// softmax-grad.hip, swiglu.hip), in the form of KERNEL_SIGNATURES in kernel-sigs.ts, which merges them.
import type { DType } from '../core/dtype.ts';
import type { ArgSpec } from './arg-spec.ts';

/** optim.hip's (parameter dtype, state dtype) pairs */
export const OPTIM_PAIRS: readonly (readonly [DType, DType])[] = [
  ['f32', 'f32'],
  ['f64', 'f64'],
  ['f16', 'f16'],
  ['bf16', 'bf16'],
  ['f16', 'f32'],
  ['bf16', 'f32'],
];
/** u64 words a tensor in optim.hip's table (OPTIM_WORDS), and elements a chunk (OPTIM_CHUNK) */
export const OPTIM_WORDS = 8;
export const OPTIM_CHUNK = 4096;

const TRAIN_FLOATS: readonly DType[] = ['f32', 'f64', 'f16', 'bf16'];
/** norm-grad.hip's one-row-a-wave kernels: columns a lane holds (rows up to V x wave size) */
export const NORM_GRAD_WAVE_V = [24] as const;

function optimSigs(): Map<string, readonly ArgSpec[]> {
  const m = new Map<string, readonly ArgSpec[]>();
  for (const [p, s] of OPTIM_PAIRS) {
    m.set(`optim_adam_${p}_${s}`, [
      'ptr',
      'u32',
      'u64',
      'f64',
      'f64',
      'f64',
      'f64',
      'f64',
      'f64',
      'f64',
      'f64',
      'f64',
      'u32',
    ]);
    m.set(`optim_sgd_${p}_${s}`, ['ptr', 'u32', 'u64', 'f64', 'f64', 'f64', 'f64', 'u32']);
  }
  return m;
}

function xentSigs(): Map<string, readonly ArgSpec[]> {
  const m = new Map<string, readonly ArgSpec[]>();
  for (const d of TRAIN_FLOATS) {
    m.set(`xent_fwd_${d}`, ['ptr', 'ptr', 'ptr', 'ptr', 'i64', 'i64', 'i64', 'i64', 'u64', 'u64', 'i64', 'f64']);
    m.set(`xent_bwd_${d}`, [
      ...(['ptr', 'ptr', 'ptr', 'ptr', 'ptr'] as const),
      ...(['i64', 'i64', 'i64', 'i64', 'i64'] as const),
      ...(['u64', 'u64', 'i64', 'i64', 'f64'] as const),
    ]);
  }
  return m;
}

function normGradSigs(): Map<string, readonly ArgSpec[]> {
  const m = new Map<string, readonly ArgSpec[]>();
  for (const d of TRAIN_FLOATS) {
    const rowArgs: ArgSpec[] = ['ptr', 'ptr', 'ptr', 'ptr', 'ptr', 'i64', 'i64', 'i64', 'i64', 'u64', 'u64', 'f64'];
    m.set(`layernormgrad_${d}`, [...rowArgs, 'u32']);
    m.set(`rmsnormgrad_${d}`, rowArgs);
    m.set(`normgrad_cols_${d}`, ['ptr', 'ptr', 'ptr', 'i64', 'i64', 'u64', 'u32', 'u32']);
    if (d === 'f64') continue;
    for (const v of NORM_GRAD_WAVE_V) {
      m.set(`layernormgrad_${d}_w${v}`, [...rowArgs, 'u32']);
      m.set(`rmsnormgrad_${d}_w${v}`, rowArgs);
    }
  }
  return m;
}

function softmaxGradSigs(): Map<string, readonly ArgSpec[]> {
  const m = new Map<string, readonly ArgSpec[]>();
  for (const d of TRAIN_FLOATS)
    m.set(`softmaxgrad_${d}`, ['ptr', 'ptr', 'ptr', 'i64', 'i64', 'i64', 'u64', 'u64', 'u32']);
  return m;
}

function swigluSigs(): Map<string, readonly ArgSpec[]> {
  const m = new Map<string, readonly ArgSpec[]>();
  for (const d of TRAIN_FLOATS) {
    m.set(`swiglu_fwd_${d}`, ['ptr', 'ptr', 'i64', 'i64', 'u64', 'u64']);
    m.set(`swiglu_bwd_${d}`, ['ptr', 'ptr', 'ptr', 'i64', 'i64', 'i64', 'u64', 'u64']);
  }
  return m;
}

/** merged into KERNEL_SIGNATURES (kernel-sigs.ts) */
export const TRAIN_KERNEL_SIGNATURES: Readonly<Record<string, () => ReadonlyMap<string, readonly ArgSpec[]>>> = {
  'optim.hip': optimSigs,
  'cross-entropy.hip': xentSigs,
  'norm-grad.hip': normGradSigs,
  'softmax-grad.hip': softmaxGradSigs,
  'swiglu.hip': swigluSigs,
};
