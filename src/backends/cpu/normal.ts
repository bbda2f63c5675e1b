// randn's map from one 32-bit word to a standard normal f32, bit-identical to NormalTable::normal
// in hip-src/random.hip: the inverse normal CDF as a cubic on one of 257 segments (the table and
// its derivation: scripts/randn/gen-table.ts). v = f32(2 (w mod 2^31) + 1) is p = v 2^-33 in
// (0, 1/2] scaled; the segment is v's binade e and the top 3 bits s of its significand; the
// cubic runs in d = v - a, a = 2^e (1 + (2s + 1)/16) the segment's middle (exact); the sign is
// w's top bit. Every + and * is one f32 rounding (Math.fround of the exact double result).
import { RANDN_SEGMENTS, RANDN_TABLE } from './randn-table.ts';

const fr = Math.fround;
const C0 = RANDN_TABLE.subarray(0, RANDN_SEGMENTS),
  C1 = RANDN_TABLE.subarray(RANDN_SEGMENTS, 2 * RANDN_SEGMENTS);
const C2 = RANDN_TABLE.subarray(2 * RANDN_SEGMENTS, 3 * RANDN_SEGMENTS),
  C3 = RANDN_TABLE.subarray(3 * RANDN_SEGMENTS);
const POW2 = Float64Array.from({ length: 33 }, (_, e) => 2 ** e);
const INV = Float64Array.from({ length: 33 }, (_, e) => 2 ** (3 - e));

/** the normal of word w (an int32 or u32 bit pattern) */
export function normalOfWord(w: number): number {
  const v = fr(((w << 1) | 1) >>> 0); // I2F, round to nearest even
  let i = 256,
    a = 4563402752; // v = 2^32: the last segment (all zero), a its middle
  if (v < 4294967296) {
    const e = 31 - Math.clz32(v);
    const s = (v * INV[e]! - 8) | 0; // exact: v 2^(3 - e) in [8, 16)
    i = e * 8 + s;
    a = POW2[e]! * (1 + (2 * s + 1) / 16);
  }
  const d = v - a; // exact
  const z = fr(fr(fr(fr(fr(fr(C3[i]! * d) + C2[i]!) * d) + C1[i]!) * d) + C0[i]!);
  return w < 0 || w >= 2147483648 ? -z : z;
}
