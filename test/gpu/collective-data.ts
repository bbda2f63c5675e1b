// Data for the collective tests, the same in every process: each rank's values come from a seed
// (rank, case), so any rank can compute what every other rank holds and reduce it on the CPU. The
// values are small integers, which every dtype holds exactly and whose sums, products, minima,
// maxima and halves are exact in any order: results compare for equality, whatever order the
// library reduces in.
import { Tensor, type DType, type Device } from '../../src/index.ts';
import type { CollectiveReduceOp } from '../../src/index.ts';

export const INT_DTYPES: readonly DType[] = ['u8', 'u32', 'i64'];

export function opsFor(dtype: DType): CollectiveReduceOp[] {
  return INT_DTYPES.includes(dtype) ? ['sum', 'prod', 'min', 'max'] : ['sum', 'prod', 'min', 'max', 'avg'];
}

/** rank `rank`'s n values for case `seed`: prod gets 1..2 on ranks 0..6 and 1 beyond (products stay
 *  at most 128, exact in every dtype, u8 included), others 0..7 unsigned or -8..7 signed */
export function values(seed: number, rank: number, n: number, dtype: DType, op: CollectiveReduceOp | 'copy'): number[] {
  let x = (Math.imul(seed + 1, 2654435761) ^ Math.imul(rank + 1, 40503)) >>> 0 || 1;
  const next = (): number => {
    x ^= x << 13;
    x >>>= 0;
    x ^= x >>> 17;
    x ^= x << 5;
    x >>>= 0;
    return x;
  };
  const signed = !INT_DTYPES.includes(dtype) || dtype === 'i64';
  return Array.from({ length: n }, () => {
    const r = next();
    if (op === 'prod') return rank < 7 ? 1 + (r % 2) : 1;
    return signed ? (r % 16) - 8 : r % 8;
  });
}

export function reduceRef(op: CollectiveReduceOp, perRank: readonly number[][]): number[] {
  const n = perRank[0]!.length;
  return Array.from({ length: n }, (_, i) => {
    const col = perRank.map((v) => v[i]!);
    switch (op) {
      case 'sum':
        return col.reduce((a, b) => a + b, 0);
      case 'prod':
        return col.reduce((a, b) => a * b, 1);
      case 'min':
        return Math.min(...col);
      case 'max':
        return Math.max(...col);
      case 'avg':
        return col.reduce((a, b) => a + b, 0) / col.length;
    }
  });
}

export function tensorOf(vals: readonly number[], dtype: DType, device: Device, shape?: number[]): Tensor {
  return Tensor.from(Float64Array.from(vals), { dtype, device, shape: shape ?? [vals.length] });
}

export async function numbers(t: Tensor): Promise<number[]> {
  return Array.from((await t.toArray()) as ArrayLike<number | bigint>, (v) => Number(v));
}

/** the index and values of the first difference beyond `tol`, or null */
export function firstDiff(got: readonly number[], want: readonly number[], tol = 0): string | null {
  if (got.length !== want.length) return `length ${got.length}, expected ${want.length}`;
  for (let i = 0; i < got.length; i++) {
    if (!(Math.abs(got[i]! - want[i]!) <= tol))
      return `element ${i} of ${got.length}: got ${got[i]}, expected ${want[i]}`;
  }
  return null;
}

/** avg over a rank count that is not a power of two is a division the library may round (it
 *  pre-multiplies by 1 / n): a tolerance for the 16-bit floats' spacing at these magnitudes */
export function avgTolerance(op: string, ranks: number): number {
  return op === 'avg' && (ranks & (ranks - 1)) !== 0 ? 0.07 : 0;
}
