// Moving elements as bits. A float element read into a JS number and written back is not always
// the same bits: JavaScriptCore (Bun) canonicalizes every NaN payload, V8 (Node) quiets
// signalling NaNs. The CPU reference's copies promise exact bits (a GPU copy keeps them), so
// elements move through an integer view of the same memory: 32-bit words for f32, pairs of
// them for f64 and i64 (no BigInt per element either).
import type { HostArray } from '../../core/dtype.ts';

/** the array's elements as integers of its width (8-byte elements as two 32-bit words) */
function words(a: HostArray): { w: Uint8Array | Uint16Array | Uint32Array; per: 1 | 2 } {
  if (a instanceof Float64Array || a instanceof BigInt64Array)
    return { w: new Uint32Array(a.buffer, a.byteOffset, a.length * 2), per: 2 };
  if (a instanceof Float32Array) return { w: new Uint32Array(a.buffer, a.byteOffset, a.length), per: 1 };
  return { w: a, per: 1 };
}

/**
 * dst[di[k]] = src[si[k]] for k < n, bit for bit (a null index list means k itself). src and
 * dst hold elements of one width and must not overlap unless the two index lists are equal.
 */
export function moveBits(
  src: HostArray,
  si: ArrayLike<number> | null,
  dst: HostArray,
  di: ArrayLike<number> | null,
  n: number,
): void {
  const s = words(src),
    d = words(dst);
  if (s.per !== d.per || src.BYTES_PER_ELEMENT !== dst.BYTES_PER_ELEMENT)
    throw new Error('moveBits: element widths differ');
  const sw = s.w,
    dw = d.w;
  if (s.per === 1) {
    for (let k = 0; k < n; k++) dw[di ? di[k]! : k] = sw[si ? si[k]! : k]!;
    return;
  }
  for (let k = 0; k < n; k++) {
    const a = 2 * (si ? si[k]! : k),
      b = 2 * (di ? di[k]! : k);
    dw[b] = sw[a]!;
    dw[b + 1] = sw[a + 1]!;
  }
}
