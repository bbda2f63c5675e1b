// The multi-process rendezvous: before the ranks of one job can build a communicator they must
// all hold the same unique id, which only rank 0 creates. Rank 0 serves it over TCP at
// MASTER_ADDR:MASTER_PORT (torchrun's convention); every other rank connects, says who it is, and
// gets the id once all WORLD_SIZE ranks have arrived. Both sides give up after a timeout with an
// error that says which ranks never came, so a dead rank never leaves the others hanging.
import { createServer, connect, type Socket } from 'node:net';
import { TensorError } from '../core/errors.ts';
import type { EnvSource } from '../core/config.ts';

export class RendezvousError extends TensorError {}

export interface DistEnv {
  readonly rank: number;
  readonly worldSize: number;
  readonly localRank: number;
  readonly masterAddr: string;
  readonly masterPort: number;
}

/** RANK, WORLD_SIZE, LOCAL_RANK (default RANK), MASTER_ADDR (default 127.0.0.1), MASTER_PORT */
export function distEnvFrom(env: EnvSource = process.env): DistEnv {
  const int = (name: string, fallback?: number): number => {
    const raw = env[name];
    if (raw === undefined || raw === '') {
      if (fallback !== undefined) return fallback;
      throw new RendezvousError(
        `rendezvous: ${name} is not set (set RANK, WORLD_SIZE and MASTER_PORT, or start the job with \`rocm-tensor launch\`)`,
      );
    }
    const v = Number(raw);
    if (!Number.isInteger(v) || v < 0)
      throw new RendezvousError(`rendezvous: ${name} must be a non-negative integer, got "${raw}"`);
    return v;
  };
  const worldSize = int('WORLD_SIZE'),
    rank = int('RANK');
  if (worldSize < 1 || rank >= worldSize)
    throw new RendezvousError(`rendezvous: RANK ${rank} is not below WORLD_SIZE ${worldSize}`);
  const masterPort = int('MASTER_PORT');
  if (masterPort < 1 || masterPort > 65535)
    throw new RendezvousError(`rendezvous: MASTER_PORT ${masterPort} is not a TCP port`);
  return {
    rank,
    worldSize,
    localRank: int('LOCAL_RANK', rank),
    masterAddr: env['MASTER_ADDR'] || '127.0.0.1',
    masterPort,
  };
}

export interface RendezvousOptions extends DistEnv {
  /** rank 0: the bytes to hand to every rank (the collectives library's unique id) */
  readonly payload?: Uint8Array;
  /** how long to wait for every rank (rank 0) or for rank 0 (the others); default 60 s */
  readonly timeoutMs?: number;
  /**
   * what every rank must agree on before they build anything together (the device vendor and
   * the collectives library's version): rank 0 refuses a rank whose text differs from its own
   */
  readonly meta?: string;
}

interface Hello {
  rank: number;
  worldSize: number;
  meta?: string;
}
interface Reply {
  ok: boolean;
  id?: string;
  error?: string;
}

/** one JSON object per line each way: small, and readable in a packet capture */
function readLine(sock: Socket, onLine: (line: string) => void): void {
  let buf = '';
  sock.setEncoding('utf8');
  sock.on('data', (chunk: string) => {
    buf += chunk;
    const nl = buf.indexOf('\n');
    if (nl >= 0) {
      const line = buf.slice(0, nl);
      buf = buf.slice(nl + 1);
      onLine(line);
    }
  });
}

/** every rank calls this once; all get rank 0's payload, or an error after the timeout */
export function rendezvous(o: RendezvousOptions): Promise<Uint8Array> {
  const timeoutMs = o.timeoutMs ?? 60_000;
  return o.rank === 0 ? serve(o, timeoutMs) : join(o, timeoutMs);
}

