// `rocm-tensor launch`: starts N local processes of one script with the variables the rendezvous
// reads (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT), prefixes their output with the
// rank, and ends the job as soon as one rank fails: the others are stopped (SIGTERM, then
// SIGKILL after a grace period) so nothing waits on a rank that is gone. SIGINT and SIGTERM
// are passed on to the ranks, and the job ends when they have.
import { spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import { createInterface } from 'node:readline';

export interface LaunchOptions {
  readonly nproc: number;
  /** MASTER_PORT; 0 picks a free one */
  readonly port: number;
  readonly addr: string;
  /** the command and its arguments, e.g. ['node', '--import', 'tsx', 'train.ts'] */
  readonly command: readonly string[];
  /** how long the other ranks get after one fails before they are killed */
  readonly graceMs?: number;
}

/** a free TCP port on addr, for MASTER_PORT */
export function freePort(addr = '127.0.0.1'): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.on('error', reject);
    s.listen(0, addr, () => {
      const a = s.address();
      s.close(() => (a && typeof a === 'object' ? resolve(a.port) : reject(new Error('no port'))));
    });
  });
}

/** runs the job; resolves with the exit code to report (the first failing rank's, else 0) */
export async function launch(o: LaunchOptions): Promise<number> {
  if (!Number.isInteger(o.nproc) || o.nproc < 1)
    throw new RangeError(`launch: --nproc must be a positive integer, got ${o.nproc}`);
  if (o.command.length === 0) throw new RangeError('launch: no command to run (put it after --)');
  const port = o.port || (await freePort(o.addr));
  const children: ChildProcess[] = [];
  let failedCode: number | null = null;
  let killTimer: NodeJS.Timeout | null = null;
  const stopOthers = (): void => {
    for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGTERM');
    killTimer = setTimeout(() => {
      for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
    }, o.graceMs ?? 5000);
  };
  const exits = Array.from(
    { length: o.nproc },
    (_, rank) =>
      new Promise<void>((resolve) => {
        const child = spawn(o.command[0]!, o.command.slice(1), {
          stdio: ['ignore', 'pipe', 'pipe'],
          // a group of its own: a terminal's Ctrl-C reaches the ranks once, forwarded below
          detached: true,
          env: {
            ...process.env,
            RANK: String(rank),
            WORLD_SIZE: String(o.nproc),
            LOCAL_RANK: String(rank),
            LOCAL_WORLD_SIZE: String(o.nproc),
            MASTER_ADDR: o.addr,
            MASTER_PORT: String(port),
          },
        });
        children.push(child);
        createInterface({ input: child.stdout! }).on('line', (l) => process.stdout.write(`[rank ${rank}] ${l}\n`));
        createInterface({ input: child.stderr! }).on('line', (l) => process.stderr.write(`[rank ${rank}] ${l}\n`));
        child.on('error', (e) => {
          process.stderr.write(`launch: rank ${rank}: ${e.message}\n`);
        });
        child.on('close', (code, signal) => {
          const c = code ?? (signal ? 128 : 1);
          if (c !== 0 && failedCode === null) {
            failedCode = c;
            process.stderr.write(`launch: rank ${rank} exited with ${code ?? signal}; stopping the others\n`);
            stopOthers();
          }
          resolve();
        });
      }),
  );
  // SIGINT and SIGTERM go on to every live rank, and the job ends when they have exited: a rank
  // that stops gracefully (a server draining its requests) gets to, and keeps its output
  const forward = (sig: NodeJS.Signals): void => {
    for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill(sig);
  };
  const onInt = () => forward('SIGINT'),
    onTerm = () => forward('SIGTERM');
  process.on('SIGINT', onInt);
  process.on('SIGTERM', onTerm);
  try {
    await Promise.all(exits);
  } finally {
    process.off('SIGINT', onInt);
    process.off('SIGTERM', onTerm);
  }
  if (killTimer) clearTimeout(killTimer);
  return failedCode ?? 0;
}
