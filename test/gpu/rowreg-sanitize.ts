// A short run of the register row kernels (softmax.hip's and norm.hip's _v<V>, _part, _fin;
// reduce-rows.hip), scan.hip's cumsum and upsample.hip's row kernels for compute-sanitizer:
// every V of each family (forced through ROCM_TENSOR_ROW_VECS), groups within a wave and whole
// blocks, rows with missing vectors, split rows with a short last chunk, at sizes small enough
// for memcheck and racecheck; each result compared with the CPU reference. Run:
//   compute-sanitizer --tool memcheck node --import tsx test/gpu/rowreg-sanitize.ts
//   compute-sanitizer --tool racecheck node --import tsx test/gpu/rowreg-sanitize.ts
import { randT } from '../helpers.ts';
import { SanitizeRun, tolOf } from './sanitize-check.ts';

const run = new SanitizeRun('rowreg-sanitize');
const same = run.same.bind(run);

for (const d of ['f32', 'bf16'] as const) {
  const t = tolOf(d);
  for (const v of ['1', '2', '4', '8', '16', 'split']) {
    process.env['ROCM_TENSOR_ROW_VECS'] = v;
    // 40 and 2056: a group of a wave or less, and a block of its own (with missing vectors)
    for (const cols of [40, 2056]) {
      const x = randT([5, cols], d, -4, 4),
        w = randT([cols], d, 0.5, 1.5),
        b = randT([cols], d, -1, 1);
      await same(`softmax ${d} V ${v} [5, ${cols}]`, ([a]) => a!.softmax(-1), [x], t);
      await same(`logSoftmax ${d} V ${v} [5, ${cols}]`, ([a]) => a!.logSoftmax(-1), [x], t);
      await same(`layerNorm ${d} V ${v} [5, ${cols}]`, ([a, ww, bb]) => a!.layerNorm(ww!, bb!, 1e-5), [x, w, b], t);
      await same(`rmsNorm ${d} V ${v} [5, ${cols}]`, ([a, ww]) => a!.rmsNorm(ww!, 1e-6), [x, w], t);
      // reduce-rows.hip takes rows only where there are as many as multiprocessors
      const many = randT([320, cols], d, -3, 3);
      for (const op of ['sum', 'mean', 'max', 'min'] as const)
        await same(`${op} ${d} V ${v} [320, ${cols}]`, ([a]) => a!.reduce(op, -1), [many], t);
    }
  }
  delete process.env['ROCM_TENSOR_ROW_VECS'];
  // split rows of the plan's own choosing, a short last chunk
  const long = randT([2, 40000], d, -4, 4),
    lw = randT([40000], d, 0.5, 1.5);
  await same(`softmax ${d} [2, 40000]`, ([a]) => a!.softmax(-1), [long], t);
  await same(`rmsNorm ${d} [2, 40000]`, ([a, ww]) => a!.rmsNorm(ww!, 1e-6), [long, lw], t);
  // cumsum: one chunk and a bit, a row off the vector grid
  for (const cols of [4100, 4099])
    await same(
      `cumsum ${d} [3, ${cols}]`,
      ([a]) => a!.cumsum(-1),
      [randT([3, cols], d, 0, 1)],
      d === 'f32' ? 2e-6 : 2e-2,
    );
  // upsampling: the vector-row kernels
  const img = randT([2, 3, 5, 16], d);
  await same(`upsampleNearest2d ${d} x2`, ([a]) => a!.upsampleNearest2d(10, 32), [img], 0);
  await same(`upsampleNearest2d ${d} rows only`, ([a]) => a!.upsampleNearest2d(7, 16), [img], 0);
  await same(`upsampleBilinear2d ${d} x2`, ([a]) => a!.upsampleBilinear2d(10, 32, false), [img], t);
}
run.report();
