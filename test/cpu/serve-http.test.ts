// The OpenAI-compatible server on a tiny CPU model, driven by the official `openai` client:
// models and health; concurrent streams (chat and completions) each equal their solo greedy
// result; usage, in the last chunk with stream_options.include_usage; stop strings, also where
// they span tokens; a client that leaves cancels its request and frees its blocks; every error
// status (400 JSON and parameters, 401, 404, 405, 400 context, 429, 503 while loading, 504
// timeout); junk in any field is refused, never a crash; unknown fields ignored; a graceful
// close finishes the running stream.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import OpenAI from 'openai';
import { loadTinyModel, soloGreedy } from '../fixtures/serve-model.ts';
import { createServer, type ModelServer, type ServeOptions } from '../../src/serve/server.ts';
import type { PretrainedLlama } from '../../src/models/pretrained.ts';

const tiny = await loadTinyModel();
const m = tiny.m;
const tok = m.tokenizer!;
const NAME = 'tiny';
const logs: string[] = [];
const OPTS: ServeOptions = {
  blockSize: 4,
  maxSeqLen: 128,
  prefillChunk: 16,
  servedModelName: NAME,
  log: (l) => logs.push(l),
};

const servers: ModelServer[] = [];
async function start(opts: ServeOptions = {}, model: PretrainedLlama | Promise<PretrainedLlama> = m) {
  const s = createServer(model, { ...OPTS, ...opts });
  servers.push(s);
  const at = await s.listen(0);
  const client = new OpenAI({ baseURL: at.baseUrl, apiKey: opts.apiKey ?? 'unused', maxRetries: 0 });
  return { s, at, client };
}
const main = await start();
await main.s.ready;
const client = main.client;

test.after(async () => {
  for (const s of servers) await s.close();
  tiny.cleanup();
});

const text = (ids: number[]) => tok.decode(ids, { skipSpecialTokens: true });
const N = 12;

/** polls until fn() holds (the engine's bookkeeping after a disconnect) */
async function until(fn: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 200; i++) {
    if (fn()) return;
    await new Promise((r) => setTimeout(r, 10));
  }
  assert.unreachable(`timed out waiting for ${what}`);
}

async function status(p: Promise<unknown>): Promise<{ status: number; error: Record<string, unknown> }> {
  try {
    await p;
  } catch (e) {
    const err = e as { status?: number; error?: Record<string, unknown> };
    return { status: err.status ?? -1, error: err.error ?? {} };
  }
  return assert.unreachable('expected an error status') as never;
}

test('GET /v1/models and /health', async () => {
  const list = await client.models.list();
  assert.equal(
    list.data.map((x) => x.id),
    [NAME],
  );
  const h = await fetch(`${main.at.baseUrl.replace(/\/v1$/, '')}/health`);
  assert.is(h.status, 200);
});

test('concurrent streams, chat and completions, each equal their solo greedy result', async () => {
  const prompts = ['the cat sat', 'on the mat and', 'a quick brown fox jumps over', 'hello'];
  const chats = ['the dog', 'what is a cat?'];
  const completionIds = prompts.map((p) => tok.encode(p));
  const chatIds = chats.map((c) => m.encode([{ role: 'user', content: c }]));
  const want = await Promise.all(
    [...completionIds, ...chatIds].map(async (ids) => text(await soloGreedy(m, ids, N, m.stopIds))),
  );
  const streamCompletion = async (prompt: string | number[]) => {
    const s = await client.completions.create({ model: NAME, prompt, max_tokens: N, temperature: 0, stream: true });
    let out = '';
    let finish: string | null = null;
    for await (const c of s) {
      out += c.choices[0]?.text ?? '';
      finish = c.choices[0]?.finish_reason ?? finish;
    }
    assert.ok(finish === 'length' || finish === 'stop', String(finish));
    return out;
  };
  const streamChat = async (content: string) => {
    const s = await client.chat.completions.create({
      model: NAME,
      messages: [{ role: 'user', content }],
      max_completion_tokens: N,
      temperature: 0,
      stream: true,
    });
    let out = '';
    for await (const c of s) out += c.choices[0]?.delta.content ?? '';
    return out;
  };
  const got = await Promise.all([
    ...prompts.map((p, i) => streamCompletion(i % 2 ? completionIds[i]! : p)),
    ...chats.map((c) => streamChat(c)),
  ]);
  assert.equal(got, want);
  // and whole, not streamed
  const whole = await client.chat.completions.create({
    model: NAME,
    messages: [{ role: 'user', content: chats[0]! }],
    max_tokens: N,
    temperature: 0,
  });
  assert.is(whole.choices[0]!.message.content, want[prompts.length]);
  assert.is(whole.object, 'chat.completion');
});

