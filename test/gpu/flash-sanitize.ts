// A short run of the prefill kernel (flash.hip) for compute-sanitizer: every head-dim bucket,
// causal both ways, a window, both mask kinds, an odd head dim and GQA, at sizes small enough for
// memcheck and racecheck; each result compared with the CPU reference, outputs poisoned first by
// the allocator's poison mode where the harness sets it. Run:
//   compute-sanitizer --tool memcheck node --import tsx test/gpu/flash-sanitize.ts
import { Device } from '../../src/index.ts';
import { randT } from '../helpers.ts';
import { sanitizeMask, sdpaVsCpu } from './sdpa-check.ts';

const dev = Device.bestGpu();
if (!dev) throw new Error('flash-sanitize: no GPU');
type Causal = boolean | 'top-left' | 'bottom-right';
const cases: [number[], number[], Causal, number | undefined, 'u8' | 'add' | undefined][] = [
  [[1, 4, 70, 64], [1, 2, 90, 64], 'bottom-right', undefined, undefined],
  [[1, 2, 130, 128], [1, 2, 130, 128], false, undefined, undefined],
  [[1, 2, 65, 80], [1, 1, 40, 80], 'top-left', undefined, undefined],
  [[1, 2, 40, 96], [1, 2, 70, 96], 'bottom-right', 20, 'add'],
  [[1, 2, 33, 256], [1, 2, 50, 256], 'top-left', undefined, 'u8'],
  [[1, 2, 40, 33], [1, 2, 50, 33], 'bottom-right', undefined, undefined],
  // several 128-row blocks: causal ones with different key ranges, and (bottom-right, 300
  // queries over 100 keys) blocks with no key beside one with some
  [[1, 2, 300, 128], [1, 2, 300, 128], 'top-left', undefined, undefined],
  [[1, 2, 300, 64], [1, 1, 100, 64], 'bottom-right', undefined, undefined],
  // 10 (batch, head) pairs: the block order's group of 8 and a partial group of 2
  [[2, 5, 200, 64], [2, 5, 200, 64], 'top-left', undefined, undefined],
];
let worst = 0;
for (const dt of ['f16', 'bf16'] as const) {
  for (const [qs, ks, causal, window, mk] of cases) {
    const [b, , tq] = qs as [number, number, number],
      tk = ks[2]!;
    const q = randT(qs, dt),
      k = randT(ks, dt),
      v = randT(ks, dt);
    const mask = sanitizeMask(mk, b, tq, tk, dt);
    worst = Math.max(worst, await sdpaVsCpu(dev, q, k, v, causal, window, mask, `flash ${dt} q ${qs} k ${ks}`));
  }
}
console.log(
  `flash-sanitize: ${2 * cases.length} cases match the CPU reference (worst abs error ${worst.toExponential(2)})`,
);
