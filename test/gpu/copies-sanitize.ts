// A short run of the copy kernels for compute-sanitizer: copy.hip's strided copy in wide units
// (and rope.hip reading the same head views in place), transpose_<w> at
// every element width (whole tiles, cut tiles, row strides off the 16-byte grid, a batch, a
// write into a transposed view), cat_rows_<unit> (16-byte and 1-byte units, rows longer and
// shorter than a tile, two launches) and index-rows.hip's index_add_rows (repeated ids, f32 and
// the f32 accumulator of bf16, u8's compare-and-swap, i64), at sizes small enough for memcheck
// and racecheck; each result compared with the CPU reference. Run:
//   compute-sanitizer --tool memcheck node --import tsx test/gpu/copies-sanitize.ts
//   compute-sanitizer --tool racecheck node --import tsx test/gpu/copies-sanitize.ts
import { Tensor } from '../../src/index.ts';
import { randData, randInts } from '../helpers.ts';
import { SanitizeRun } from './sanitize-check.ts';

const run = new SanitizeRun('copies-sanitize');
const same = (what: string, op: (x: readonly Tensor[]) => Tensor, ins: Tensor[], tol = 0): Promise<void> =>
  run.same(what, op, ins, tol, { noNaN: true });

for (const d of ['u8', 'bf16', 'f32', 'f64'] as const) {
  // whole tiles for every width (256 x 256 covers 1-byte tiles of 256 x 128), cut tiles
  await same(`transpose ${d} [256, 256]`, ([x]) => x!.T.contiguous(), [randData([256, 256], d)]);
  await same(`transpose ${d} [70, 45]`, ([x]) => x!.T.contiguous(), [randData([70, 45], d)]);
  // rows off the 16-byte grid (a window of odd width), a batch
  await same(`transpose ${d} window`, ([x]) => x!.narrow(1, 1, 61).T.contiguous(), [randData([33, 63], d)]);
  await same(`transpose ${d} batch`, ([x]) => x!.transpose(1, 2).contiguous(), [randData([3, 40, 20], d)]);
  // rows transposed (attention's heads and positions): the strided copy in wide units, and rope
  // reading such a head view in place
  await same(`head view ${d}`, ([x]) => x!.narrow(2, 1, 1).squeeze(2).transpose(1, 2).contiguous(), [
    randData([2, 9, 3, 4, 16], d),
  ]);
  if (d === 'bf16' || d === 'f32')
    await same(
      `rope of a head view ${d}`,
      ([x, c, sn]) => x!.narrow(2, 1, 1).squeeze(2).transpose(1, 2).rope(c!, sn!),
      [randData([2, 9, 3, 4, 16], d), randData([9, 8], d), randData([9, 8], d)],
      d === 'bf16' ? 2e-2 : 1e-5,
    );
  await same(
    `transpose ${d} into a .T view`,
    ([y, s]) => {
      const o = y!.contiguous();
      o.T.sliceSet(s!, 1, 3);
      return o;
    },
    [randData([30, 50], d), randData([50, 20], d)],
  );
  // cat: 16-byte units (f32 rows of 4k), 1-byte units (odd lengths), rows past a tile, 10 inputs
  await same(`cat ${d} dim 1`, (xs) => Tensor.cat(xs, 1), [
    randData([9, 1100], d),
    randData([9, 40], d),
    randData([9, 3], d),
  ]);
  await same(
    `cat ${d} 10 inputs`,
    (xs) => Tensor.cat(xs, 1),
    Array.from({ length: 10 }, (_, k) => randData([4, k + 2], d)),
  );
}
for (const d of ['f32', 'bf16', 'u8', 'i64'] as const) {
  await same(
    `indexAdd ${d} dim 0, repeated ids`,
    ([x, i, u]) => x!.indexAdd(i!, u!, 0),
    [randData([12, 300], d), randInts([40], 12, 'i64'), randData([40, 300], d)],
    d === 'bf16' ? 1e-2 : d === 'f32' ? 1e-5 : 0,
  );
  await same(
    `indexAdd ${d} dim 1`,
    ([x, i, u]) => x!.indexAdd(i!, u!, 1),
    [randData([3, 7, 24], d), randInts([10], 7, 'u32'), randData([3, 10, 24], d)],
    d === 'bf16' ? 1e-2 : d === 'f32' ? 1e-5 : 0,
  );
}
run.report();
