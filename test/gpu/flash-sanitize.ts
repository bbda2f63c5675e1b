// A short run of the prefill kernel (flash.hip) for compute-sanitizer: every head-dim bucket,
// causal both ways, a window, both mask kinds, an odd head dim and GQA, at sizes small enough for
// memcheck and racecheck; each result compared with the CPU reference, outputs poisoned first by
// the allocator's poison mode where the harness sets it. Run:
//   compute-sanitizer --tool memcheck node --import tsx test/gpu/flash-sanitize.ts
import { Tensor, Device } from '../../src/index.ts';
import { randT } from '../helpers.ts';

const dev = Device.bestGpu();
if (!dev) throw new Error("flash-sanitize: no GPU");
const sdpa = Tensor.scaledDotProductAttention;
type Causal = boolean | 'top-left' | 'bottom-right';
const cases: [number[], number[], Causal, number | undefined, 'u8' | 'add' | undefined][] = [
  [[1, 4, 70, 64], [1, 2, 90, 64], 'bottom-right', undefined, undefined],
  [[1, 2, 130, 128], [1, 2, 130, 128], false, undefined, undefined],
  [[1, 2, 65, 80], [1, 1, 40, 80], 'top-left', undefined, undefined],
  [[1, 2, 40, 96], [1, 2, 70, 96], 'bottom-right', 20, 'add'],
  [[1, 2, 33, 256], [1, 2, 50, 256], 'top-left', undefined, 'u8'],
  [[1, 2, 40, 33], [1, 2, 50, 33], 'bottom-right', undefined, undefined],
];
let worst = 0;
for (const dt of ['f16', 'bf16'] as const) {
  for (const [qs, ks, causal, window, mk] of cases) {
    const [b, hq, tq] = qs as [number, number, number], tk = ks[2]!;
    const q = randT(qs, dt), k = randT(ks, dt), v = randT(ks, dt);
    const mask = mk === 'add' ? randT([b, 1, tq, tk], dt, -2, 1) : mk === 'u8' ? Tensor.from(Array.from({ length: b * tq * tk }, (_, i) => (i % 7 === 3 ? 0 : 1)), { dtype: 'u8', shape: [b, 1, tq, tk] }) : undefined;
    const opts = { causal, ...(window ? { window } : {}), ...(mask ? { mask } : {}) };
    const want = await sdpa(q, k, v, opts).toArray();
    const got = await sdpa(q.to(dev), k.to(dev), v.to(dev), { ...opts, ...(mask ? { mask: mask.to(dev) } : {}) }).toArray();
    for (let i = 0; i < want.length; i++) {
      const e = Math.abs(Number(got[i]) - Number(want[i]));
      if (!(e <= 3e-2)) throw new Error(`flash ${dt} q ${qs} k ${ks}: element ${i} got ${got[i]}, want ${want[i]}`);
      worst = Math.max(worst, e);
    }
  }
}
console.log(`flash-sanitize: ${2 * cases.length} cases match the CPU reference (worst abs error ${worst.toExponential(2)})`);
