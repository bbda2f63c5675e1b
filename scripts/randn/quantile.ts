// The standard normal distribution in double precision, accurate to about 1e-13 relative, for
// generating and checking randn's f32 table (scripts/randn/gen-table.ts, test/cpu/random.test.ts).
// Not used at run time.

/** erfc(x) for x >= 0: the positive series of erf below 2 (no cancellation in the series
 *  itself; 1 - erf loses under 3 digits there), the continued fraction above */
export function erfc(x: number): number {
  if (x < 2) {
    // erf(x) = 2/sqrt(pi) exp(-x^2) sum_n 2^n x^(2n+1) / (1 3 5 ... (2n+1))
    let term = x,
      sum = x;
    for (let n = 1; term > 1e-18 * sum; n++) {
      term *= (2 * x * x) / (2 * n + 1);
      sum += term;
    }
    return 1 - (2 / Math.sqrt(Math.PI)) * Math.exp(-x * x) * sum;
  }
  // erfc(x) = exp(-x^2)/sqrt(pi) / (x + (1/2)/(x + (2/2)/(x + (3/2)/(x + ...)))), from the tail
  let k = x;
  for (let n = 120; n >= 1; n--) k = x + n / 2 / k;
  return Math.exp(-x * x) / Math.sqrt(Math.PI) / k;
}

/** P(Z <= z) for z <= 0 */
export function normalCdfNeg(z: number): number {
  return 0.5 * erfc(-z / Math.SQRT2);
}

/** the z <= 0 with P(Z <= z) = p, for p in (0, 0.5]: bisection to a bracket, then Newton */
export function normalQuantileLow(p: number): number {
  if (!(p > 0 && p <= 0.5)) throw new RangeError(`normalQuantileLow: p ${p} outside (0, 0.5]`);
  if (p === 0.5) return 0;
  let lo = -40,
    hi = 0;
  for (let i = 0; i < 40; i++) {
    const mid = 0.5 * (lo + hi);
    if (normalCdfNeg(mid) < p) lo = mid;
    else hi = mid;
  }
  let z = 0.5 * (lo + hi);
  for (let i = 0; i < 4; i++) {
    const density = Math.exp(-0.5 * z * z) / Math.sqrt(2 * Math.PI);
    z -= (normalCdfNeg(z) - p) / density;
  }
  return z;
}
