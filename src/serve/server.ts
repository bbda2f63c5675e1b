// createServer(): an OpenAI-compatible HTTP server over a loaded (or loading) model, on
// node:http. Routes: GET /health, GET /metrics, GET /v1/models, POST /v1/chat/completions, POST
// /v1/completions. With an API key, /v1/* wants `Authorization: Bearer KEY`. Until the model
// has loaded every route answers 503; close() stops taking requests, lets the running ones
// finish, then closes the connections.
import { createServer as createHttpServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { basename } from 'node:path';
import { timingSafeEqual } from 'node:crypto';
import type { PretrainedLlama } from '../models/pretrained.ts';
import { Engine, type EngineOptions } from './engine.ts';
import { ServeError, UnavailableError } from './errors.ts';
import { errorBody, readJsonBody, sendError, sendJson } from './http-io.ts';
import { handleCompletion, type CompletionContext } from './completion.ts';
import type { StepPlanLeader } from './tp-plan.ts';

export interface ServeOptions extends EngineOptions {
  /** the model's name in /v1/models and in requests (default: the model folder's name) */
  servedModelName?: string;
  /** wanted as `Authorization: Bearer KEY` on /v1/* (default: none) */
  apiKey?: string | null;
  /** seconds a request may take from arrival to its last token (default 600; 0: no limit) */
  requestTimeout?: number;
  /** request bodies larger than this are refused (413; default 4 MiB) */
  maxBodyBytes?: number;
  /** hears one line per request and the engine's notes (default: stderr) */
  log?: (line: string) => void;
  /** rank 0 of a tensor-parallel job (the model loaded with its `tp`): each step's plan goes to
   *  the other ranks, which run followSteps(); stop() it once the server has closed */
  tensorParallel?: StepPlanLeader;
}

export interface ListeningAddress {
  readonly host: string;
  readonly port: number;
  /** http://host:port/v1, what an OpenAI client takes as its base URL */
  readonly baseUrl: string;
}

export interface ModelServer {
  /** resolves once close() has finished: requests drained, connections closed */
  readonly closed: Promise<void>;
  /** the engine, once the model has loaded */
  readonly engine: Engine | null;
  /** resolves once the model has loaded and requests are served (rejects if loading fails) */
  readonly ready: Promise<void>;
  /** starts listening (default 127.0.0.1, port 8000; port 0 picks a free one) */
  listen(port?: number, host?: string): Promise<ListeningAddress>;
  /** refuses new requests (503), lets those queued and running finish, then closes */
  close(): Promise<void>;
}

/**
 * GET /metrics: the engine's counters and the KV pool's use. `kv.windowPeakUsed` is the most
 * blocks held at once since the previous /metrics request, so a load generator that reads it
 * before and after a load gets that load's peak.
 */
function metricsBody(engine: Engine): Record<string, unknown> {
  const s = engine.stats();
  return {
    object: 'metrics',
    kv: {
      blocks: s.pool.total,
      blockSize: engine.pool.blockSize,
      used: s.pool.used,
      cached: s.pool.cached,
      empty: s.pool.empty,
      peakUsed: engine.pool.peakUsed,
      windowPeakUsed: engine.pool.takeWindowPeak(),
    },
    running: s.running,
    waiting: s.waiting,
    steps: s.steps,
    preemptions: s.preemptions,
    prefixHitTokens: s.prefixHitTokens,
    maxBatch: engine.maxBatch,
    maxSeqLen: engine.maxSeqLen,
  };
}

/** each route's method */
const ROUTES: ReadonlyMap<string, string> = new Map([
  ['/health', 'GET'],
  ['/metrics', 'GET'],
  ['/v1/models', 'GET'],
  ['/v1/chat/completions', 'POST'],
  ['/v1/completions', 'POST'],
]);

export function createServer(model: PretrainedLlama | Promise<PretrainedLlama>, opts: ServeOptions = {}): ModelServer {
  const log = opts.log ?? ((line: string) => console.error(line));
  const timeout = opts.requestTimeout ?? 600;
  if (typeof timeout !== 'number' || !Number.isFinite(timeout) || timeout < 0)
    throw new ServeError(`serve: requestTimeout must be seconds >= 0, got ${timeout}`, 500, 'server_error');
  const maxBody = opts.maxBodyBytes ?? 4 * 2 ** 20;
  const key = opts.apiKey ? Buffer.from(opts.apiKey) : null;
  let ctx: CompletionContext | null = null;
  let loadError: Error | null = null;
  let closing = false;

  const ready = Promise.resolve(model).then((m) => {
    if (!m.tokenizer)
      throw new ServeError(`serve: ${m.dir} has no tokenizer.json; the server needs one`, 500, 'server_error');
    const tp = opts.tensorParallel;
    const engine = new Engine(tp ? tp.served(m) : m, { ...opts, log });
    // the other ranks size their caches before any step can be planned (none runs before ctx is set)
    tp?.start({
      blocks: engine.pool.blocks,
      blockSize: engine.pool.blockSize,
      maxBatch: engine.maxBatch,
      maxSeqLen: engine.maxSeqLen,
    });
    ctx = {
      model: m,
      tokenizer: m.tokenizer,
      engine,
      name: opts.servedModelName ?? basename(m.dir),
      timeoutMs: timeout * 1000,
      log,
    };
  });
  ready.catch((e: unknown) => {
    loadError = e instanceof Error ? e : new Error(String(e));
  });

  const authorized = (req: IncomingMessage): boolean => {
    if (!key) return true;
    const m = /^Bearer\s+(.+)$/i.exec(req.headers.authorization ?? '');
    const given = Buffer.from(m?.[1]?.trim() ?? '');
    return given.length === key.length && timingSafeEqual(given, key);
  };

  const route = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const path = (req.url ?? '/').split('?')[0]!;
    const method = req.method ?? 'GET';
    const want = ROUTES.get(path);
    if (want === undefined) {
      sendJson(res, 404, errorBody(`no route ${method} ${path}`, 'not_found_error'));
      return;
    }
    if (method !== want) {
      res.setHeader('allow', want);
      sendJson(res, 405, errorBody(`${path} takes ${want}, not ${method}`, 'invalid_request_error'));
      return;
    }
    if (path.startsWith('/v1/') && !authorized(req)) {
      sendJson(
        res,
        401,
        errorBody(
          'a valid API key is needed: Authorization: Bearer KEY',
          'authentication_error',
          null,
          'invalid_api_key',
        ),
      );
      return;
    }
    if (closing) throw new UnavailableError('the server is shutting down');
    if (!ctx)
      throw new UnavailableError(
        loadError ? `the model failed to load: ${(loadError as Error).message}` : 'the model is still loading',
      );
    const c: CompletionContext = ctx;
    if (path === '/health') {
      sendJson(res, 200, { status: 'ok' });
      return;
    }
    if (path === '/metrics') {
      sendJson(res, 200, metricsBody(c.engine));
      return;
    }
    if (path === '/v1/models') {
      sendJson(res, 200, {
        object: 'list',
        data: [{ id: c.name, object: 'model', created: 0, owned_by: 'rocm-tensor', max_model_len: c.engine.maxSeqLen }],
      });
      return;
    }
    const body = await readJsonBody(req, maxBody);
    handleCompletion(c, path === '/v1/chat/completions' ? 'chat' : 'completion', body, req, res);
  };

  const http = createHttpServer((req, res) => {
    route(req, res).catch((e: unknown) => {
      const status = sendError(res, e);
      if (status >= 500 && !(e instanceof ServeError))
        log(`${req.method} ${req.url} ${status}: ${(e as Error)?.stack ?? String(e)}`);
      else log(`${req.method} ${req.url} ${status}`);
    });
  });
  // a malformed request line or headers: answered and closed, never a crash
  http.on('clientError', (_e, socket) => {
    if (socket.writable) socket.end('HTTP/1.1 400 Bad Request\r\nconnection: close\r\n\r\n');
  });

  let markClosed: () => void = () => undefined;
  const closedOnce = new Promise<void>((r) => {
    markClosed = r;
  });
  return {
    closed: closedOnce,
    get engine() {
      return ctx?.engine ?? null;
    },
    ready,
    listen(port = 8000, host = '127.0.0.1') {
      return new Promise((resolve, reject) => {
        http.once('error', reject);
        http.listen(port, host, () => {
          http.off('error', reject);
          const a = http.address() as AddressInfo;
          const shown = a.family === 'IPv6' ? `[${a.address}]` : a.address;
          resolve({ host: a.address, port: a.port, baseUrl: `http://${shown}:${a.port}/v1` });
        });
      });
    },
    close() {
      if (closing) return closedOnce;
      closing = true;
      const stopped = new Promise<void>((r) => (http.listening ? http.close(() => r()) : r()));
      http.closeIdleConnections();
      void (async () => {
        await ready.catch(() => undefined);
        await (ctx as CompletionContext | null)?.engine.close();
        // the streams have ended: what is left are idle keep-alive connections
        http.closeIdleConnections();
        setTimeout(() => http.closeAllConnections(), 1000).unref();
        await stopped;
      })()
        .catch((e: unknown) => log(`closing the server: ${(e as Error)?.message ?? String(e)}`))
        .finally(markClosed);
      return closedOnce;
    },
  };
}
