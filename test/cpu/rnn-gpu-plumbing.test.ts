// The GPU backend of the recurrent op without a GPU: a fake device whose memory is a host buffer
// (poisoned with NaN bits on allocation) and whose DNN library is the CPU reference behind a
// weight layout of its own (gates permuted as MIOpen numbers them, padding between tensors).
// What is checked is the backend's own work: packing PyTorch-shaped weights at the offsets the
// library reports, the time reversal of the second direction, the training-mode forward the
// backward needs, and unpacking every gradient into the op's flat result. Both paths run the
// same f64 reference on the same f32 values, so the results must be equal.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import * as cpu from '../../src/backends/cpu/rnn.ts';
import { fromNumbers, readNumbers } from '../../src/backends/cpu/util.ts';
import * as gpu from '../../src/backends/gpu/rnn.ts';
import type { RnnArgs, RnnMode } from '../../src/backends/rnn-args.ts';
import { Device } from '../../src/device/device.ts';
import { RawTensor } from '../../src/device/raw-tensor.ts';
import { CachingAllocator } from '../../src/runtime/allocator.ts';
import type { KernelArg } from '../../src/runtime/kernels.ts';
import {
  type DevicePtr,
  type DnnApi,
  type GpuRuntime,
  type GpuStream,
  type RnnBackwardParams,
  type RnnForwardParams,
  type RnnShape,
  asDevicePtr,
} from '../../src/runtime/gpu.ts';

const BASE = 0x100000n;
const mem = new ArrayBuffer(1 << 24);
const u8 = new Uint8Array(mem);
const f32 = new Float32Array(mem);
let next = BASE;
const off = (p: bigint): number => Number(p - BASE);
const read = (p: bigint, n: number): number[] => Array.from(f32.subarray(off(p) / 4, off(p) / 4 + n));
const write = (p: bigint, v: ArrayLike<number>): void => f32.set(Array.from(v), off(p) / 4);
const stream = { fake: 'stream' } as unknown as GpuStream;
const host = Device.cpu();
const onHost = (v: ArrayLike<number>, shape: number[]) => fromNumbers(v, shape, 'f32', host);

/** the fake library's gate order (MIOpen's numbering) and padding between its tensors */
const PERM: Record<RnnMode, readonly number[]> = { lstm: [0, 1, 3, 2], gru: [1, 0, 2] };
const PAD = 48;
function layout(p: RnnShape) {
  const G = p.mode === 'lstm' ? 4 : 3;
  let at = 16;
  const place = (elems: number): number[] => {
    const slots: number[] = [];
    for (let k = 0; k < G; k++) {
      slots.push(at);
      at += elems * 4 + PAD;
    }
    return PERM[p.mode].map((k) => slots[k]!);
  };
  const wIh = place(p.H * p.I),
    wHh = place(p.H * p.H);
  const bIh = p.bias ? place(p.H) : [],
    bHh = p.bias ? place(p.H) : [];
  return { wIh, wHh, bIh, bHh, bytes: at + 64 };
}

const trained = new Set<bigint>();
const calls: string[] = [];

