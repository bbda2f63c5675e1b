// GPU graphs: capture once, replay with changed inputs (equal to eager runs), GEMMs and indexing
// under capture, a KV-cache write at a position held in device memory, the graph's private pool
// given back on dispose, clear errors for what cannot be captured (and a clean capture state
// after them), and the model's decode step: generation replayed from a graph gives the eager ids.
import { gpuSuite } from './harness.ts';
import * as assert from 'uvu/assert';
import { Tensor, Device, GraphCaptureError } from '../../src/index.ts';
import { LlamaModel } from '../../src/models/llama.ts';
import { parseLlamaConfig } from '../../src/models/llama-config.ts';
import { generateIds } from '../../src/models/generate.ts';
import { MemoryWeights } from '../../src/nn/weights.ts';
import { randT, relErr } from '../helpers.ts';
import { tinyConfig, tinyWeights, type TinyOptions, type TinyType } from '../fixtures/tiny-llama.ts';

const s = gpuSuite('gpu/graph', { needsRuntime: true });
const arr = async (t: Tensor) => Array.from(await t.toArray(), Number);

s.test(
  'graph: replays equal eager runs as the static inputs change (elementwise, reductions, matmul, softmax)',
  async (dev) => {
    const x = randT([64, 96], 'f32', -1, 1, dev),
      w = randT([96, 32], 'f32', -1, 1, dev);
    const fn = () => x.mul(2).add(1).matmul(w).softmax(-1).sum(0);
    const g = dev.captureGraph(fn);
    for (let round = 0; round < 3; round++) {
      const next = randT([64, 96], 'f32', -1, 1, dev);
      x.sliceSet(next, 0, 0);
      next.dispose();
      g.replay();
      const eager = fn();
      assert.ok(relErr(await arr(g.outputs), await arr(eager)) < 1e-6, `round ${round}`);
      eager.dispose();
    }
    assert.ok(g.poolBytes > 0);
    g.dispose();
    assert.ok(g.isDisposed && g.outputs.isDisposed);
    x.dispose();
    w.dispose();
  },
);

s.test('graph: a KV-cache write at a device-held position, advanced by the graph itself', async (dev) => {
  const cache = Tensor.zeros([1, 2, 6, 4], { device: dev });
  const pos = Tensor.from(new Uint32Array([1]), { device: dev });
  const src = Tensor.zeros([1, 2, 1, 4], { device: dev });
  const g = dev.captureGraph(() => {
    cache.indexSet(pos, src, 2);
    pos.sliceSet(pos.add(1), 0, 0);
    return cache.sum([0, 1, 3]);
  });
  for (let i = 0; i < 4; i++) {
    src.fill(i + 1);
    g.replay();
  }
  const rows = await arr(g.outputs);
  assert.equal(rows, [0, 8, 16, 24, 32, 0], 'rows 1..4 written at positions 1, 2, 3, 4');
  assert.equal(await arr(pos), [5]);
  g.dispose();
  cache.dispose();
  pos.dispose();
  src.dispose();
});

s.test('graph: dispose gives the private pool back', async (dev) => {
  dev.emptyCache();
  const before = dev.memoryStats()!.reserved;
  const x = randT([1024, 1024], 'f32', -1, 1, dev);
  const g = dev.captureGraph(() => x.exp().add(x).mul(x));
  g.replay();
  await g.outputs.toArray();
  assert.ok(g.poolBytes >= (3 * 4) << 20, `pool ${g.poolBytes}`);
  const held = dev.memoryStats()!.reserved,
    pool = g.poolBytes;
  g.dispose();
  x.dispose();
  dev.emptyCache();
  // tensors that earlier tests forgot may be collected meanwhile (the safety net frees them
  // whenever the collector runs), so the pool is checked by what came back, not by equality
  const after = dev.memoryStats()!.reserved;
  assert.ok(after <= before, `every segment back to the device: ${after} reserved after, ${before} before`);
  assert.ok(held - after >= pool, `the pool's ${pool} bytes came back (${held} -> ${after} reserved)`);
});

