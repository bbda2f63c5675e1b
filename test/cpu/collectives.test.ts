// The communicator layer without a GPU or a collectives library: a fake NCCL records every call
// (test/fake-nccl.ts). Checked here: the enum tables and version gates, what each collective
// hands the library (addresses, counts, dtype and op codes, root or peer, the native stream, and
// the group calls around a DeviceGroup's ranks), the argument errors (shapes and dtypes across
// ranks, contiguity, devices, overlaps, roots), the deadline that aborts, the library's
// asynchronous error, the multi-process init through the rendezvous, the agreement words, and the
// tensor-parallel layers' arithmetic on simulated ranks.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import {
  Tensor,
  DTYPES,
  ShapeError,
  DTypeError,
  DisposedError,
  TensorError,
  GraphCaptureError,
  Linear,
  GatedMLP,
  type DType,
} from '../../src/index.ts';
import { DeviceGroup } from '../../src/distributed/group.ts';
import { initProcessGroup } from '../../src/distributed/init.ts';
import { CollectiveError, CollectiveTimeoutError } from '../../src/distributed/errors.ts';
import { abortOpenCommunicators } from '../../src/distributed/communicator.ts';
import { ncclDType, ncclRedOp, ncclVersionText, REDUCE_OPS } from '../../src/distributed/nccl-types.ts';
import { encodePlan, disagreement, describeWords } from '../../src/distributed/agreement.ts';
import { planAllReduce } from '../../src/distributed/plans.ts';
import { rankSet, simulatedRanks } from '../../src/distributed/rank-set.ts';
import { ColumnParallelLinear, RowParallelLinear, ParallelGatedMLP } from '../../src/nn/parallel/tensor-parallel.ts';
import { freePort } from '../../src/distributed/launch.ts';
import { NCCL_CONST } from '../../src/ffi/nccl.ts';
import { pollUntil, pollUntilSync, defaultTimeoutMs, DONE, PENDING } from '../../src/distributed/watchdog.ts';
import { fakeGpus, fakeNccl, fakeStreamPtr } from '../fake-nccl.ts';

const ptr = (t: Tensor): bigint => t.storage.ptrAt(t.layout.offset);
const NEW = { vendor: 'cuda', version: 22803 } as const;

function setup(n = 2) {
  const gpus = fakeGpus(n),
    f = fakeNccl();
  const g = DeviceGroup.create(gpus.devices, { nccl: f.nccl, timeoutMs: 200 });
  return { gpus, f, g, d: gpus.devices };
}
const throwsLike = (fn: () => unknown, cls: new (...a: never[]) => Error, re: RegExp) =>
  assert.throws(fn, (e: Error) => e instanceof cls && re.test(e.message), `expected ${cls.name} matching ${re}`);
async function rejection(p: Promise<unknown>): Promise<Error> {
  try {
    await p;
  } catch (e) {
    return e as Error;
  }
  throw new Error('expected a rejection');
}

test("every dtype maps to the library's type; avg is refused on integers; bf16 and avg need NCCL 2.10", () => {
  const want: Record<DType, number> = { f32: 7, f64: 8, f16: 6, bf16: 9, u8: 1, u32: 3, i64: 4 };
  for (const d of DTYPES) assert.is(ncclDType('op', d, NEW), want[d], d);
  assert.equal(
    REDUCE_OPS.map((o) => ncclRedOp('op', o, 'f32', NEW)),
    [0, 1, 3, 2, 4],
  );
  for (const d of ['u8', 'u32', 'i64'] as const)
    throwsLike(
      () => ncclRedOp('allReduce', 'avg', d, NEW),
      DTypeError,
      new RegExp(`allReduce: avg is for float dtypes.*got ${d}`),
    );
  const old = { vendor: 'cuda', version: 2804 } as const;
  throwsLike(
    () => ncclDType('allReduce', 'bf16', old),
    DTypeError,
    /bf16 needs NCCL 2\.10 or later; this is NCCL 2\.8\.4/,
  );
  assert.is(ncclDType('x', 'bf16', { vendor: 'rocm', version: 2804 }), 9, 'RCCL has bf16');
  throwsLike(() => ncclRedOp('x', 'avg', 'f32', old), TensorError, /avg needs NCCL 2\.10/);
  assert.is(ncclVersionText(22803), '2.28.3');
  assert.is(ncclVersionText(21804), '2.18.4');
  assert.is(ncclVersionText(2804), '2.8.4');
});

