// What the indexing and copy GPU tests share: the id dtypes and indexAdd's case loop (every dtype
// and layout, each id dtype); their data of any dtype is helpers.ts's randData.
import { checkOp, LAYOUTS, ALL_DTYPES } from './harness.ts';
import type { DType } from '../../src/index.ts';
import { randData, randInts } from '../helpers.ts';

export const ID_DTYPES: readonly DType[] = ['u8', 'u32', 'i64'];

/** indexAdd of k random ids along dim into x, for every dtype, layout and id dtype */
export async function checkIndexAddCases(
  cases: readonly { name: string; x: number[]; k: number; dim: number }[],
): Promise<void> {
  for (const c of cases) {
    const src = [...c.x];
    src[c.dim] = c.k;
    for (const it of ID_DTYPES) {
      await checkOp(
        'indexAdd',
        ALL_DTYPES,
        LAYOUTS,
        (d) => [randData(c.x, d), randInts([c.k], c.x[c.dim]!, it), randData(src, d)],
        ([x, i, u]) => x!.indexAdd(i!, u!, c.dim),
        { variant: `${c.name}, ids ${it}` },
      );
    }
  }
}
