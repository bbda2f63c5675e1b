// One rank of the multi-process collective tests (test/gpu/collectives.test.ts starts it, through
// `rocm-tensor launch` or directly). argv[2] is the mode; `ops` runs at any world size, the
// failure modes as 2 ranks:
//   ops [check]  every op and dtype against the CPU reduction of every rank's seeded data
//                (with `check`, the checkShapes agreement step runs before each collective)
//   dies         rank 1 throws after joining; rank 0's collective must end in an error, not a hang
//   hangs        rank 1 stays alive but never calls the collective; rank 0 must time out
//   mismatch     with checkShapes, rank 0 passes [4, 4] and rank 1 [4, 3]: both must throw
//   alone        started without rank 1: the rendezvous must fail naming it
// Prints `EXPECTED <class>: <message>` for the failures it wants and exits 0; anything else
// unexpected exits non-zero.
import { initProcessGroup, distEnvFrom, DTYPES, Tensor, type Communicator } from '../../../src/index.ts';
import { values, reduceRef, tensorOf, numbers, firstDiff, opsFor, avgTolerance } from '../collective-data.ts';

const mode = process.argv[2] ?? 'ops';
const env = distEnvFrom();
const say = (s: string) => console.log(`rank ${env.rank}: ${s}`);

async function expectFailure(what: string, fn: () => Promise<unknown>): Promise<void> {
  const t0 = Date.now();
  try {
    await fn();
  } catch (e) {
    const err = e as Error;
    console.log(`EXPECTED ${err.constructor.name}: ${err.message}`);
    say(`${what} failed after ${((Date.now() - t0) / 1e3).toFixed(1)} s, as it should`);
    return;
  }
  throw new Error(`${what} succeeded, but it should have failed`);
}

async function ops(comm: Communicator): Promise<void> {
  const n = comm.size,
    r = comm.rank,
    dev = comm.device;
  let checks = 0;
  const fail = (what: string, d: string | null) => {
    if (d) throw new Error(`${what}: ${d}`);
    checks++;
  };
  for (const [ci, size] of [1, 1000, 65537].entries()) {
    for (const dtype of DTYPES) {
      const seed = ci * 100 + DTYPES.indexOf(dtype) * 10;
      for (const [oi, op] of opsFor(dtype).entries()) {
        const all = Array.from({ length: n }, (_, k) => values(seed + oi, k, size, dtype, op));
        const t = tensorOf(all[r]!, dtype, dev);
        comm.allReduce(t, { op });
        fail(
          `allReduce(${op}) ${dtype} [${size}]`,
          firstDiff(await numbers(t), reduceRef(op, all), avgTolerance(op, n)),
        );
        t.dispose();
      }
      const all = Array.from({ length: n }, (_, k) => values(seed, k, size, dtype, 'copy'));
      const mine = tensorOf(all[r]!, dtype, dev);
      const g = comm.allGather(mine);
      fail(`allGather ${dtype} [${size}]`, firstDiff(await numbers(g), all.flat()));
      const big = Array.from({ length: n }, (_, k) => values(seed + 7, k, size * n, dtype, 'sum'));
      const rs = comm.reduceScatter(tensorOf(big[r]!, dtype, dev));
      fail(
        `reduceScatter ${dtype} [${size * n}]`,
        firstDiff(await numbers(rs), reduceRef('sum', big).slice(r * size, (r + 1) * size)),
      );
      const b = tensorOf(all[r]!, dtype, dev);
      comm.broadcast(b, { root: n - 1 });
      fail(`broadcast ${dtype} [${size}]`, firstDiff(await numbers(b), all[n - 1]!));
      const red = tensorOf(all[r]!, dtype, dev);
      comm.reduce(red, { op: 'max', root: 1 % n });
      // the result is defined on the root only
      if (r === 1 % n) fail(`reduce(max) ${dtype} [${size}]`, firstDiff(await numbers(red), reduceRef('max', all)));
      // an exchange around the ring: send to r + 1, receive from r - 1, in one group
      const got = Tensor.empty([size], dtype, dev);
      comm.group(() => {
        comm.send(mine, (r + 1) % n);
        comm.recv(got, (r + n - 1) % n);
      });
      fail(`send/recv ${dtype} [${size}]`, firstDiff(await numbers(got), all[(r + n - 1) % n]!));
      for (const x of [mine, g, rs, b, red, got]) x.dispose();
    }
  }
  await comm.barrier({ timeoutMs: 30_000 });
  await comm.synchronize({ timeoutMs: 30_000 });
  say(`${checks} checks passed (${comm.library}, ${dev}${comm.checkShapes ? ', checkShapes' : ''})`);
}

async function main(): Promise<void> {
  if (mode === 'alone') {
    await expectFailure('the rendezvous without rank 1', () => initProcessGroup({ rendezvousTimeoutMs: 3000 }));
    return;
  }
  const comm = await initProcessGroup({
    checkShapes: mode === 'mismatch' || process.argv[3] === 'check',
    timeoutMs: 60_000,
  });
  say(`joined: ${comm}`);
  if (mode === 'ops') {
    await ops(comm);
    comm.destroy();
    return;
  }
  if (mode === 'mismatch') {
    const t = Tensor.zeros(env.rank === 0 ? [4, 4] : [4, 3], { device: comm.device });
    await expectFailure('allReduce over different shapes', async () => {
      comm.allReduce(t);
      await comm.synchronize();
    });
    return;
  }
  if (env.rank === 1) {
    if (mode === 'dies') throw new Error('rank 1 throws on purpose (the dies test)');
    if (mode === 'hangs') {
      await new Promise((res) => setTimeout(res, 25_000));
      return;
    }
  }
  const t = Tensor.ones([1 << 20], { device: comm.device });
  await expectFailure(`allReduce with rank 1 ${mode === 'dies' ? 'dead' : 'absent'}`, async () => {
    comm.allReduce(t);
    await comm.synchronize({ timeoutMs: 5000 });
  });
  // the communicator is aborted: a further call must fail at once
  await expectFailure('a collective on the aborted communicator', async () => {
    comm.allReduce(t);
  });
  process.exit(0);
}

main().catch((e: Error) => {
  console.error(`rank ${env.rank}: ${e.stack ?? e.message}`);
  process.exit(1);
});