test('DeviceGroup.create: one ncclCommInitAll over the device indices; duplicates and mixed inputs refused', () => {
  const { f, g, d } = setup(3);
  assert.equal(
    f.of('ncclCommInitAll').map((c) => c.args),
    [[3, [0, 1, 2]]],
  );
  assert.is(g.size, 3);
  assert.equal(
    g.comms.map((c) => [c.rank, c.size, String(c.device)]),
    [
      [0, 3, 'cuda:0'],
      [1, 3, 'cuda:1'],
      [2, 3, 'cuda:2'],
    ],
  );
  assert.is(g.library, 'NCCL 2.28.3');
  throwsLike(() => DeviceGroup.create([d[0]!, d[1]!, d[0]!], { nccl: f.nccl }), TensorError, /cuda:0 is listed twice/);
  throwsLike(() => DeviceGroup.create([], { nccl: f.nccl }), TensorError, /no devices given/);
  throwsLike(
    () => DeviceGroup.create(['cpu'], { nccl: f.nccl }),
    TensorError,
    /the cpu device has no collectives library/,
  );
});

test("allReduce over a group: each rank's part on its own device and stream, inside one group; in place and out of place", () => {
  const { f, g, d } = setup(2);
  const ts = d.map((dev) => Tensor.empty([4, 8], 'f32', dev));
  f.calls.length = 0;
  const r = g.allReduce(ts);
  assert.ok(r[0] === ts[0] && r[1] === ts[1], 'in place returns the inputs');
  assert.equal(
    f.calls.map((c) => c.fn),
    ['ncclGroupStart', 'ncclAllReduce', 'ncclAllReduce', 'ncclGroupEnd'],
  );
  const [a0, a1] = f.of('ncclAllReduce').map((c) => c.args);
  assert.equal(a0, [
    ptr(ts[0]!),
    ptr(ts[0]!),
    32,
    NCCL_CONST.ncclFloat32,
    NCCL_CONST.ncclSum,
    g.comms[0]!.native.handle,
    fakeStreamPtr(0),
  ]);
  assert.equal(a1, [
    ptr(ts[1]!),
    ptr(ts[1]!),
    32,
    NCCL_CONST.ncclFloat32,
    NCCL_CONST.ncclSum,
    g.comms[1]!.native.handle,
    fakeStreamPtr(1),
  ]);
  f.calls.length = 0;
  const outs = d.map((dev) => Tensor.empty([4, 8], 'f32', dev));
  const r2 = g.allReduce(ts, { op: 'avg', out: outs });
  assert.ok(r2[0] === outs[0], 'out returned');
  assert.equal(f.of('ncclAllReduce')[1]!.args.slice(0, 5), [ptr(ts[1]!), ptr(outs[1]!), 32, 7, NCCL_CONST.ncclAvg]);
});

test('every dtype and op reaches the library with its codes', () => {
  const { f, g, d } = setup(2);
  for (const dt of DTYPES) {
    for (const op of REDUCE_OPS) {
      if (op === 'avg' && (dt === 'u8' || dt === 'u32' || dt === 'i64')) continue;
      f.calls.length = 0;
      g.allReduce(
        d.map((dev) => Tensor.empty([3], dt, dev)),
        { op },
      );
      const a = f.of('ncclAllReduce')[0]!.args;
      assert.is(a[3], ncclDType('x', dt, NEW), `${dt} ${op}`);
      assert.is(a[4], ncclRedOp('x', op, dt, NEW), `${dt} ${op}`);
    }
  }
});

