// A short run of the split reductions for compute-sanitizer: colreduce.hip's _cols kernel with
// many segments (so reduce.hip's _final folds more than its 8 loads at a time, plus a tail),
// with aligned and misaligned views, and the row path's split rows, for every op and float
// dtype; each result compared with the CPU reference. Run:
//   compute-sanitizer --tool memcheck node --import tsx test/gpu/reduce-sanitize.ts
//   compute-sanitizer --tool racecheck node --import tsx test/gpu/reduce-sanitize.ts
import { type Tensor, type ReduceOp } from '../../src/index.ts';
import { randT } from '../helpers.ts';
import { SanitizeRun, tolOf } from './sanitize-check.ts';

const run = new SanitizeRun('reduce-sanitize');
const same = (what: string, op: (x: Tensor) => Tensor, x: Tensor, tol: number, exact: boolean): Promise<void> =>
  run.sameOne(what, op, x, tol, { exact, sameLength: true });

const OPS: readonly ReduceOp[] = ['sum', 'mean', 'max', 'min', 'argmax', 'argmin'];
for (const d of ['f32', 'f16', 'bf16'] as const) {
  // [2, 3000, 40] over dim 1: 3000 rows split into about 20 segments of a column tile
  const x = randT([2, 3000, 40], d, -2, 2);
  // a narrowed view: odd offset and row stride 40 with 37 columns (element loads, no vectors)
  const nx = x.narrow(2, 1, 37);
  // columns over dim 0 with one batch, and split rows (a few long rows)
  const c = randT([5000, 24], d, -2, 2),
    r = randT([3, 300000], d, -2, 2);
  for (const op of OPS) {
    const exact = op === 'argmax' || op === 'argmin';
    await same(`${op} ${d} [2, 3000, 40] dim 1`, (t) => t.reduce(op, 1), x, tolOf(d), exact);
    await same(`${op} ${d} narrowed [2, 3000, 37] dim 1`, (t) => t.reduce(op, 1), nx, tolOf(d), exact);
    await same(`${op} ${d} [5000, 24] dim 0`, (t) => t.reduce(op, 0), c, tolOf(d), exact);
    await same(`${op} ${d} [3, 300000] dim 1`, (t) => t.reduce(op, 1), r, tolOf(d), exact);
  }
  for (const t of [x, nx, c, r]) t.dispose();
}
run.report();
