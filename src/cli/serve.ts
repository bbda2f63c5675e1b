// `rocm-tensor serve <model-dir>`: an OpenAI-compatible server (src/serve) over a Hugging Face
// Llama-family folder. It listens at once, answering 503 while the model loads; SIGINT or
// SIGTERM stop it gracefully (new requests refused, running ones finished), a second signal at once.
// Started by `rocm-tensor launch --nproc N` (WORLD_SIZE above 1), each process is one rank of a
// tensor-parallel model on GPU LOCAL_RANK: rank 0 listens and runs the engine, sending each step
// to the others, which never open a port; they stop when rank 0 has drained and stopped.
import { Device } from '../device/device.ts';
import { isDType, type DType } from '../core/dtype.ts';
import { TensorError } from '../core/errors.ts';
import { PretrainedLlama } from '../models/pretrained.ts';
import { createServer, type ServeOptions } from '../serve/server.ts';
import { followSteps, StepPlanLeader } from '../serve/tp-plan.ts';
import { initProcessGroup } from '../distributed/init.ts';
import { launchedRanks } from './launched.ts';
import { rankSet } from '../distributed/rank-set.ts';
import type { Communicator } from '../distributed/communicator.ts';

export interface ServeCliOptions {
  host: string;
  port: string;
  device?: string;
  dtype?: string;
  maxBatch?: string;
  maxSeqLen?: string;
  kvMemory?: string;
  blockSize?: string;
  prefillChunk?: string;
  maxQueue?: string;
  requestTimeout?: string;
  apiKey?: string;
  servedModelName?: string;
  decodeGraphs?: boolean;
}

function int(flag: string, v: string | undefined, min: number): number | undefined {
  if (v === undefined) return undefined;
  const n = Number(v);
  if (v.trim() === '' || !Number.isInteger(n) || n < min)
    throw new TensorError(`serve: ${flag} must be an integer >= ${min}, got '${v}'`);
  return n;
}

/** GiB (> 1), or a fraction (0, 1] of the memory free after loading: bytes or a fraction for the engine */
function kvMemory(v: string | undefined): number | undefined {
  if (v === undefined) return undefined;
  const n = Number(v);
  if (v.trim() === '' || !Number.isFinite(n) || n <= 0)
    throw new TensorError(`serve: --kv-memory must be GiB (> 1) or a fraction in (0, 1], got '${v}'`);
  return n <= 1 ? n : n * 2 ** 30;
}

export async function serveCommand(dir: string, o: ServeCliOptions): Promise<void> {
  if (o.dtype !== undefined && (!isDType(o.dtype) || !['bf16', 'f16', 'f32'].includes(o.dtype)))
    throw new TensorError(`serve: --dtype must be bf16, f16 or f32, got '${o.dtype}'`);
  const port = int('--port', o.port, 0)!;
  if (port > 65535) throw new TensorError(`serve: --port must be at most 65535, got '${o.port}'`);
  const opts: ServeOptions = {
    maxBatch: int('--max-batch', o.maxBatch, 1),
    maxSeqLen: int('--max-seq-len', o.maxSeqLen, 2),
    kvMemory: kvMemory(o.kvMemory),
    blockSize: int('--block-size', o.blockSize, 1),
    prefillChunk: int('--prefill-chunk', o.prefillChunk, 1),
    maxQueue: int('--max-queue', o.maxQueue, 1),
    requestTimeout: int('--request-timeout', o.requestTimeout, 0),
    apiKey: o.apiKey ?? null,
    servedModelName: o.servedModelName,
    // --no-decode-graphs gives false; else the engine's default (on for one GPU)
    decodeGraphs: o.decodeGraphs === false ? false : undefined,
    log: (line) => console.error(`[serve] ${line}`),
  };
  const job = launchedRanks('serve', o.device);
  // the job's ranks meet before anything is loaded: a rank that cannot start fails them all early
  const comm: Communicator | null = job > 1 ? await initProcessGroup() : null;
  try {
    if (comm && comm.rank !== 0) await follow(dir, o, comm);
    else await lead(dir, o, opts, port, comm);
  } finally {
    comm?.destroy();
  }
}