test('usage: in the answer, and in a last chunk with stream_options.include_usage', async () => {
  const ids = tok.encode('the cat sat on');
  const whole = await client.completions.create({ model: NAME, prompt: ids, max_tokens: 5, temperature: 0 });
  const n = whole.usage!.completion_tokens;
  assert.ok(n >= 1 && n <= 5);
  assert.equal({ p: whole.usage!.prompt_tokens, t: whole.usage!.total_tokens }, { p: ids.length, t: ids.length + n });
  const s = await client.completions.create({
    model: NAME,
    prompt: ids,
    max_tokens: 5,
    temperature: 0,
    stream: true,
    stream_options: { include_usage: true },
  });
  const chunks = [];
  for await (const c of s) chunks.push(c);
  const last = chunks[chunks.length - 1]!;
  assert.equal(last.choices, []);
  assert.is(last.usage!.completion_tokens, n);
  assert.ok(chunks.slice(0, -1).every((c) => c.usage === null));
});

test('stop strings end the text before them, also where they span two tokens', async () => {
  const ids = tok.encode('the cat sat');
  // the greedy pieces as they stream, to pick a stop string across a token boundary
  const s = await client.completions.create({ model: NAME, prompt: ids, max_tokens: 16, temperature: 0, stream: true });
  const pieces: string[] = [];
  for await (const c of s) if (c.choices[0]?.text) pieces.push(c.choices[0].text);
  const full = pieces.join('');
  const k = pieces.findIndex((p, i) => i > 0 && p.length > 0 && pieces[i - 1]!.length > 0);
  assert.ok(k > 0, `two non-empty pieces in ${JSON.stringify(pieces)}`);
  const before = pieces.slice(0, k).join('');
  const stop = before.slice(-1) + pieces[k]![0];
  const cut = full.indexOf(stop);
  const r = await client.completions.create({ model: NAME, prompt: ids, max_tokens: 16, temperature: 0, stop: [stop] });
  assert.is(r.choices[0]!.text, full.slice(0, cut));
  assert.is(r.choices[0]!.finish_reason, 'stop');
  const st = await client.completions.create({
    model: NAME,
    prompt: ids,
    max_tokens: 16,
    temperature: 0,
    stop: ['never seen', stop],
    stream: true,
  });
  let streamed = '';
  let finish: string | null = null;
  for await (const c of st) {
    streamed += c.choices[0]?.text ?? '';
    finish = c.choices[0]?.finish_reason ?? finish;
  }
  assert.is(streamed, full.slice(0, cut));
  assert.is(finish, 'stop');
});

test('a client that leaves cancels its request and frees its blocks', async () => {
  const e = main.s.engine!;
  const ctl = new AbortController();
  const s = await client.completions.create(
    { model: NAME, prompt: 'the cat', max_tokens: 100, temperature: 0, stream: true },
    { signal: ctl.signal },
  );
  let seen = 0;
  try {
    for await (const c of s) {
      if (c.choices[0]?.text) seen++;
      if (seen === 2) ctl.abort();
    }
  } catch {
    // the abort ends the iteration
  }
  await until(() => e.stats().running === 0 && e.stats().waiting === 0, 'the request to leave the engine');
  assert.is(e.stats().pool.used, 0, 'the pool is whole again');
  await until(() => logs.some((l) => / 499 .*finish=cancelled/.test(l)), 'the log line');
});