test('avg over one rank reaches the library as sum (its one-rank avg kernel drops tail elements); over two as avg', async () => {
  // an odd count that NCCL < 2.29.7 splits unevenly over its one-rank kernel's 32 blocks
  const n = 65537;
  for (const size of [1, 2]) {
    const gpus = fakeGpus(size),
      f = fakeNccl();
    const g = DeviceGroup.create(gpus.devices, { nccl: f.nccl });
    const want = size === 1 ? NCCL_CONST.ncclSum : NCCL_CONST.ncclAvg;
    for (const dt of ['f64', 'f32', 'bf16'] as const) {
      f.calls.length = 0;
      const ins = gpus.devices.map((dev) => Tensor.empty([n * size], dt, dev));
      const outs = g.reduceScatter(ins, { op: 'avg' });
      const rs = f.of('ncclReduceScatter').map((c) => c.args);
      assert.equal(
        rs.map((a) => [a[0], a[1], a[2], a[4]]),
        ins.map((t, k) => [ptr(t), ptr(outs[k]!), n, want]),
        `reduceScatter ${dt} over ${size}`,
      );
      g.allReduce(ins, { op: 'avg', out: gpus.devices.map((dev) => Tensor.empty([n * size], dt, dev)) });
      g.reduce(ins, { op: 'avg', out: gpus.devices.map((dev) => Tensor.empty([n * size], dt, dev)) });
      for (const fn of ['ncclAllReduce', 'ncclReduce'] as const)
        assert.ok(
          f.of(fn).every((c) => c.args[4] === want),
          `${fn} ${dt} over ${size}`,
        );
    }
    // the other ops keep their codes on one rank, and integer avg is still refused
    f.calls.length = 0;
    g.allReduce(
      gpus.devices.map((dev) => Tensor.empty([3], 'f32', dev)),
      { op: 'max' },
    );
    assert.is(f.of('ncclAllReduce')[0]!.args[4], NCCL_CONST.ncclMax);
    throwsLike(
      () =>
        g.allReduce(
          gpus.devices.map((dev) => Tensor.empty([3], 'i64', dev)),
          { op: 'avg' },
        ),
      DTypeError,
      /avg is for float dtypes/,
    );
    if (size === 1) {
      const one = await initProcessGroup({
        env: { rank: 0, worldSize: 1, localRank: 0, masterAddr: '127.0.0.1', masterPort: 1 },
        device: gpus.devices[0]!,
        nccl: f.nccl,
      });
      f.calls.length = 0;
      one.allReduce(Tensor.empty([n], 'f64', gpus.devices[0]!), { op: 'avg' });
      assert.is(f.of('ncclAllReduce')[0]!.args[4], NCCL_CONST.ncclSum, 'a one-rank process group as well');
      one.destroy();
    }
    g.destroy();
  }
});

test('different shapes or dtypes across the ranks of a group: an error naming them, nothing queued', () => {
  const { f, g, d } = setup(2);
  f.calls.length = 0;
  throwsLike(
    () => g.allReduce([Tensor.empty([4, 4], 'f32', d[0]!), Tensor.empty([4, 3], 'f32', d[1]!)]),
    ShapeError,
    /allReduce: rank 1's tensor is f32 \[4, 3\] but rank 0's is f32 \[4, 4\]/,
  );
  throwsLike(
    () => g.broadcast([Tensor.empty([4], 'f32', d[0]!), Tensor.empty([4], 'f16', d[1]!)]),
    DTypeError,
    /broadcast: rank 1's tensor is f16 \[4\] but rank 0's is f32 \[4\]/,
  );
  throwsLike(() => g.allReduce([Tensor.empty([4], 'f32', d[0]!)]), TensorError, /got 1 tensors for the 2 devices/);
  assert.equal(f.calls, [], 'nothing reached the library');
});

test('contiguity, devices, disposed tensors, overlaps: clear errors', () => {
  const { g, d } = setup(2);
  const c0 = g.comms[0]!;
  const m = Tensor.empty([4, 6], 'f32', d[0]!);
  throwsLike(
    () => c0.allReduce(m.T),
    ShapeError,
    /allReduce on rank 0 of 2 \(cuda:0\): the input tensor \(f32 \[6, 4\], strides \[1, 6\]\) is not contiguous/,
  );
  throwsLike(
    () => c0.allReduce(Tensor.empty([2], 'f32', d[1]!)),
    TensorError,
    /the input tensor \(f32 \[2\]\) is on cuda:1, not on the communicator's device cuda:0/,
  );
  throwsLike(() => c0.allReduce(Tensor.zeros([2])), TensorError, /is on cpu/);
  const gone = Tensor.empty([2], 'f32', d[0]!);
  gone.dispose();
  assert.throws(
    () => c0.allReduce(gone),
    (e: Error) => e instanceof DisposedError,
  );
  const big = Tensor.empty([10], 'f32', d[0]!);
  throwsLike(
    () => c0.allReduce(big.narrow(0, 0, 6), { out: big.narrow(0, 3, 6) }),
    TensorError,
    /overlaps the input .* without being its in-place form/,
  );
  throwsLike(
    () => c0.allReduce(big.narrow(0, 0, 5), { out: Tensor.empty([5], 'f16', d[0]!) }),
    DTypeError,
    /out is f16 \[5\] but the input is f32 \[5\]/,
  );
  throwsLike(
    () => c0.allReduce(big.narrow(0, 0, 4), { out: Tensor.empty([2, 2], 'f32', d[0]!) }),
    ShapeError,
    /must have the input's shape \[4\]/,
  );
  throwsLike(
    () => c0.broadcast(big, { root: 2 }),
    TensorError,
    /root 2 is not a rank of this communicator \(0 \.\. 1\)/,
  );
  throwsLike(() => c0.send(big, -1), TensorError, /peer -1 is not a rank/);
});

