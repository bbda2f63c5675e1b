// A short run of upsample.hip's exact-2x kernels (upsample_nearest_x2 of every width,
// upsample_bilinear_x2 of f32, f16 and bf16) for compute-sanitizer: heights that fill the
// 4-row strips, leave the last one short, or are 1; rows of one and of several vectors; views
// whose rows stay aligned (rows narrowed, columns narrowed by whole vectors, a broadcast batch);
// and, beside them, the kernels they stand in for (the element kernels, the vector-row
// kernels), whose blend now goes through the same pinned fma. Each result against the CPU
// reference. Run:
//   compute-sanitizer --tool memcheck node --import tsx test/gpu/upsample-sanitize.ts
//   compute-sanitizer --tool racecheck node --import tsx test/gpu/upsample-sanitize.ts
import { Tensor } from '../../src/index.ts';
import { randT } from '../helpers.ts';
import { SanitizeRun, tolOf } from './sanitize-check.ts';

const run = new SanitizeRun('upsample-sanitize');
const same = run.sameOne.bind(run);
// [n, c, h, w]: h 1, 4, 5, 9; one vector of f16/bf16 (8 elements) and three
const SHAPES = [
  [1, 1, 1, 8],
  [2, 3, 4, 8],
  [2, 3, 5, 24],
  [1, 2, 9, 16],
];
const VIEWS: readonly { name: string; base: number[]; view: (x: Tensor) => Tensor }[] = [
  { name: 'rows 2..6 of [2, 3, 9, 16]', base: [2, 3, 9, 16], view: (x) => x.narrow(2, 2, 5) },
  { name: 'columns 16..39 of [1, 2, 5, 48]', base: [1, 2, 5, 48], view: (x) => x.narrow(3, 16, 24) },
  { name: '[1, 3, 6, 8] broadcast to [3, 3, 6, 8]', base: [1, 3, 6, 8], view: (x) => x.broadcastAs([3, 3, 6, 8]) },
];

for (const d of ['f32', 'f64', 'f16', 'bf16'] as const) {
  const t = tolOf(d);
  for (const s of SHAPES) {
    const x = randT(s, d);
    const [h, w] = [2 * s[2]!, 2 * s[3]!];
    await same(`upsampleNearest2d ${d} [${s.join(', ')}] x2`, (a) => a.upsampleNearest2d(h, w), x, 0);
    await same(`upsampleBilinear2d ${d} [${s.join(', ')}] x2`, (a) => a.upsampleBilinear2d(h, w, false), x, t);
    // the kernels beside: alignCorners (the vector-row kernel), 3x (the element kernel for nearest)
    await same(
      `upsampleBilinear2d ${d} [${s.join(', ')}] x2 alignCorners`,
      (a) => a.upsampleBilinear2d(h, w, true),
      x,
      t,
    );
    await same(`upsampleNearest2d ${d} [${s.join(', ')}] x3`, (a) => a.upsampleNearest2d(3 * s[2]!, 3 * s[3]!), x, 0);
  }
  for (const v of VIEWS) {
    const x = randT(v.base, d);
    const shapeOf = (a: Tensor): [number, number] => [2 * a.shape[2]!, 2 * a.shape[3]!];
    await same(
      `upsampleNearest2d ${d} ${v.name} x2`,
      (a) => {
        const b = v.view(a);
        return b.upsampleNearest2d(...shapeOf(b));
      },
      x,
      0,
    );
    await same(
      `upsampleBilinear2d ${d} ${v.name} x2`,
      (a) => {
        const b = v.view(a);
        return b.upsampleBilinear2d(...shapeOf(b), false);
      },
      x,
      t,
    );
  }
}
run.report();