s.test('graph: uncapturable work throws GraphCaptureError and leaves no capture behind', async (dev) => {
  const x = randT([4, 8], 'f32', -1, 1, dev);
  const cases: [string, () => unknown][] = [
    ['upload', () => Tensor.from([1, 2, 3], { device: dev })],
    ['readback', () => x.toArraySync()],
    ['synchronize', () => dev.synchronize()],
    ['upload by to()', () => randT([1, 1, 4, 4], 'f32', -1, 1).to(dev)],
    ['async fn', () => Promise.resolve(x.exp())],
  ];
  for (const [name, bad] of cases) {
    let err: unknown = null;
    try {
      dev.captureGraph(() => {
        x.exp();
        return bad();
      });
    } catch (e) {
      err = e;
    }
    assert.ok(err instanceof GraphCaptureError, `${name}: ${String(err)}`);
    assert.not.ok(dev.isCapturing, `${name}: capture left`);
  }
  // the DNN library records into graphs on CUDA (cuDNN) and not on ROCm (MIOpen)
  const w = Tensor.ones([1, 1, 3, 3], { device: dev });
  const img = Tensor.ones([1, 1, 5, 5], { device: dev });
  let err: unknown = null;
  let conv: ReturnType<typeof dev.captureGraph> | null = null;
  try {
    img.conv2d(w).dispose(); // an eager call first sizes the workspace a capture may not grow
    conv = dev.captureGraph(() => img.conv2d(w));
  } catch (e) {
    err = e;
  }
  if (dev.runtime.dnnCapturable) {
    assert.ok(conv !== null, `a convolution records on ${dev.runtime.info.name}: ${String(err)}`);
    conv!.replay();
    assert.equal(await arr(conv!.outputs as Tensor), new Array<number>(9).fill(9));
    conv!.dispose();
  } else {
    assert.ok(err instanceof GraphCaptureError && /conv/.test((err as Error).message), String(err));
  }
  assert.not.ok(dev.isCapturing, 'conv: capture left');
  // the device still works, and a new capture too
  const g = dev.captureGraph(() => x.add(1));
  g.replay();
  assert.ok(
    relErr(
      await arr(g.outputs),
      (await arr(x)).map((v) => v + 1),
    ) < 1e-7,
  );
  g.dispose();
  let cpuErr: unknown = null;
  try {
    Device.cpu().captureGraph(() => x);
  } catch (e) {
    cpuErr = e;
  }
  assert.ok(cpuErr instanceof GraphCaptureError && /cpu/.test((cpuErr as Error).message), String(cpuErr));
});

const VARIANTS: [string, TinyType, TinyOptions][] = [
  ['llama GQA', 'llama', { hidden: 64, heads: 8, kvHeads: 2, ff: 96, layers: 3, vocab: 300 }],
  ['mistral window 4', 'mistral', { hidden: 64, heads: 4, kvHeads: 2, window: 4, vocab: 200 }],
  ['qwen2 bias tied', 'qwen2', { hidden: 64, heads: 4, kvHeads: 4, tied: true, vocab: 211 }],
];

s.test(
  'graph: generation replayed from a graph gives the eager ids (greedy and seeded sampling, padded batches)',
  async (dev) => {
    for (const [name, type, o] of VARIANTS) {
      const raw = tinyConfig(type, o);
      for (const dtype of ['f32', 'bf16'] as const) {
        const m = await LlamaModel.fromWeights(parseLlamaConfig(raw), new MemoryWeights(tinyWeights(raw, 5)), {
          device: dev,
          dtype,
        });
        const run = async (graph: boolean, prompts: number[][], extra: object) => {
          const out: (number | null)[][] = [];
          for await (const st of generateIds(m, prompts, { maxTokens: 10, stopIds: [], graph, ...extra }))
            out.push([...st.ids]);
          return out;
        };
        for (const extra of [{}, { temperature: 0.9, topK: 20, topP: 0.9, seed: 3 }]) {
          const prompts = [
            [1, 2, 3, 4, 5, 6],
            [9, 8, 7],
          ];
          assert.equal(
            await run(true, prompts, extra),
            await run(false, prompts, extra),
            `${name} ${dtype} ${JSON.stringify(extra)}`,
          );
        }
        m.dispose();
      }
    }
  },
);

s.run();
