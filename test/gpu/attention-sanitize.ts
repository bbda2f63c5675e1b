// A short run of the short-query kernels for compute-sanitizer: f32 and dv != d through
// attention.hip (attn_decode_r1/r4), f16/bf16 with dv = d through flash.hip (flash_dec), both with
// attn_merge: one and four rows a block, several row tiles a kv head, split keys and the merge, v
// by 16-byte column groups and by single columns (dv 36), both mask kinds and a window, each
// result compared with the CPU reference. Run:
//   compute-sanitizer --tool memcheck node --import tsx test/gpu/attention-sanitize.ts
import { Device } from '../../src/index.ts';
import { randT } from '../helpers.ts';
import { sanitizeMask, sdpaVsCpu } from './sdpa-check.ts';

const dev = Device.bestGpu();
if (!dev) throw new Error('attention-sanitize: no GPU');
type Causal = boolean | 'top-left' | 'bottom-right';
// q shape, k shape, dv, causal, window, mask kind
const cases: [number[], number[], number, Causal, number | undefined, 'u8' | 'add' | undefined][] = [
  [[2, 4, 1, 128], [2, 4, 300, 128], 128, 'bottom-right', undefined, undefined],
  [[1, 8, 1, 64], [1, 2, 700, 64], 64, false, undefined, 'u8'],
  [[1, 8, 1, 64], [1, 2, 200, 64], 36, 'bottom-right', undefined, undefined],
  [[1, 16, 3, 96], [1, 2, 150, 96], 96, 'bottom-right', 40, 'add'],
  [[1, 2, 2, 256], [1, 1, 90, 256], 256, 'top-left', undefined, undefined],
  // two sequences of few splits; a head dim that is not a multiple of 8
  [[2, 32, 1, 64], [2, 8, 300, 64], 64, false, undefined, undefined],
  [[1, 4, 1, 60], [1, 4, 200, 60], 60, 'bottom-right', undefined, undefined],
];
let worst = 0;
for (const dt of ['f32', 'f16', 'bf16'] as const) {
  for (const [qs, ks, dv, causal, window, mk] of cases) {
    const [b, , tq] = qs as [number, number, number],
      tk = ks[2]!;
    const q = randT(qs, dt),
      k = randT(ks, dt),
      v = randT([ks[0]!, ks[1]!, tk, dv], dt);
    const mask = sanitizeMask(mk, b, tq, tk, dt);
    worst = Math.max(
      worst,
      await sdpaVsCpu(dev, q, k, v, causal, window, mask, `attention ${dt} q ${qs} k ${ks} dv ${dv}`),
    );
  }
}
console.log(
  `attention-sanitize: ${3 * cases.length} cases match the CPU reference (worst abs error ${worst.toExponential(2)})`,
);
