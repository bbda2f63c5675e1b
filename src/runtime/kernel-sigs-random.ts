// Signatures of hip-src/random.hip, in the form of KERNEL_SIGNATURES in kernel-sigs.ts (which
// spreads RANDOM_KERNEL_SIGNATURES), so the ABI test checks them against every arch's code
// object and the PTX. Types only are imported from kernel-sigs.ts, so there is no cycle.
import { DTYPES, FLOAT_DTYPES } from '../core/dtype.ts';
import type { ArgSpec } from './arg-spec.ts';

/** y, n, k0, k1 */
export const RAND_SIG: readonly ArgSpec[] = ['ptr', 'u64', 'u32', 'u32'];
/** y, n, k0, k1, low, range */
export const RANDINT_SIG: readonly ArgSpec[] = ['ptr', 'u64', 'u32', 'u32', 'i64', 'u64'];
/** y, n, k0, k1, threshold */
export const BERNOULLI_SCALAR_SIG: readonly ArgSpec[] = ['ptr', 'u64', 'u32', 'u32', 'u32'];
/** y, p, pOff, n, k0, k1 (also multinomial_keys: keys, p, pOff, n, k0, k1) */
export const BERNOULLI_SIG: readonly ArgSpec[] = ['ptr', 'ptr', 'i64', 'u64', 'u32', 'u32'];
/** cdf, p, pOff, rows, cols */
export const MULTINOMIAL_CDF_SIG: readonly ArgSpec[] = ['ptr', 'ptr', 'i64', 'u64', 'u64'];
/** y, cdf, rows, cols, numSamples, k0, k1 */
export const MULTINOMIAL_DRAW_SIG: readonly ArgSpec[] = ['ptr', 'ptr', 'u64', 'u64', 'u64', 'u32', 'u32'];

function randomSigs(): Map<string, readonly ArgSpec[]> {
  const m = new Map<string, readonly ArgSpec[]>();
  for (const d of FLOAT_DTYPES) {
    m.set(`rand_${d}`, RAND_SIG);
    m.set(`randn_${d}`, RAND_SIG);
    // y, x, xOff, n, k0, k1, threshold, scale (f64 for f64 data, f32 otherwise)
    m.set(`dropout_${d}`, ['ptr', 'ptr', 'i64', 'u64', 'u32', 'u32', 'u32', d === 'f64' ? 'f64' : 'f32']);
    m.set(`multinomial_keys_${d}`, BERNOULLI_SIG);
    m.set(`multinomial_cdf_${d}`, MULTINOMIAL_CDF_SIG);
    for (const y of DTYPES) m.set(`bernoulli_${d}_${y}`, BERNOULLI_SIG);
  }
  for (const d of DTYPES) {
    m.set(`randint_${d}`, RANDINT_SIG);
    m.set(`bernoulli_scalar_${d}`, BERNOULLI_SCALAR_SIG);
  }
  for (const i of ['i64', 'u32'] as const) m.set(`multinomial_draw_${i}`, MULTINOMIAL_DRAW_SIG);
  return m;
}

/** merge into KERNEL_SIGNATURES (kernel-sigs.ts) */
export const RANDOM_KERNEL_SIGNATURES: Readonly<Record<string, () => ReadonlyMap<string, readonly ArgSpec[]>>> = {
  'random.hip': randomSigs,
};