test('allGather and reduceScatter: default output shapes, counts per rank, the in-place forms', () => {
  const { f, g, d } = setup(2);
  const xs = d.map((dev) => Tensor.empty([3, 5], 'bf16', dev));
  f.calls.length = 0;
  const gathered = g.allGather(xs);
  assert.equal(
    gathered.map((t) => t.shape),
    [
      [6, 5],
      [6, 5],
    ],
  );
  assert.equal(
    f.of('ncclAllGather').map((c) => c.args.slice(2, 4)),
    [
      [15, 9],
      [15, 9],
    ],
  );
  // in place: rank r's input is its part of out
  const outs = d.map((dev) => Tensor.empty([6, 5], 'bf16', dev));
  f.calls.length = 0;
  g.allGather(
    outs.map((o, r) => o.narrow(0, 3 * r, 3)),
    { out: outs },
  );
  const ag = f.of('ncclAllGather');
  assert.is(ag[1]!.args[0], ptr(outs[1]!) + 15n * 2n, 'rank 1 sends from its slot');
  assert.is(ag[1]!.args[1], ptr(outs[1]!));
  // any other overlap is refused
  throwsLike(
    () => g.comms[1]!.allGather(outs[1]!.narrow(0, 0, 3), { out: outs[1] }),
    TensorError,
    /without being its in-place form/,
  );

  f.calls.length = 0;
  const rs = g.reduceScatter(
    d.map((dev) => Tensor.empty([4, 3], 'f32', dev)),
    { op: 'max' },
  );
  assert.equal(
    rs.map((t) => t.shape),
    [
      [2, 3],
      [2, 3],
    ],
  );
  assert.equal(f.of('ncclReduceScatter')[0]!.args.slice(2, 5), [6, 7, NCCL_CONST.ncclMax]);
  assert.equal(
    g.reduceScatter(d.map((dev) => Tensor.empty([3, 2], 'f32', dev))).map((t) => t.shape),
    [[3], [3]],
    'd0 not divisible: flat',
  );
  throwsLike(
    () => g.reduceScatter(d.map((dev) => Tensor.empty([3], 'f32', dev))),
    ShapeError,
    /has 3 elements, not a multiple of the 2 ranks/,
  );
  const ins = d.map((dev) => Tensor.empty([4], 'f32', dev));
  f.calls.length = 0;
  g.reduceScatter(ins, { out: ins.map((t, r) => t.narrow(0, 2 * r, 2)) });
  assert.is(f.of('ncclReduceScatter')[1]!.args[1], ptr(ins[1]!) + 8n, 'in place: rank 1 writes its part of the input');
});

test('broadcast and reduce pass the root; sendRecv pairs a send and a recv inside one group', () => {
  const { f, g, d } = setup(3);
  const ts = d.map((dev) => Tensor.empty([7], 'i64', dev));
  f.calls.length = 0;
  g.broadcast(ts, { root: 2 });
  assert.equal(
    f.of('ncclBroadcast').map((c) => c.args[4]),
    [2, 2, 2],
  );
  assert.equal(f.of('ncclBroadcast')[0]!.args.slice(2, 4), [7, NCCL_CONST.ncclInt64]);
  f.calls.length = 0;
  g.reduce(ts, { op: 'min', root: 1 });
  assert.equal(
    f.of('ncclReduce').map((c) => c.args.slice(4, 6)),
    [
      [3, 1],
      [3, 1],
      [3, 1],
    ],
  );
  f.calls.length = 0;
  const src = Tensor.empty([5], 'u8', d[0]!),
    dst = Tensor.empty([5], 'u8', d[2]!);
  g.sendRecv([{ from: 0, to: 2, src, dst }]);
  assert.equal(
    f.calls.map((c) => c.fn),
    ['ncclGroupStart', 'ncclSend', 'ncclRecv', 'ncclGroupEnd'],
  );
  assert.equal(f.of('ncclSend')[0]!.args.slice(0, 5), [
    ptr(src),
    5,
    NCCL_CONST.ncclUint8,
    2,
    g.comms[0]!.native.handle,
  ]);
  assert.equal(f.of('ncclRecv')[0]!.args.slice(0, 5), [
    ptr(dst),
    5,
    NCCL_CONST.ncclUint8,
    0,
    g.comms[2]!.native.handle,
  ]);
  throwsLike(
    () => g.sendRecv([{ from: 0, to: 1, src, dst: Tensor.empty([4], 'u8', d[1]!) }]),
    ShapeError,
    /transfer 0 \(rank 0 -> 1\) sends u8 \[5\] into u8 \[4\]/,
  );
  throwsLike(() => g.sendRecv([{ from: 0, to: 3, src, dst }]), TensorError, /transfer 0: to 3 is not a rank/);
});

