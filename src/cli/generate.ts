// `rocm-tensor generate <model-dir>`: loads a Hugging Face Llama-family folder (llama, mistral,
// qwen2) and streams generated text to stdout; --json prints one JSON object at the end instead.
// Started by `rocm-tensor launch --nproc N` (WORLD_SIZE above 1 in the environment), each process
// is one rank of a tensor-parallel model on GPU LOCAL_RANK, and only rank 0 prints. When stdout
// closes early (`| head`), generation stops and the command exits quietly with status 0.
import cliProgress from 'cli-progress';
import { Device } from '../device/device.ts';
import { isDType, type DType } from '../core/dtype.ts';
import { TensorError } from '../core/errors.ts';
import { PretrainedLlama } from '../models/pretrained.ts';
import type { GenerateTimings } from '../models/generate.ts';
import { API_NAMES, checkSamplingOptions, type OptionNames, type SamplingOptions } from '../models/sampling.ts';
import { initProcessGroup } from '../distributed/init.ts';
import { launchedRanks } from './launched.ts';
import type { Communicator } from '../distributed/communicator.ts';

export interface GenerateCliOptions {
  prompt?: string;
  ids?: string;
  maxTokens: string;
  temperature?: string;
  topK?: string;
  topP?: string;
  seed?: string;
  repetitionPenalty?: string;
  presencePenalty?: string;
  frequencyPenalty?: string;
  device?: string;
  dtype?: string;
  json?: boolean;
  chat: boolean;
}

/** the flag each option comes from, for errors */
const FLAGS: OptionNames & { readonly maxTokens: string } = {
  ...API_NAMES,
  temperature: '--temperature',
  topK: '--top-k',
  topP: '--top-p',
  seed: '--seed',
  repetitionPenalty: '--repetition-penalty',
  presencePenalty: '--presence-penalty',
  frequencyPenalty: '--frequency-penalty',
  maxTokens: '--max-tokens',
};

/** prints a warning of the command or the library on stderr */
function warn(message: string): void {
  console.error(`rocm-tensor: warning: ${message}`);
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
  const job = launchedRanks('generate', o.device);
  const ids = o.ids?.split(',').map((x) => number('--ids', x, true)!);
  if (ids?.some((id) => id < 0)) throw new TensorError(`generate: --ids must be token ids >= 0, got '${o.ids}'`);
  const sampling: SamplingOptions = {};
  const put = (key: keyof SamplingOptions, v: string | undefined, int = false) => {
    const n = number(FLAGS[key], v, int);
    if (n !== undefined) sampling[key] = n;
  };
  put('temperature', o.temperature);
  put('topK', o.topK, true);
  put('topP', o.topP);
  put('seed', o.seed, true);
  put('repetitionPenalty', o.repetitionPenalty);
  put('presencePenalty', o.presencePenalty);
  put('frequencyPenalty', o.frequencyPenalty);
  // checked before anything is loaded, naming the flags typed
  checkSamplingOptions(sampling, FLAGS);
  const maxTokens = number('--max-tokens', o.maxTokens, true)!;
  if (maxTokens < 1) throw new TensorError(`generate: --max-tokens must be a positive integer, got '${o.maxTokens}'`);
  const ignored = (['topK', 'topP', 'seed'] as const).filter((k) => sampling[k] !== undefined).map((k) => FLAGS[k]);
  if (sampling.temperature === 0 && ignored.length > 0)
    warn(`--temperature 0 is greedy: ${ignored.join(', ')} ${ignored.length === 1 ? 'has' : 'have'} no effect`);

  // the job's ranks meet before anything is loaded: a rank that cannot start fails them all early
  const comm: Communicator | null = job > 1 ? await initProcessGroup() : null;
  const device = comm ? comm.device : o.device ? Device.parse(o.device) : Device.best();
  const speaks = !comm || comm.rank === 0;
  try {
    await run(dir, o, { device, comm, speaks, ids, sampling, maxTokens });
  } finally {
    comm?.destroy();
  }
}

interface RunSetup {
  device: Device;
  comm: Communicator | null;
  /** this process prints (rank 0, or the only one) */
  speaks: boolean;
  ids: number[] | undefined;
  sampling: SamplingOptions;
  maxTokens: number;
}

/**
 * stdout that may close before generation ends (`| head -c 5`): the write error is kept
 * (never thrown as an unhandled 'error' event) and `closed` tells the loop to stop.
 */
class Stdout {
  closed = false;
  private last = performance.now();
  private readonly onError = (e: NodeJS.ErrnoException): void => {
    if (e.code === 'EPIPE' || e.code === 'ERR_STREAM_DESTROYED') this.closed = true;
    else throw e;
  };
  constructor() {
    process.stdout.on('error', this.onError);
  }
  write(text: string): void {
    if (!this.closed && text !== '') process.stdout.write(text);
  }
  /**
   * A turn of the event loop every 50 ms: where each token's ids are read without one (on the
   * CPU they are ready at once), the report of a closed pipe would otherwise wait for the end.
   */
  async turn(): Promise<void> {
    const now = performance.now();
    if (now - this.last < 50) return;
    this.last = now;
    await new Promise((r) => setImmediate(r));
  }
  release(): void {
    // a write still queued when the pipe closed reports it later: keep listening, quietly
    if (!this.closed) process.stdout.off('error', this.onError);
  }
}

async function run(dir: string, o: GenerateCliOptions, setup: RunSetup): Promise<void> {
  const { device, comm, speaks, ids, sampling, maxTokens } = setup;
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
    onWarning: warn,
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
  const stdout = new Stdout();
  try {
    const vocab = m.model.config.vocabSize;
    const outside = ids?.find((id) => id >= vocab);
    if (outside !== undefined)
      throw new TensorError(`generate: --ids: token id ${outside} is outside the model's vocabulary [0, ${vocab})`);
    const timings: GenerateTimings = { prefillTokens: 0, prefillSeconds: 0, decodeTokens: 0, decodeSeconds: 0 };
    const out: number[] = [];
    let text = '';
    const gen = m.generate(
      ids ?? o.prompt!,
      {
        maxTokens,
        chat: o.chat && ids === undefined && (m.tokenizer?.hasChatTemplate ?? false),
        ...sampling,
        optionNames: FLAGS,
      },
      timings,
    );
    // without a tokenizer the stream is the ids, as --ids takes them
    const streamIds = m.tokenizer === null;
    for await (const tok of gen) {
      if (tok.id !== null) out.push(tok.id);
      text += tok.text;
      if (!o.json && speaks) {
        stdout.write(streamIds && tok.id !== null ? `${out.length > 1 ? ',' : ''}${tok.id}` : tok.text);
        await stdout.turn();
        if (stdout.closed) return;
      }
    }
    const rate = (n: number, s: number) => (s > 0 ? n / s : null);
    const where = comm ? `${comm.size} ranks (rank 0 on ${device})` : String(device);
    if (!speaks) return;
    if (o.json) {
      stdout.write(
        `${JSON.stringify({
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
        })}\n`,
      );
    } else {
      stdout.write('\n');
      if (stdout.closed) return;
      const r = rate(timings.decodeTokens, timings.decodeSeconds);
      console.error(
        `[${out.length} tokens on ${where} (${m.model.dtype}); load ${loadSeconds.toFixed(2)} s; prefill ${timings.prefillTokens} tokens at ${(rate(timings.prefillTokens, timings.prefillSeconds) ?? 0).toFixed(1)} tok/s; decode ${r === null ? '-' : r.toFixed(1)} tok/s]`,
      );
    }
  } finally {
    stdout.release();
    m.dispose();
  }
}
