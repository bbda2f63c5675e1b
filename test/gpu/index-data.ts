// What the indexing and copy GPU tests share: data of any dtype, the id dtypes, and indexAdd's
// case loop (every dtype and layout, each id dtype).
import { checkOp, LAYOUTS, ALL_DTYPES } from './harness.ts';
import type { Tensor, DType } from '../../src/index.ts';
import { randT, randInts } from '../helpers.ts';

export const ID_DTYPES: readonly DType[] = ['u8', 'u32', 'i64'];

/** fresh data of any dtype: floats in [-3, 3), integers over a wide range (adds wrap alike) */
export function data(shape: number[], dtype: DType): Tensor {
  switch (dtype) {
    case 'u8': return randInts(shape, 256, 'u8');
    case 'u32': return randInts(shape, 4e9, 'u32');
    case 'i64': return randInts(shape, 2 ** 40, 'i64');
    default: return randT(shape, dtype, -3, 3);
  }
}

/** indexAdd of k random ids along dim into x, for every dtype, layout and id dtype */
export async function checkIndexAddCases(cases: readonly { name: string; x: number[]; k: number; dim: number }[]): Promise<void> {
  for (const c of cases) {
    const src = [...c.x];
    src[c.dim] = c.k;
    for (const it of ID_DTYPES) {
      await checkOp('indexAdd', ALL_DTYPES, LAYOUTS, (d) => [data(c.x, d), randInts([c.k], c.x[c.dim]!, it), data(src, d)],
        ([x, i, u]) => x!.indexAdd(i!, u!, c.dim), { variant: `${c.name}, ids ${it}` });
    }
  }
}