test("Communicator.group wraps the calls made inside in the library's group calls", () => {
  const { f, g, d } = setup(2);
  const c = g.comms[0]!;
  const a = Tensor.empty([2], 'f32', d[0]!),
    b = Tensor.empty([2], 'f32', d[0]!);
  f.calls.length = 0;
  c.group(() => {
    c.send(a, 1);
    c.recv(b, 1);
  });
  assert.equal(
    f.calls.map((x) => x.fn),
    ['ncclGroupStart', 'ncclSend', 'ncclRecv', 'ncclGroupEnd'],
  );
});

test('a library error while queueing names the op and the rank', () => {
  const { f, g, d } = setup(2);
  f.failNext = NCCL_CONST.ncclInvalidArgument;
  throwsLike(
    () => g.comms[1]!.allReduce(Tensor.empty([3], 'f32', d[1]!)),
    CollectiveError,
    /allReduce\(sum\) f32 \[3\] on rank 1 of 2 \(cuda:1\): ncclAllReduce.*failed/,
  );
});

test('synchronize past the deadline: the communicator is aborted and the error names what was in flight', async () => {
  const { f, g, d, gpus } = setup(2);
  const c = g.comms[1]!;
  c.allReduce(Tensor.empty([4], 'f32', d[1]!));
  gpus.eventsDone = false;
  const t0 = Date.now();
  const e = await rejection(c.synchronize({ timeoutMs: 150 }));
  assert.ok(Date.now() - t0 < 2000, 'gave up near the deadline');
  assert.instance(e, CollectiveTimeoutError);
  assert.match(
    e.message,
    /synchronize on rank 1 of 2 \(cuda:1\): the collectives in flight \(allReduce\(sum\) f32 \[4\]\) did not finish within 0\.15 s; the communicator was aborted/,
  );
  assert.equal(
    f.of('ncclCommAbort').map((x) => x.args[0]),
    [c.native.handle],
  );
  throwsLike(
    () => c.allReduce(Tensor.empty([4], 'f32', d[1]!)),
    CollectiveError,
    /the communicator was aborted \(a wait timed out after 0\.15 s\); make a new one/,
  );
  assert.ok(c.isAborted);
  c.destroy();
  assert.equal(f.of('ncclCommDestroy'), [], 'an aborted communicator is not destroyed again');
});

test('collectives queued while a wait is in progress stay pending after it', async () => {
  const { g, d, gpus } = setup(2);
  const c = g.comms[0]!;
  c.allReduce(Tensor.empty([2], 'f32', d[0]!));
  gpus.eventsDone = false;
  const first = c.synchronize({ timeoutMs: 2000 });
  c.broadcast(Tensor.empty([3], 'u8', d[0]!), { root: 1 }); // queued during the wait
  gpus.eventsDone = true;
  await first;
  gpus.eventsDone = false;
  const e = await rejection(c.synchronize({ timeoutMs: 100 }));
  assert.match(e.message, /the collectives in flight \(broadcast\(root 1\) u8 \[3\]\) did not finish/);
});

test('an asynchronous library error: every communicator of the group is aborted, the failing rank named', async () => {
  const { f, g, d } = setup(2);
  g.allReduce(d.map((dev) => Tensor.empty([4], 'f32', dev)));
  f.asyncError = 6; // ncclRemoteError: a peer went away
  const e = await rejection(g.synchronize({ timeoutMs: 2000 }));
  assert.instance(e, CollectiveError);
  assert.match(
    e.message,
    /synchronize on rank 0 of 2 \(cuda:0\): the collectives library reported: fake error 6 \(6\) while waiting for allReduce\(sum\) f32 \[4\]; the communicator was aborted/,
  );
  assert.is(f.of('ncclCommAbort').length, 2);
});

