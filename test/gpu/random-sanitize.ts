// A short run of the random kernels (random.hip) for compute-sanitizer: randn in every float dtype
// (its LDS table, loaded once per block behind a barrier, is what racecheck looks at), rand, and
// one size past the grid's threads so each thread loops; each result compared with the CPU bits.
// Run:
//   compute-sanitizer --tool memcheck node --import tsx test/gpu/random-sanitize.ts
//   compute-sanitizer --tool racecheck node --import tsx test/gpu/random-sanitize.ts
import { Tensor, Device, type DType } from '../../src/index.ts';

const dev = Device.bestGpu();
if (!dev) throw new Error('random-sanitize: no GPU');
const cpu = Device.cpu();
let cases = 0;
async function same(make: (d: Device) => Tensor, what: string): Promise<void> {
  const g = make(dev!),
    c = make(cpu);
  const a = await g.toRawArray(),
    b = await c.toRawArray();
  for (let i = 0; i < a.length; i++)
    if (a[i] !== b[i])
      throw new Error(`random-sanitize: ${what}: element ${i}: gpu ${String(a[i])} cpu ${String(b[i])}`);
  g.dispose();
  c.dispose();
  cases++;
}
for (const dtype of ['f32', 'f64', 'f16', 'bf16'] as DType[]) {
  for (const n of [1, 5, 4099, 70001]) {
    await same((d) => Tensor.randn([n], { seed: 9, dtype, device: d }), `randn [${n}] ${dtype}`);
    await same((d) => Tensor.rand([n], { seed: 9, dtype, device: d }), `rand [${n}] ${dtype}`);
  }
}
await same((d) => Tensor.randn([4500007], { seed: 10, device: d }), 'randn [4500007] f32');
console.log(`random-sanitize: ${cases} cases match the CPU bits`);
