// The CPU's random throughput (values a second, one thread, best of 3 after two warm-up runs):
//   npx tsx bench/cpu-random.ts [n]      bun bench/cpu-random.ts [n]
import { Tensor, Device, type DType } from '../src/index.ts';

const cpu = Device.cpu();
const n = Number(process.argv[2] ?? 2 ** 24);
const cases: [string, (seed: number) => Tensor][] = [
  ['rand f32', (seed) => Tensor.rand([n], { seed, device: cpu })],
  ['randn f32', (seed) => Tensor.randn([n], { seed, device: cpu })],
  ...(['f64', 'bf16'] as DType[]).map((dtype): [string, (seed: number) => Tensor] => [`randn ${dtype}`, (seed) => Tensor.randn([n], { seed, dtype, device: cpu })]),
  ['randint i64 [0, 1000)', (seed) => Tensor.randint(0, 1000, [n], { seed, device: cpu })],
  ['bernoulli f32 p 0.3', (seed) => Tensor.bernoulli(0.3, { shape: [n], seed, device: cpu })],
];
const where = typeof (globalThis as { Bun?: unknown }).Bun !== 'undefined' ? 'bun' : `node ${process.version}`;
console.log(`CPU random, ${where}`);
for (const [name, make] of cases) {
  make(0).dispose(); make(0).dispose();  // warm up the JIT (and the WebAssembly tier-up)
  const times: number[] = [];
  for (let r = 0; r < 3; r++) {
    const t0 = performance.now();
    make(r + 1).dispose();
    times.push(performance.now() - t0);
  }
  const best = Math.min(...times);
  console.log(`${name.padEnd(24)} ${n} values: ${best.toFixed(0)} ms, ${(n / best / 1e3).toFixed(1)} M values/s`);
}
