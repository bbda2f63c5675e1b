// The Llama model split over the ranks of a tensor-parallel job, on the CPU: one worker thread per
// rank, the collectives in shared memory (workers/shm-ranks.ts), against the same model on one
// device: prefill and decode logits, greedy ids, sampled ids (each rank seeded differently: rank
// 0's draws must reach every rank), a left-padded batch; every rank's logits identical; each
// rank's KV cache holding its key/value heads; the weights split as planned. Also the shard plan
// (slices, the errors for head counts that do not split) and the option's errors.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { Tensor, ShapeError, TensorError, DeviceGroup, simulatedRanks, type RankSet } from '../../src/index.ts';
import { LlamaModel } from '../../src/models/llama.ts';
import { generateIds } from '../../src/models/generate.ts';
import { llamaShard, shardSlices } from '../../src/models/llama-shard.ts';
import { MemoryWeights } from '../../src/nn/weights.ts';
import { RankRowParallel } from '../../src/nn/parallel/rank-projection.ts';
import { Device } from '../../src/device/device.ts';
import { TP_CASES, tpModel } from '../fixtures/tp-models.ts';
import { tinyConfig } from '../fixtures/tiny-llama.ts';
import { parseLlamaConfig } from '../../src/models/llama-config.ts';
import { assertClose, throwsWith } from '../helpers.ts';
import { tsWorker } from '../runtime.ts';
import { fakeGpus, fakeNccl } from '../fake-nccl.ts';
import { shmShared } from './workers/shm-ranks.ts';
import type { RankJob, RankResult } from './workers/llama-tp-rank.ts';

const PROMPT = [3, 14, 15, 92, 65, 35, 89, 79];
const NEXT = [32, 38, 46];

function runRanks(caseIndex: number, size: number): Promise<RankResult[]> {
  // the largest collective: the prefill's [1, tokens, hidden] partial sums
  const shared = shmShared(size, 1 << 16);
  return Promise.all(
    Array.from(
      { length: size },
      (_, rank) =>
        new Promise<RankResult>((resolve, reject) => {
          const job: RankJob = { rank, caseIndex, shared, prompt: PROMPT, next: NEXT };
          const w = tsWorker(new URL('./workers/llama-tp-rank.ts', import.meta.url), job);
          let got: RankResult | null = null;
          w.on('message', (m: RankResult) => {
            got = m;
          });
          w.on('error', reject);
          w.on('exit', (code) =>
            got && code === 0 ? resolve(got) : reject(new Error(`rank ${rank} exited ${code} without a result`)),
          );
        }),
    ),
  );
}

async function single(caseIndex: number) {
  const { config, weights } = tpModel(TP_CASES[caseIndex]!);
  const model = await LlamaModel.fromWeights(config, new MemoryWeights(weights), { device: 'cpu', dtype: 'f32' });
  const ids = (row: number[]) => Tensor.from(row, { dtype: 'u32', shape: [1, row.length] });
  const cache = model.newCache(1, PROMPT.length + NEXT.length);
  const prefill = Array.from(model.forward(ids(PROMPT), cache).toArraySync(), Number);
  const decode = NEXT.map((t) => Array.from(model.forward(ids([t]), cache).toArraySync(), Number));
  cache.dispose();
  const run = async (prompts: number[][], o: Parameters<typeof generateIds>[2]) => {
    const out: (number | null)[][] = [];
    for await (const st of generateIds(model, prompts, { maxTokens: 16, stopIds: [], ...o })) out.push([...st.ids]);
    return out;
  };
  const greedy = (await run([PROMPT], {})).map((r) => r[0]!);
  const sampled = (await run([PROMPT], { temperature: 0.9, topK: 40, seed: 100 })).map((r) => r[0]!);
  const batch = await run([PROMPT, PROMPT.slice(0, 3)], { maxTokens: 6 });
  const bytes = model.weightBytes();
  model.dispose();
  // what every rank holds whole: embedding, norms, LM head, the row-parallel biases
  const replicated = Object.entries(weights)
    .filter(([n]) => /embed_tokens|norm|lm_head|(o_proj|down_proj)\.bias/.test(n))
    .reduce((a, [, t]) => a + t.numel * 4, 0);
  return { config, prefill, decode, greedy, sampled, batch, bytes, replicated };
}

