// Random ops on the GPU (hip-src/random.hip) against the CPU reference, bit for bit: every op,
// every dtype, odd sizes (a partial last Philox block), non-contiguous inputs, inside a
// captured graph; and multinomial's frequencies drawn on the device.
import * as assert from 'uvu/assert';
import { gpuSuite } from './harness.ts';
import { Device, Tensor, type DType } from '../../src/index.ts';

const s = gpuSuite('gpu/random');
const cpu = Device.cpu();
const SIZES = [1, 3, 4, 5, 1000003];
const FLOATS: DType[] = ['f32', 'f64', 'f16', 'bf16'];
const ALL: DType[] = ['f32', 'f64', 'f16', 'bf16', 'u8', 'u32', 'i64'];

/** raw bits of both, equal element for element; names the first difference */
async function sameBits(gpu: Tensor, ref: Tensor, what: string): Promise<void> {
  assert.equal(gpu.shape, ref.shape, `${what}: shape`);
  assert.is(gpu.dtype, ref.dtype, `${what}: dtype`);
  const a = await gpu.toRawArray(),
    b = await ref.toRawArray();
  assert.is(a.length, b.length, `${what}: length`);
  for (let i = 0; i < a.length; i++) {
    if (a[i] !== b[i])
      assert.unreachable(`${what}: element ${i} of ${a.length}: gpu ${String(a[i])} cpu ${String(b[i])}`);
  }
  gpu.dispose();
  ref.dispose();
}

s.test('rand and randn: the CPU bits in every float dtype and odd sizes', async (dev) => {
  for (const n of SIZES) {
    for (const dtype of FLOATS) {
      for (const seed of [0, 2 ** 40 + 3, -5]) {
        if (n > 5 && seed !== 0) continue;
        await sameBits(
          Tensor.rand([n], { seed, dtype, device: dev }),
          Tensor.rand([n], { seed, dtype, device: cpu }),
          `rand [${n}] ${dtype} seed ${seed}`,
        );
        await sameBits(
          Tensor.randn([n], { seed, dtype, device: dev }),
          Tensor.randn([n], { seed, dtype, device: cpu }),
          `randn [${n}] ${dtype} seed ${seed}`,
        );
      }
    }
  }
  await sameBits(Tensor.randn([7, 0], { device: dev }), Tensor.randn([7, 0], { device: cpu }), 'empty');
  // more sizes than the grid's threads (every thread loops, each block loads randn's table once)
  for (const dtype of FLOATS) {
    for (const n of [17, 4099, 9000011]) {
      await sameBits(
        Tensor.randn([n], { seed: 77, dtype, device: dev }),
        Tensor.randn([n], { seed: 77, dtype, device: cpu }),
        `randn [${n}] ${dtype}`,
      );
    }
  }
  await sameBits(
    Tensor.rand([9000011], { seed: 78, device: dev }),
    Tensor.rand([9000011], { seed: 78, device: cpu }),
    'rand [9000011]',
  );
});

s.test('randint: every dtype, odd sizes, full u32 range and negative bounds', async (dev) => {
  for (const n of SIZES) {
    for (const dtype of ALL) {
      await sameBits(
        Tensor.randint(0, 200, [n], { seed: 3, dtype, device: dev }),
        Tensor.randint(0, 200, [n], { seed: 3, dtype, device: cpu }),
        `randint [${n}] ${dtype}`,
      );
    }
  }
  for (const dtype of ['i64', 'f32', 'f64'] as const) {
    await sameBits(
      Tensor.randint(-1000, 999, [1001], { seed: 4, dtype, device: dev }),
      Tensor.randint(-1000, 999, [1001], { seed: 4, dtype, device: cpu }),
      `randint negative ${dtype}`,
    );
  }
  await sameBits(
    Tensor.randint(0, 2 ** 32, [1001], { seed: 5, dtype: 'u32', device: dev }),
    Tensor.randint(0, 2 ** 32, [1001], { seed: 5, dtype: 'u32', device: cpu }),
    'randint 2^32',
  );
  await sameBits(
    Tensor.randint(-(2 ** 40), 2 ** 32 - 2 ** 40 - 7, [1001], { seed: 6, device: dev }),
    Tensor.randint(-(2 ** 40), 2 ** 32 - 2 ** 40 - 7, [1001], { seed: 6, device: cpu }),
    'randint far from 0',
  );
});

s.test('bernoulli: scalar and tensor p, every output dtype, a transposed p', async (dev) => {
  for (const n of SIZES) {
    for (const dtype of ALL) {
      await sameBits(
        Tensor.bernoulli(0.37, { shape: [n], seed: 2, dtype, device: dev }),
        Tensor.bernoulli(0.37, { shape: [n], seed: 2, dtype, device: cpu }),
        `bernoulli scalar [${n}] ${dtype}`,
      );
    }
  }
  for (const pd of FLOATS) {
    const pc = Tensor.rand([301, 7], { seed: 9, dtype: pd, device: cpu }),
      pg = pc.to(dev);
    for (const dtype of pd === 'f32' ? ALL : ([pd, 'u8'] as DType[])) {
      await sameBits(
        pg.bernoulli({ seed: 3, dtype }),
        pc.bernoulli({ seed: 3, dtype }),
        `bernoulli p ${pd} -> ${dtype}`,
      );
    }
    await sameBits(
      pg.transpose(0, 1).bernoulli({ seed: 4 }),
      pc.transpose(0, 1).bernoulli({ seed: 4 }),
      `bernoulli transposed p ${pd}`,
    );
    pg.dispose();
  }
});