/** the reference's arguments from the library call's buffers (states as zeros when asked) */
function refArgs(p: RnnForwardParams | RnnBackwardParams, zeroStates: boolean): RnnArgs {
  const L = layout(p);
  const G = p.mode === 'lstm' ? 4 : 3;
  const gates = (offs: number[], per: number) => offs.flatMap((o) => read(p.weights + BigInt(o), per));
  const n = p.B * p.H;
  const state = (q: bigint | null, use: boolean) =>
    q ? onHost(read(q, n), [p.B, p.H]) : use && zeroStates ? onHost(new Array(n).fill(0), [p.B, p.H]) : null;
  return [
    onHost(read(p.x, p.T * p.B * p.I), [p.T, p.B, p.I]),
    state(p.hx, true),
    state(p.cx, p.mode === 'lstm'),
    onHost(gates(L.wIh, p.H * p.I), [G * p.H, p.I]),
    onHost(gates(L.wHh, p.H * p.H), [G * p.H, p.H]),
    p.bias ? onHost(gates(L.bIh, p.H), [G * p.H]) : null,
    p.bias ? onHost(gates(L.bHh, p.H), [G * p.H]) : null,
    p.mode,
    false,
  ];
}
/** the reference's flat gradients for a backward call, from dy, dhy and dcy */
function refBackward(p: RnnBackwardParams): Float64Array {
  assert.ok(p.reserve !== null && trained.has(p.reserve), 'the backward runs after a training forward on its reserve');
  const n = p.B * p.H;
  const dy = read(p.dy, p.T * n);
  const dhy = p.dhy ? read(p.dhy, n) : new Array<number>(n).fill(0);
  for (let i = 0; i < n; i++) dy[(p.T - 1) * n + i]! += dhy[i]!;
  const g = p.mode === 'lstm' ? [...dy, ...(p.dcy ? read(p.dcy, n) : new Array<number>(n).fill(0))] : dy;
  const rows = p.T + (p.mode === 'lstm' ? 1 : 0);
  return readNumbers(cpu.rnnBackward(onHost(g, [rows, p.B, p.H]), ...refArgs(p, true)));
}

const dnn = {
  name: 'fake DNN',
  version: '0',
  rnnSizes: (p: RnnShape, training: boolean) => ({
    weightBytes: layout(p).bytes,
    workspaceBytes: 128,
    reserveBytes: training ? 256 : 0,
  }),
  rnnWeightOffsets: (p: RnnShape) => {
    const { wIh, wHh, bIh, bHh } = layout(p);
    return { wIh, wHh, bIh, bHh };
  },
  rnnForward(p: RnnForwardParams) {
    calls.push(p.training ? 'forward (training)' : 'forward');
    if (p.training) trained.add(p.reserve!);
    const out = readNumbers(cpu.rnn(...refArgs(p, false)));
    const n = p.B * p.H;
    write(p.y, out.subarray(0, p.T * n));
    if (p.hy) write(p.hy, out.subarray((p.T - 1) * n, p.T * n));
    if (p.cy) write(p.cy, out.subarray(p.T * n, (p.T + 1) * n));
  },
  rnnBackwardData(p: RnnBackwardParams) {
    calls.push('backward data');
    const flat = refBackward(p);
    const n = p.B * p.H,
      nx = p.T * p.B * p.I;
    write(p.dx, flat.subarray(0, nx));
    if (p.dhx) write(p.dhx, flat.subarray(nx, nx + n));
    if (p.dcx) write(p.dcx, flat.subarray(nx + n, nx + 2 * n));
  },
  rnnBackwardWeights(p: RnnBackwardParams) {
    calls.push('backward weights');
    const flat = refBackward(p);
    const L = layout(p);
    const G = p.mode === 'lstm' ? 4 : 3;
    const n = p.B * p.H;
    let at = p.T * p.B * p.I + n + (p.mode === 'lstm' ? n : 0);
    // added to what the gradient space holds, as the libraries do
    const add = (offs: number[], per: number) => {
      offs.forEach((o, g) => {
        const dst = p.dweights + BigInt(o);
        write(
          dst,
          read(dst, per).map((c, i) => c + flat[at + g * per + i]!),
        );
      });
      at += G * per;
    };
    add(L.wIh, p.H * p.I);
    add(L.wHh, p.H * p.H);
    if (p.bias) {
      add(L.bIh, p.H);
      add(L.bHh, p.H);
    }
  },
} as unknown as DnnApi;

