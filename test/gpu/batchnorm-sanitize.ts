// A short run of batchnorm.hip for compute-sanitizer: the vector path (planes of whole 16-byte
// vectors), the element path (odd planes, [n, c]), planes split along the grid's y, half data
// with f32 per-channel tensors, no weight or bias, every float dtype; each result compared with
// the CPU reference. Run:
//   compute-sanitizer --tool memcheck node --import tsx test/gpu/batchnorm-sanitize.ts
//   compute-sanitizer --tool racecheck node --import tsx test/gpu/batchnorm-sanitize.ts
import { type Tensor, type DType } from '../../src/index.ts';
import { randT } from '../helpers.ts';
import { SanitizeRun, tolOf } from './sanitize-check.ts';

const run = new SanitizeRun('batchnorm-sanitize');
const bn = (t: readonly (Tensor | null)[]): Tensor =>
  t[0]!.batchNorm({ mean: t[1]!, variance: t[2]!, weight: t[3] ?? null, bias: t[4] ?? null, eps: 1e-5 });
const same = (what: string, ins: readonly (Tensor | null)[], tol: number): Promise<void> =>
  run.same(what, bn, ins, tol);
for (const d of ['f32', 'f64', 'f16', 'bf16'] as const) {
  for (const shape of [
    [2, 3, 8, 8],
    [2, 3, 5, 7],
    [6, 5],
    [1, 2, 64, 80],
  ]) {
    const c = shape[1]!;
    const pd: DType[] = d === 'f16' || d === 'bf16' ? [d, 'f32'] : [d];
    for (const p of pd) {
      const x = randT(shape, d, -2, 2),
        m = randT([c], p, -0.5, 0.5),
        v = randT([c], p, 0.2, 2);
      const w = randT([c], p, 0.5, 1.5),
        b = randT([c], p, -1, 1);
      await same(`${d} x, ${p} stats [${shape.join(', ')}]`, [x, m, v, w, b], tolOf(d));
      await same(`${d} x, ${p} stats [${shape.join(', ')}], no weight or bias`, [x, m, v, null, null], tolOf(d));
      for (const t of [x, m, v, w, b]) t.dispose();
    }
  }
}
run.report();
