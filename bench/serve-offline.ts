// The offline baseline of `npm run bench:serve`, in a process of its own (after the server has
// exited, so the two never share the device): generateIds over a batch of random prompts of
// one length, every sequence running to the end (no stop ids), the decode steps replayed from a
// graph on a GPU as `generate` does. Takes one JSON argument (OfflineJob), prints one JSON line
// (OfflineResult) on stdout.
import { Device } from '../src/device/device.ts';
import type { DType } from '../src/core/dtype.ts';
import { PretrainedLlama } from '../src/models/pretrained.ts';
import { generateIds, type GenerateTimings } from '../src/models/generate.ts';
import { mulberry32 } from './serve-stats.ts';

export interface OfflineJob {
  readonly model: string;
  readonly device: string | null;
  readonly dtype: string | null;
  readonly batch: number;
  readonly promptLen: number;
  readonly newTokens: number;
  readonly seed: number;
}

export interface OfflineResult {
  readonly device: string;
  /** the GPU's name, or 'cpu' */
  readonly gpu: string;
  readonly dtype: string;
  readonly batch: number;
  readonly promptLen: number;
  readonly newTokens: number;
  readonly prefillSeconds: number;
  /** new tokens after the first, over the batch, per second of decoding */
  readonly decodeTokensPerS: number;
  /** milliseconds per decode step (one token for each of the batch's sequences) */
  readonly stepMs: number;
  /** every new token over the whole call, prefill included */
  readonly tokensPerS: number;
  readonly config: { layers: number; hidden: number; heads: number; kvHeads: number; vocab: number };
}

async function main(): Promise<void> {
  const job = JSON.parse(process.argv[2] ?? '') as OfflineJob;
  const device = job.device ? Device.parse(job.device) : Device.best();
  const m = await PretrainedLlama.load(job.model, {
    device,
    ...(job.dtype ? { dtype: job.dtype as DType } : {}),
    onWarning: () => undefined,
  });
  try {
    const c = m.model.config;
    const rnd = mulberry32(job.seed);
    const prompts = Array.from({ length: job.batch }, () =>
      Array.from({ length: job.promptLen }, () => Math.floor(rnd() * c.vocabSize)),
    );
    const run = async (n: number) => {
      const t: GenerateTimings = { prefillTokens: 0, prefillSeconds: 0, decodeTokens: 0, decodeSeconds: 0 };
      const t0 = performance.now();
      let steps = 0;
      for await (const _ of generateIds(m.model, prompts, { maxTokens: n, stopIds: [] }, t)) steps++;
      return { t, steps, seconds: (performance.now() - t0) / 1e3 };
    };
    await run(4); // warm-up: kernel modules, BLAS heuristics, the decode graph's first capture
    const r = await run(job.newTokens);
    const decodeSteps = r.steps - 1;
    const result: OfflineResult = {
      device: String(device),
      gpu: device.isCpu ? 'cpu' : device.runtime.info.name,
      dtype: m.model.dtype,
      batch: job.batch,
      promptLen: job.promptLen,
      newTokens: job.newTokens,
      prefillSeconds: r.t.prefillSeconds,
      decodeTokensPerS: r.t.decodeSeconds > 0 ? r.t.decodeTokens / r.t.decodeSeconds : 0,
      stepMs: decodeSteps > 0 ? (r.t.decodeSeconds * 1e3) / decodeSteps : 0,
      tokensPerS: (job.batch * r.steps) / r.seconds,
      config: { layers: c.layers, hidden: c.hiddenSize, heads: c.heads, kvHeads: c.kvHeads, vocab: c.vocabSize },
    };
    process.stdout.write(`${JSON.stringify(result)}\n`);
  } finally {
    m.dispose();
  }
}

main().catch((e: unknown) => {
  process.stderr.write(`serve-offline: ${(e as Error)?.stack ?? String(e)}\n`);
  process.exit(1);
});
