// Generation leaves no tensor behind: over varied rounds (batches 1-13, prompts 16-300 tokens,
// greedy, sampled and penalized, stopped early by the consumer, a consumer that throws; a model,
// a sampler or a readback that fails mid-stream) the live tensors after each round are exactly
// those before it. The eager warm-up a decode graph runs before its capture is checked on the
// CPU too, and tidy() freeing what a function that throws made.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { Tensor, MemoryWeights, LlamaModel, parseLlamaConfig, liveTensors, tidy, keep } from '../../src/index.ts';
import { generateIds, type GenerateOptions } from '../../src/models/generate.ts';
import { warmUpOutsideCapture } from '../../src/models/decode-graph.ts';
import { Sampler } from '../../src/models/sampling.ts';
import { tinyConfig, tinyWeights } from '../fixtures/tiny-llama.ts';

const VOCAB = 96;

async function tinyModel(): Promise<LlamaModel> {
  const config = tinyConfig('llama', { vocab: VOCAB, hidden: 16, heads: 2, kvHeads: 1, ff: 24, layers: 1 });
  const w = tinyWeights(config, 3);
  const m = await LlamaModel.fromWeights(parseLlamaConfig(config), new MemoryWeights(w), { device: 'cpu' });
  for (const t of Object.values(w)) t.dispose();
  // the rotary tables grow on demand: sized once here so that growth is not counted as a leak
  m.rope.reserve(1024);
  return m;
}

/** a seeded generator of round shapes */
function lcg(seed: number): (n: number) => number {
  let s = seed >>> 0;
  return (n) => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return Math.floor((s / 2 ** 32) * n);
  };
}

/** live tensors as a sorted list, so a failure shows what was left behind */
const live = () => liveTensors().sort();

type Ending = 'run' | 'break' | 'throw';

async function round(m: LlamaModel, prompts: number[][], opts: GenerateOptions, ending: Ending, at: number) {
  let n = 0;
  try {
    for await (const _ of generateIds(m, prompts, opts)) {
      if (++n === at && ending === 'break') break;
      if (n === at && ending === 'throw') throw new Error('consumer failed');
    }
  } catch (e) {
    if ((e as Error).message !== 'consumer failed') throw e;
  }
}

test('tidy frees what its function made when the function throws (kept tensors stay)', () => {
  const before = live();
  let kept: Tensor | null = null;
  assert.throws(
    () =>
      tidy(() => {
        Tensor.ones([3]).add(1);
        kept = keep(Tensor.zeros([5]));
        throw new Error('mid-scope');
      }),
    /mid-scope/,
  );
  assert.equal(live(), [...before, 'f32[5] on cpu (1 view)'].sort());
  kept!.dispose();
  assert.equal(live(), before);
});

test('varied rounds: batches 1-13, prompts 16-300, greedy/sampled/penalized, early stops and consumer errors', async () => {
  const m = await tinyModel();
  const r = lcg(7);
  const before = live();
  const modes: GenerateOptions[] = [
    {},
    { temperature: 0.9, seed: 1 },
    { temperature: 0.7, topK: 10, topP: 0.9, seed: 2 },
    { temperature: 1, topP: 0.5, seed: 3, repetitionPenalty: 1.3, presencePenalty: 0.5, frequencyPenalty: 0.2 },
    { repetitionPenalty: 1.2 },
  ];
  const endings: Ending[] = ['run', 'break', 'throw'];
  for (let i = 0; i < 15; i++) {
    const b = 1 + r(13);
    const prompts = Array.from({ length: b }, () => Array.from({ length: 16 + r(285) }, () => 3 + r(VOCAB - 3)));
    const opts = { ...modes[i % modes.length]!, maxTokens: 2 + r(6), stopIds: r(2) ? [] : [2] };
    const ending = endings[i % endings.length]!;
    await round(m, prompts, opts, ending, 1 + r(3));
    assert.equal(live(), before, `round ${i}: batch ${b}, ${JSON.stringify(opts)}, ${ending}`);
  }
  m.dispose();
});