const warn = (m: string) => console.error(`rocm-tensor: warning: ${m}`);

/** a rank other than 0: loads its shard and runs the steps rank 0 sends, until rank 0 stops */
async function follow(dir: string, o: ServeCliOptions, comm: Communicator): Promise<void> {
  const t0 = performance.now();
  const m = await PretrainedLlama.load(dir, {
    tp: comm,
    ...(o.dtype ? { dtype: o.dtype as DType } : {}),
    onWarning: warn,
  });
  // rank 0 decides when to stop (it drains first); a signal here waits for it, a second ends now
  let signals = 0;
  const onSignal = (sig: string): void => {
    if (++signals > 1) process.exit(130);
    console.error(`[serve] rank ${comm.rank}: ${sig}: stopping once rank 0 has drained (again to exit now)`);
  };
  process.on('SIGINT', () => onSignal('SIGINT'));
  process.on('SIGTERM', () => onSignal('SIGTERM'));
  try {
    console.error(
      `[serve] rank ${comm.rank} of ${comm.size}: shard loaded in ${((performance.now() - t0) / 1e3).toFixed(1)} s on ${comm.device}; following rank 0's steps`,
    );
    const r = await followSteps(m.model, rankSet(comm));
    console.error(`[serve] rank ${comm.rank}: stopped after ${r.steps} steps`);
  } finally {
    m.dispose();
  }
}

/** the only process, or rank 0 of a job: listens, loads, serves until a signal has drained it */
async function lead(
  dir: string,
  o: ServeCliOptions,
  base: ServeOptions,
  port: number,
  comm: Communicator | null,
): Promise<void> {
  const leader = comm
    ? new StepPlanLeader(rankSet(comm), (e) => {
        // the other ranks may be inside the failed step's collectives: end the job (launch stops them)
        console.error(`[serve] a tensor-parallel step failed, which ends every rank: ${e.stack ?? e.message}`);
        process.exit(1);
      })
    : null;
  const opts: ServeOptions = leader ? { ...base, tensorParallel: leader } : base;
  const device = comm ? comm.device : o.device ? Device.parse(o.device) : Device.best();
  const t0 = performance.now();
  const loading = PretrainedLlama.load(dir, {
    ...(comm ? { tp: comm } : { device }),
    ...(o.dtype ? { dtype: o.dtype as DType } : {}),
    onWarning: warn,
  });
  loading.catch(() => undefined);
  const server = createServer(loading, opts);
  const at = await server.listen(port, o.host);
  console.error(
    `[serve] listening on ${at.baseUrl} (loading ${dir} on ${comm ? `${comm.size} ranks, rank 0 on ${device}` : device})`,
  );
  let signals = 0;
  const stop = (sig: string): void => {
    if (++signals > 1) {
      console.error(`[serve] ${sig} again: exiting now`);
      process.exit(130);
    }
    console.error(`[serve] ${sig}: finishing the running requests, refusing new ones (again to exit now)`);
    void server.close().then(() => console.error('[serve] stopped'));
  };
  process.on('SIGINT', () => stop('SIGINT'));
  process.on('SIGTERM', () => stop('SIGTERM'));
  let model: PretrainedLlama;
  try {
    [model] = await Promise.all([loading, server.ready]);
  } catch (e) {
    await server.close();
    throw e;
  }
  const e = server.engine!;
  console.error(
    `[serve] ready: ${model.model.config.modelType} in ${model.model.dtype}, loaded in ${((performance.now() - t0) / 1e3).toFixed(1)} s; ` +
      `KV cache ${e.pool.blocks} blocks of ${e.pool.blockSize} tokens${comm ? ' on every rank' : ''}, context ${e.maxSeqLen}, batch ${e.maxBatch}`,
  );
  await server.closed;
  if (leader && comm) {
    leader.stop();
    await comm.synchronize();
  }
  model.dispose();
}
