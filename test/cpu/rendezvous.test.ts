// The multi-process rendezvous and the launcher, on loopback TCP with no GPU: every rank gets
// rank 0's bytes (also when a rank starts late), a rank that never arrives, a rank 0 that never
// listens and a mismatched WORLD_SIZE end in errors that name them within the timeout, and
// `rocm-tensor launch` starts the ranks with torchrun's variables and stops the job when one fails.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { rendezvous, distEnvFrom, RendezvousError } from '../../src/distributed/rendezvous.ts';
import { freePort } from '../../src/distributed/launch.ts';
import { REPO_ROOT, runtime, runtimePath, tsCommand } from '../runtime.ts';

const base = async (worldSize: number) => ({
  worldSize,
  masterAddr: '127.0.0.1',
  masterPort: await freePort(),
  localRank: 0,
});
const payload = new Uint8Array(Array.from({ length: 128 }, (_, i) => (i * 37 + 11) & 255));

async function rejection(p: Promise<unknown>): Promise<Error> {
  try {
    await p;
  } catch (e) {
    return e as Error;
  }
  throw new Error('expected a rejection');
}

test("every rank gets rank 0's bytes, a late rank too", async () => {
  const b = await base(4);
  const late = new Promise<Uint8Array>((res, rej) =>
    setTimeout(() => rendezvous({ ...b, rank: 3, timeoutMs: 5000 }).then(res, rej), 300),
  );
  const got = await Promise.all([
    rendezvous({ ...b, rank: 1, timeoutMs: 5000 }), // before rank 0 listens: retries
    rendezvous({ ...b, rank: 0, payload, timeoutMs: 5000 }),
    rendezvous({ ...b, rank: 2, timeoutMs: 5000 }),
    late,
  ]);
  for (const g of got) assert.equal(Array.from(g), Array.from(payload));
});

test('a rank that never arrives: both sides fail within the timeout, naming it', async () => {
  const b = await base(3);
  const t0 = Date.now();
  const [e0, e1] = await Promise.all([
    rejection(rendezvous({ ...b, rank: 0, payload, timeoutMs: 600 })),
    rejection(rendezvous({ ...b, rank: 1, timeoutMs: 5000 })),
  ]);
  assert.ok(Date.now() - t0 < 3000, 'took too long');
  assert.instance(e0, RendezvousError);
  assert.match(e0.message, /ranks 2 of 3 never arrived/);
  assert.match(e1.message, /rank 0 refused rank 1: .*ranks 2 of 3 never arrived/);
});

test('rank 0 never listens: the others give up with the address', async () => {
  const b = await base(2);
  const e = await rejection(rendezvous({ ...b, rank: 1, timeoutMs: 500 }));
  assert.instance(e, RendezvousError);
  assert.match(
    e.message,
    new RegExp(`rank 1 could not reach rank 0 at 127\\.0\\.0\\.1:${b.masterPort} within 0\\.5 s`),
  );
});

test('mismatched WORLD_SIZE and a duplicate rank are refused', async () => {
  const b = await base(3);
  const [e0, e1] = await Promise.all([
    rejection(rendezvous({ ...b, rank: 0, payload, timeoutMs: 3000 })),
    rejection(rendezvous({ ...b, worldSize: 4, rank: 1, timeoutMs: 3000 })),
  ]);
  assert.match(e0.message, /rank 1 says WORLD_SIZE 4, rank 0 has 3/);
  assert.match(e1.message, /refused rank 1/);
  const c = await base(3);
  const [d0, ,] = await Promise.all([
    rejection(rendezvous({ ...c, rank: 0, payload, timeoutMs: 3000 })),
    rejection(rendezvous({ ...c, rank: 1, timeoutMs: 3000 })),
    new Promise((r) => setTimeout(r, 200)).then(() => rejection(rendezvous({ ...c, rank: 1, timeoutMs: 3000 }))),
  ]);
  assert.match(d0.message, /rank 1 arrived twice/);
});