test('a model that throws mid-stream (prefill or a later step) leaves nothing behind', async () => {
  const m = await tinyModel();
  const forward = m.forward.bind(m);
  for (const failAt of [1, 2, 4]) {
    for (const opts of [{}, { temperature: 0.8, seed: 5 }, { repetitionPenalty: 1.5 }] as GenerateOptions[]) {
      const before = live();
      let calls = 0;
      m.forward = (...a: Parameters<LlamaModel['forward']>) => {
        if (++calls === failAt) throw new Error('device lost');
        return forward(...a);
      };
      try {
        await round(m, [Array.from({ length: 20 }, (_, i) => 3 + i)], { ...opts, maxTokens: 6, stopIds: [] }, 'run', 0);
        assert.unreachable('the error reaches the consumer');
      } catch (e) {
        assert.is((e as Error).message, 'device lost');
      } finally {
        m.forward = forward;
      }
      assert.equal(live(), before, `forward call ${failAt} threw, ${JSON.stringify(opts)}`);
    }
  }
  m.dispose();
});

test('a sampler that throws mid-stream leaves nothing behind', async () => {
  const m = await tinyModel();
  const choose = Sampler.prototype.choose;
  for (const failAt of [1, 3]) {
    for (const opts of [{}, { temperature: 0.8, topP: 0.9, seed: 5 }] as GenerateOptions[]) {
      const before = live();
      let calls = 0;
      Sampler.prototype.choose = function (this: Sampler, ...a: Parameters<Sampler['choose']>) {
        if (++calls === failAt) throw new Error('sampler failed');
        return choose.apply(this, a);
      };
      try {
        await round(
          m,
          [
            [5, 6, 7, 8],
            [9, 10],
          ],
          { ...opts, maxTokens: 5, stopIds: [] },
          'run',
          0,
        );
        assert.unreachable('the error reaches the consumer');
      } catch (e) {
        assert.is((e as Error).message, 'sampler failed');
      } finally {
        Sampler.prototype.choose = choose;
      }
      assert.equal(live(), before, `choose call ${failAt} threw, ${JSON.stringify(opts)}`);
    }
  }
  m.dispose();
});

test('a readback that fails mid-stream leaves nothing behind', async () => {
  const m = await tinyModel();
  const toArray = Tensor.prototype.toArray;
  for (const failAt of [1, 3]) {
    const before = live();
    let calls = 0;
    Tensor.prototype.toArray = function (this: Tensor) {
      if (++calls === failAt) return Promise.reject(new Error('device error at readback'));
      return toArray.call(this);
    };
    try {
      await round(
        m,
        [
          [5, 6, 7, 8],
          [9, 10],
        ],
        { maxTokens: 5, stopIds: [] },
        'run',
        0,
      );
      assert.unreachable('the error reaches the consumer');
    } catch (e) {
      assert.is((e as Error).message, 'device error at readback');
    } finally {
      Tensor.prototype.toArray = toArray;
    }
    assert.equal(live(), before, `readback ${failAt} failed`);
  }
  m.dispose();
});

test("a decode graph's eager warm-up frees all it makes (greedy and sampled)", async () => {
  const m = await tinyModel();
  for (const b of [1, 5]) {
    for (const sampler of [new Sampler(), new Sampler({ temperature: 0.8, topK: 7, seed: 1 })]) {
      const cache = m.newCache(b, 40);
      const pos = Tensor.from(new Uint32Array([3]));
      const uniforms = sampler.greedy ? null : Tensor.from(sampler.draw(4 * b), { shape: [4, b, 1] });
      const before = live();
      warmUpOutsideCapture(m, cache, sampler, pos, uniforms, {});
      assert.equal(live(), before, `batch ${b}, ${sampler.greedy ? 'greedy' : 'sampled'}`);
      for (const t of [pos, uniforms]) t?.dispose();
      cache.dispose();
    }
  }
  m.dispose();
});

test.run();