function serve(o: RendezvousOptions, timeoutMs: number): Promise<Uint8Array> {
  const payload = o.payload;
  if (!payload) return Promise.reject(new RendezvousError('rendezvous: rank 0 needs the payload to hand out'));
  if (o.worldSize === 1) return Promise.resolve(payload);
  return new Promise((resolve, reject) => {
    const waiting = new Map<number, Socket>();
    const server = createServer();
    let done = false;
    const finish = (err: Error | null): void => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      const reply: Reply = err
        ? { ok: false, error: err.message }
        : { ok: true, id: Buffer.from(payload).toString('base64') };
      for (const s of waiting.values()) s.end(JSON.stringify(reply) + '\n');
      server.close();
      if (err) reject(err);
      else resolve(payload);
    };
    const timer = setTimeout(() => {
      const missing = Array.from({ length: o.worldSize - 1 }, (_, i) => i + 1).filter((r) => !waiting.has(r));
      finish(
        new RendezvousError(
          `rendezvous: ranks ${missing.join(', ')} of ${o.worldSize} never arrived at ${o.masterAddr}:${o.masterPort} within ${timeoutMs / 1e3} s`,
        ),
      );
    }, timeoutMs);
    server.on('error', (e) =>
      finish(new RendezvousError(`rendezvous: rank 0 cannot listen on ${o.masterAddr}:${o.masterPort}: ${e.message}`)),
    );
    server.on('connection', (sock) => {
      sock.on('error', () => {
        /* a rank that drops out is reported by the timeout */
      });
      readLine(sock, (line) => {
        let h: Hello;
        try {
          h = JSON.parse(line) as Hello;
        } catch {
          sock.destroy();
          return;
        }
        const bad =
          h.worldSize !== o.worldSize
            ? `rank ${h.rank} says WORLD_SIZE ${h.worldSize}, rank 0 has ${o.worldSize}`
            : !(Number.isInteger(h.rank) && h.rank >= 1 && h.rank < o.worldSize)
              ? `rank ${h.rank} is out of range for WORLD_SIZE ${o.worldSize}`
              : waiting.has(h.rank)
                ? `rank ${h.rank} arrived twice`
                : (h.meta ?? '') !== (o.meta ?? '')
                  ? `rank ${h.rank} has ${h.meta || 'nothing'}, rank 0 has ${o.meta || 'nothing'}`
                  : null;
        if (bad) {
          waiting.set(-1 - waiting.size, sock);
          finish(new RendezvousError(`rendezvous: ${bad}`));
          return;
        }
        waiting.set(h.rank, sock);
        if (waiting.size === o.worldSize - 1) finish(null);
      });
    });
    server.listen(o.masterPort, o.masterAddr === 'localhost' ? '127.0.0.1' : o.masterAddr);
  });
}

function join(o: RendezvousOptions, timeoutMs: number): Promise<Uint8Array> {
  const deadline = Date.now() + timeoutMs;
  return new Promise((resolve, reject) => {
    let lastError = '';
    const attempt = (): void => {
      if (Date.now() >= deadline) {
        reject(
          new RendezvousError(
            `rendezvous: rank ${o.rank} could not reach rank 0 at ${o.masterAddr}:${o.masterPort} within ${timeoutMs / 1e3} s${lastError ? ` (${lastError})` : ''}`,
          ),
        );
        return;
      }
      const sock = connect(o.masterPort, o.masterAddr);
      let answered = false;
      const guard = setTimeout(() => sock.destroy(new Error('no reply')), Math.max(1, deadline - Date.now()));
      sock.on('connect', () =>
        sock.write(JSON.stringify({ rank: o.rank, worldSize: o.worldSize, meta: o.meta } satisfies Hello) + '\n'),
      );
      readLine(sock, (line) => {
        answered = true;
        clearTimeout(guard);
        sock.end();
        const r = JSON.parse(line) as Reply;
        if (r.ok && r.id !== undefined) resolve(new Uint8Array(Buffer.from(r.id, 'base64')));
        else reject(new RendezvousError(`rendezvous: rank 0 refused rank ${o.rank}: ${r.error ?? 'no reason given'}`));
      });
      sock.on('error', (e) => {
        lastError = e.message;
      });
      sock.on('close', () => {
        clearTimeout(guard);
        // rank 0 not listening yet (or gone before answering): try again until the deadline
        if (!answered) setTimeout(attempt, 100);
      });
    };
    attempt();
  });
}