const rt = {
  vendor: 'cuda',
  index: 0,
  defaultStream: stream,
  malloc(bytes: number): DevicePtr {
    const p = next;
    next += BigInt(Math.ceil(bytes / 256) * 256 + 256);
    u8.fill(0xff, off(p), off(p) + bytes);
    return asDevicePtr(p);
  },
  free(): void {},
  synchronize(): void {},
  streamSynchronize(): void {},
  memGetInfo: () => ({ free: 1 << 24, total: 1 << 24 }),
  memsetAsync(p: DevicePtr, v: number, bytes: number): void {
    u8.fill(v, off(p), off(p) + bytes);
  },
  copyDtoDAsync(dst: DevicePtr, src: DevicePtr, bytes: number): void {
    u8.copyWithin(off(dst), off(src), off(src) + bytes);
  },
} as unknown as GpuRuntime;
const kernels = {
  /** the fill kernels (contiguous) the backend's constSet launches */
  launch1d(_file: string, name: string, _n: number, _s: GpuStream, a: KernelArg[]): void {
    const m = /^fill_(f32|u32)$/.exec(name);
    if (!m) throw new Error(`the fake device has no kernel ${name}`);
    const at = off(a[0]!.value as bigint) / 4 + Number(a[1]!.value);
    const n = Number(a[2]!.value),
      v = Number(a[3]!.value);
    (m[1] === 'f32' ? f32 : new Uint32Array(mem)).fill(v, at, at + n);
  },
};
const dev = {
  kind: 'cuda',
  isCpu: false,
  index: 0,
  stream,
  runtime: rt,
  allocator: new CachingAllocator(rt, null),
  kernels,
  dnn: () => dnn,
  name: 'fake:0',
  toString: () => 'fake:0',
} as unknown as Device;

const toDev = (t: RawTensor): RawTensor => {
  const d = RawTensor.empty(t.layout.shape, 'f32', dev);
  write(d.storage.ptrAt(d.layout.offset), readNumbers(t));
  return d;
};
const fromDev = (t: RawTensor): number[] => read(t.storage.ptrAt(t.layout.offset), t.numel);
let seed = 1;
/** deterministic values in [-1, 1) */
const rnd = (shape: number[]) =>
  onHost(
    Array.from({ length: shape.reduce((a, b) => a * b, 1) }, () => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return (seed / 2 ** 31) * 2 - 1;
    }),
    shape,
  );

test('GPU backend plumbing: packing, reversal and unpacking equal the CPU reference exactly', () => {
  const T = 4,
    B = 3,
    I = 2,
    H = 5;
  let n = 0;
  for (const mode of ['lstm', 'gru'] as const)
    for (const reverse of [false, true])
      for (const [bias, h, c] of [
        [true, true, true],
        [false, false, false],
        [true, false, false],
        [false, true, false],
      ] as const) {
        const G = (mode === 'lstm' ? 4 : 3) * H;
        const what = `${mode}${reverse ? ' reverse' : ''}${bias ? '' : ' no bias'}${h ? ' h0' : ''}${c ? ' c0' : ''}`;
        const host: RnnArgs = [
          rnd([T, B, I]),
          h ? rnd([B, H]) : null,
          c && mode === 'lstm' ? rnd([B, H]) : null,
          rnd([G, I]),
          rnd([G, H]),
          bias ? rnd([G]) : null,
          bias ? rnd([G]) : null,
          mode,
          reverse,
        ];
        const onDev: RnnArgs = [
          toDev(host[0]),
          host[1] && toDev(host[1]),
          host[2] && toDev(host[2]),
          toDev(host[3]),
          toDev(host[4]),
          host[5] && toDev(host[5]),
          host[6] && toDev(host[6]),
          mode,
          reverse,
        ];
        assert.equal(fromDev(gpu.rnn(...onDev)), Array.from(readNumbers(cpu.rnn(...host))), `${what}: forward`);
        const g = rnd([T + (mode === 'lstm' ? 1 : 0), B, H]);
        assert.equal(
          fromDev(gpu.rnnBackward(toDev(g), ...onDev)),
          Array.from(readNumbers(cpu.rnnBackward(g, ...host))),
          `${what}: backward`,
        );
        n++;
      }
  assert.is(n, 16);
  assert.equal([...new Set(calls)], ['forward', 'forward (training)', 'backward data', 'backward weights']);
});

test.run();
