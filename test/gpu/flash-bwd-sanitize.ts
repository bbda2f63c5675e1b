// A short run of the attention-gradient kernels (flash-bwd.hip) for compute-sanitizer: every
// head-dim bucket in f32, f16 and bf16 (f32 at 256 on its 8-row tile; the 16-bit types through
// the matrix-core body and the FMA body), causal both ways, a window, both mask kinds, GQA,
// lengths off the tile and over several 64-row blocks, rows that see no key; each gradient
// compared with the CPU reference. Run:
//   compute-sanitizer --tool memcheck node --import tsx test/gpu/flash-bwd-sanitize.ts
//   compute-sanitizer --tool racecheck node --import tsx test/gpu/flash-bwd-sanitize.ts
import { Tensor } from '../../src/index.ts';
import { attentionGradTuning } from '../../src/ops/attention-grad.ts';
import { randT } from '../helpers.ts';
import { SanitizeRun } from './sanitize-check.ts';
import { sanitizeMask } from './sdpa-check.ts';

const run = new SanitizeRun('flash-bwd-sanitize');
attentionGradTuning.path = 'kernel';
type Causal = boolean | 'top-left' | 'bottom-right';
const cases: [number[], number[], Causal, number | undefined, 'u8' | 'add' | undefined][] = [
  [[1, 4, 37, 64], [1, 2, 45, 64], 'bottom-right', undefined, undefined],
  [[1, 2, 40, 80], [1, 2, 40, 80], 'top-left', undefined, undefined],
  [[1, 2, 33, 96], [1, 1, 50, 96], false, undefined, 'u8'],
  [[1, 2, 30, 128], [1, 2, 38, 128], 'bottom-right', 9, 'add'],
  [[1, 2, 20, 256], [1, 1, 27, 256], 'top-left', undefined, undefined],
  // bottom-right with more queries than keys: the first rows see nothing
  [[1, 2, 50, 33], [1, 2, 21, 33], 'bottom-right', undefined, undefined],
  // over several 64-row blocks (the 16-bit types' tiled body up to head dim 128), partial last ones
  [[1, 4, 150, 64], [1, 2, 170, 64], 'top-left', undefined, undefined],
  [[1, 2, 130, 128], [1, 1, 140, 128], 'bottom-right', 50, 'u8'],
];
const sdpa = Tensor.scaledDotProductAttention;
for (const [dt, matrixCores] of [
  ['f32', false],
  ['f16', true],
  ['bf16', true],
  ['f16', false],
  ['bf16', false],
] as const) {
  attentionGradTuning.matrixCores = matrixCores;
  for (const [qs, ks, causal, window, mk] of cases) {
    const [b, , tq] = qs as [number, number, number],
      tk = ks[2]!;
    const mask = sanitizeMask(mk, b, tq, tk, dt);
    const opts = { causal, ...(window ? { window } : {}) };
    const ins = [randT(qs, dt, -1, 1), randT(ks, dt, -1, 1), randT(ks, dt, -1, 1), randT([...qs], dt, -1, 1)];
    await run.same(
      `${dt} ${matrixCores ? 'matrix cores' : 'FMAs'} q ${qs} k ${ks} causal ${causal} window ${window ?? '-'} mask ${mk ?? '-'}`,
      ([q, k, v, g]) => {
        const m = mask ? (q!.device.isCpu ? mask : mask.to(q!.device)) : undefined;
        const xs = [q!, k!, v!].map((t) => t.detach());
        for (const x of xs) x.requiresGrad = true;
        sdpa(xs[0]!, xs[1]!, xs[2]!, { ...opts, ...(m ? { mask: m } : {}) }).backward(g!);
        return Tensor.cat(
          xs.map((x) => x.grad!.reshape([-1])),
          0,
        );
      },
      ins,
      dt === 'f32' ? 1e-4 : 3e-2,
      { noNaN: true },
    );
  }
}
run.report();
