// What the server tells a load generator: GET /metrics (the KV pool's size, use and peaks, the
// engine's counters; the window peak starts over at each read) and ignore_eos (the model's end
// ids do not end a completion, so its length is max_tokens). Also the pool's peak bookkeeping.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { loadTinyModel, soloGreedy } from '../fixtures/serve-model.ts';
import { createServer } from '../../src/serve/server.ts';
import { BlockPool } from '../../src/serve/block-pool.ts';

const tiny = await loadTinyModel();
const m = tiny.m;
test.after(() => tiny.cleanup());

test('BlockPool: the peak since it was made, and per window', () => {
  const p = new BlockPool(6, 4);
  assert.is(p.peakUsed, 0);
  const a = [p.allocate()!, p.allocate()!, p.allocate()!];
  p.release(a[0]!);
  p.release(a[1]!);
  assert.is(p.peakUsed, 3);
  assert.is(p.takeWindowPeak(), 3);
  // a new window starts at the blocks held now
  assert.is(p.takeWindowPeak(), 1);
  const b = p.allocate()!;
  assert.is(p.takeWindowPeak(), 2);
  p.name(b, 'x');
  p.release(b);
  assert.is(p.take('x'), b, 'taken back by name');
  assert.is(p.takeWindowPeak(), 2);
  assert.is(p.peakUsed, 3);
});

test('GET /metrics and ignore_eos over HTTP', async () => {
  const s = createServer(m, { maxBatch: 4, maxSeqLen: 64, blockSize: 4, log: () => undefined });
  const at = await s.listen(0);
  await s.ready;
  const url = `http://127.0.0.1:${at.port}`;
  try {
    interface Metrics {
      object: string;
      kv: { blocks: number; blockSize: number; used: number; peakUsed: number; windowPeakUsed: number };
      running: number;
      waiting: number;
      steps: number;
      maxBatch: number;
      maxSeqLen: number;
    }
    const metrics = async () => (await (await fetch(`${url}/metrics`)).json()) as Metrics;
    const m0 = await metrics();
    assert.equal(
      [m0.object, m0.kv.blocks, m0.kv.blockSize, m0.kv.used, m0.kv.peakUsed, m0.kv.windowPeakUsed, m0.steps],
      ['metrics', 4 * 16, 4, 0, 0, 0, 0],
    );
    assert.equal([m0.maxBatch, m0.maxSeqLen, m0.running, m0.waiting], [4, 64, 0, 0]);
    // greedy, this prompt's second new token is an end id
    const prompt = [51, 179, 131, 127, 242];
    assert.is((await soloGreedy(m, prompt, 16, m.stopIds)).length, 1);
    const ask = async (extra: Record<string, unknown>) => {
      const r = await fetch(`${url}/v1/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ prompt, max_tokens: 16, temperature: 0, ...extra }),
      });
      assert.is(r.status, 200);
      return (await r.json()) as { choices: { finish_reason: string }[]; usage: { completion_tokens: number } };
    };
    const stopped = await ask({});
    assert.equal([stopped.choices[0]!.finish_reason, stopped.usage.completion_tokens], ['stop', 2]);
    const full = await ask({ ignore_eos: true });
    assert.equal([full.choices[0]!.finish_reason, full.usage.completion_tokens], ['length', 16]);
    const bad = await fetch(`${url}/v1/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ prompt, max_tokens: 4, ignore_eos: 'yes' }),
    });
    assert.is(bad.status, 400);
    assert.ok(((await bad.json()) as { error: { message: string } }).error.message.includes('ignore_eos must be'));
    // 5 prompt + 16 new tokens, the last never fed back: 20 in the cache, 5 blocks of 4 at the
    // most, none held once it has finished
    const m1 = await metrics();
    assert.equal([m1.kv.used, m1.kv.peakUsed, m1.kv.windowPeakUsed], [0, 5, 5]);
    assert.ok(m1.steps >= 17, String(m1.steps));
    assert.is((await metrics()).kv.windowPeakUsed, 0, 'a new window');
    // /metrics, like /health, needs no key
    await s.close();
    const keyed = createServer(m, { maxSeqLen: 64, apiKey: 'k', log: () => undefined });
    const at2 = await keyed.listen(0);
    await keyed.ready;
    assert.is((await fetch(`http://127.0.0.1:${at2.port}/metrics`)).status, 200);
    await keyed.close();
  } finally {
    await s.close();
  }
});

test.run();
