// One rank's part of a collective, checked and resolved to what the library call takes (device
// addresses, element count, enum codes), before anything is queued. Plans are built for every
// rank of a group first, so a bad argument on any rank throws before any rank queues work.
import { Tensor } from '../tensor/tensor.ts';
import type { DevicePtr } from '../runtime/gpu.ts';
import { ShapeError } from '../core/errors.ts';
import {
  checkAliasing,
  checkOutNumel,
  checkPeer,
  checkSameDType,
  checkSameShape,
  checkTensor,
  desc,
  where,
  type RankCtx,
} from './checks.ts';
import { ncclDType, ncclRedOp, type LibraryLevel, type ReduceOpName } from './nccl-types.ts';
import { NCCL_CONST } from '../ffi/nccl.ts';

export type PlanKind = 'allReduce' | 'allGather' | 'reduceScatter' | 'broadcast' | 'reduce' | 'send' | 'recv';

export interface Plan {
  readonly kind: PlanKind;
  readonly send: DevicePtr | null;
  readonly recv: DevicePtr | null;
  /** elements: per rank for all-gather (sendcount) and reduce-scatter (recvcount) */
  readonly count: number;
  readonly dtype: number;
  readonly redOp: number;
  /** root of broadcast / reduce, peer of send / recv; -1 otherwise */
  readonly rank: number;
  /** what the caller gets back: the tensor written (the input itself when in place) */
  readonly result: Tensor;
  /** result was allocated by the plan (freed again if another rank's plan fails) */
  readonly created: boolean;
  /** the input's shape (the output's for recv), for the agreement step's messages */
  readonly shape: readonly number[];
  /** for error messages and the watchdog: "allReduce(sum) f32 [1024]" */
  readonly text: string;
}

export interface ReduceOptions {
  readonly op?: ReduceOpName;
  readonly out?: Tensor;
}
export interface OutOptions {
  readonly out?: Tensor;
}
export interface RootOptions {
  readonly root?: number;
  readonly out?: Tensor;
}
export interface RootReduceOptions extends RootOptions {
  readonly op?: ReduceOpName;
}

const ptr = (t: Tensor): DevicePtr => t.storage.ptrAt(t.layout.offset);

/**
 * The reduce op's code for this communicator. On one rank avg is the input itself, and goes to
 * the library as sum, which it runs as a plain copy (or nothing, in place): its one-rank avg
 * kernel (NCCL before 2.29.7, NVIDIA/nccl#1950, and RCCL before its port of that fix) splits the
 * elements over its blocks with a rounded-down share and leaves the last count % blocks of them
 * unwritten, e.g. element 65536 of an f64 [65537] reduce-scatter out of place.
 */
function redOpCode(c: RankCtx, op: ReduceOpName, t: Tensor, lib: LibraryLevel): number {
  const code = ncclRedOp(c.op, op, t.dtype, lib);
  return op === 'avg' && c.size === 1 ? NCCL_CONST.ncclSum : code;
}

function outOrNew(c: RankCtx, input: Tensor, out: Tensor | undefined, shape: readonly number[]): Tensor {
  if (out) {
    checkTensor(c, 'out', out);
    checkSameDType(c, input, out);
    return out;
  }
  return Tensor.empty(shape, input.dtype, c.device);
}

export function planAllReduce(c: RankCtx, lib: LibraryLevel, t: Tensor, o: ReduceOptions = {}): Plan {
  const op = o.op ?? 'sum';
  checkTensor(c, 'input', t);
  const dtype = ncclDType(c.op, t.dtype, lib),
    redOp = redOpCode(c, op, t, lib);
  const out = o.out ? outOrNew(c, t, o.out, t.layout.shape) : t;
  if (out !== t) {
    checkSameShape(c, t, out);
    checkAliasing(c, t, out);
  }
  return {
    kind: 'allReduce',
    send: ptr(t),
    recv: ptr(out),
    count: t.numel,
    dtype,
    redOp,
    rank: -1,
    result: out,
    created: out !== t && out !== o.out,
    shape: t.layout.shape,
    text: `allReduce(${op}) ${desc(t)}`,
  };
}

/** out holds every rank's input one after another, in rank order: [size * d0, ...rest] unless given */
export function planAllGather(c: RankCtx, lib: LibraryLevel, t: Tensor, o: OutOptions = {}): Plan {
  checkTensor(c, 'input', t);
  const dtype = ncclDType(c.op, t.dtype, lib);
  const sh = t.layout.shape;
  const out = outOrNew(c, t, o.out, sh.length === 0 ? [c.size] : [c.size * sh[0]!, ...sh.slice(1)]);
  checkOutNumel(c, t, out, c.size * t.numel, `${c.size} ranks x ${t.numel} elements`);
  checkAliasing(c, t, out, c.rank * t.numel);
  return {
    kind: 'allGather',
    send: ptr(t),
    recv: ptr(out),
    count: t.numel,
    dtype,
    redOp: -1,
    rank: -1,
    result: out,
    created: out !== t && out !== o.out,
    shape: t.layout.shape,
    text: `allGather ${desc(t)}`,
  };
}