test('errors: 400 (JSON, parameters, context), 404 (model, route), 405, in OpenAI error objects', async () => {
  const base = main.at.baseUrl;
  const post = (path: string, body: string) =>
    fetch(`${base}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
  let r = await post('/chat/completions', '{"model": ');
  assert.is(r.status, 400);
  const body = (await r.json()) as { error: { message: string; type: string } };
  assert.ok(body.error.message.includes('not valid JSON'), body.error.message);
  assert.is(body.error.type, 'invalid_request_error');
  r = await post('/completions', '[1, 2]');
  assert.is(r.status, 400);
  const msgs = [{ role: 'user' as const, content: 'hi' }];
  // each request is made when its check runs: a rejected promise nobody awaits yet is an
  // unhandled rejection, which ends a Bun process
  const cases: [() => Promise<unknown>, string, string][] = [
    [() => client.chat.completions.create({ model: NAME, messages: msgs, temperature: 5 }), 'temperature', 'in [0, 2]'],
    [() => client.chat.completions.create({ model: NAME, messages: msgs, n: 2 }), 'n', 'not supported'],
    [
      () => client.chat.completions.create({ model: NAME, messages: msgs, logprobs: true }),
      'logprobs',
      'not supported',
    ],
    [() => client.chat.completions.create({ model: NAME, messages: [] }), 'messages', 'non-empty list'],
    [
      () => client.chat.completions.create({ model: NAME, messages: msgs, max_tokens: 0 }),
      'max_tokens',
      'integer >= 1',
    ],
    [() => client.completions.create({ model: NAME, prompt: 'x', stop: [''] }), 'stop', 'non-empty'],
    [() => client.completions.create({ model: NAME, prompt: [1, 99999] }), 'prompt', 'outside the model'],
    [() => client.completions.create({ model: NAME, prompt: 'x', top_p: 0 }), 'top_p', 'top_p must be'],
    [() => client.completions.create({ model: NAME, prompt: 'x', max_tokens: 500 }), 'max_tokens', 'context is 128'],
    [() => client.completions.create({ model: NAME, prompt: new Array(130).fill(1) }), 'prompt', 'context is 128'],
  ];
  for (const [make, param, part] of cases) {
    const { status: st, error } = await status(make());
    assert.is(st, 400, `${param}: ${JSON.stringify(error)}`);
    assert.ok(String(error.message).includes(part), `${param}: ${String(error.message)}`);
    if (param !== 'prompt' || !part.includes('outside')) assert.is(error.param, param, String(error.message));
  }
  const long = await status(client.completions.create({ model: NAME, prompt: new Array(130).fill(1) }));
  assert.is(long.error.code, 'context_length_exceeded');
  const nf = await status(client.chat.completions.create({ model: 'gpt-4', messages: msgs }));
  assert.is(nf.status, 404);
  assert.is(nf.error.code, 'model_not_found');
  assert.is((await fetch(`${base}/embeddings`, { method: 'POST' })).status, 404);
  assert.is((await fetch(`${base}/chat/completions`)).status, 405);
  // unknown fields are ignored
  const ok = await client.completions.create({
    model: NAME,
    prompt: 'x',
    max_tokens: 2,
    // @ts-expect-error: a field the API does not have
    some_future_field: { a: 1 },
    user: 'someone',
  });
  assert.ok(ok.choices[0]!.finish_reason !== null);
  // the model may be left out
  const anon = await fetch(`${base}/completions`, {
    method: 'POST',
    body: JSON.stringify({ prompt: 'x', max_tokens: 1 }),
  });
  assert.is(anon.status, 200);
});

test('junk in any field is a 400 (or 413), never a crash: the server answers on', async () => {
  // a short context: a junk max_tokens that means "not given" still ends soon
  const { at } = await start({ maxBodyBytes: 4096, maxSeqLen: 40 });
  const post = (path: string, body: string) =>
    fetch(`${at.baseUrl}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
  const junk: unknown[] = [null, true, -1, 1e308, 'x', [null], { a: [1] }, [[1, 2], 'x']];
  const fields = [
    'messages',
    'prompt',
    'max_tokens',
    'temperature',
    'top_p',
    'top_k',
    'seed',
    'stop',
    'stream',
    'stream_options',
    'n',
    'presence_penalty',
    'repetition_penalty',
    'model',
  ];
  for (const path of ['/chat/completions', '/completions']) {
    for (const f of fields) {
      for (const v of junk) {
        const body = { messages: [{ role: 'user', content: 'hi' }], prompt: 'hi', max_tokens: 1, [f]: v };
        const r = await post(path, JSON.stringify(body));
        const text = await r.text();
        // null means "not given": those are served
        assert.ok([200, 400, 404].includes(r.status), `${path} ${f}=${JSON.stringify(v)}: ${r.status} ${text}`);
        if (r.status !== 200) assert.ok(JSON.parse(text).error.message, text);
      }
    }
    for (const raw of ['', 'null', '"x"', '{"messages": [{"role": "user", "content": [{"type": "image_url"}]}]}'])
      assert.is((await post(path, raw)).status, 400, raw);
  }
  assert.is((await post('/completions', JSON.stringify({ prompt: 'x'.repeat(5000) }))).status, 413);
  assert.is((await fetch(`${at.baseUrl.replace(/\/v1$/, '')}/health`)).status, 200);
});

test('401 without the API key (health stays open)', async () => {
  const { at, client: good } = await start({ apiKey: 'sesame' });
  const bad = new OpenAI({ baseURL: at.baseUrl, apiKey: 'wrong', maxRetries: 0 });
  const r = await status(bad.models.list());
  assert.is(r.status, 401);
  assert.is(r.error.type, 'authentication_error');
  assert.is((await fetch(`${at.baseUrl}/models`)).status, 401);
  assert.equal(
    (await good.models.list()).data.map((x) => x.id),
    [NAME],
  );
  assert.is((await fetch(`${at.baseUrl.replace(/\/v1$/, '')}/health`)).status, 200);
});

test('429 when the queue is full', async () => {
  const { s, client: c } = await start({ maxBatch: 1, maxQueue: 1 });
  await s.ready;
  const e = s.engine!;
  const long = () => c.completions.create({ model: NAME, prompt: 'the', max_tokens: 60, temperature: 0 });
  const a = long();
  await until(() => e.stats().running === 1, 'the first request to run');
  const b = long();
  await until(() => e.stats().waiting === 1, 'the second request to wait');
  const r = await status(long());
  assert.is(r.status, 429);
  assert.is(r.error.type, 'rate_limit_error');
  await Promise.all([a, b]);
});

test('503 while the model loads, then served', async () => {
  let resolve: (x: PretrainedLlama) => void = () => undefined;
  const loading = new Promise<PretrainedLlama>((r) => {
    resolve = r;
  });
  const { s, at, client: c } = await start({}, loading);
  const r = await status(c.models.list());
  assert.is(r.status, 503);
  assert.ok(String(r.error.message).includes('still loading'));
  assert.is((await fetch(`${at.baseUrl.replace(/\/v1$/, '')}/health`)).status, 503);
  resolve(m);
  await s.ready;
  assert.is((await c.models.list()).data.length, 1);
});

test('504 when a request runs past its time', async () => {
  const { client: c } = await start({ requestTimeout: 0.05 });
  const r = await status(c.completions.create({ model: NAME, prompt: 'the', max_tokens: 100, temperature: 0 }));
  assert.is(r.status, 504);
  assert.is(r.error.type, 'timeout_error');
});

test('close() lets the running stream finish, then refuses', async () => {
  const { s, at, client: c } = await start();
  const st = await c.completions.create({
    model: NAME,
    prompt: 'the cat',
    max_tokens: 20,
    temperature: 0,
    stream: true,
  });
  let closed: Promise<void> | null = null;
  let finish: string | null = null;
  let n = 0;
  for await (const ch of st) {
    if (ch.choices[0]?.text) n++;
    closed ??= s.close();
    finish = ch.choices[0]?.finish_reason ?? finish;
  }
  assert.ok(finish === 'length' || finish === 'stop', `finished with ${finish} after ${n} pieces`);
  await closed;
  await fetch(`${at.baseUrl}/models`).then(
    () => assert.unreachable('the server still answers'),
    () => undefined,
  );
});

test.run();