test("a rank whose meta (vendor, library version) differs from rank 0's is refused", async () => {
  const b = await base(2);
  const [e0, e1] = await Promise.all([
    rejection(rendezvous({ ...b, rank: 0, payload, meta: 'cuda NCCL 2.28.3', timeoutMs: 3000 })),
    rejection(rendezvous({ ...b, rank: 1, meta: 'cuda NCCL 2.21.5', timeoutMs: 3000 })),
  ]);
  assert.match(e0.message, /rank 1 has cuda NCCL 2\.21\.5, rank 0 has cuda NCCL 2\.28\.3/);
  assert.match(e1.message, /rank 0 refused rank 1/);
  const c = await base(2);
  const got = await Promise.all([
    rendezvous({ ...c, rank: 0, payload, meta: 'same', timeoutMs: 3000 }),
    rendezvous({ ...c, rank: 1, meta: 'same', timeoutMs: 3000 }),
  ]);
  assert.equal(Array.from(got[1]), Array.from(payload));
});

test("distEnvFrom reads torchrun's variables and names what is wrong", () => {
  assert.equal(distEnvFrom({ RANK: '1', WORLD_SIZE: '2', MASTER_PORT: '29500' }), {
    rank: 1,
    worldSize: 2,
    localRank: 1,
    masterAddr: '127.0.0.1',
    masterPort: 29500,
  });
  assert.equal(
    distEnvFrom({ RANK: '3', WORLD_SIZE: '4', LOCAL_RANK: '1', MASTER_ADDR: 'node7', MASTER_PORT: '1234' }).masterAddr,
    'node7',
  );
  const bad = (env: NodeJS.ProcessEnv, re: RegExp) =>
    assert.throws(
      () => distEnvFrom(env),
      (e: Error) => e instanceof RendezvousError && re.test(e.message),
    );
  bad({ WORLD_SIZE: '2', MASTER_PORT: '1' }, /RANK is not set/);
  bad({ RANK: '2', WORLD_SIZE: '2', MASTER_PORT: '1' }, /RANK 2 is not below WORLD_SIZE 2/);
  bad({ RANK: 'x', WORLD_SIZE: '2', MASTER_PORT: '1' }, /RANK must be a non-negative integer, got "x"/);
  bad({ RANK: '0', WORLD_SIZE: '2', MASTER_PORT: '70000' }, /MASTER_PORT 70000 is not a TCP port/);
});

const cli = (args: string[]) => {
  const { cmd, args: pre } = tsCommand(runtime, join(REPO_ROOT, 'src/cli/main.ts'), args);
  return spawnSync(cmd, pre, { cwd: REPO_ROOT, encoding: 'utf8', timeout: 60_000 });
};

test(`rocm-tensor launch under ${runtime}: each rank gets its variables; one failing rank ends the job`, () => {
  const exe = runtimePath(runtime);
  const ok = cli([
    'launch',
    '--nproc',
    '3',
    '--',
    exe,
    '-e',
    'console.log(["RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR"].map((k) => process.env[k]).join(" "), Number(process.env.MASTER_PORT) > 0)',
  ]);
  assert.is(ok.status, 0, ok.stderr);
  for (const r of [0, 1, 2]) assert.ok(ok.stdout.includes(`[rank ${r}] ${r} 3 ${r} 127.0.0.1 true`), ok.stdout);
  const t0 = Date.now();
  const bad = cli([
    'launch',
    '--nproc',
    '2',
    '--',
    exe,
    '-e',
    'if (process.env.RANK === "1") process.exit(3); setTimeout(() => {}, 60000)',
  ]);
  assert.is(bad.status, 3, `exit ${bad.status}: ${bad.stderr}`);
  assert.match(bad.stderr, /launch: rank 1 exited with 3; stopping the others/);
  assert.ok(Date.now() - t0 < 30_000, 'rank 0 was not stopped');
});

test.run();