/** the input is size equal parts; rank r gets the reduction of part r: [d0 / size, ...rest] unless given */
export function planReduceScatter(c: RankCtx, lib: LibraryLevel, t: Tensor, o: ReduceOptions = {}): Plan {
  const op = o.op ?? 'sum';
  checkTensor(c, 'input', t);
  const dtype = ncclDType(c.op, t.dtype, lib),
    redOp = redOpCode(c, op, t, lib);
  if (t.numel % c.size !== 0) {
    throw new ShapeError(
      `${where(c)}: the input ${desc(t)} has ${t.numel} elements, not a multiple of the ${c.size} ranks`,
    );
  }
  const count = t.numel / c.size,
    sh = t.layout.shape;
  const shape = sh.length > 0 && sh[0]! % c.size === 0 ? [sh[0]! / c.size, ...sh.slice(1)] : [count];
  const out = outOrNew(c, t, o.out, shape);
  checkOutNumel(c, t, out, count, `input elements / ${c.size} ranks`);
  checkAliasing(c, t, out, -c.rank * count);
  return {
    kind: 'reduceScatter',
    send: ptr(t),
    recv: ptr(out),
    count,
    dtype,
    redOp,
    rank: -1,
    result: out,
    created: out !== t && out !== o.out,
    shape: t.layout.shape,
    text: `reduceScatter(${op}) ${desc(t)}`,
  };
}

/** root's tensor to every rank: in place into t unless out is given (t is only read on root) */
export function planBroadcast(c: RankCtx, lib: LibraryLevel, t: Tensor, o: RootOptions = {}): Plan {
  const root = o.root ?? 0;
  checkPeer(c, 'root', root);
  checkTensor(c, 'input', t);
  const dtype = ncclDType(c.op, t.dtype, lib);
  const out = o.out ? outOrNew(c, t, o.out, t.layout.shape) : t;
  if (out !== t) {
    checkSameShape(c, t, out);
    checkAliasing(c, t, out);
  }
  return {
    kind: 'broadcast',
    send: ptr(t),
    recv: ptr(out),
    count: t.numel,
    dtype,
    redOp: -1,
    rank: root,
    result: out,
    created: out !== t && out !== o.out,
    shape: t.layout.shape,
    text: `broadcast(root ${root}) ${desc(t)}`,
  };
}

/** the reduction lands on root only (in t unless out is given); other ranks' outputs are untouched */
export function planReduce(c: RankCtx, lib: LibraryLevel, t: Tensor, o: RootReduceOptions = {}): Plan {
  const root = o.root ?? 0,
    op = o.op ?? 'sum';
  checkPeer(c, 'root', root);
  checkTensor(c, 'input', t);
  const dtype = ncclDType(c.op, t.dtype, lib),
    redOp = redOpCode(c, op, t, lib);
  const out = o.out ? outOrNew(c, t, o.out, t.layout.shape) : t;
  if (out !== t) {
    checkSameShape(c, t, out);
    checkAliasing(c, t, out);
  }
  return {
    kind: 'reduce',
    send: ptr(t),
    recv: ptr(out),
    count: t.numel,
    dtype,
    redOp,
    rank: root,
    result: out,
    created: out !== t && out !== o.out,
    shape: t.layout.shape,
    text: `reduce(${op}, root ${root}) ${desc(t)}`,
  };
}

export function planSend(c: RankCtx, lib: LibraryLevel, t: Tensor, peer: number): Plan {
  checkPeer(c, 'peer', peer);
  checkTensor(c, 'input', t);
  return {
    kind: 'send',
    send: ptr(t),
    recv: null,
    count: t.numel,
    dtype: ncclDType(c.op, t.dtype, lib),
    redOp: -1,
    rank: peer,
    result: t,
    created: false,
    shape: t.layout.shape,
    text: `send(to ${peer}) ${desc(t)}`,
  };
}

/** receives into t (in place): its shape and dtype must match what the peer sends */
export function planRecv(c: RankCtx, lib: LibraryLevel, t: Tensor, peer: number): Plan {
  checkPeer(c, 'peer', peer);
  checkTensor(c, 'output', t);
  return {
    kind: 'recv',
    send: null,
    recv: ptr(t),
    count: t.numel,
    dtype: ncclDType(c.op, t.dtype, lib),
    redOp: -1,
    rank: peer,
    result: t,
    created: false,
    shape: t.layout.shape,
    text: `recv(from ${peer}) ${desc(t)}`,
  };
}
