// `rocm-tensor generate <model-dir>`: loads a Hugging Face Llama-family folder (llama, mistral,
// qwen2) and streams generated text to stdout; --json prints one JSON object at the end instead.
// Started by `rocm-tensor launch --nproc N` (WORLD_SIZE above 1 in the environment), each process
// is one rank of a tensor-parallel model on GPU LOCAL_RANK, and only rank 0 prints.
import cliProgress from 'cli-progress';
import { Device } from '../device/device.ts';
import { isDType, type DType } from '../core/dtype.ts';
import { TensorError } from '../core/errors.ts';
import { PretrainedLlama } from '../models/pretrained.ts';
import type { GenerateTimings } from '../models/generate.ts';
import { initProcessGroup } from '../distributed/init.ts';
import { distEnvFrom } from '../distributed/rendezvous.ts';
import type { Communicator } from '../distributed/communicator.ts';

export interface GenerateCliOptions {
  prompt?: string;
  ids?: string;
  maxTokens: string;
  temperature?: string;
  topK?: string;
  topP?: string;
  seed?: string;
  device?: string;
  dtype?: string;
  json?: boolean;
  chat: boolean;
}

function number(flag: string, v: string | undefined, int = false): number | undefined {
  if (v === undefined) return undefined;
  const n = Number(v);
  if (v.trim() === '' || !Number.isFinite(n) || (int && !Number.isInteger(n)))
    throw new TensorError(`generate: ${flag} must be ${int ? 'an integer' : 'a number'}, got '${v}'`);
  return n;
}

export async function generateCommand(dir: string, o: GenerateCliOptions): Promise<void> {
  if ((o.prompt === undefined) === (o.ids === undefined))
    throw new TensorError('generate: give exactly one of --prompt TEXT or --ids 1,2,3');
  if (o.dtype !== undefined && (!isDType(o.dtype) || !['bf16', 'f16', 'f32'].includes(o.dtype)))
    throw new TensorError(`generate: --dtype must be bf16, f16 or f32, got '${o.dtype}'`);
  const job = launchedRanks();
  if (job > 1 && o.device !== undefined) {
    throw new TensorError(
      `generate: started as one of ${job} ranks (WORLD_SIZE), each on GPU LOCAL_RANK; leave out --device ${o.device}`,
    );
  }
  const ids = o.ids?.split(',').map((x) => number('--ids', x, true)!);
  const seed = number('--seed', o.seed, true),
    temperature = number('--temperature', o.temperature);
  const topK = number('--top-k', o.topK, true),
    topP = number('--top-p', o.topP);
  const maxTokens = number('--max-tokens', o.maxTokens, true)!;

  // the job's ranks meet before anything is loaded: a rank that cannot start fails them all early
  const comm: Communicator | null = job > 1 ? await initProcessGroup() : null;
  const device = comm ? comm.device : o.device ? Device.parse(o.device) : Device.best();
  const speaks = !comm || comm.rank === 0;
  try {
    await run(dir, o, { device, comm, speaks, ids, seed, temperature, topK, topP, maxTokens });
  } finally {
    comm?.destroy();
  }
}

/** WORLD_SIZE when this process was started as a rank of a job (RANK set too), else 1 */
function launchedRanks(): number {
  if (process.env.WORLD_SIZE === undefined || process.env.RANK === undefined) return 1;
  return distEnvFrom().worldSize;
}

interface RunSetup {
  device: Device;
  comm: Communicator | null;
  /** this process prints (rank 0, or the only one) */
  speaks: boolean;
  ids: number[] | undefined;
  seed: number | undefined;
  temperature: number | undefined;
  topK: number | undefined;
  topP: number | undefined;
  maxTokens: number;
}

async function run(dir: string, o: GenerateCliOptions, setup: RunSetup): Promise<void> {
  const { device, comm, speaks, ids, seed, temperature, topK, topP, maxTokens } = setup;
  const bar =
    speaks && process.stderr.isTTY && !o.json
      ? new cliProgress.SingleBar(
          { format: `loading ${dir} {bar} {value}/{total} tensors`, hideCursor: true, stream: process.stderr },
          cliProgress.Presets.shades_classic,
        )
      : null;
  const t0 = performance.now();
  let started = false;
  const m = await PretrainedLlama.load(dir, {
    ...(comm ? { tp: comm } : { device }),
    ...(o.dtype ? { dtype: o.dtype as DType } : {}),
    onProgress: (done, total) => {
      if (bar && !started) {
        bar.start(total, 0);
        started = true;
      }
      bar?.update(done);
    },
  });
  bar?.stop();
  if (!device.isCpu) device.synchronize();
  const loadSeconds = (performance.now() - t0) / 1e3;
  try {
    const timings: GenerateTimings = { prefillTokens: 0, prefillSeconds: 0, decodeTokens: 0, decodeSeconds: 0 };
    const out: number[] = [];
    let text = '';
    const gen = m.generate(
      ids ?? o.prompt!,
      {
        maxTokens,
        chat: o.chat && ids === undefined && (m.tokenizer?.hasChatTemplate ?? false),
        ...(temperature !== undefined ? { temperature } : {}),
        ...(topK !== undefined ? { topK } : {}),
        ...(topP !== undefined ? { topP } : {}),
        ...(seed !== undefined ? { seed } : {}),
      },
      timings,
    );
    for await (const tok of gen) {
      if (tok.id !== null) out.push(tok.id);
      text += tok.text;
      if (!o.json && speaks) process.stdout.write(tok.text);
    }
    const rate = (n: number, s: number) => (s > 0 ? n / s : null);
    const where = comm ? `${comm.size} ranks (rank 0 on ${device})` : String(device);
    if (!speaks) return;
    if (o.json) {
      console.log(
        JSON.stringify({
          model: dir,
          device: String(device),
          ...(comm ? { ranks: comm.size } : {}),
          dtype: m.model.dtype,
          ids: out,
          text,
          promptTokens: timings.prefillTokens,
          loadSeconds,
          prefillTokensPerS: rate(timings.prefillTokens, timings.prefillSeconds),
          decodeTokensPerS: rate(timings.decodeTokens, timings.decodeSeconds),
        }),
      );
    } else {
      process.stdout.write('\n');
      const r = rate(timings.decodeTokens, timings.decodeSeconds);
      console.error(
        `[${out.length} tokens on ${where} (${m.model.dtype}); load ${loadSeconds.toFixed(2)} s; prefill ${timings.prefillTokens} tokens at ${(rate(timings.prefillTokens, timings.prefillSeconds) ?? 0).toFixed(1)} tok/s; decode ${r === null ? '-' : r.toFixed(1)} tok/s]`,
      );
    }
  } finally {
    m.dispose();
  }
}