for (const [ci, c] of TP_CASES.entries()) {
  test(`tensor parallel, ${c.name}: logits, greedy, sampled and batch ids equal one device; every rank the same`, async () => {
    const [ranks, ref] = await Promise.all([runRanks(ci, c.size), single(ci)]);
    const r0 = ranks[0]!;
    assertClose(r0.prefill, ref.prefill, 1e-5, 1e-5, 'prefill logits');
    r0.decode.forEach((row, i) => assertClose(row, ref.decode[i]!, 1e-5, 1e-5, `decode step ${i} logits`));
    assert.equal(r0.greedy, ref.greedy, 'greedy ids');
    assert.equal(r0.sampled, ref.sampled, "sampled ids: rank 0's seed");
    assert.equal(r0.batch, ref.batch, 'left-padded batch ids');
    for (const r of ranks.slice(1)) {
      assert.equal(r.prefill, r0.prefill, `rank ${r.rank}: the same prefill logits as rank 0, bit for bit`);
      assert.equal(r.decode, r0.decode, `rank ${r.rank}: the same decode logits`);
      assert.equal([r.greedy, r.sampled, r.batch], [r0.greedy, r0.sampled, r0.batch], `rank ${r.rank}: the same ids`);
    }
    const { kvHeads, headDim } = ref.config;
    for (const r of ranks)
      assert.equal(
        r.cacheShape,
        [1, kvHeads / c.size, PROMPT.length + NEXT.length, headDim],
        `rank ${r.rank}: KV cache of its heads`,
      );
    const sum = ranks.reduce((a, r) => a + r.weightBytes, 0);
    assert.is(
      sum,
      ref.bytes + (c.size - 1) * ref.replicated,
      'the split weights once, the replicated ones on every rank',
    );
  });
}

test("shard plan: each rank's rows of q, k, v, gate, up and columns of o, down", () => {
  const cfg = parseLlamaConfig(tinyConfig('llama', { hidden: 64, heads: 8, kvHeads: 4, ff: 96 }));
  const s = llamaShard(cfg, 1, 4);
  assert.equal(s, { rank: 1, size: 4, heads: 2, kvHeads: 1, ff: 24 });
  assert.equal(shardSlices(s, cfg.headDim), {
    q: { dim: 0, start: 16, length: 16 },
    kv: { dim: 0, start: 8, length: 8 },
    o: { dim: 1, start: 16, length: 16 },
    gateUp: { dim: 0, start: 24, length: 24 },
    down: { dim: 1, start: 24, length: 24 },
  });
  assert.equal(llamaShard(cfg, 0, 1), { rank: 0, size: 1, heads: 8, kvHeads: 4, ff: 96 });
});

test('shard plan errors: heads, key/value heads or MLP that do not split name the counts and the rank counts that fit', () => {
  const cfg = (o: Parameters<typeof tinyConfig>[1]) => parseLlamaConfig(tinyConfig('llama', o));
  throwsWith(
    () => llamaShard(cfg({ heads: 4, kvHeads: 2, ff: 48 }), 0, 4),
    ShapeError,
    'tensor parallelism over 4 ranks: num_key_value_heads 2 does not divide by 4',
    'rank counts that fit this model: 1, 2',
  );
  throwsWith(
    () => llamaShard(cfg({ heads: 6, kvHeads: 3, ff: 48, hidden: 48 }), 0, 4),
    ShapeError,
    'num_attention_heads 6, num_key_value_heads 3 do not divide by 4',
    'fit this model: 1, 3',
  );
  throwsWith(
    () => llamaShard(cfg({ heads: 4, kvHeads: 4, ff: 50 }), 0, 4),
    ShapeError,
    'intermediate_size 50 does not divide by 4',
    'fit this model: 1, 2',
  );
  throwsWith(() => llamaShard(cfg({}), 2, 2), ShapeError, 'rank 2 of 2 is not a rank');
});

