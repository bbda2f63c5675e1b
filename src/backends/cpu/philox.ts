// Philox 4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", the Random123
// generator) and the f32 arithmetic that turns its words into numbers, written so that every
// result is bit-identical to hip-src/random.hip on both GPU vendors.
//
// The mapping from (seed, element index) to bits, shared by every random op:
//   key      = the seed as a 64-bit integer (mod 2^64): word 0 its low 32 bits, word 1 its high.
//   counter  = block b as a 64-bit number in words 0 (low) and 1 (high); words 2 and 3 are 0.
//   32-bit draws (rand f32/f16/bf16, randn, bernoulli, dropout, multinomial keys): element i
//            takes word i & 3 of block i >> 2.
//   64-bit draws (rand f64, randint, multinomial with replacement): element i takes words
//            2(i & 1) (high half) and 2(i & 1) + 1 (low half) of block i >> 1.
// So element i depends on the seed and on i only, never on the shape, and every op with the
// same seed reads the same words (dropout(x, p, seed) drops exactly where rand(seed) < p).
//
// Floats are computed with one rounding per f32 operation: Math.fround after each +, -, *, /
// and sqrt of f32 values equals the f32 operation (a double holds the exact result to more than
// twice f32's precision, so rounding it once to f32 is the correctly rounded f32 result). The
// GPU side uses explicitly rounded operations with no fused multiply-add, so the two agree.
const fr = Math.fround;

export const PHILOX_M0 = 0xd2511f53;
export const PHILOX_M1 = 0xcd9e8d57;
export const PHILOX_W0 = 0x9e3779b9;
export const PHILOX_W1 = 0xbb67ae85;
const M0H = PHILOX_M0 >>> 16,
  M0L = PHILOX_M0 & 0xffff;
const M1H = PHILOX_M1 >>> 16,
  M1L = PHILOX_M1 & 0xffff;

/** high 32 bits of a * (bh * 2^16 + bl) for u32 a, from 16-bit halves (every partial product
 *  stays below 2^53, so doubles hold them exactly), as an int32 bit pattern */
export function mulhi(a: number, bh: number, bl: number): number {
  const ah = a >>> 16,
    al = a & 0xffff;
  const ll = al * bl;
  const mid = ah * bl + al * bh + (ll >>> 16);
  return (ah * bh + ((mid / 65536) | 0)) | 0;
}

/** the key as two u32 words (low, high) of the seed mod 2^64; BigInt only once per call */
export function seedKey(seed: number): [number, number] {
  const s = BigInt.asUintN(64, BigInt(seed));
  return [Number(s & 0xffffffffn), Number(s >> 32n)];
}

/**
 * Philox 4x32-10 of counter (c0, c1, c2, c3) under key (k0, k1), written to out[0..3] (int32
 * bit patterns; `>>> 0` gives the u32). Ten rounds; the key is bumped by the Weyl constants
 * between rounds.
 */
export function philox(c0: number, c1: number, c2: number, c3: number, k0: number, k1: number, out: Int32Array): void {
  for (let r = 0; r < 10; r++) {
    if (r > 0) {
      k0 = (k0 + PHILOX_W0) | 0;
      k1 = (k1 + PHILOX_W1) | 0;
    }
    const hi0 = mulhi(c0, M0H, M0L),
      lo0 = Math.imul(c0, PHILOX_M0);
    const hi1 = mulhi(c2, M1H, M1L),
      lo1 = Math.imul(c2, PHILOX_M1);
    c0 = hi1 ^ c1 ^ k0;
    c1 = lo1;
    c2 = hi0 ^ c3 ^ k1;
    c3 = lo0;
  }
  out[0] = c0;
  out[1] = c1;
  out[2] = c2;
  out[3] = c3;
}

/** the round keys of one key, so a loop over blocks does not recompute the schedule */
export function roundKeys(k0: number, k1: number): Int32Array {
  const ks = new Int32Array(20);
  for (let r = 0; r < 10; r++) {
    ks[2 * r] = k0;
    ks[2 * r + 1] = k1;
    k0 = (k0 + PHILOX_W0) | 0;
    k1 = (k1 + PHILOX_W1) | 0;
  }
  return ks;
}

/** block b (counter words 2, 3 zero) under precomputed round keys, into out[0..3] */
export function block(b: number, ks: Int32Array, out: Int32Array): void {
  let c0 = b | 0,
    c1 = (b / 4294967296) | 0,
    c2 = 0,
    c3 = 0;
  for (let r = 0; r < 20; r += 2) {
    const hi0 = mulhi(c0, M0H, M0L),
      lo0 = Math.imul(c0, PHILOX_M0);
    const hi1 = mulhi(c2, M1H, M1L),
      lo1 = Math.imul(c2, PHILOX_M1);
    c0 = hi1 ^ c1 ^ ks[r]!;
    c1 = lo1;
    c2 = hi0 ^ c3 ^ ks[r + 1]!;
    c3 = lo0;
  }
  out[0] = c0;
  out[1] = c1;
  out[2] = c2;
  out[3] = c3;
}

// ---- f32 log for the exponential keys of multinomial ------------------------------------------
// Constants are given as f32 bit patterns, the same ones hip-src/random.hip uses.
const cvt = new Float32Array(1),
  cvtBits = new Uint32Array(cvt.buffer);
export function f32FromBits(b: number): number {
  cvtBits[0] = b;
  return cvt[0]!;
}

/** log(1 + f) = f - s (f - R), s = f / (2 + f), R = 2s^2/3 + 2s^4/5 + ... (atanh series) */
const LG1 = f32FromBits(0x3f2aaaab),
  LG2 = f32FromBits(0x3ecccccd),
  LG3 = f32FromBits(0x3e924925),
  LG4 = f32FromBits(0x3e638e39);
/** ln 2 = LN2_HI + LN2_LO; LN2_HI has 15 significant bits, so e * LN2_HI is exact */
const LN2_HI = f32FromBits(0x3f317200),
  LN2_LO = f32FromBits(0x35bfbe8e);
const SQRT2 = f32FromBits(0x3fb504f3);
const POW2_NEG = Float64Array.from({ length: 32 }, (_, i) => 2 ** -i);
/**
 * log(k * 2^-24) in f32 for an integer k in [1, 2^24]: k = m * 2^e exactly with m in
 * [sqrt(1/2), sqrt(2)), then the fdlibm-style series for log(m). Within about 1 ulp of the
 * correctly rounded log (test/cpu/random.test.ts measures it).
 */
export function logU24(k: number): number {
  const msb = 31 - Math.clz32(k);
  let e = msb - 24;
  let m = k * POW2_NEG[msb]!; // exact: m in [1, 2)
  if (m >= SQRT2) {
    m *= 0.5;
    e += 1;
  }
  const f = m - 1; // exact (Sterbenz)
  const s = fr(f / fr(2 + f));
  const z = fr(s * s);
  const R = fr(z * fr(LG1 + fr(z * fr(LG2 + fr(z * fr(LG3 + fr(z * LG4)))))));
  const hfsq = fr(fr(0.5 * f) * f);
  return fr(e * LN2_HI - fr(fr(hfsq - fr(fr(s * fr(hfsq + R)) + fr(e * LN2_LO))) - f));
}