test('synchronize and barrier resolve when the device is done; destroy frees each communicator', async () => {
  const { f, g } = setup(2);
  await g.barrier({ timeoutMs: 1000 });
  assert.is(f.of('ncclAllReduce').length, 2);
  await g.comms[0]!.barrier();
  g.destroy();
  assert.is(f.of('ncclCommDestroy').length, 2);
  throwsLike(() => g.comms[0]!.allReduce(Tensor.empty([1], 'f32', g.devices[0]!)), TensorError, /was destroyed/);
});

test("initProcessGroup: rank 0's unique id reaches rank 1 through the rendezvous; each joins with its rank", async () => {
  const gpus = fakeGpus(2),
    f0 = fakeNccl(22803, 7),
    f1 = fakeNccl(22803, 99);
  const env = { worldSize: 2, masterAddr: '127.0.0.1', masterPort: await freePort(), localRank: 0 };
  const [c0, c1] = await Promise.all([
    initProcessGroup({ env: { ...env, rank: 0 }, device: gpus.devices[0]!, nccl: f0.nccl, rendezvousTimeoutMs: 5000 }),
    initProcessGroup({
      env: { ...env, rank: 1, localRank: 1 },
      device: gpus.devices[1]!,
      nccl: f1.nccl,
      rendezvousTimeoutMs: 5000,
    }),
  ]);
  assert.is(f0.of('ncclGetUniqueId').length, 1);
  assert.is(f1.of('ncclGetUniqueId').length, 0, 'only rank 0 makes the id');
  const [i0, i1] = [f0.of('ncclCommInitRank')[0]!.args, f1.of('ncclCommInitRank')[0]!.args];
  assert.equal(i1[1], i0[1], 'the same id bytes');
  assert.equal([i0[0], i0[2], i1[0], i1[2]], [2, 0, 2, 1]);
  assert.equal([c0.rank, c1.rank, c0.size, String(c1.device)], [0, 1, 2, 'cuda:1']);
  assert.is(process.env.NCCL_RUNTIME_CONNECT, '0', 'peers connect at init');
});

test('inside a graph capture the tensor-parallel collectives only call the library: no wait, no readback; checkShapes refuses', async () => {
  const gpus = fakeGpus(2),
    f0 = fakeNccl(22803, 7),
    f1 = fakeNccl(22803, 99);
  const env = { worldSize: 2, masterAddr: '127.0.0.1', masterPort: await freePort(), localRank: 0 };
  const [c0, c1] = await Promise.all([
    initProcessGroup({ env: { ...env, rank: 0 }, device: gpus.devices[0]!, nccl: f0.nccl, rendezvousTimeoutMs: 5000 }),
    initProcessGroup({
      env: { ...env, rank: 1, localRank: 1 },
      device: gpus.devices[1]!,
      nccl: f1.nccl,
      rendezvousTimeoutMs: 5000,
      checkShapes: true,
    }),
  ]);
  const dev = gpus.devices[0]!;
  const t = Tensor.empty([4, 8], 'f32', dev),
    ids = Tensor.empty([1], 'u32', dev);
  // every runtime call from here on is recorded; the device says it is capturing
  const used: string[] = [];
  const rt = dev.runtime as unknown as Record<string, unknown>;
  const spy = new Proxy(rt, {
    get: (o, k) => {
      const v = o[k as string];
      return typeof v === 'function'
        ? (...a: unknown[]) => {
            used.push(String(k));
            return (v as (...x: unknown[]) => unknown).apply(o, a);
          }
        : v;
    },
  });
  Object.defineProperty(dev, 'runtime', { value: spy, configurable: true });
  Object.defineProperty(dev, 'isCapturing', { value: true, configurable: true });
  f0.calls.length = 0;
  const set = rankSet(c0);
  assert.ok(set.allReduceSum([t])[0] === t, 'the row-parallel all-reduce is in place');
  set.broadcast([ids], 0);
  assert.equal(
    f0.calls.map((c) => c.fn),
    ['ncclAllReduce', 'ncclBroadcast'],
  );
  assert.equal(
    [...new Set(used)].sort(),
    ['callForeign', 'nativeStream'],
    'only the native stream and the foreign call',
  );
  // rank 1 asks for the agreement step, which waits for the device: refused during a capture
  const dev1 = gpus.devices[1]!;
  Object.defineProperty(dev1, 'isCapturing', { value: true, configurable: true });
  f1.calls.length = 0;
  throwsLike(
    () => c1.allReduce(Tensor.empty([4], 'f32', dev1)),
    GraphCaptureError,
    /allReduce\(sum\) f32 \[4\] on rank 1 of 2 \(cuda:1\): checkShapes waits for the device/,
  );
  assert.is(f1.calls.length, 0, 'nothing queued');
});