/** a rank that loads but never communicates: enough to see what it loads and what it refuses */
function loneRank(rank: number, size: number, device = Device.cpu()): RankSet {
  const no = (): never => {
    throw new Error('no collectives in this test');
  };
  return { size, ranks: [rank], devices: [device], allReduceSum: no, allGather: no, broadcast: no };
}

test('the tp option: errors name the rank, the device and what to pass instead', async () => {
  const { config, weights } = tpModel(TP_CASES[0]!);
  const src = new MemoryWeights(weights);
  const err = async (o: Parameters<typeof LlamaModel.fromWeights>[2]) => {
    try {
      await LlamaModel.fromWeights(config, src, o);
    } catch (e) {
      return e as Error;
    }
    throw new Error('expected an error');
  };
  const e1 = await err({ tp: loneRank(0, 4) });
  assert.ok(
    e1 instanceof ShapeError && /over 4 ranks: num_key_value_heads 2 does not divide by 4/.test(e1.message),
    e1.message,
  );
  const e2 = await err({ tp: simulatedRanks(2) });
  assert.ok(
    e2 instanceof TensorError && /one rank per process; this RankSet holds 2 \(ranks 0, 1 of 2\)/.test(e2.message),
    e2.message,
  );
  const gpus = fakeGpus(2);
  const g = DeviceGroup.create(gpus.devices, { nccl: fakeNccl().nccl });
  const e3 = await err({ tp: g as unknown as RankSet });
  assert.ok(e3 instanceof TensorError && /a DeviceGroup holds every rank in one process/.test(e3.message), e3.message);
  g.destroy();
  const e4 = await err({ tp: loneRank(1, 2, gpus.devices[1]!), device: 'cpu' });
  assert.ok(
    e4 instanceof TensorError &&
      /device cpu was given, but tensor-parallel rank 1 of 2 runs on cuda:1; leave device out/.test(e4.message),
    e4.message,
  );
  // loading alone needs no collective: a rank's model holds its shard, and nothing is left over
  const m = await LlamaModel.fromWeights(config, src, { tp: loneRank(1, 2) });
  assert.equal(m.shard, { rank: 1, size: 2, heads: 2, kvHeads: 1, ff: 32 });
  assert.is(String(m.device), 'cpu');
  m.dispose();
});

test('a row-parallel projection folds in a residual (on rank 0 only), never a norm or activation over its split input', () => {
  const w = Tensor.randn([6, 4], { seed: 1 }),
    b = Tensor.randn([6], { seed: 2 }),
    x = Tensor.randn([2, 4], { seed: 3 }),
    r = Tensor.randn([2, 6], { seed: 4 });
  const sum: RankSet = { ...loneRank(1, 2), allReduceSum: (ts) => [...ts] };
  // rank 1 of 2: its partial alone, neither bias nor residual (rank 0's partial carries them)
  const p1 = new RankRowParallel(w.add(0), b.add(0), sum);
  assertClose(
    Array.from(p1.forward(x, { residual: r }).toArraySync(), Number),
    Array.from(x.matmul(w.T).toArraySync(), Number),
    1e-6,
    1e-6,
    'rank 1',
  );
  const p0 = new RankRowParallel(w.add(0), b.add(0), { ...sum, ranks: [0] });
  const want = x.matmul(w.T).add(b).add(r);
  assertClose(
    Array.from(p0.forward(x, { residual: r }).toArraySync(), Number),
    Array.from(want.toArraySync(), Number),
    1e-6,
    1e-6,
    'rank 0',
  );
  throwsWith(
    () => p0.forward(x, { norm: { weight: Tensor.ones([4]), eps: 1e-5 } }),
    TensorError,
    'split over the 2 ranks, so a norm before the product cannot be folded in',
  );
  throwsWith(
    () => p0.forward(x, { act: 'swiglu' }),
    TensorError,
    'an activation after the product cannot be folded in',
  );
  p0.dispose();
  p1.dispose();
});

test.run();
