// The load generator of `npm run bench:serve`, in a process of its own so that its HTTP work
// never shares an event loop with the server's. It takes one JSON argument (LoadJob), sends
// streamed /v1/completions requests of random token ids (so prompt lengths are exact) with
// ignore_eos, at a fixed concurrency or at Poisson arrivals, and prints one JSON line
// (LoadReport) on stdout. Each load runs for `duration` seconds (or until `requests` requests
// have finished); requests still running then are aborted, and their tokens are counted from
// the chunks that arrived.
import { mulberry32, quantiles, type Quantiles } from './serve-stats.ts';

export interface LoadSpec {
  readonly kind: 'concurrency' | 'rate';
  /** requests in flight (concurrency), or mean arrivals per second (rate) */
  readonly value: number;
}

export interface LoadJob {
  /** http://host:port */
  readonly url: string;
  readonly vocab: number;
  readonly seed: number;
  /** uniform, inclusive */
  readonly promptLen: readonly [number, number];
  readonly outputLen: readonly [number, number];
  readonly loads: readonly LoadSpec[];
  /** seconds per load */
  readonly duration: number;
  /** requests per load at most (null: as many as the duration allows) */
  readonly requests: number | null;
  /** requests sent before the first load, not measured */
  readonly warmup: number;
  /** seconds to wait for the server to go idle between loads */
  readonly idleTimeout: number;
}

export interface KvUse {
  readonly blocks: number;
  readonly blockSize: number;
  /** the most blocks held at once during the load */
  readonly peakUsed: number;
}

export interface LoadResult extends LoadSpec {
  readonly sent: number;
  readonly completed: number;
  /** still running at the end of the load's time, and aborted */
  readonly aborted: number;
  readonly failed: number;
  /** seconds from the first request to the last completion (or the abort) */
  readonly seconds: number;
  readonly promptTokens: number;
  /** completed requests' usage.completion_tokens plus the aborted requests' chunks */
  readonly outputTokens: number;
  readonly outputTokensFromUsage: number;
  readonly outputTokensFromChunks: number;
  /** completed requests whose usage.completion_tokens differs from the max_tokens asked */
  readonly lengthMismatches: number;
  readonly outputTokensPerS: number;
  readonly requestsPerS: number;
  /** milliseconds, over the requests that got a first token */
  readonly ttftMs: Quantiles;
  /** milliseconds between successive chunks of one stream */
  readonly itlMs: Quantiles;
  readonly kv: KvUse | null;
  readonly preemptions: number;
  readonly errors: readonly string[];
}

export interface LoadReport {
  readonly loads: readonly LoadResult[];
}

interface Outcome {
  status: 'completed' | 'aborted' | 'failed';
  promptTokens: number;
  maxTokens: number;
  sentAt: number;
  /** arrival times of the chunks that carried a token */
  chunks: number[];
  usageTokens: number | null;
  endedAt: number;
  error: string | null;
}