test('initProcessGroup: a rank with another library version is refused by rank 0', async () => {
  const gpus = fakeGpus(2);
  const env = { worldSize: 2, masterAddr: '127.0.0.1', masterPort: await freePort(), localRank: 0 };
  const [e0, e1] = await Promise.all([
    rejection(
      initProcessGroup({
        env: { ...env, rank: 0 },
        device: gpus.devices[0]!,
        nccl: fakeNccl(22803).nccl,
        rendezvousTimeoutMs: 3000,
      }),
    ),
    rejection(
      initProcessGroup({
        env: { ...env, rank: 1 },
        device: gpus.devices[1]!,
        nccl: fakeNccl(21804).nccl,
        rendezvousTimeoutMs: 3000,
      }),
    ),
  ]);
  assert.match(e0.message, /rank 1 has cuda NCCL 2\.18\.4, rank 0 has cuda NCCL 2\.28\.3/);
  assert.match(e1.message, /rank 0 refused rank 1/);
});

test("checkShapes words: ranks that agree pass; a disagreement lists every rank's op, dtype and shape", () => {
  const { g, d } = setup(2);
  const c = (r: number) => g.comms[r]!.ctx('allReduce');
  const w0 = encodePlan(planAllReduce(c(0), NEW, Tensor.empty([4, 4], 'f32', d[0]!)));
  const w1 = encodePlan(planAllReduce(c(1), NEW, Tensor.empty([4, 4], 'f32', d[1]!)));
  const w1b = encodePlan(planAllReduce(c(1), NEW, Tensor.empty([4, 3], 'f32', d[1]!), { op: 'max' }));
  const cat = (a: Uint32Array, b: Uint32Array) => {
    const o = new Uint32Array(a.length * 2);
    o.set(a);
    o.set(b, a.length);
    return o;
  };
  assert.is(disagreement(cat(w0, w1), 2), null);
  assert.is(disagreement(cat(w0, w1b), 2), 'rank 0: allReduce(sum) f32 [4, 4]; rank 1: allReduce(max) f32 [4, 3]');
  assert.is(describeWords(w0), 'allReduce(sum) f32 [4, 4]');
});

test('the deadline polls: done as soon as polled done, pending at the deadline, failures at once; the default deadline', async () => {
  let n = 0;
  assert.is((await pollUntil(() => (++n >= 5 ? DONE : PENDING), Date.now() + 5000)).state, 'done');
  assert.is(n, 5);
  const t0 = Date.now();
  assert.is(pollUntilSync(() => PENDING, Date.now() + 120).state, 'pending');
  const took = Date.now() - t0;
  assert.ok(took >= 110 && took < 1000, `sync wait took ${took} ms`);
  assert.equal(
    pollUntilSync(() => ({ state: 'failed', error: 'x' }), Date.now() + 5000),
    { state: 'failed', error: 'x' },
  );
  assert.is(defaultTimeoutMs({}), 300_000);
  assert.is(defaultTimeoutMs({ ROCM_TENSOR_DIST_TIMEOUT_MS: '2500' }), 2500);
  assert.throws(
    () => defaultTimeoutMs({ ROCM_TENSOR_DIST_TIMEOUT_MS: 'soon' }),
    /ROCM_TENSOR_DIST_TIMEOUT_MS="soon": expected an integer, above 0/,
  );
});

// ---- tensor parallelism on simulated ranks (CPU) ------------------------------------------------

async function close(a: Tensor, b: Tensor, tol: number, what: string) {
  assert.equal(a.shape, b.shape, `${what}: shape`);
  const x = await a.toArray(),
    y = await b.toArray();
  let worst = 0;
  for (let i = 0; i < x.length; i++) worst = Math.max(worst, Math.abs(Number(x[i]) - Number(y[i])));
  assert.ok(worst <= tol, `${what}: max |diff| ${worst} > ${tol}`);
}