s.test('dropout: every float dtype, odd sizes, a transposed x, eval mode', async (dev) => {
  for (const n of SIZES) {
    for (const dtype of FLOATS) {
      const xc = Tensor.randn([n], { seed: 1, dtype, device: cpu }),
        xg = xc.to(dev);
      await sameBits(xg.dropout(0.3, { seed: 7 }), xc.dropout(0.3, { seed: 7 }), `dropout [${n}] ${dtype}`);
      xg.dispose();
    }
  }
  const xc = Tensor.randn([33, 65], { seed: 1, device: cpu }),
    xg = xc.to(dev);
  await sameBits(
    xg.transpose(0, 1).dropout(0.5, { seed: 8 }),
    xc.transpose(0, 1).dropout(0.5, { seed: 8 }),
    'dropout transposed',
  );
  await sameBits(xg.dropout(0.5, { training: false }), xc.dropout(0.5, { training: false }), 'dropout eval');
  await sameBits(xg.dropout(1, { seed: 1 }), xc.dropout(1, { seed: 1 }), 'dropout p = 1');
  xg.dispose();
});

s.test('multinomial: the CPU indices with and without replacement, every probability dtype', async (dev) => {
  for (const pd of FLOATS) {
    const pc = Tensor.rand([5, 3001], { seed: 2, dtype: pd, device: cpu }),
      pg = pc.to(dev);
    await sameBits(
      pg.multinomial(65, { replacement: true, seed: 3 }),
      pc.multinomial(65, { replacement: true, seed: 3 }),
      `with replacement ${pd}`,
    );
    await sameBits(pg.multinomial(100, { seed: 4 }), pc.multinomial(100, { seed: 4 }), `without replacement ${pd}`);
    await sameBits(
      pg.multinomial(7, { seed: 4, dtype: 'u32', replacement: true }),
      pc.multinomial(7, { seed: 4, dtype: 'u32', replacement: true }),
      `u32 ${pd}`,
    );
    pg.dispose();
  }
  const p1c = Tensor.from([0, 3, 0, 1, 0], { device: cpu }),
    p1g = p1c.to(dev);
  await sameBits(
    p1g.multinomial(1001, { replacement: true, seed: 5 }),
    p1c.multinomial(1001, { replacement: true, seed: 5 }),
    'rank 1 with zeros',
  );
  await sameBits(p1g.multinomial(2, { seed: 5 }), p1c.multinomial(2, { seed: 5 }), 'rank 1 without replacement');
  p1g.dispose();
});

s.test('multinomial: frequencies drawn on the device', async (dev) => {
  const p = [0.05, 0.15, 0.3, 0.5];
  const n = 400000;
  const t = Tensor.from(p, { device: dev }).multinomial(n, { replacement: true, seed: 11 });
  const v = await t.toArray();
  t.dispose();
  const counts = [0, 0, 0, 0];
  for (let i = 0; i < n; i++) counts[Number(v[i])]!++;
  const chi2 = counts.reduce((a, c, i) => a + (c - n * p[i]!) ** 2 / (n * p[i]!), 0);
  assert.ok(chi2 < 3 + 6 * Math.sqrt(6), `counts ${counts} chi-square ${chi2}`);
  // without replacement, the first draw of many rows follows p
  const rows = 100000;
  const probs = Tensor.from(
    new Float32Array(rows * 4).map((_, i) => p[i % 4]!),
    { shape: [rows, 4], device: dev },
  );
  const first = await probs.multinomial(2, { seed: 12 }).narrow(1, 0, 1).contiguous().toArray();
  probs.dispose();
  const c1 = [0, 0, 0, 0];
  for (let i = 0; i < rows; i++) c1[Number(first[i])]!++;
  const chi2b = c1.reduce((a, c, i) => a + (c - rows * p[i]!) ** 2 / (rows * p[i]!), 0);
  assert.ok(chi2b < 3 + 6 * Math.sqrt(6), `first draws ${c1} chi-square ${chi2b}`);
});

s.test('inside a captured graph: the seed is a kernel argument, replays give the same bits', async (dev) => {
  if (dev.isCpu) return; // ROCM_TENSOR_GPU_TESTS_ON=cpu: the CPU device has no graphs
  const x = Tensor.randn([1001], { seed: 1, device: dev });
  const probs = Tensor.rand([3, 50], { seed: 2, device: dev });
  // the same draws on either device: captured on the GPU, the reference on the CPU
  const draws = (d: typeof dev, xs: Tensor, ps: Tensor): Tensor[] => [
    Tensor.randn([1001], { seed: 21, device: d }),
    Tensor.rand([1001], { seed: 22, dtype: 'bf16', device: d }),
    Tensor.randint(0, 10, [1001], { seed: 23, device: d }),
    xs.dropout(0.2, { seed: 24 }),
    ps.multinomial(9, { replacement: true, seed: 25 }),
    ps.multinomial(9, { seed: 26 }),
  ];
  const g = dev.captureGraph(() => draws(dev, x, probs));
  const xc = x.to(cpu),
    pc = probs.to(cpu);
  const refs = () => draws(cpu, xc, pc);
  for (let round = 0; round < 2; round++) {
    g.replay();
    const want = refs();
    for (let k = 0; k < want.length; k++) {
      const a = await g.outputs[k]!.toRawArray(),
        b = await want[k]!.toRawArray();
      assert.equal(
        Array.from(a as ArrayLike<number>),
        Array.from(b as ArrayLike<number>),
        `output ${k}, replay ${round}`,
      );
      want[k]!.dispose();
    }
  }
  g.dispose();
  x.dispose();
  probs.dispose();
});

s.run();
