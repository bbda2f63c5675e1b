// `rocm-tensor serve <model-dir>`: an OpenAI-compatible server (src/serve) over a Hugging Face
// Llama-family folder. It listens at once, answering 503 while the model loads; SIGINT or
// SIGTERM stop it gracefully (new requests refused, running ones finished), a second signal at once.
import { Device } from '../device/device.ts';
import { isDType, type DType } from '../core/dtype.ts';
import { TensorError } from '../core/errors.ts';
import { PretrainedLlama } from '../models/pretrained.ts';
import { createServer, type ServeOptions } from '../serve/server.ts';

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
    log: (line) => console.error(`[serve] ${line}`),
  };
  const device = o.device ? Device.parse(o.device) : Device.best();
  const t0 = performance.now();
  const loading = PretrainedLlama.load(dir, {
    device,
    ...(o.dtype ? { dtype: o.dtype as DType } : {}),
    onWarning: (m) => console.error(`rocm-tensor: warning: ${m}`),
  });
  loading.catch(() => undefined);
  const server = createServer(loading, opts);
  const at = await server.listen(port, o.host);
  console.error(`[serve] listening on ${at.baseUrl} (loading ${dir} on ${device})`);
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
      `KV cache ${e.pool.blocks} blocks of ${e.pool.blockSize} tokens, context ${e.maxSeqLen}, batch ${e.maxBatch}`,
  );
  await server.closed;
  model.dispose();
}