for (const size of [1, 2, 4]) {
  test(`tensor-parallel layers over ${size} simulated rank(s) equal the one-device layers`, async () => {
    const ranks = simulatedRanks(size);
    const hidden = 16,
      ff = 24,
      rows = 5;
    const x = Tensor.randn([2, rows, hidden], { seed: 1 });
    const w = Tensor.randn([ff, hidden], { seed: 2 }),
      b = Tensor.randn([ff], { seed: 3 });
    const ref = new Linear(w, b).forward(x);
    const col = ColumnParallelLinear.fromFull(w, b, ranks, { gatherOutput: true });
    for (const y of col.forward(ranks.ranks.map(() => x))) await close(y, ref, 1e-5, 'column, gathered');
    const slices = ColumnParallelLinear.fromFull(w, b, ranks).forward(ranks.ranks.map(() => x));
    await close(Tensor.cat(slices, -1), ref, 1e-5, 'column slices side by side');

    const w2 = Tensor.randn([hidden, ff], { seed: 4 }),
      b2 = Tensor.randn([hidden], { seed: 5 });
    const xin = Tensor.randn([rows, ff], { seed: 6 });
    const ref2 = new Linear(w2, b2).forward(xin);
    const row = RowParallelLinear.fromFull(w2, b2, ranks, { splitInput: true });
    for (const y of row.forward(ranks.ranks.map(() => xin))) await close(y, ref2, 1e-4, 'row');

    const gateUp = Tensor.randn([2 * ff, hidden], { seed: 7 }).mul(0.3),
      down = Tensor.randn([hidden, ff], { seed: 8 }).mul(0.3);
    const mlp = new GatedMLP(new Linear(gateUp), new Linear(down));
    const want = mlp.forward(x);
    const tp = ParallelGatedMLP.fromFull(gateUp, down, ranks);
    for (const y of tp.forward(ranks.ranks.map(() => x))) await close(y, want, 1e-4, 'gated MLP');
    const tp2 = ParallelGatedMLP.fromGatedMLP(mlp, ranks);
    await close(tp2.forward(ranks.ranks.map(() => x))[0]!, want, 1e-4, 'gated MLP from a GatedMLP');
    const gathered = ColumnParallelLinear.fromFull(gateUp, null, ranks, { blocks: 2, gatherOutput: true }).forward(
      ranks.ranks.map(() => x),
    );
    await close(gathered[0]!, new Linear(gateUp).forward(x), 1e-5, 'fused blocks gathered back in order');
  });
}

test("simulated ranks: broadcast writes the root's tensor into every rank's, in place", () => {
  const r = simulatedRanks(3);
  const ts = [0, 1, 2].map((k) => Tensor.from([k, 10 + k], { dtype: 'u32' }));
  const out = r.broadcast(ts, 2);
  assert.ok(
    out.every((t, i) => t === ts[i]),
    'the same tensors back',
  );
  assert.equal(
    ts.map((t) => Array.from(t.toArraySync(), Number)),
    [
      [2, 12],
      [2, 12],
      [2, 12],
    ],
  );
  throwsLike(() => r.broadcast(ts, 3), TensorError, /root 3 is not a rank \(0 \.\. 2\)/);
});

test('tensor-parallel shapes that do not split are refused', () => {
  const ranks = simulatedRanks(3);
  throwsLike(
    () => ColumnParallelLinear.fromFull(Tensor.zeros([8, 4]), null, ranks),
    ShapeError,
    /8 rows of \[8, 4\] do not split into 1 block\(s\) x 3 ranks/,
  );
  throwsLike(
    () => RowParallelLinear.fromFull(Tensor.zeros([3, 4]), null, ranks),
    ShapeError,
    /4 columns of \[3, 4\] do not split over 3 ranks/,
  );
  throwsLike(
    () => ColumnParallelLinear.fromFull(Tensor.zeros([9, 4]), null, ranks).forward([Tensor.zeros([1, 4])]),
    TensorError,
    /got 1 inputs for the 3 rank\(s\)/,
  );
});

test('communicators still open when the process exits are aborted (not destroyed); destroyed ones are left alone', () => {
  const { f, g } = setup(2);
  assert.ok(process.listeners('exit').length >= 1, 'an exit hook is installed with the first communicator');
  g.comms[0]!.destroy();
  const aborted = abortOpenCommunicators('the process is exiting');
  assert.ok(aborted >= 1);
  const handles = f.of('ncclCommAbort').map((x) => x.args[0]);
  assert.is(handles.length, 1, 'only the open communicator of this group');
  assert.ok(g.comms[1]!.isAborted && !g.comms[0]!.isAborted);
  assert.is(f.of('ncclCommDestroy').length, 1);
  assert.is(abortOpenCommunicators(), 0, 'nothing left open');
});

test.run();
