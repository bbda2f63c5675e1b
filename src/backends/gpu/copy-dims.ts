// The dims of a strided copy, simplified: what the row and transpose copy paths both start from.
// A leaf module (no imports), so either path can use it without an import cycle.

/** a dim of a copy: its size and its strides in dst and src */
export interface CopyDim {
  n: number;
  d: number;
  s: number;
}

/**
 * The dims of a copy from the innermost out, size-1 dims dropped and neighbours that are
 * contiguous in both dst and src merged into one.
 */
export function mergedDims(
  shape: readonly number[],
  dStrides: readonly number[],
  sStrides: readonly number[],
): CopyDim[] {
  const dims: CopyDim[] = [];
  for (let i = shape.length - 1; i >= 0; i--) {
    const n = shape[i]!;
    if (n === 1) continue;
    const last = dims[dims.length - 1];
    if (last && dStrides[i] === last.d * last.n && sStrides[i] === last.s * last.n) last.n *= n;
    else dims.push({ n, d: dStrides[i]!, s: sStrides[i]! });
  }
  return dims;
}
