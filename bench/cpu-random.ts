// The CPU's random throughput (values a second, one thread, best of 3 after two warm-up runs):
//   npx tsx bench/cpu-random.ts [n] [filter]      bun bench/cpu-random.ts [n] [filter]
// Every dtype of rand and randn, and the ops built on the same words (randint, bernoulli,
// dropout); filter is a regex on the case names.
import { Tensor, Device } from '../src/index.ts';
import { FLOAT_DTYPES } from '../src/core/dtype.ts';

const cpu = Device.cpu();
const n = Number(process.argv[2] ?? 2 ** 24);
const filter = new RegExp(process.argv[3] ?? '');
type Case = [string, (seed: number) => Tensor];
// dropout's input, made once outside the timing
const x = Tensor.randn([n], { seed: 7, device: cpu });
const cases: Case[] = [
  ...FLOAT_DTYPES.map((dtype): Case => [`rand ${dtype}`, (seed) => Tensor.rand([n], { seed, dtype, device: cpu })]),
  ...FLOAT_DTYPES.map((dtype): Case => [`randn ${dtype}`, (seed) => Tensor.randn([n], { seed, dtype, device: cpu })]),
  ['randint i64 [0, 1000)', (seed) => Tensor.randint(0, 1000, [n], { seed, device: cpu })],
  ['bernoulli f32 p 0.3', (seed) => Tensor.bernoulli(0.3, { shape: [n], seed, device: cpu })],
  ['dropout f32 p 0.1', (seed) => x.dropout(0.1, { seed })],
];
const where = typeof (globalThis as { Bun?: unknown }).Bun !== 'undefined' ? 'bun' : `node ${process.version}`;
console.log(`CPU random, ${where}`);
for (const [name, make] of cases.filter(([name]) => filter.test(name))) {
  make(0).dispose();
  make(0).dispose(); // warm up the JIT (and the WebAssembly tier-up)
  const times: number[] = [];
  for (let r = 0; r < 3; r++) {
    const t0 = performance.now();
    make(r + 1).dispose();
    times.push(performance.now() - t0);
  }
  const best = Math.min(...times);
  console.log(`${name.padEnd(24)} ${n} values: ${best.toFixed(0)} ms, ${(n / best / 1e3).toFixed(1)} M values/s`);
}
x.dispose();