interface Metrics {
  kv: { blocks: number; blockSize: number; used: number; windowPeakUsed: number };
  running: number;
  waiting: number;
  preemptions: number;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function metrics(url: string): Promise<Metrics | null> {
  const r = await fetch(`${url}/metrics`).catch(() => null);
  if (r?.status !== 200) return null;
  return (await r.json()) as Metrics;
}

/**
 * waits until nothing runs or waits in the server (aborted streams leave at a step's end); with
 * the most KV blocks held at once since the read before the first poll (each read of /metrics
 * starts a new window)
 */
async function idle(url: string, timeoutS: number): Promise<{ m: Metrics; peak: number } | null> {
  const end = performance.now() + timeoutS * 1e3;
  let peak = 0;
  for (;;) {
    const m = await metrics(url);
    if (m === null) return null;
    peak = Math.max(peak, m.kv.windowPeakUsed);
    if (m.running === 0 && m.waiting === 0) return { m, peak };
    if (performance.now() > end) throw new Error(`the server still had requests after ${timeoutS} s`);
    await sleep(100);
  }
}

/** one streamed completion; resolves when it ends, however it ends */
async function request(url: string, prompt: number[], maxTokens: number, stop: AbortSignal): Promise<Outcome> {
  const o: Outcome = {
    status: 'failed',
    promptTokens: prompt.length,
    maxTokens,
    sentAt: performance.now(),
    chunks: [],
    usageTokens: null,
    endedAt: 0,
    error: null,
  };
  try {
    const r = await fetch(`${url}/v1/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        prompt,
        max_tokens: maxTokens,
        temperature: 0,
        ignore_eos: true,
        stream: true,
        stream_options: { include_usage: true },
      }),
      signal: stop,
    });
    if (r.status !== 200 || !r.body) throw new Error(`HTTP ${r.status}: ${(await r.text()).slice(0, 200)}`);
    const dec = new TextDecoder();
    let buf = '';
    let done = false;
    for await (const part of r.body as unknown as AsyncIterable<Uint8Array>) {
      const now = performance.now();
      buf += dec.decode(part, { stream: true });
      let cut = buf.indexOf('\n\n');
      while (cut >= 0) {
        const event = buf.slice(0, cut);
        buf = buf.slice(cut + 2);
        cut = buf.indexOf('\n\n');
        const data = event.startsWith('data: ') ? event.slice(6) : null;
        if (data === null) continue;
        if (data === '[DONE]') {
          done = true;
          continue;
        }
        const msg = JSON.parse(data) as {
          choices?: { text: string; finish_reason: string | null }[];
          usage?: { completion_tokens: number } | null;
          error?: { message: string };
        };
        if (msg.error) throw new Error(msg.error.message);
        const c = msg.choices?.[0];
        if (c && c.finish_reason === null) o.chunks.push(now);
        if (msg.usage) o.usageTokens = msg.usage.completion_tokens;
      }
    }
    if (!done) throw new Error('the stream ended without [DONE]');
    o.status = 'completed';
  } catch (e) {
    if (stop.aborted) o.status = 'aborted';
    else o.error = (e as Error).message;
  }
  o.endedAt = performance.now();
  return o;
}

class Prompts {
  private readonly rnd: () => number;
  constructor(
    private readonly job: LoadJob,
    seed: number,
  ) {
    this.rnd = mulberry32(seed);
  }
  private uniform(lo: number, hi: number): number {
    return lo + Math.floor(this.rnd() * (hi - lo + 1));
  }
  next(): { prompt: number[]; maxTokens: number } {
    const n = this.uniform(this.job.promptLen[0], this.job.promptLen[1]);
    const prompt = Array.from({ length: n }, () => Math.floor(this.rnd() * this.job.vocab));
    return { prompt, maxTokens: this.uniform(this.job.outputLen[0], this.job.outputLen[1]) };
  }
  /** seconds to the next Poisson arrival at `rate` per second */
  gap(rate: number): number {
    return -Math.log(1 - this.rnd()) / rate;
  }
}

async function runLoad(job: LoadJob, spec: LoadSpec, index: number): Promise<LoadResult> {
  const before = await idle(job.url, job.idleTimeout);
  const gen = new Prompts(job, job.seed * 1000 + index);
  const stop = new AbortController();
  const inFlight = new Set<Promise<Outcome>>();
  const outcomes: Outcome[] = [];
  const t0 = performance.now();
  const end = t0 + job.duration * 1e3;
  let sent = 0;
  const canSend = () => performance.now() < end && (job.requests === null || sent < job.requests);
  const send = (): Promise<Outcome> => {
    const { prompt, maxTokens } = gen.next();
    sent++;
    const p = request(job.url, prompt, maxTokens, stop.signal).then((o) => {
      outcomes.push(o);
      inFlight.delete(p);
      return o;
    });
    inFlight.add(p);
    return p;
  };
  const deadline = new Promise<void>((r) => setTimeout(r, Math.max(0, end - performance.now())).unref());
  let producer: Promise<void>;
  if (spec.kind === 'concurrency') {
    producer = Promise.all(
      Array.from({ length: spec.value }, async () => {
        while (canSend()) await send();
      }),
    ).then(() => undefined);
  } else {
    producer = (async () => {
      let at = t0;
      for (;;) {
        at += gen.gap(spec.value) * 1e3;
        if (at >= end) break;
        await sleep(at - performance.now());
        if (!canSend()) break;
        void send();
      }
      while (inFlight.size > 0) await Promise.race(inFlight);
    })();
  }
  let abortedAt: number | null = null;
  const finished = await Promise.race([producer.then(() => true), deadline.then(() => false)]);
  if (!finished) {
    abortedAt = performance.now();
    stop.abort();
    await producer;
    while (inFlight.size > 0) await Promise.race(inFlight);
  }
  const after = await idle(job.url, job.idleTimeout);
  const lastEnd = Math.max(t0, ...outcomes.map((o) => o.endedAt));
  const seconds = ((abortedAt ?? lastEnd) - t0) / 1e3;
  const completed = outcomes.filter((o) => o.status === 'completed');
  const aborted = outcomes.filter((o) => o.status === 'aborted');
  const failed = outcomes.filter((o) => o.status === 'failed');
  const fromUsage = completed.reduce((a, o) => a + (o.usageTokens ?? 0), 0);
  const fromChunks = aborted.reduce((a, o) => a + o.chunks.length, 0);
  const ttft = outcomes.filter((o) => o.chunks.length > 0).map((o) => o.chunks[0]! - o.sentAt);
  const itl = outcomes.flatMap((o) => o.chunks.slice(1).map((t, i) => t - o.chunks[i]!));
  const out = fromUsage + fromChunks;
  return {
    ...spec,
    sent,
    completed: completed.length,
    aborted: aborted.length,
    failed: failed.length,
    seconds,
    promptTokens: outcomes.reduce((a, o) => a + o.promptTokens, 0),
    outputTokens: out,
    outputTokensFromUsage: fromUsage,
    outputTokensFromChunks: fromChunks,
    lengthMismatches: completed.filter((o) => o.usageTokens !== o.maxTokens).length,
    outputTokensPerS: seconds > 0 ? out / seconds : 0,
    requestsPerS: seconds > 0 ? completed.length / seconds : 0,
    ttftMs: quantiles(ttft),
    itlMs: quantiles(itl),
    kv: after ? { blocks: after.m.kv.blocks, blockSize: after.m.kv.blockSize, peakUsed: after.peak } : null,
    preemptions: after && before ? after.m.preemptions - before.m.preemptions : 0,
    errors: [...new Set(failed.map((o) => o.error ?? 'unknown'))].slice(0, 5),
  };
}

async function main(): Promise<void> {
  const job = JSON.parse(process.argv[2] ?? '') as LoadJob;
  if (job.warmup > 0) {
    const gen = new Prompts(job, job.seed * 1000 - 1);
    const never = new AbortController().signal;
    const w = await Promise.all(
      Array.from({ length: job.warmup }, () => request(job.url, gen.next().prompt, 4, never)),
    );
    const bad = w.find((o) => o.status !== 'completed');
    if (bad) throw new Error(`a warm-up request failed: ${bad.error}`);
  }
  const loads: LoadResult[] = [];
  for (const [i, spec] of job.loads.entries()) {
    const r = await runLoad(job, spec, i);
    loads.push(r);
    process.stderr.write(
      `  ${spec.kind} ${spec.value}: ${r.completed}/${r.sent} completed, ${r.outputTokensPerS.toFixed(1)} output tok/s\n`,
    );
  }
  const report: LoadReport = { loads };
  process.stdout.write(`${JSON.stringify(report)}\n`);
}

main().catch((e: unknown) => {
  process.stderr.write(`serve-load: ${(e as Error)?.stack ?? String(e)}\n`);
  process.exit(1);
});
